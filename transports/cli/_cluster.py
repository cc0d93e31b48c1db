"""``kafkacore cluster``: describe (id, controller, brokers), features and tokens.

``features`` shows the finalized and supported feature levels (KIP-584:
``metadata.version``, ``transaction.version``, ``group.version``...) as Java's
``kafka-features describe`` does, from the admin client's
``describe_features``. ``tokens`` is :mod:`kafkacore.transports.cli._tokens`.
"""

from __future__ import annotations

import click

from ._app import App, pass_app
from ._formats import emit_json, table
from ._tokens import tokens

__all__ = ["register"]


@click.group("cluster")
def cluster() -> None:
    """Describe the cluster and its feature levels."""


@cluster.command("describe")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def describe(app: App, as_json: bool) -> None:
    """Cluster id, controller and brokers."""
    with app.admin() as admin:
        d = admin.describe_cluster()
    brokers = sorted(d.brokers, key=lambda b: b.node_id)
    if as_json:
        emit_json(
            {
                "cluster_id": d.cluster_id,
                "controller": d.controller_id,
                "brokers": [
                    {"id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
                    for b in brokers
                ],
            }
        )
        return
    click.echo(f"Cluster: {d.cluster_id}  Controller: {d.controller_id}")
    table(
        ("ID", "HOST", "PORT", "RACK"),
        ((b.node_id, b.host, b.port, b.rack or "-") for b in brokers),
    )


@cluster.command("features")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def features(app: App, as_json: bool) -> None:
    """Finalized and supported feature levels (metadata.version, transaction.version...)."""
    with app.admin() as admin:
        found = admin.describe_features()
    finalized, supported = found.finalized_features, found.supported_features
    rows = [
        {
            "feature": name,
            "supported_min": supported[name].min_version if name in supported else None,
            "supported_max": supported[name].max_version if name in supported else None,
            "finalized": finalized[name].max_version_level if name in finalized else None,
        }
        for name in sorted(set(supported) | set(finalized))
    ]
    if as_json:
        emit_json({"epoch": found.finalized_features_epoch, "features": rows})
        return
    table(
        ("FEATURE", "SUPPORTED-MIN", "SUPPORTED-MAX", "FINALIZED"),
        (tuple("-" if value is None else value for value in r.values()) for r in rows),
    )


cluster.add_command(tokens)


def register(root: click.Group) -> None:
    root.add_command(cluster)

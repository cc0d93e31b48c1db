"""``kafkacore cluster``: describe (id, controller, brokers) and features.

``features`` reads the finalized and supported feature levels (KIP-584:
``metadata.version``, ``transaction.version``, ``group.version``...) from an
ApiVersions answer, as Java's ``kafka-features describe`` shows them: the
admin client has no DescribeFeatures call yet (docs/admin.md), and
ApiVersions v3+ carries the same facts.
"""

from __future__ import annotations

from typing import Any

import click

from kafkacore.protocol.messages import ApiVersionsRequest
from kafkacore.transports.selector import KafkaClient

from ._app import App, CliError, Exit, _construct, pass_app
from ._formats import emit_json, table

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
    conn = app.connection
    client = _construct(
        "client",
        KafkaClient,
        conn.bootstrap_servers,
        {"client_id": "kafkacore-cli", **conn.options("admin")},
    )
    try:
        client.connect()
        answer: Any = client.send(
            ApiVersionsRequest(client_software_name="kafkacore-cli", client_software_version="0"),
            timeout=app.timeout,
        )
    finally:
        client.close()
    if answer.error_code:
        raise CliError(f"ApiVersions answered error code {answer.error_code}", Exit.FAILED)
    finalized = {f.name: f.max_version_level for f in answer.finalized_features}
    rows = [
        {
            "feature": s.name,
            "supported_min": s.min_version,
            "supported_max": s.max_version,
            "finalized": finalized.get(s.name),
        }
        for s in sorted(answer.supported_features, key=lambda s: s.name)
    ]
    if as_json:
        emit_json({"epoch": answer.finalized_features_epoch, "features": rows})
        return
    table(
        ("FEATURE", "SUPPORTED-MIN", "SUPPORTED-MAX", "FINALIZED"),
        (
            (
                r["feature"],
                r["supported_min"],
                r["supported_max"],
                "-" if r["finalized"] is None else r["finalized"],
            )
            for r in rows
        ),
    )


def register(root: click.Group) -> None:
    root.add_command(cluster)

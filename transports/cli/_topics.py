"""``kafkacore topics``: list, describe, create, delete, alter (add partitions)."""

from __future__ import annotations

from typing import Any

import click

from kafkacore import KafkaAdminClient
from kafkacore.admin import TopicDescription
from kafkacore.transports.selector import NewPartitions, NewTopic

from ._app import App, CliError, Exit, check_items, pass_app
from ._formats import emit_json, table

__all__ = ["describe_topic", "parse_assignments", "register"]


def describe_topic(admin: KafkaAdminClient, topic: str) -> TopicDescription:
    """The topic's description; a missing topic is a ``CliError`` (exit 3)."""
    results = admin.describe_topics([topic])
    result = results[topic]
    if not result.ok:
        check_items(results, "topic")
    description: TopicDescription = result.result()
    return description


def parse_assignments(values: tuple[str, ...]) -> dict[str, str]:
    """``name=value`` pairs of ``--config`` / ``--set``, checked for shape."""
    out: dict[str, str] = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"{item!r}: expected name=value", param_hint="--config")
        out[name.strip()] = value
    return out


def _topic_json(d: TopicDescription) -> dict[str, Any]:
    return {
        "name": d.name,
        "topic_id": str(d.topic_id) if d.topic_id else None,
        "internal": d.is_internal,
        "partitions": [
            {
                "partition": p.partition,
                "leader": p.leader,
                "replicas": list(p.replicas),
                "isr": list(p.isr),
            }
            for p in d.partitions
        ],
    }


@click.group("topics")
def topics() -> None:
    """List, describe, create, delete topics and add partitions."""


@topics.command("list")
@click.option("--internal", is_flag=True, help="Include internal topics (__consumer_offsets...).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@pass_app
def list_(app: App, internal: bool, as_json: bool) -> None:
    """Topic names, one a line."""
    with app.admin() as admin:
        names = admin.list_topics(include_internal=internal)
    if as_json:
        emit_json(names)
    else:
        for name in names:
            click.echo(name)


@topics.command("describe")
@click.argument("names", nargs=-1, metavar="[TOPIC]...")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def describe(app: App, names: tuple[str, ...], as_json: bool) -> None:
    """Partitions, leaders, replicas and in-sync replicas (every topic by default)."""
    with app.admin() as admin:
        results = admin.describe_topics(list(names) if names else None)
    found = [r.result() for r in results.values() if r.ok]
    if as_json:
        emit_json([_topic_json(d) for d in found])
    else:
        for d in found:
            click.echo(
                f"Topic: {d.name}  TopicId: {d.topic_id}  PartitionCount: {len(d.partitions)}  "
                f"ReplicationFactor: {len(d.partitions[0].replicas) if d.partitions else 0}"
            )
            table(
                ("PARTITION", "LEADER", "REPLICAS", "ISR"),
                (
                    (
                        p.partition,
                        p.leader,
                        ",".join(map(str, p.replicas)),
                        ",".join(map(str, p.isr)),
                    )
                    for p in d.partitions
                ),
            )
    check_items(results, "topic")


@topics.command("create")
@click.argument("name", metavar="TOPIC")
@click.option("-p", "--partitions", type=click.IntRange(min=1), default=1, show_default=True)
@click.option(
    "-r", "--replication-factor", type=click.IntRange(min=1), default=1, show_default=True
)
@click.option(
    "-c",
    "--config",
    "configs",
    multiple=True,
    metavar="NAME=VALUE",
    help="A topic config, e.g. -c retention.ms=86400000 (repeatable).",
)
@click.option("--if-not-exists", is_flag=True, help="Succeed when the topic already exists.")
@click.option("--validate-only", is_flag=True, help="Ask the broker to check, create nothing.")
@pass_app
def create(
    app: App,
    name: str,
    partitions: int,
    replication_factor: int,
    configs: tuple[str, ...],
    if_not_exists: bool,
    validate_only: bool,
) -> None:
    """Create a topic (a bad config name or value is refused, nothing is created)."""
    new = NewTopic(name, partitions, replication_factor, topic_configs=parse_assignments(configs))
    with app.admin() as admin:
        results = admin.create_topics([new], validate_only=validate_only)
    result = results[name]
    exists = getattr(result.error, "name", "") == "TOPIC_ALREADY_EXISTS"
    if not result.ok and if_not_exists and exists:
        click.echo(f"topic {name} already exists", err=True)
        return
    check_items(results, "topic")
    made = result.result()
    verb = "would be created (validate only)" if validate_only else "created"
    click.echo(f"topic {name} {verb}: {partitions} partition(s), topic id {made.topic_id}")


@topics.command("delete")
@click.argument("names", nargs=-1, required=True, metavar="TOPIC...")
@click.option("--if-exists", is_flag=True, help="Succeed for topics that do not exist.")
@pass_app
def delete(app: App, names: tuple[str, ...], if_exists: bool) -> None:
    """Delete topics."""
    with app.admin() as admin:
        results = admin.delete_topics(list(names))
    for topic, result in results.items():
        if result.ok:
            click.echo(f"topic {topic} deleted")
    if if_exists:
        results = {  # type: ignore[assignment]
            t: r
            for t, r in results.items()
            if r.ok or getattr(r.error, "name", "") != "UNKNOWN_TOPIC_OR_PARTITION"
        }
    check_items(results, "topic")


@topics.command("alter")
@click.argument("name", metavar="TOPIC")
@click.option(
    "-p",
    "--partitions",
    type=click.IntRange(min=1),
    required=True,
    help="The new total number of partitions (only growing is possible).",
)
@pass_app
def alter(app: App, name: str, partitions: int) -> None:
    """Add partitions to a topic."""
    with app.admin() as admin:
        current = len(describe_topic(admin, name).partitions)
        if partitions <= current:
            raise CliError(
                f"topic {name} has {current} partition(s); --partitions must be more than "
                "that (Kafka can only add partitions)",
                Exit.USAGE,
            )
        results = admin.create_partitions({name: NewPartitions(partitions)})
    check_items(results, "topic")
    click.echo(f"topic {name}: {current} -> {partitions} partitions")


def register(root: click.Group) -> None:
    root.add_command(topics)

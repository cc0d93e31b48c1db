"""``kafkacore configs``: describe and alter topic and broker configs.

``alter`` is incremental (IncrementalAlterConfigs, KIP-339): ``--set`` and
``--delete`` touch only the names given. Every name is checked against what
the broker describes for that resource first, so a misspelt name is a usage
error with suggestions (exit 2) and nothing is sent; the broker still
validates values, and refuses the whole change for that resource when one
is wrong.
"""

from __future__ import annotations

import difflib
from typing import Any

import click

from kafkacore import KafkaAdminClient
from kafkacore.admin import AlterConfigOp, AlterConfigOpType, ConfigEntry, ConfigResourceType
from kafkacore.admin import ConfigResource as CoreResource

from ._app import App, CliError, Exit, check_items, pass_app
from ._formats import emit_json, table
from ._topics import parse_assignments

__all__ = ["register"]


def _resource(topic: str | None, broker: int | None, broker_default: bool) -> CoreResource:
    given = sum((topic is not None, broker is not None, broker_default))
    if given != 1:
        raise click.UsageError("give exactly one of --topic, --broker, --broker-default")
    if topic is not None:
        return CoreResource(ConfigResourceType.TOPIC, topic)
    return CoreResource(ConfigResourceType.BROKER, "" if broker_default else str(broker))


def _label(resource: CoreResource) -> str:
    if resource.type is ConfigResourceType.TOPIC:
        return f"topic {resource.name}"
    return f"broker {resource.name}" if resource.name else "the broker default"


def _entries(admin: KafkaAdminClient, resource: CoreResource) -> dict[str, ConfigEntry]:
    results = admin.describe_configs([resource])
    check_items(results, "", _label)
    entries: dict[str, ConfigEntry] = results[resource].result()
    return entries


def _check_names(resource: CoreResource, names: list[str], known: dict[str, ConfigEntry]) -> None:
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise CliError(f"{_label(resource)} has no config {name!r}{hint}", Exit.USAGE)


def _shown(entry: ConfigEntry) -> str:
    return "(sensitive)" if entry.is_sensitive else "null" if entry.value is None else entry.value


_TARGET_OPTIONS = [
    click.option("-t", "--topic", help="A topic's configs."),
    click.option("--broker", type=click.IntRange(min=0), help="One broker's configs."),
    click.option("--broker-default", is_flag=True, help="The cluster-wide broker defaults."),
]


def _targets(fn: Any) -> Any:
    for option in reversed(_TARGET_OPTIONS):
        fn = option(fn)
    return fn


@click.group("configs")
def configs() -> None:
    """Describe and alter topic and broker configs."""


@configs.command("describe")
@_targets
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.option("--all", "show_all", is_flag=True, help="Defaults too (default: set values only).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def describe(
    app: App,
    topic: str | None,
    broker: int | None,
    broker_default: bool,
    names: tuple[str, ...],
    show_all: bool,
    as_json: bool,
) -> None:
    """Configs of a topic or broker: those set (not defaults), or NAME... or --all."""
    resource = _resource(topic, broker, broker_default)
    with app.admin() as admin:
        entries = _entries(admin, resource)
    _check_names(resource, list(names), entries)
    chosen = [
        e
        for n, e in sorted(entries.items())
        if ((n in names) if names else (show_all or not e.is_default))
    ]
    if as_json:
        emit_json(
            {
                e.name: {
                    "value": None if e.is_sensitive else e.value,
                    "source": getattr(e.source, "name", str(e.source)),
                    "read_only": e.is_read_only,
                    "sensitive": e.is_sensitive,
                }
                for e in chosen
            }
        )
        return
    table(
        ("NAME", "VALUE", "SOURCE"),
        ((e.name, _shown(e), getattr(e.source, "name", e.source)) for e in chosen),
    )


@configs.command("alter")
@_targets
@click.option(
    "-s", "--set", "sets", multiple=True, metavar="NAME=VALUE", help="Set a config (repeatable)."
)
@click.option(
    "-d",
    "--delete",
    "deletes",
    multiple=True,
    metavar="NAME",
    help="Remove a set value, back to its default (repeatable).",
)
@click.option("--validate-only", is_flag=True, help="Ask the broker to check, change nothing.")
@pass_app
def alter(
    app: App,
    topic: str | None,
    broker: int | None,
    broker_default: bool,
    sets: tuple[str, ...],
    deletes: tuple[str, ...],
    validate_only: bool,
) -> None:
    """Set or delete configs of a topic or broker, incrementally."""
    resource = _resource(topic, broker, broker_default)
    values = parse_assignments(sets)
    if not values and not deletes:
        raise click.UsageError("nothing to change: give --set NAME=VALUE or --delete NAME")
    both = set(values) & set(deletes)
    if both:
        raise click.UsageError(f"both set and deleted: {', '.join(sorted(both))}")
    ops = [AlterConfigOp(n, v) for n, v in values.items()]
    ops += [AlterConfigOp(n, None, AlterConfigOpType.DELETE) for n in deletes]
    with app.admin() as admin:
        _check_names(resource, [op.name for op in ops], _entries(admin, resource))
        results = admin.incremental_alter_configs({resource: ops}, validate_only=validate_only)
    check_items(results, "", _label)
    verb = "valid (validate only)" if validate_only else "altered"
    click.echo(f"{_label(resource)}: {len(ops)} config(s) {verb}")


def register(root: click.Group) -> None:
    root.add_command(configs)

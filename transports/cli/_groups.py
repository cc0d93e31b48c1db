"""``kafkacore groups``: list, describe (members, offsets, lag), delete, reset offsets.

``reset-offsets`` follows Kafka's ``kafka-consumer-groups --reset-offsets``:
the plan (each partition's current and new offset) is worked out first and
printed; ``--dry-run`` stops there, ``--execute`` commits it. A group with
members is refused (its members would overwrite the reset), as are a
missing topic or partition and a bad spec: in each case nothing is changed.
"""

from __future__ import annotations

from typing import Any

import click

from kafkacore import KafkaAdminClient, OffsetAndMetadata, TopicPartition
from kafkacore.admin import OffsetSpec

from ._app import App, CliError, Exit, check_items, pass_app
from ._consume import parse_offset
from ._formats import emit_json, table
from ._progress import Progress
from ._topics import describe_topic

__all__ = ["register"]

#: Partitions per OffsetCommit of a reset (the progress advances by these).
RESET_CHUNK = 50


@click.group("groups")
def groups() -> None:
    """List, describe and delete consumer groups; reset their offsets."""


@groups.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def list_(app: App, as_json: bool) -> None:
    """Consumer groups (classic and KIP-848) with their type and state."""
    with app.admin() as admin:
        listed = admin.list_consumer_groups()
    found = sorted(listed.groups, key=lambda g: g.group_id)
    if as_json:
        emit_json(
            [{"group": g.group_id, "type": _name(g.type), "state": _name(g.state)} for g in found]
        )
    else:
        table(
            ("GROUP", "TYPE", "STATE"), ((g.group_id, _name(g.type), _name(g.state)) for g in found)
        )
    if listed.errors:
        raise CliError("; ".join(f"broker {b}: {e}" for b, e in listed.errors.items()))


def _name(value: Any) -> str:
    return "-" if value is None else str(getattr(value, "name", value))


def _lag_rows(admin: KafkaAdminClient, group: str) -> list[dict[str, Any]]:
    committed = admin.list_consumer_group_offsets(group)
    tps = sorted(committed, key=lambda tp: (tp.topic, tp.partition))
    ends: dict[TopicPartition, int | None] = {}
    if tps:
        results = admin.list_offsets(dict.fromkeys(tps, OffsetSpec.latest()))
        ends = {tp: r.result().offset if r.ok else None for tp, r in results.items()}
    rows = []
    for tp in tps:
        meta = committed[tp]
        current = None if meta is None else meta.offset
        end = ends.get(tp)
        lag = None if current is None or end is None else max(0, end - current)
        rows.append(
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "current_offset": current,
                "log_end_offset": end,
                "lag": lag,
            }
        )
    return rows


@groups.command("describe")
@click.argument("group")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def describe(app: App, group: str, as_json: bool) -> None:
    """A group's state, members and, per partition, committed offset, end and lag."""
    with app.admin() as admin:
        results = admin.describe_consumer_groups([group])
        check_items(results, "group")
        d = results[group].result()
        if _name(d.state) == "DEAD":
            raise CliError(f"group {group}: GROUP_ID_NOT_FOUND", Exit.NOT_FOUND)
        rows = _lag_rows(admin, group)
    owner = {tp: m for m in d.members for tp in m.assignment}
    members = [
        {
            "member_id": m.member_id,
            "client_id": m.client_id,
            "host": m.host,
            "assignment": sorted(f"{tp.topic}-{tp.partition}" for tp in m.assignment),
        }
        for m in d.members
    ]
    if as_json:
        emit_json(
            {
                "group": group,
                "type": _name(d.type),
                "state": _name(d.state),
                "assignor": d.partition_assignor,
                "coordinator": d.coordinator,
                "members": members,
                "offsets": rows,
            }
        )
        return
    click.echo(
        f"Group: {group}  Type: {_name(d.type)}  State: {_name(d.state)}  "
        f"Coordinator: {d.coordinator}  Members: {len(d.members)}"
    )
    table(
        ("TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID"),
        (
            (
                r["topic"],
                r["partition"],
                _dash(r["current_offset"]),
                _dash(r["log_end_offset"]),
                _dash(r["lag"]),
                getattr(owner.get(TopicPartition(r["topic"], r["partition"])), "member_id", "-"),
            )
            for r in rows
        ),
    )


def _dash(value: Any) -> str:
    return "-" if value is None else str(value)


@groups.command("delete")
@click.argument("names", nargs=-1, required=True, metavar="GROUP...")
@pass_app
def delete(app: App, names: tuple[str, ...]) -> None:
    """Delete groups (they must have no members)."""
    with app.admin() as admin:
        results = admin.delete_consumer_groups(list(names))
    for group, result in results.items():
        if result.ok:
            click.echo(f"group {group} deleted")
    check_items(results, "group")


def _targets(admin: KafkaAdminClient, topics: tuple[str, ...], group: str) -> list[TopicPartition]:
    """``--topic t`` or ``t:0,2``: the partitions a reset covers; default the committed ones."""
    if not topics:
        committed = admin.list_consumer_group_offsets(group)
        if not committed:
            raise CliError(
                f"group {group} has no committed offsets; name the topics with --topic", Exit.USAGE
            )
        return sorted(committed, key=lambda tp: (tp.topic, tp.partition))
    tps: list[TopicPartition] = []
    for item in topics:
        topic, _, parts = item.partition(":")
        count = len(describe_topic(admin, topic).partitions)
        wanted = range(count)
        if parts:
            try:
                wanted = [int(p) for p in parts.split(",")]  # type: ignore[assignment]
            except ValueError:
                raise click.BadParameter(
                    f"{item!r}: expected TOPIC or TOPIC:P,P...", param_hint="--topic"
                ) from None
            missing = [p for p in wanted if not 0 <= p < count]
            if missing:
                raise CliError(
                    f"topic {topic} has partitions 0-{count - 1}; no partition "
                    f"{', '.join(map(str, missing))}",
                    Exit.NOT_FOUND,
                )
        tps.extend(TopicPartition(topic, p) for p in wanted)
    return tps


@groups.command("reset-offsets")
@click.argument("group")
@click.option(
    "-t",
    "--topic",
    "topics",
    multiple=True,
    metavar="TOPIC[:P,P...]",
    help="Partitions to reset (repeatable); default: those the group committed.",
)
@click.option("--to-earliest", "mode", flag_value="earliest", help="To each log's start.")
@click.option("--to-latest", "mode", flag_value="latest", help="To each log's end.")
@click.option("--to-offset", type=click.IntRange(min=0), help="To this offset (clamped).")
@click.option(
    "--to-datetime",
    "to_datetime",
    metavar="SPEC",
    help="To the first record at or after a time: @MS or an ISO-8601 date-time.",
)
@click.option("--shift-by", type=int, help="Move each committed offset by N (clamped).")
@click.option("--dry-run", is_flag=True, help="Show the plan, change nothing.")
@click.option("--execute", is_flag=True, help="Commit the plan.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@pass_app
def reset_offsets(
    app: App,
    group: str,
    topics: tuple[str, ...],
    mode: str | None,
    to_offset: int | None,
    to_datetime: str | None,
    shift_by: int | None,
    dry_run: bool,
    execute: bool,
    as_json: bool,
) -> None:
    """Reset a group's committed offsets (exactly one --to-*/--shift-by; --dry-run or --execute)."""
    chosen = [x for x in (mode, to_offset, to_datetime, shift_by) if x is not None]
    if len(chosen) != 1:
        raise click.UsageError(
            "give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, --shift-by"
        )
    if dry_run == execute:
        raise click.UsageError("give --dry-run to see the plan or --execute to apply it")
    at: int | None = None
    if to_datetime is not None:
        spec = parse_offset(to_datetime if to_datetime.startswith("@") else "@" + to_datetime)
        at = spec.value
    with app.admin() as admin:
        _refuse_active(admin, group)
        plan = _reset_plan(
            admin, group, _targets(admin, topics, group), mode, to_offset, at, shift_by
        )
        _show_plan(group, plan, as_json)
        if dry_run:
            click.echo("dry run: nothing changed", err=True)
            return
        _apply_plan(admin, group, plan)
    click.echo(f"group {group}: {len(plan)} offset(s) reset", err=True)


def _reset_plan(
    admin: KafkaAdminClient,
    group: str,
    tps: list[TopicPartition],
    mode: str | None,
    to_offset: int | None,
    at: int | None,
    shift_by: int | None,
) -> dict[TopicPartition, tuple[int | None, int]]:
    """Each partition's (committed, new) offset, the new one kept inside the log."""
    committed = admin.list_consumer_group_offsets(group, partitions=tps)
    firsts = _offsets(admin, tps, OffsetSpec.earliest())
    lasts = _offsets(admin, tps, OffsetSpec.latest())
    stamped = _offsets(admin, tps, OffsetSpec.for_timestamp(at)) if at is not None else {}
    plan: dict[TopicPartition, tuple[int | None, int]] = {}
    for tp in tps:
        meta = committed.get(tp)
        current = None if meta is None else meta.offset
        if mode == "earliest":
            new = firsts[tp]
        elif mode == "latest":
            new = lasts[tp]
        elif to_offset is not None:
            new = to_offset
        elif at is not None:
            new = lasts[tp] if stamped[tp] < 0 else stamped[tp]
        else:
            assert shift_by is not None
            new = (firsts[tp] if current is None else current) + shift_by
        plan[tp] = (current, min(max(new, firsts[tp]), lasts[tp]))
    return plan


def _apply_plan(
    admin: KafkaAdminClient, group: str, plan: dict[TopicPartition, tuple[int | None, int]]
) -> None:
    """Commit the plan's new offsets in chunks, with a progress bar on long work."""
    items = list(plan.items())
    with Progress("reset", len(items), unit="partitions", enabled=len(items) > RESET_CHUNK) as bar:
        for i in range(0, len(items), RESET_CHUNK):
            chunk = {tp: OffsetAndMetadata(new) for tp, (_, new) in items[i : i + RESET_CHUNK]}
            check_items(admin.alter_consumer_group_offsets(group, chunk), "partition")
            bar.advance(len(chunk))


def _refuse_active(admin: KafkaAdminClient, group: str) -> None:
    results = admin.describe_consumer_groups([group])
    result = results[group]
    if not result.ok:
        if getattr(result.error, "name", "") == "GROUP_ID_NOT_FOUND":
            return  # a new group: Kafka's tool resets it too
        check_items(results, "group")
    d = result.result()
    if d.members:
        raise CliError(
            f"group {group} is {_name(d.state)} with {len(d.members)} member(s); offsets can "
            "only be reset while it has none: stop its consumers first",
            Exit.FAILED,
        )


def _offsets(
    admin: KafkaAdminClient, tps: list[TopicPartition], spec: OffsetSpec
) -> dict[TopicPartition, int]:
    results = admin.list_offsets(dict.fromkeys(tps, spec))
    check_items(results, "partition")
    out = {}
    for tp, r in results.items():
        offset = r.result().offset
        out[tp] = -1 if offset is None else offset
    return out


def _show_plan(
    group: str, plan: dict[TopicPartition, tuple[int | None, int]], as_json: bool
) -> None:
    rows = sorted(plan.items(), key=lambda kv: (kv[0].topic, kv[0].partition))
    if as_json:
        emit_json(
            [
                {
                    "group": group,
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "current_offset": cur,
                    "new_offset": new,
                }
                for tp, (cur, new) in rows
            ]
        )
        return
    table(
        ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"),
        ((group, tp.topic, tp.partition, _dash(cur), new) for tp, (cur, new) in rows),
    )


def register(root: click.Group) -> None:
    root.add_command(groups)

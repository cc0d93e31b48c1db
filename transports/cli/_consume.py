"""``kafkacore consume``: records to stdout (kcat's ``-C``), by group or by partition.

Without ``--group`` the partitions (all, or ``-p``) are assigned and each
starts at the ``-o`` spec, resolved once with the admin client's
ListOffsets; with ``--group`` the topics are subscribed and the group's
committed offsets decide (``-o beginning|end`` is the reset policy for
partitions without one). A group commits exactly what was printed, after
each batch, never records fetched and not shown.

It stops after ``-c N`` records, at the end of every partition (``-e``: the
end as it was when consumption started, the last stable offset with
``--isolation read_committed``), after ``--idle-timeout`` seconds without a
record, or on Ctrl-C.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from kafkacore import ConsumerRecord, KafkaConsumer, OffsetAndMetadata, TopicPartition
from kafkacore.admin import OffsetSpec

from ._app import App, CliError, Exit, ReaderGone, check_items, pass_app
from ._formats import compile_format, record_json
from ._progress import Progress, is_terminal
from ._topics import describe_topic

__all__ = ["OffsetStart", "parse_offset", "poll_records", "register"]


@dataclass(frozen=True)
class OffsetStart:
    """Where consumption starts: ``kind`` is beginning, end, stored, absolute,
    from_end (``value`` records before the end) or timestamp (``value`` ms)."""

    kind: str
    value: int = 0


_SPEC_HELP = (
    "beginning, end, stored (with --group), N (absolute), -N (N before the end), "
    "@MS or s@MS (first record at or after a timestamp in ms), or @ISO-8601 date-time"
)


def parse_offset(text: str) -> OffsetStart:
    """An ``-o`` spec; a bad one is a usage error saying what is accepted."""
    spec = text.strip()
    if spec in ("beginning", "earliest"):
        return OffsetStart("beginning")
    if spec in ("end", "latest"):
        return OffsetStart("end")
    if spec == "stored":
        return OffsetStart("stored")
    if re.fullmatch(r"\d+", spec):
        return OffsetStart("absolute", int(spec))
    if re.fullmatch(r"-\d+", spec):
        return OffsetStart("from_end", -int(spec))
    match = re.fullmatch(r"s?@(.+)", spec)
    if match:
        when = match.group(1)
        if re.fullmatch(r"\d+", when):
            return OffsetStart("timestamp", int(when))
        try:
            moment = dt.datetime.fromisoformat(when)
        except ValueError:
            pass
        else:
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=dt.UTC)
            return OffsetStart("timestamp", int(moment.timestamp() * 1000))
    raise click.BadParameter(f"bad offset spec {text!r}: expected {_SPEC_HELP}", param_hint="'-o'")


def poll_records(consumer: KafkaConsumer, timeout: float, max_records: int | None) -> list[Any]:
    """``poll`` as a flat list (also when it answers kafka-python's ``{tp: [records]}``)."""
    got: Any = consumer.poll_records(timeout=timeout, max_records=max_records)
    if isinstance(got, dict):
        return [r for records in got.values() for r in records]
    return list(got)


def _resolve_starts(
    app: App,
    tps: list[TopicPartition],
    start: OffsetStart,
    isolation: str,
) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
    """Each partition's first offset for ``start``, and its end offset now."""
    with app.admin(helper=True) as admin:
        ends = _listed(admin, dict.fromkeys(tps, OffsetSpec.latest()), isolation)
        if start.kind == "beginning" or start.kind == "from_end":
            firsts = _listed(admin, dict.fromkeys(tps, OffsetSpec.earliest()), isolation)
        elif start.kind == "timestamp":
            at = _listed(
                admin, dict.fromkeys(tps, OffsetSpec.for_timestamp(start.value)), isolation
            )
            firsts = {tp: ends[tp] if at[tp] < 0 else at[tp] for tp in tps}
        else:
            firsts = {}
    starts: dict[TopicPartition, int] = {}
    for tp in tps:
        if start.kind in ("beginning", "timestamp"):
            starts[tp] = firsts[tp]
        elif start.kind == "end":
            starts[tp] = ends[tp]
        elif start.kind == "from_end":
            starts[tp] = max(firsts[tp], ends[tp] - start.value)
        else:  # absolute: the consumer's reset policy handles an offset out of range
            starts[tp] = start.value
    return starts, ends


def _listed(
    admin: Any, specs: dict[TopicPartition, OffsetSpec], isolation: str
) -> dict[TopicPartition, int]:
    results = admin.list_offsets(specs, isolation_level=isolation)
    check_items(results, "partition")
    return {tp: -1 if r.result().offset is None else r.result().offset for tp, r in results.items()}


def _partitions(app: App, topics: tuple[str, ...], wanted: tuple[int, ...]) -> list[TopicPartition]:
    """The partitions to read; a missing topic or partition is reported (exit 3)."""
    tps: list[TopicPartition] = []
    with app.admin(helper=True) as admin:
        for topic in topics:
            count = len(describe_topic(admin, topic).partitions)
            for p in wanted:
                if p >= count:
                    raise CliError(
                        f"topic {topic} has partitions 0-{count - 1}; there is no partition {p}",
                        Exit.NOT_FOUND,
                    )
            tps.extend(TopicPartition(topic, p) for p in (wanted or range(count)))
    return tps


def _same_terminal() -> bool:
    """Whether stdout and stderr are the same terminal (a bar would garble the records)."""
    try:
        return sys.stdout.isatty() and os.path.samestat(
            os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno())
        )
    except (OSError, ValueError, AttributeError):
        return False


@click.command("consume")
@click.argument("topics", nargs=-1, required=True, metavar="TOPIC...")
@click.option("-g", "--group", help="Consume as a member of this consumer group (subscribe).")
@click.option(
    "-p",
    "--partition",
    "partitions",
    type=click.IntRange(min=0),
    multiple=True,
    help="Read only this partition (repeatable; without --group).",
)
@click.option(
    "-o",
    "--offset",
    "offset_spec",
    default=None,
    metavar="SPEC",
    help=f"Where to start: {_SPEC_HELP}. Default: beginning (a group: stored, then beginning).",
)
@click.option("-c", "--count", type=click.IntRange(min=1), help="Exit after N records.")
@click.option("-e", "--until-end", is_flag=True, help="Exit at the end of every partition.")
@click.option(
    "--idle-timeout",
    type=click.FloatRange(min=0.0),
    metavar="SECONDS",
    help="Exit after this long without a record.",
)
@click.option(
    "-f",
    "--format",
    "fmt",
    metavar="FORMAT",
    help="kcat-style output format: %t %p %o %k %s %K %S %T %h %% \\n \\t.",
)
@click.option("-K", "--key-separator", metavar="SEP", help="Print key SEP value (no -f).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per record.")
@click.option(
    "--isolation",
    type=click.Choice(["read_uncommitted", "read_committed"]),
    default="read_uncommitted",
    show_default=True,
)
@click.option("-q", "--quiet", is_flag=True, help="No progress display.")
@pass_app
def consume(
    app: App,
    topics: tuple[str, ...],
    group: str | None,
    partitions: tuple[int, ...],
    offset_spec: str | None,
    count: int | None,
    until_end: bool,
    idle_timeout: float | None,
    fmt: str | None,
    key_separator: str | None,
    as_json: bool,
    isolation: str,
    quiet: bool,
) -> None:
    """Print records of TOPIC... to stdout, one a line (or as --format says)."""
    render = _renderer(fmt, key_separator, as_json)
    start = _start(offset_spec, group, partitions)
    tps = _partitions(app, topics, partitions)
    consumer, ends, total = _open(app, topics, tps, group, start, count, until_end, isolation)
    show = not quiet and total is not None and not (is_terminal() and _same_terminal())
    progress = Progress("consumed", total, enabled=show)
    try:
        _loop(consumer, render, progress, group, count, ends if until_end else None, idle_timeout)
    finally:
        progress.close()
        consumer.close()


def _open(
    app: App,
    topics: tuple[str, ...],
    tps: list[TopicPartition],
    group: str | None,
    start: OffsetStart | None,
    count: int | None,
    until_end: bool,
    isolation: str,
) -> tuple[KafkaConsumer, dict[TopicPartition, int], int | None]:
    """The consumer (subscribed with a group, else assigned and positioned), the
    partitions' end offsets for --until-end, and how many records to expect."""
    ends: dict[TopicPartition, int] = {}
    common = {"isolation_level": isolation, "enable_auto_commit": False}
    if group:
        reset = "latest" if start is not None and start.kind == "end" else "earliest"
        if until_end:
            _, ends = _resolve_starts(app, tps, OffsetStart("end"), isolation)
        consumer = app.consumer(group_id=group, auto_offset_reset=reset, **common)
        consumer.subscribe(list(topics))
        total = count
    else:
        starts, ends = _resolve_starts(app, tps, start or OffsetStart("beginning"), isolation)
        consumer = app.consumer(auto_offset_reset="earliest", **common)
        consumer.assign(tps)
        for tp, offset in starts.items():
            consumer.seek(tp, offset)
        backlog = sum(max(0, ends[tp] - starts[tp]) for tp in tps)
        total = (
            min(count, backlog)
            if count and until_end
            else count or (backlog if until_end else None)
        )
    return consumer, ends, total


def _renderer(
    fmt: str | None, key_separator: str | None, as_json: bool
) -> Callable[[ConsumerRecord], str]:
    """How each record is printed: JSON, a format string, or the value (with its key)."""
    if sum(x is not None for x in (fmt, key_separator)) + as_json > 1:
        raise click.UsageError("--format, --key-separator and --json exclude each other")
    if as_json:
        return lambda r: record_json(r) + "\n"
    if fmt is not None:
        return compile_format(fmt)
    return compile_format(f"%k{key_separator}%s\n" if key_separator else "%s\n")


def _start(
    offset_spec: str | None, group: str | None, partitions: tuple[int, ...]
) -> OffsetStart | None:
    """The -o start, checked against how the records are read (group or partitions)."""
    start = parse_offset(offset_spec) if offset_spec is not None else None
    if group and partitions:
        raise click.UsageError("-p/--partition reads without a group; drop --group or -p")
    if group and start is not None and start.kind not in ("beginning", "end", "stored"):
        raise click.BadParameter(
            "with --group, -o is beginning, end or stored (the group's reset policy)",
            param_hint="'-o'",
        )
    if not group and start is not None and start.kind == "stored":
        raise click.BadParameter("'stored' needs --group", param_hint="'-o'")
    return start


def _loop(
    consumer: KafkaConsumer,
    render: Callable[[ConsumerRecord], str],
    progress: Progress,
    group: str | None,
    count: int | None,
    ends: dict[TopicPartition, int] | None,
    idle_timeout: float | None,
) -> None:
    out = sys.stdout
    printed = 0
    last = time.monotonic()
    while True:
        want = None if count is None else count - printed
        records = poll_records(consumer, 0.5, want)
        if records:
            last = time.monotonic()
            try:
                out.write("".join(render(r) for r in records))
                out.flush()
            except BrokenPipeError:
                # Nothing of this batch is committed: its reader did not take it.
                raise ReaderGone from None
            printed += len(records)
            progress.advance(len(records))
            if group:
                tops: dict[TopicPartition, OffsetAndMetadata] = {}
                for r in records:  # the next offset to read (Java's and kafka-python's rule)
                    tops[TopicPartition(r.topic, r.partition)] = OffsetAndMetadata(r.offset + 1)
                consumer.commit(tops)
        if count is not None and printed >= count:
            return
        if ends is not None and _at_end(consumer, ends):
            return
        if idle_timeout is not None and time.monotonic() - last >= idle_timeout:
            return


def _at_end(consumer: KafkaConsumer, ends: dict[TopicPartition, int]) -> bool:
    """Whether every partition this consumer reads has reached its end."""
    assigned = consumer.assignment()
    if not assigned:
        return False
    return all(consumer.position(tp, timeout=10) >= ends.get(tp, 0) for tp in assigned)


def register(root: click.Group) -> None:
    root.add_command(consume)

"""``kafkacore produce``: records from lines of stdin or files (kcat's ``-P``).

Each line is one record: the value, or ``key<SEP>value`` with ``-K SEP``, or
with ``--json`` an object ``{"key", "value", "headers", "partition",
"timestamp"}`` (the shape ``consume --json`` prints, so the two round-trip).
The topic is checked first: a missing topic is reported at once (exit 3)
rather than after the producer's ``max_block_ms``. Every record is
acknowledged before the command ends; the first failed one makes it exit 1.
"""

from __future__ import annotations

import base64
import json
import sys
import time
from collections.abc import Iterator
from typing import IO, Any

import click

from kafkacore.transports._producer_future import RecordFuture

from ._app import App, CliError, Exit, pass_app
from ._topics import describe_topic

__all__ = ["Pacer", "register"]


class Pacer:
    """Holds a loop to ``rate`` iterations a second (None: as fast as it goes)."""

    def __init__(self, rate: float | None) -> None:
        self._interval = 1.0 / rate if rate else 0.0
        self._start = time.monotonic()
        self._count = 0

    @property
    def count(self) -> int:
        """How many iterations went by."""
        return self._count

    def wait(self) -> None:
        if self._interval:
            due = self._start + self._count * self._interval
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        self._count += 1


def _bytes(field: str, value: Any, where: str) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, dict) and set(value) == {"base64"}:
        return base64.b64decode(value["base64"])
    if field == "value":  # any other JSON value is sent as its JSON text
        return json.dumps(value).encode()
    raise CliError(f"{where}: {field} must be a string or null, got {value!r}", Exit.USAGE)


def _json_record(line: str, where: str) -> dict[str, Any]:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise CliError(f"{where}: not JSON ({exc.msg} at column {exc.colno})", Exit.USAGE) from None
    if not isinstance(obj, dict):
        raise CliError(f"{where}: expected a JSON object, got {type(obj).__name__}", Exit.USAGE)
    unknown = set(obj) - {"key", "value", "headers", "partition", "timestamp", "topic", "offset"}
    if unknown:
        raise CliError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}", Exit.USAGE)
    headers = obj.get("headers") or {}
    if not isinstance(headers, dict):
        raise CliError(f"{where}: headers must be an object of name: value", Exit.USAGE)
    partition = obj.get("partition")
    timestamp = obj.get("timestamp")
    for name, number in (("partition", partition), ("timestamp", timestamp)):
        if number is not None and (not isinstance(number, int) or isinstance(number, bool)):
            raise CliError(f"{where}: {name} must be a whole number", Exit.USAGE)
    return {
        "key": _bytes("key", obj.get("key"), where),
        "value": _bytes("value", obj.get("value"), where),
        "headers": [(str(n), _bytes("header", v, where)) for n, v in headers.items()] or None,
        "partition": partition,
        "timestamp": timestamp,
    }


def _lines(files: tuple[str, ...]) -> Iterator[tuple[str, str]]:
    """(where, line) for every line of the files, '-' or none meaning stdin."""
    for name in files or ("-",):
        stream: IO[str]
        if name == "-":
            stream, label = sys.stdin, "stdin"
        else:
            try:
                stream = open(name, encoding="utf-8")  # noqa: SIM115 - closed below
            except OSError as exc:
                raise CliError(f"{name}: {exc.strerror}", Exit.USAGE) from None
            label = name
        try:
            for number, line in enumerate(stream, 1):
                yield f"{label}:{number}", line.rstrip("\n").rstrip("\r")
        finally:
            if stream is not sys.stdin:
                stream.close()


@click.command("produce")
@click.argument("topic")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-K", "--key-separator", metavar="SEP", help="Split each line into key SEP value.")
@click.option("--json", "as_json", is_flag=True, help="Each line is a JSON record object.")
@click.option("-p", "--partition", type=click.IntRange(min=0), help="Send every record here.")
@click.option(
    "-H",
    "--header",
    "headers",
    multiple=True,
    metavar="NAME=VALUE",
    help="A header on every record (repeatable).",
)
@click.option(
    "--rate", type=click.FloatRange(min=0.001), metavar="N", help="At most N records a second."
)
@click.option("--skip-empty", is_flag=True, help="Skip empty lines instead of sending them.")
@pass_app
def produce(
    app: App,
    topic: str,
    files: tuple[str, ...],
    key_separator: str | None,
    as_json: bool,
    partition: int | None,
    headers: tuple[str, ...],
    rate: float | None,
    skip_empty: bool,
) -> None:
    """Send lines of FILES (or stdin) to TOPIC, one record a line."""
    if as_json and key_separator is not None:
        raise click.UsageError("--json and --key-separator exclude each other")
    if key_separator == "":
        raise click.BadParameter("must not be empty", param_hint="'-K' / '--key-separator'")
    fixed = _headers(headers)
    with app.admin(helper=True) as admin:
        count = len(describe_topic(admin, topic).partitions)
    if partition is not None and partition >= count:
        raise CliError(
            f"topic {topic} has partitions 0-{count - 1}; there is no partition {partition}",
            Exit.NOT_FOUND,
        )
    pacer = Pacer(rate)
    futures: list[RecordFuture] = []
    with app.producer() as producer:
        for where, line in _lines(files):
            if skip_empty and not line:
                continue
            rec = _record(line, where, topic, count, as_json, key_separator)
            pacer.wait()
            futures.append(
                producer.send(
                    topic,
                    rec["value"],
                    key=rec["key"],
                    headers=(fixed + list(rec["headers"] or ())) or None,
                    partition=partition if rec["partition"] is None else rec["partition"],
                    timestamp=rec["timestamp"],
                )
            )
            if len(futures) >= 10_000:  # bound what we hold: settle the oldest
                _settle(futures[:5_000])
                del futures[:5_000]
        producer.flush()
        _settle(futures)
    click.echo(f"produced {pacer.count} record(s) to {topic}", err=True)


def _headers(headers: tuple[str, ...]) -> list[tuple[str, bytes]]:
    """``-H NAME=VALUE`` options as record headers."""
    fixed = []
    for item in headers:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{item!r}: expected NAME=VALUE", param_hint="'-H'")
        fixed.append((name, value.encode()))
    return fixed


def _record(
    line: str, where: str, topic: str, count: int, as_json: bool, key_separator: str | None
) -> dict[str, Any]:
    """One input line as the record to send (JSON, or a value with an optional key)."""
    if as_json:
        rec = _json_record(line, where)
        if rec["partition"] is not None and not 0 <= rec["partition"] < count:
            raise CliError(
                f"{where}: topic {topic} has no partition {rec['partition']}", Exit.NOT_FOUND
            )
        return rec
    key: bytes | None = None
    value = line
    if key_separator is not None:
        k, sep, v = line.partition(key_separator)
        if not sep:
            raise CliError(f"{where}: no key separator {key_separator!r} in the line", Exit.USAGE)
        key, value = k.encode(), v
    return {
        "key": key,
        "value": value.encode(),
        "headers": None,
        "partition": None,
        "timestamp": None,
    }


def _settle(futures: list[RecordFuture]) -> None:
    for fut in futures:
        fut.result()  # raises the record's error: the command fails with it


def register(root: click.Group) -> None:
    root.add_command(produce)

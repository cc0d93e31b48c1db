"""Output of records and listings: kcat-style format strings, JSON lines, tables.

A record format (``consume -f``) is compiled once into a list of pieces, so
formatting a record is a join, not a parse. The tokens are kcat's:

| token | what |
|---|---|
| ``%t`` ``%p`` ``%o`` | topic, partition, offset |
| ``%k`` ``%s`` | key, value (UTF-8, undecodable bytes as ``\\xNN``) |
| ``%K`` ``%S`` | key length, value length (-1 for null) |
| ``%T`` | timestamp (ms since the epoch) |
| ``%h`` | headers as ``name=value,...`` |
| ``%%`` | a percent sign; ``\\n``, ``\\t``, ``\\r``, ``\\\\`` are escapes |
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import click

from kafkacore import ConsumerRecord

__all__ = ["compile_format", "emit_json", "record_json", "table", "text"]

Piece = Callable[[ConsumerRecord], str]


def text(data: bytes | None) -> str:
    """Bytes shown as text: UTF-8, with undecodable bytes escaped."""
    return "" if data is None else data.decode("utf-8", "backslashreplace")


def _length(data: bytes | None) -> str:
    return "-1" if data is None else str(len(data))


def _headers(record: ConsumerRecord) -> str:
    return ",".join(f"{name}={text(value)}" for name, value in record.headers or ())


_TOKENS: dict[str, Piece] = {
    "t": lambda r: r.topic,
    "p": lambda r: str(r.partition),
    "o": lambda r: str(r.offset),
    "k": lambda r: text(r.key),
    "s": lambda r: text(r.value),
    "K": lambda r: _length(r.key),
    "S": lambda r: _length(r.value),
    "T": lambda r: str(r.timestamp),
    "h": _headers,
}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "0": "\0"}


def compile_format(fmt: str) -> Callable[[ConsumerRecord], str]:
    """A kcat ``-f`` format as a function of a record; an unknown token is a usage error."""
    pieces: list[Piece | str] = []
    literal: list[str] = []
    i = 0
    while i < len(fmt):
        ch = fmt[i]
        nxt = fmt[i + 1] if i + 1 < len(fmt) else ""
        if ch == "%":
            if nxt == "%":
                literal.append("%")
            elif nxt in _TOKENS:
                if literal:
                    pieces.append("".join(literal))
                    literal = []
                pieces.append(_TOKENS[nxt])
            else:
                known = " ".join(f"%{t}" for t in _TOKENS)
                raise click.BadParameter(
                    f"unknown token %{nxt} at position {i} (known: {known} %%)",
                    param_hint="'-f' / '--format'",
                )
            i += 2
        elif ch == "\\" and nxt in _ESCAPES:
            literal.append(_ESCAPES[nxt])
            i += 2
        else:
            literal.append(ch)
            i += 1
    if literal:
        pieces.append("".join(literal))
    parts = tuple(pieces)

    def render(record: ConsumerRecord) -> str:
        return "".join(p if isinstance(p, str) else p(record) for p in parts)

    return render


def _json_bytes(data: bytes | None) -> Any:
    """UTF-8 text as a JSON string; other bytes as ``{"base64": ...}``; None as null."""
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def record_json(record: ConsumerRecord) -> str:
    """One record as one JSON line (the shape ``produce --json`` reads back)."""
    return json.dumps(
        {
            "topic": record.topic,
            "partition": record.partition,
            "offset": record.offset,
            "timestamp": record.timestamp,
            "key": _json_bytes(record.key),
            "value": _json_bytes(record.value),
            "headers": {name: _json_bytes(value) for name, value in record.headers or ()},
        },
        ensure_ascii=False,
    )


def emit_json(data: Any) -> None:
    """A listing or a description as one indented JSON document on stdout."""
    click.echo(json.dumps(data, indent=2, sort_keys=False, default=str))


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Columns padded to their widest cell, as Kafka's tools print them."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    for row in [list(headers), *cells]:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())

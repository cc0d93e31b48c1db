"""Offsets as the JVM connector writes them, and where a read starts or ends.

Theory of operation
-------------------
Spark's Kafka connector speaks JSON for partitions and offsets, and users
know its forms from ``startingOffsets`` and from streaming checkpoints:

* partitions (``assign``): ``{"topicA":[0,1],"topicB":[0]}``
* offsets or timestamps per partition: ``{"topicA":{"0":23,"1":-2}}``, where
  -2 means earliest and -1 latest (:data:`EARLIEST`, :data:`LATEST`).

Streaming offsets are dicts of that second form. Spark compares two offsets
by their JSON text (``json.dumps`` of the dict we return), so
:func:`offsets_to_json` always orders topics by name and partitions by
number: the same offsets give the same text, and "no new data" is seen.

A read boundary (``startingOffsets``, ``endingOffsets``, the timestamp
options) is an :data:`OffsetLimit`: earliest, latest, specific offsets,
specific timestamps, or one timestamp for every partition. They are
resolved against the cluster by :mod:`pyspark_kafkacore._source_admin`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kafkacore.client import TopicPartition

__all__ = [
    "EARLIEST",
    "LATEST",
    "Earliest",
    "GlobalTimestamp",
    "Latest",
    "NoMatchStrategy",
    "OffsetLimit",
    "SourceOptionError",
    "SpecificOffsets",
    "SpecificTimestamps",
    "offsets_from_json",
    "offsets_to_json",
    "parse_assign",
    "parse_partition_values",
]

#: ``-2`` in offsets JSON: the partition's earliest offset.
EARLIEST = -2
#: ``-1`` in offsets JSON: the partition's latest offset.
LATEST = -1

#: What a starting timestamp with no matching offset does (``startingOffsetsByTimestampStrategy``).
NoMatchStrategy = Literal["error", "latest"]


class SourceOptionError(ValueError):
    """A source option that cannot be used; the message names it."""


@dataclass(frozen=True, slots=True)
class Earliest:
    """Every partition's earliest offset."""


@dataclass(frozen=True, slots=True)
class Latest:
    """Every partition's latest offset (high watermark, or LSO under read_committed)."""


@dataclass(frozen=True, slots=True)
class SpecificOffsets:
    """One offset per partition; -2/-1 bind to earliest/latest when the read resolves."""

    offsets: Mapping[TopicPartition, int]


@dataclass(frozen=True, slots=True)
class SpecificTimestamps:
    """One timestamp (ms) per partition: the first offset at or after it."""

    timestamps: Mapping[TopicPartition, int]
    no_match: NoMatchStrategy


@dataclass(frozen=True, slots=True)
class GlobalTimestamp:
    """One timestamp (ms) for every partition read."""

    timestamp: int
    no_match: NoMatchStrategy


OffsetLimit = Earliest | Latest | SpecificOffsets | SpecificTimestamps | GlobalTimestamp


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def _partition(key: Any) -> int | None:
    if isinstance(key, str):
        text = key.strip()
        if text.lstrip("-").isdigit():
            number = int(text)
            return number if number >= 0 else None
    return None


def parse_assign(option: str, text: str) -> tuple[TopicPartition, ...]:
    """``{"topicA":[0,1]}`` as partitions; raise naming ``option`` when malformed."""
    example = '{"topicA":[0,1],"topicB":[0,1]}'
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
    out: list[TopicPartition] = []
    ok = isinstance(obj, dict) and bool(obj)
    if ok:
        assert isinstance(obj, dict)
        for topic, parts in obj.items():
            if not topic or not isinstance(parts, list):
                ok = False
                break
            for part in parts:
                number = _int(part)
                if number is None or number < 0:
                    ok = False
                    break
                out.append(TopicPartition(topic, number))
    if not ok or not out:
        raise SourceOptionError(f"option {option!r}: expected e.g. {example}, got {text!r}")
    return tuple(dict.fromkeys(out))


def parse_partition_values(
    option: str, text: str, *, timestamps: bool
) -> dict[TopicPartition, int]:
    """``{"topicA":{"0":23,"1":-2}}`` as a map; raise naming ``option`` when malformed.

    Offsets may be -2 (earliest) or -1 (latest); timestamps must be >= 0.
    """
    example = (
        '{"topicA":{"0":1700000000000,"1":1700000000000}}'
        if timestamps
        else '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
    )
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
    out: dict[TopicPartition, int] = {}
    ok = isinstance(obj, dict) and bool(obj)
    if ok:
        assert isinstance(obj, dict)
        for topic, parts in obj.items():
            if not topic or not isinstance(parts, dict) or not parts:
                ok = False
                break
            for key, value in parts.items():
                number = _partition(key)
                offset = _int(value)
                if number is None or offset is None:
                    ok = False
                    break
                low = 0 if timestamps else EARLIEST
                if offset < low:
                    what = "timestamps" if timestamps else "offsets"
                    raise SourceOptionError(
                        f"option {option!r}: {what} must be >= {low}, got {offset} for "
                        f"{topic}-{number}"
                    )
                out[TopicPartition(topic, number)] = offset
    if not ok:
        raise SourceOptionError(f"option {option!r}: expected e.g. {example}, got {text!r}")
    return out


def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """The connector's offsets form, topics by name and partitions by number."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return out


def offsets_from_json(obj: Any, what: str) -> dict[TopicPartition, int]:
    """The inverse of :func:`offsets_to_json` (offsets Spark hands back, e.g. from a
    checkpoint); ``what`` names the origin in the error."""
    if isinstance(obj, str):
        try:
            obj = json.loads(obj)
        except ValueError:
            obj = None
    out: dict[TopicPartition, int] = {}
    ok = isinstance(obj, dict)
    if ok:
        assert isinstance(obj, dict)
        for topic, parts in obj.items():
            if not isinstance(parts, dict):
                ok = False
                break
            for key, value in parts.items():
                number = _partition(key)
                offset = _int(value)
                if number is None or offset is None or offset < 0:
                    ok = False
                    break
                out[TopicPartition(topic, number)] = offset
    if not ok:
        raise ValueError(
            f"{what}: {obj!r} is not a kafkacore source offset; expected "
            '{"topic":{"0":123}} (was the checkpoint written by another source?)'
        )
    return out

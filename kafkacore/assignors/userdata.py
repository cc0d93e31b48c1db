"""Wire formats of the sticky assignors' subscription user data.

Both formats are Kafka's old "Struct" encoding, big-endian, no tagged
fields, so Java and kafkacore members can share one group:

* ``StickyAssignorUserData`` (eager ``sticky``), v1::

      previous_assignment: int32 count, then per topic
          topic: int16 length + UTF-8, partitions: int32 count + int32 each
      generation: int32

  v0 is the same without ``generation``. Readers try v1, then v0; bytes that
  fit neither count as "no previous assignment, default generation", which
  is what Java does (a broken blob must not break the rebalance).
* ``CooperativeStickyAssignorUserData`` v0: ``generation: int32``. Needed
  only for members on ConsumerProtocol subscription v0/v1, which cannot
  carry the generation themselves.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import NamedTuple

from kafkacore.assignors._types import DEFAULT_GENERATION, TopicPartition

__all__ = [
    "StickyUserData",
    "decode_cooperative_user_data",
    "decode_sticky_user_data",
    "encode_cooperative_user_data",
    "encode_sticky_user_data",
]

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_INT32_MAX = 2**31 - 1


class StickyUserData(NamedTuple):
    """Decoded sticky user data; ``generation`` is None for v0 or empty data."""

    partitions: tuple[TopicPartition, ...]
    generation: int | None


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int) -> bytes:
    """Encode ``StickyAssignorUserData`` v1 (topics sorted, partitions in given order)."""
    if not -(2**31) <= generation <= _INT32_MAX:
        raise ValueError(f"sticky user data: generation {generation} does not fit in int32")
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    out = bytearray(_I32.pack(len(by_topic)))
    for topic in sorted(by_topic):
        name = topic.encode()
        if len(name) > 0x7FFF:
            raise ValueError(f"sticky user data: topic name of {len(name)} bytes is too long")
        out += _I16.pack(len(name)) + name
        ids = by_topic[topic]
        out += _I32.pack(len(ids))
        out += struct.pack(f">{len(ids)}i", *ids)
    out += _I32.pack(generation)
    return bytes(out)


class _Short(Exception):
    """The blob ended early or holds an impossible length."""


def _read_assignment(data: bytes) -> tuple[list[TopicPartition], int]:
    pos = 0
    end = len(data)

    def i32() -> int:
        nonlocal pos
        if pos + 4 > end:
            raise _Short
        (v,) = _I32.unpack_from(data, pos)
        pos += 4
        return int(v)

    count = i32()
    # Each entry takes at least 6 bytes; a larger count is garbage, not a reason to allocate.
    if count < 0 or count * 6 > end - pos:
        raise _Short
    out: list[TopicPartition] = []
    for _ in range(count):
        if pos + 2 > end:
            raise _Short
        (length,) = _I16.unpack_from(data, pos)
        pos += 2
        if length < 0 or pos + length > end:
            raise _Short
        try:
            topic = data[pos : pos + length].decode()
        except UnicodeDecodeError:
            raise _Short from None
        pos += length
        n = i32()
        if n < 0 or n * 4 > end - pos:
            raise _Short
        ids = struct.unpack_from(f">{n}i", data, pos)
        pos += 4 * n
        out.extend(TopicPartition(topic, p) for p in ids)
    return out, pos


def decode_sticky_user_data(data: bytes | None) -> StickyUserData:
    """Decode sticky user data as Java does: v1, else v0, else nothing.

    Empty or missing data means the member has no previous assignment and
    no generation (``((), None)``); undecodable data gives ``((), -1)``.
    """
    if not data:
        return StickyUserData((), None)
    try:
        parts, pos = _read_assignment(data)
    except _Short:
        return StickyUserData((), DEFAULT_GENERATION)
    if pos + 4 <= len(data):
        (generation,) = _I32.unpack_from(data, pos)
        return StickyUserData(tuple(parts), int(generation))
    # No room for the v1 generation: a v0 blob.
    return StickyUserData(tuple(parts), None)


def encode_cooperative_user_data(generation: int) -> bytes:
    """Encode ``CooperativeStickyAssignorUserData`` v0 (the generation alone)."""
    if not -(2**31) <= generation <= _INT32_MAX:
        raise ValueError(f"cooperative user data: generation {generation} does not fit in int32")
    return _I32.pack(generation)


def decode_cooperative_user_data(data: bytes | None) -> int | None:
    """The generation in cooperative user data; None if absent, -1 if undecodable."""
    if data is None:
        return None
    if len(data) < 4:
        return DEFAULT_GENERATION
    return int(_I32.unpack_from(data, 0)[0])

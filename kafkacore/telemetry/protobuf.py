"""A small protocol-buffers writer: just what the OTLP metrics payload needs.

Theory of operation
-------------------
KIP-714 pushes metrics as an OpenTelemetry ``MetricsData`` message in the
protobuf binary format. kafkacore writes it by hand instead of depending on
a protobuf runtime: a message is the concatenation of its fields, each a
*tag* (``field_number << 3 | wire_type``, a base-128 varint) followed by
the value in its wire type:

* VARINT (0): int64/uint64/enum/bool as a base-128 varint; negative
  int64 values are written as their 64-bit two's complement (10 bytes);
* I64 (1): fixed64 / sfixed64 / double, 8 bytes little endian;
* LEN (2): strings, bytes and embedded messages, a varint length then the
  bytes.

Every function returns the encoded field as ``bytes``; a message is built
by joining its fields (in field-number order, as protobuf encoders do; a
decoder accepts any order). Proto3 leaves a field at its default value out;
these helpers always write what they are given, and the callers leave out
what they do not set.
"""

from __future__ import annotations

import struct
from enum import IntEnum
from typing import Final

__all__ = [
    "WireType",
    "bool_field",
    "bytes_field",
    "double_field",
    "fixed64_field",
    "message_field",
    "sfixed64_field",
    "string_field",
    "tag",
    "uvarint",
    "varint_field",
]

_U64: Final = (1 << 64) - 1
_DOUBLE: Final = struct.Struct("<d")
_FIXED64: Final = struct.Struct("<Q")
_SFIXED64: Final = struct.Struct("<q")


class WireType(IntEnum):
    """The protobuf wire types this writer emits."""

    VARINT = 0
    I64 = 1
    LEN = 2


def uvarint(value: int) -> bytes:
    """``value`` (0 <= value < 2**64) as a base-128 varint, low groups first."""
    if not 0 <= value <= _U64:
        raise ValueError(f"protobuf varint: {value} is outside 0..2**64-1")
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def tag(field: int, wire: WireType) -> bytes:
    """The key of field number ``field`` (1..2**29-1) with wire type ``wire``."""
    if not 1 <= field < 1 << 29:
        raise ValueError(f"protobuf tag: field number {field} is outside 1..2**29-1")
    return uvarint(field << 3 | wire)


def varint_field(field: int, value: int) -> bytes:
    """An int64/uint64/enum field; a negative value takes 10 bytes (two's complement)."""
    if not -(1 << 63) <= value <= _U64:
        raise ValueError(f"protobuf field {field}: {value} does not fit in 64 bits")
    return tag(field, WireType.VARINT) + uvarint(value & _U64)


def bool_field(field: int, value: bool) -> bytes:
    return tag(field, WireType.VARINT) + (b"\x01" if value else b"\x00")


def fixed64_field(field: int, value: int) -> bytes:
    return tag(field, WireType.I64) + _FIXED64.pack(value)


def sfixed64_field(field: int, value: int) -> bytes:
    return tag(field, WireType.I64) + _SFIXED64.pack(value)


def double_field(field: int, value: float) -> bytes:
    return tag(field, WireType.I64) + _DOUBLE.pack(value)


def bytes_field(field: int, value: bytes) -> bytes:
    return tag(field, WireType.LEN) + uvarint(len(value)) + value


def string_field(field: int, value: str) -> bytes:
    return bytes_field(field, value.encode("utf-8"))


def message_field(field: int, *parts: bytes) -> bytes:
    """An embedded message made of the already-encoded fields ``parts``."""
    return bytes_field(field, b"".join(parts))

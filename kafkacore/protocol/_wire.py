"""Primitive readers and writers shared by the generated message codecs.

Theory of operation
-------------------
The generated modules in :mod:`kafkacore.protocol.messages` do the bulk of
the work in straight-line code: runs of fixed-width fields are read with one
precompiled :class:`struct.Struct`, lengths are bound-checked inline. This
module holds only what is shared and not worth inlining: the big-endian
``Struct`` objects, unsigned varints (KIP-482 compact encodings) beyond the
one-byte fast path, tagged-field sections and the conversion of low-level
failures into :class:`~kafkacore.errors.DecodeError`.

Every reader works on a :class:`memoryview` ``buf`` with an absolute position
``pos`` and the end ``n`` of the readable bytes, and returns the new position.
A length or count is always checked against ``n - pos`` before anything is
sliced or allocated, so hostile lengths fail fast with a bounded cost.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from uuid import UUID

from kafkacore.errors import DecodeError, LocalProtocolError

__all__ = [
    "ARRAY_STRUCTS",
    "DECODE_FAILURES",
    "EMPTY_TAGS",
    "ENCODE_FAILURES",
    "I8",
    "I16",
    "I32",
    "I64",
    "SHORT_ARRAY",
    "U16",
    "UVARINT1",
    "ZERO_UUID",
    "Bad",
    "decode_failure",
    "encode_failure",
    "not_in_version",
    "null_field",
    "read_unknown_tag",
    "read_uvarint",
    "tags_not_supported",
    "uuid_from",
    "uvarint",
    "write_tags",
]

I8 = struct.Struct(">b")
I16 = struct.Struct(">h")
U16 = struct.Struct(">H")
I32 = struct.Struct(">i")
I64 = struct.Struct(">q")

#: Precompiled ``Struct`` objects for short arrays of fixed-width numbers,
#: by struct code and count: cheaper than formatting ">{n}i" on every array
#: (Metadata has three int32 arrays per partition).
SHORT_ARRAY = 32
ARRAY_STRUCTS: dict[str, tuple[struct.Struct, ...]] = {
    code: tuple(struct.Struct(f">{n}{code}") for n in range(SHORT_ARRAY)) for code in "?bhHiIqd"
}

#: One-byte encodings of the unsigned varints 0..127 (the usual lengths).
UVARINT1: tuple[bytes, ...] = tuple(bytes((i,)) for i in range(128))

ZERO_UUID = UUID(int=0)
EMPTY_TAGS: tuple[tuple[int, bytes], ...] = ()

#: Exceptions that signal malformed input inside a generated decoder. They are
#: turned into DecodeError at the struct boundary, so the hot path carries no
#: per-field checks for them.
DECODE_FAILURES = (
    struct.error,
    IndexError,
    ValueError,
    UnicodeDecodeError,
    OverflowError,
)


#: Exceptions that signal a bad value inside a generated encoder: a number
#: outside its wire range (struct.error), a wrong type, a string that cannot
#: be UTF-8 encoded. They become LocalProtocolError naming the field.
ENCODE_FAILURES = (struct.error, TypeError, AttributeError, ValueError, OverflowError)


def encode_failure(
    exc: Exception, struct_name: str, version: int, field: str
) -> LocalProtocolError:
    """Translate a failure while writing ``field`` into a LocalProtocolError."""
    where = f"{struct_name}.{field}" if field else struct_name
    return LocalProtocolError(
        f"{where} cannot be encoded at version {version} ({exc}); check its value and type"
    )


class Bad(ValueError):
    """Raised inline by generated decoders; becomes a DecodeError."""


def decode_failure(
    exc: Exception, struct_name: str, version: int, field: str, pos: int
) -> DecodeError:
    """Translate a low-level failure at ``pos`` into a DecodeError."""
    if isinstance(exc, Bad):
        reason = str(exc)
    elif isinstance(exc, (struct.error, IndexError)):
        reason = "truncated input"
    elif isinstance(exc, UnicodeDecodeError):
        reason = "string is not valid UTF-8"
    else:
        reason = f"malformed input ({exc})"
    return DecodeError(reason, api=struct_name, version=version, field=field, offset=pos)


def read_uvarint(buf: memoryview, pos: int) -> tuple[int, int]:
    """Read an unsigned varint of at most 5 bytes (a Java int), return (value, new pos)."""
    value = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise Bad("unsigned varint longer than 5 bytes")


def uvarint(value: int) -> bytes:
    """Encode an unsigned varint (value must fit in 32 bits)."""
    if value < 0x80:
        return UVARINT1[value]
    if value > 0xFFFFFFFF:
        raise LocalProtocolError(
            f"unsigned varint {value} does not fit in 32 bits; use a smaller length"
        )
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def uuid_from(buf: memoryview, pos: int) -> UUID:
    """Read 16 bytes as a UUID (most significant half first)."""
    if pos + 16 > len(buf):
        raise Bad("truncated uuid")
    return UUID(bytes=bytes(buf[pos : pos + 16]))


def read_unknown_tag(
    unknown: tuple[tuple[int, bytes], ...], tag: int, buf: memoryview, pos: int, end: int
) -> tuple[tuple[int, bytes], ...]:
    """Keep an unknown tagged field so that it survives a round trip (KIP-482)."""
    return (*unknown, (tag, bytes(buf[pos:end])))


def write_tags(out: bytearray, tags: Iterable[tuple[int, bytes | bytearray]]) -> None:
    """Write a tagged-field section: known and unknown fields merged in tag order."""
    ordered = sorted(tags, key=_tag_of)
    out += uvarint(len(ordered))
    last = -1
    for tag, payload in ordered:
        if tag == last:
            raise LocalProtocolError(
                f"tagged field {tag} set twice; remove it from unknown_tagged_fields"
            )
        last = tag
        out += uvarint(tag)
        out += uvarint(len(payload))
        out += payload


def _tag_of(item: tuple[int, bytes | bytearray]) -> int:
    return item[0]


def null_field(struct_name: str, field: str, version: int) -> LocalProtocolError:
    """A None in a field that the version cannot carry as null."""
    return LocalProtocolError(
        f"{struct_name}.{field} is None but is not nullable at version {version}; set a value"
    )


def not_in_version(struct_name: str, field: str, version: int) -> LocalProtocolError:
    """A non-default value in a field that the version lacks (Java: UnsupportedVersionException)."""
    return LocalProtocolError(
        f"{struct_name}.{field} has a non-default value but version {version} lacks the field; "
        "leave it at its default or use a newer version"
    )


def tags_not_supported(struct_name: str, version: int) -> LocalProtocolError:
    """Unknown tagged fields set on a version without tagged fields (KIP-482)."""
    return LocalProtocolError(
        f"{struct_name} has unknown_tagged_fields but version {version} is not flexible; "
        "clear them or use a flexible version"
    )

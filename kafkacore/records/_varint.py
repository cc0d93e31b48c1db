"""Zigzag varints as used inside v2 records (see NOTES.md c.1).

The hot loops in :mod:`kafkacore.records._decode` and
:mod:`kafkacore.records.builder` inline the one- and two-byte cases; the
functions here are the general (slow) path and the precomputed tables.
"""

from __future__ import annotations

from typing import Final

__all__ = ["ZIGZAG", "ZIGZAG_LIMIT", "read_zigzag", "zigzag_bytes"]

#: Values 0 <= n < ZIGZAG_LIMIT have a precomputed encoding (two bytes at most).
ZIGZAG_LIMIT: Final = 8192


def _encode(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


#: ``ZIGZAG[n]`` is the zigzag varint encoding of ``n`` for 0 <= n < ZIGZAG_LIMIT.
ZIGZAG: Final[tuple[bytes, ...]] = tuple(_encode(n) for n in range(ZIGZAG_LIMIT))

_MIN64: Final = -(1 << 63)
_MAX64: Final = (1 << 63) - 1


def zigzag_bytes(n: int) -> bytes:
    """Zigzag varint encoding of a signed 64-bit ``n``."""
    if 0 <= n < ZIGZAG_LIMIT:
        return ZIGZAG[n]
    if not _MIN64 <= n <= _MAX64:
        raise ValueError(f"varint value {n} is outside the signed 64-bit range")
    return _encode(n)


def read_zigzag(buf: bytes, pos: int, max_bytes: int) -> tuple[int, int]:
    """Read a zigzag varint of at most ``max_bytes`` bytes (5 for int32, 10 for int64).

    Returns ``(value, new_pos)``. Raises IndexError past the end of ``buf`` and
    ValueError on an overlong or out-of-range varint; the callers turn both
    into a DecodeError naming the structure.
    """
    z = 0
    shift = 0
    for _ in range(max_bytes):
        b = buf[pos]
        pos += 1
        z |= (b & 0x7F) << shift
        if b < 0x80:
            if z >> (64 if max_bytes == 10 else 32):
                raise ValueError(f"varint value out of range for {max_bytes}-byte varint")
            return (z >> 1) ^ -(z & 1), pos
        shift += 7
    raise ValueError(f"varint longer than {max_bytes} bytes")

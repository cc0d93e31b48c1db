"""CRC-32C (Castagnoli) of record batches (NOTES.md c.8).

The compiled extension computes it with the ``crc32c`` crate (SSE 4.2 /
ARMv8 CRC instructions where the CPU has them). :func:`crc32c_py` is the
pure-Python path's (``KAFKACORE_PURE=1``, or no extension):

* short inputs go through a 256-entry table, one byte per step (about
  50-100 ns a byte: fine below a few KiB);
* longer ones borrow the checksums of the snappy framing format, which
  stores the CRC-32C of every chunk of at most 64 KiB it writes (masked,
  framing_format.txt section 3). cramjam (already the pure path's snappy
  codec) writes that framing natively; the chunk checksums are then
  combined (zlib's ``crc32_combine`` method, over GF(2)) into the CRC of
  the whole input: about 1 us per KiB instead of 100.

Both branches are checked against the extension and the independent
``crc32c`` package (tests/native/test_differential_codecs.py).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Final

from kafkacore.records import _backend

__all__ = ["crc32c", "crc32c_py"]

_POLY: Final = 0x82F63B78  # CRC-32C, reflected
_TABLE_LIMIT: Final = 4096
_MASK_DELTA: Final = 0xA282EAD8
_M32: Final = 0xFFFFFFFF


def _table() -> tuple[int, ...]:
    out = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        out.append(c)
    return tuple(out)


_TABLE: Final = _table()


def _crc_table(view: memoryview, value: int) -> int:
    table = _TABLE
    crc = value ^ _M32
    for b in view:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ _M32


def _times(matrix: tuple[int, ...], vector: int) -> int:
    out = 0
    i = 0
    while vector:
        if vector & 1:
            out ^= matrix[i]
        vector >>= 1
        i += 1
    return out


def _square(matrix: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(_times(matrix, row) for row in matrix)


#: Advances a CRC over one zero bit: shift right, feeding the polynomial back.
_ONE_ZERO_BIT: Final = (_POLY, *(1 << n for n in range(31)))


@cache
def _zeros_operator(k: int) -> tuple[int, ...]:
    """GF(2) matrix that advances a CRC over 2**k zero bytes (squares of the bit operator)."""
    if k == 0:
        return _square(_square(_square(_ONE_ZERO_BIT)))
    return _square(_zeros_operator(k - 1))


def _combine(crc1: int, crc2: int, len2: int) -> int:
    """CRC of A + B from crc(A), crc(B) and len(B) (zlib's crc32_combine)."""
    k = 0
    while len2:
        if len2 & 1:
            crc1 = _times(_zeros_operator(k), crc1)
        len2 >>= 1
        k += 1
    return crc1 ^ crc2


def _unmask(masked: int) -> int:
    rot = (masked - _MASK_DELTA) & _M32
    return ((rot >> 17) | (rot << 15)) & _M32


def _snappy_length(block: memoryview) -> int:
    n = shift = 0
    for b in block[:5]:
        n |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    return n


def _crc_framed(view: memoryview, value: int) -> int:
    # Imported here: only the pure path's long inputs need it (see above).
    import cramjam

    frame = memoryview(cramjam.snappy.compress(view)).cast("B")
    crc = value
    pos = 0
    while pos < len(frame):
        kind = frame[pos]
        size = int.from_bytes(frame[pos + 1 : pos + 4], "little")
        body = frame[pos + 4 : pos + 4 + size]
        pos += 4 + size
        if kind == 0x00:  # compressed chunk: its uncompressed length leads the block
            length = _snappy_length(body[4:])
        elif kind == 0x01:  # stored chunk
            length = size - 4
        else:  # stream identifier, padding
            continue
        crc = _combine(crc, _unmask(int.from_bytes(body[:4], "little")), length)
    return crc


def crc32c_py(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC-32C of ``data``, continuing from ``value`` (a previous result)."""
    view = memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    if len(view) < _TABLE_LIMIT:
        return _crc_table(view, value)
    return _crc_framed(view, value)


#: ``crc32c(data, value=0) -> int``: CRC-32C of a bytes-like object, continuing from ``value``.
crc32c: Callable[..., int]
if _backend.NATIVE:
    from kafkacore.records._native import crc32c
else:
    crc32c = crc32c_py

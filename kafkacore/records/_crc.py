"""CRC-32C (Castagnoli) of record batches (NOTES.md c.8).

The compiled extension computes it with the ``crc32c`` crate (SSE 4.2 /
ARMv8 CRC instructions where the CPU has them). The pure-Python version
below is the reference and the fallback: table-driven, one byte per step,
so about 50 ns a byte; a consumer on the pure path with ``check_crcs`` pays
that for every batch (docs/records.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from kafkacore.records import _backend

__all__ = ["crc32c", "crc32c_py"]

_POLY: Final = 0x82F63B78  # CRC-32C, reflected


def _table() -> tuple[int, ...]:
    out = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        out.append(c)
    return tuple(out)


_TABLE: Final = _table()


def crc32c_py(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC-32C of ``data``, continuing from ``value`` (a previous result)."""
    table = _TABLE
    crc = value ^ 0xFFFFFFFF
    for b in memoryview(data).cast("B"):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


#: ``crc32c(data, value=0) -> int``: CRC-32C of a bytes-like object, continuing from ``value``.
crc32c: Callable[..., int]
if _backend.NATIVE:
    from kafkacore.records._native import crc32c
else:
    crc32c = crc32c_py

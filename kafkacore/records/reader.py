"""Splitting a records blob (a ``records`` field of Produce or Fetch) into batches.

Theory of operation
-------------------
A records blob is a concatenation of log entries that all start with
``baseOffset int64, length int32`` and carry the magic byte at offset 16, in
every format (NOTES.md c.2). :func:`iter_batches` walks the blob, looks at the
magic and yields a :class:`~kafkacore.records.batch.RecordBatch` (magic 2) or a
:class:`~kafkacore.records.legacy.LegacyBatch` (magic 0/1) over a zero-copy
slice. A fetch response may end with a partial batch cut by the size limit:
it is not an error and is not yielded (:func:`trailing_partial_bytes` says how
many bytes were left over, so a consumer that made no progress can tell that
the batch is larger than its fetch size).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Final

from kafkacore.errors import DecodeError
from kafkacore.records.batch import RecordBatch
from kafkacore.records.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from kafkacore.records.legacy import LegacyBatch

__all__ = ["iter_batches", "trailing_partial_bytes"]

#: baseOffset + length + 4 more bytes (v2 leader epoch / legacy CRC) + magic.
HEADER_SIZE_UP_TO_MAGIC: Final = 17
_I32: Final = struct.Struct(">i")


def _complete_entries(view: memoryview) -> Iterator[tuple[int, int, int]]:
    pos = 0
    end = len(view)
    while end - pos >= HEADER_SIZE_UP_TO_MAGIC:
        (length,) = _I32.unpack_from(view, pos + 8)
        if length < 0:
            raise DecodeError(
                f"negative batch length {length}",
                api="records",
                field="batchLength",
                offset=pos + 8,
            )
        size = 12 + length
        if pos + size > end:
            return
        yield pos, size, view[pos + 16]
        pos += size


def iter_batches(
    data: bytes | bytearray | memoryview,
    *,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    check_crc: bool = True,
) -> Iterator[RecordBatch | LegacyBatch]:
    """Yield the complete batches of ``data`` in order, without copying them."""
    view = memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    # The walk of _complete_entries, written out: this generator runs for
    # every fetched partition, and a helper generator is one more frame on
    # every batch of the receive path (issue 12).
    pos = 0
    end = len(view)
    while end - pos >= HEADER_SIZE_UP_TO_MAGIC:
        (length,) = _I32.unpack_from(view, pos + 8)
        if length < 0:
            raise DecodeError(
                f"negative batch length {length}",
                api="records",
                field="batchLength",
                offset=pos + 8,
            )
        size = 12 + length
        if pos + size > end:
            return
        magic = view[pos + 16]
        entry = view[pos : pos + size]
        try:
            if magic == 2:
                yield RecordBatch(
                    entry, max_decompressed_size=max_decompressed_size, check_crc=check_crc
                )
            elif magic in (0, 1):
                yield LegacyBatch(
                    entry, max_decompressed_size=max_decompressed_size, check_crc=check_crc
                )
            else:
                raise DecodeError(
                    f"unknown magic {magic}", api="records", field="magic", offset=pos + 16
                )
        except DecodeError as exc:
            if exc.offset is not None and exc.api != "records":
                exc.offset += pos
                exc.args = (f"{exc.args[0]} (batch at byte {pos})",)
            raise
        pos += size


def trailing_partial_bytes(data: bytes | bytearray | memoryview) -> int:
    """How many bytes at the end of ``data`` do not form a complete batch."""
    view = memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    consumed = 0
    for pos, size, _ in _complete_entries(view):
        consumed = pos + size
    return len(view) - consumed

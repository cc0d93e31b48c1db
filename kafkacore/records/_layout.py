"""The byte layout of a v2 (magic 2) record batch, shared by its reader and its builder.

The fixed 61-byte header (NOTES.md c.2), where the CRC starts, the attribute
bits, and the smallest record a records section can hold. Kept apart from
:mod:`kafkacore.records.batch` so the decoding helpers (pure loops, careful
diagnosis, Arrow layout) can use it without importing the batch class.
"""

from __future__ import annotations

import struct
from typing import Final

__all__ = [
    "API",
    "ATTR_COMPRESSION",
    "ATTR_CONTROL",
    "ATTR_DELETE_HORIZON",
    "ATTR_TIMESTAMP_TYPE",
    "ATTR_TRANSACTIONAL",
    "CRC_START",
    "HEADER",
    "LOG_OVERHEAD",
    "MIN_RECORD_SIZE",
    "RECORD_BATCH_OVERHEAD",
]

#: The structure named in every DecodeError about a v2 batch.
API: Final = "RecordBatch v2"

#: baseOffset..recordsCount: the fixed header of every v2 batch.
HEADER: Final = struct.Struct(">qiibIhiqqqhii")
RECORD_BATCH_OVERHEAD: Final = HEADER.size  # 61
#: Bytes before the length field is counted (baseOffset + batchLength).
LOG_OVERHEAD: Final = 12
#: CRC covers attributes (offset 21) to the end.
CRC_START: Final = 21
#: Smallest possible record: length, attributes, timestamp delta, offset
#: delta, key length, value length, header count: one byte each.
MIN_RECORD_SIZE: Final = 7

ATTR_COMPRESSION: Final = 0x07
ATTR_TIMESTAMP_TYPE: Final = 0x08
ATTR_TRANSACTIONAL: Final = 0x10
ATTR_CONTROL: Final = 0x20
ATTR_DELETE_HORIZON: Final = 0x40

"""Plain data types shared by the record readers and writers."""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple, TypeAlias

from kafkacore.errors import DecodeError

__all__ = [
    "ArrowColumns",
    "BinaryColumn",
    "ControlRecord",
    "ControlRecordType",
    "CorruptRecordError",
    "Header",
    "HeaderColumns",
    "Record",
    "RecordColumns",
    "TimestampType",
]

#: One record header: a UTF-8 key and a nullable value.
Header: TypeAlias = tuple[str, bytes | None]


class CorruptRecordError(DecodeError):
    """A checksum did not match: the bytes were damaged on disk or in transit.

    Raised for a CRC-32C mismatch of a v2 batch and a CRC-32 mismatch of a
    legacy message. It is a :class:`DecodeError`, so code that handles decode
    failures handles it too; catch it separately to tell corruption (re-fetch,
    alert) from a malformed stream (a bug on the writing side).
    """


class TimestampType(IntEnum):
    """Batch attribute bit 3 (magic 1 and 2)."""

    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class Record(NamedTuple):
    """One record as an application sees it. Offsets and timestamps are absolute."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordColumns:
    """The records of one batch as parallel columns, for bulk readers.

    ``offsets`` and ``timestamps`` are ``array('q')`` (cheap to hand to numpy
    or Arrow through the buffer protocol); the other columns are lists with one
    entry per record.
    """

    offsets: array[int]
    timestamps: array[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[tuple[Header, ...]]

    def __len__(self) -> int:
        return len(self.offsets)

    def records(self) -> list[Record]:
        """Materialize the columns as :class:`Record` tuples."""
        return list(
            map(
                Record._make,
                zip(
                    self.offsets, self.timestamps, self.keys, self.values, self.headers, strict=True
                ),
            )
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class BinaryColumn:
    """A nullable binary column in Arrow's layout, ready for ``pyarrow.Array.from_buffers``.

    ``offsets`` is int32 (format ``"i"``), one more entry than values: value
    ``i`` is ``data[offsets[i]:offsets[i + 1]]``. ``validity`` is Arrow's
    bitmap (bit ``i % 8`` of byte ``i // 8`` set when value ``i`` is not
    null), None when no value is null. All buffers are native byte order and
    read-only; the compiled path fills them without holding the GIL and
    pyarrow wraps them without a copy::

        pa.Array.from_buffers(
            pa.binary(), len(col),
            [col.validity and pa.py_buffer(col.validity), pa.py_buffer(col.offsets),
             pa.py_buffer(col.data)],
            null_count=col.null_count,
        )
    """

    offsets: memoryview
    data: memoryview
    validity: memoryview | None
    null_count: int

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def to_list(self) -> list[bytes | None]:
        """The values as Python objects (for tests and small batches)."""
        ends = self.offsets.cast("B").cast("i")
        data = self.data.cast("B")
        bits = self.validity
        return [
            None
            if bits is not None and not bits[i >> 3] & (1 << (i & 7))
            else bytes(data[ends[i] : ends[i + 1]])
            for i in range(len(self))
        ]


@dataclass(frozen=True, slots=True, kw_only=True)
class HeaderColumns:
    """Record headers as Arrow ``list<struct<key: string, value: binary>>`` buffers.

    ``offsets`` (int32, one more than records) delimits each record's
    headers in the flattened ``keys`` (UTF-8, never null) and ``values``.
    """

    offsets: memoryview
    keys: BinaryColumn
    values: BinaryColumn


@dataclass(frozen=True, slots=True, kw_only=True)
class ArrowColumns:
    """The records of one batch as Arrow-ready buffers (``RecordBatch.arrow_columns()``).

    ``offsets`` and ``timestamps`` are int64 (format ``"q"``) for
    ``pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(...)])``;
    ``headers`` is None when no record has a header.
    """

    offsets: memoryview
    timestamps: memoryview
    keys: BinaryColumn
    values: BinaryColumn
    headers: HeaderColumns | None

    def __len__(self) -> int:
        return len(self.keys)


class ControlRecordType(IntEnum):
    """Type field of a control record key (NOTES.md c.6). Unknown types are kept as ints."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlRecord:
    """The single record of a control batch, decoded.

    ``type`` is a :class:`ControlRecordType` or a plain int for a type this
    client does not know (such records must be ignored, not rejected).
    ``coordinator_epoch`` is set for ABORT and COMMIT markers only.
    """

    offset: int
    timestamp: int
    version: int
    type: ControlRecordType | int
    coordinator_epoch: int | None

    @property
    def is_transaction_marker(self) -> bool:
        return self.type in (ControlRecordType.ABORT, ControlRecordType.COMMIT)

"""Record batch v2 (magic 2) reader.

Theory of operation
-------------------
A :class:`RecordBatch` wraps the bytes of one batch (a ``memoryview`` slice of
a fetch response, not a copy). Construction reads and checks the fixed
61-byte header only (NOTES.md c.2): magic, length, attributes and a record
count that the remaining bytes can hold. Records are decoded on demand:

* iterating the batch yields :class:`~kafkacore.records.model.Record`
  tuples one at a time (lazy);
* :meth:`RecordBatch.columns` decodes all records in one tight loop into
  parallel columns, the fast path for bulk readers.

Before records are decoded, the CRC-32C over bytes [21, end) is checked
(``check_crc=True``, the Java consumer's default ``check.crcs``); a mismatch
raises :class:`~kafkacore.records.model.CorruptRecordError`. A compressed
records section is inflated once, bounded by ``max_decompressed_size``.

* :meth:`RecordBatch.arrow_columns` gives the same columns in Arrow's
  layout (int32 offsets and one data buffer per binary column), for
  ``pyarrow.Array.from_buffers`` without a copy.

Two implementations decode the records (:mod:`kafkacore.records._backend`
picks one at import): the compiled extension (CRC check and decompression
with the GIL released for large batches, then the records) and the
pure-Python loops of :mod:`kafkacore.records._decode`, the reference. They
yield the same records and raise the same errors for the same bytes; both
iterators decode a record when it is asked for, so the records before a
fault are yielded first.

Error handling: the pure record loops assume well-formed input and run
without per-field checks; any failure inside them (index past the end, bad
varint, bad UTF-8, bytes left over, an absolute offset or timestamp outside
int64) is re-parsed by the careful slow decoder of
:mod:`kafkacore.records._diagnose`, which names the record, the field and
the byte offset in a :class:`~kafkacore.errors.DecodeError`. Nothing else
escapes. The compiled path runs that careful decoder's checks in one pass
and reports the same error.

Where things live: this module holds the batch (header checks, the choice
of path, control records); :mod:`kafkacore.records._layout` the header
layout and attribute bits (re-exported here), :mod:`kafkacore.records._arrow`
the Arrow buffers.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterator
from typing import TYPE_CHECKING, ClassVar, Final

from kafkacore.errors import DecodeError, LocalProtocolError
from kafkacore.records import _backend
from kafkacore.records._arrow import arrow_from_columns
from kafkacore.records._crc import crc32c, crc32c_py
from kafkacore.records._layout import API as API
from kafkacore.records._layout import ATTR_COMPRESSION as ATTR_COMPRESSION
from kafkacore.records._layout import ATTR_CONTROL as ATTR_CONTROL
from kafkacore.records._layout import ATTR_DELETE_HORIZON as ATTR_DELETE_HORIZON
from kafkacore.records._layout import ATTR_TIMESTAMP_TYPE as ATTR_TIMESTAMP_TYPE
from kafkacore.records._layout import ATTR_TRANSACTIONAL as ATTR_TRANSACTIONAL
from kafkacore.records._layout import CRC_START as CRC_START
from kafkacore.records._layout import HEADER as HEADER
from kafkacore.records._layout import LOG_OVERHEAD as LOG_OVERHEAD
from kafkacore.records._layout import MIN_RECORD_SIZE as MIN_RECORD_SIZE
from kafkacore.records._layout import RECORD_BATCH_OVERHEAD as RECORD_BATCH_OVERHEAD
from kafkacore.records.compression import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    Compression,
    decompress_py,
)
from kafkacore.records.model import (
    ArrowColumns,
    ControlRecord,
    ControlRecordType,
    CorruptRecordError,
    Header,
    Record,
    RecordColumns,
    TimestampType,
)

if _backend.NATIVE_UNAVAILABLE is None:
    # Bound whenever the extension imports, even with KAFKACORE_PURE=1: the
    # differential tests drive a compiled batch beside the pure one.
    from kafkacore.records import _native
    from kafkacore.records._arrow import arrow_from_native
if TYPE_CHECKING:
    # The pure loops (kafkacore.records._decode, about 0.6 MiB with their
    # tables) load where they run, on the first batch decoded the pure way:
    # never in a process on the compiled path unless a test or a benchmark
    # asks for the pure one (a RecordBatch subclass with _compiled False).
    from kafkacore.records._decode import Section

#: A record without headers (what the pure loops use too).
_EMPTY: Final[tuple[Header, ...]] = ()

__all__ = ["RECORD_BATCH_OVERHEAD", "RecordBatch"]


class RecordBatch:
    """One magic-2 record batch, header parsed, records decoded on demand."""

    __slots__ = (
        "_buf",
        "_check_crc",
        "_max_decompressed_size",
        "attributes",
        "base_offset",
        "base_sequence",
        "base_timestamp",
        "batch_length",
        "crc",
        "last_offset_delta",
        "max_timestamp",
        "partition_leader_epoch",
        "producer_epoch",
        "producer_id",
        "record_count",
    )

    magic: Final = 2
    #: Decode through the compiled extension. The backend decides once for
    #: the process; tests subclass RecordBatch to run one path or the other.
    _compiled: ClassVar[bool] = _backend.NATIVE
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    def __init__(
        self,
        buffer: bytes | bytearray | memoryview,
        *,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
        check_crc: bool = True,
    ) -> None:
        if max_decompressed_size < 0:
            raise ValueError(
                f"RecordBatch: max_decompressed_size must be >= 0, got {max_decompressed_size}"
            )
        view = memoryview(buffer)
        if view.format != "B" or view.ndim != 1:
            view = view.cast("B")
        if len(view) < RECORD_BATCH_OVERHEAD:
            raise DecodeError(
                f"need {RECORD_BATCH_OVERHEAD} header bytes, have {len(view)}",
                api=API,
                field="header",
                offset=0,
            )
        (
            self.base_offset,
            self.batch_length,
            self.partition_leader_epoch,
            magic,
            self.crc,
            self.attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.record_count,
        ) = HEADER.unpack_from(view, 0)
        if magic != 2:
            raise DecodeError(f"magic is {magic}, expected 2", api=API, field="magic", offset=16)
        size = LOG_OVERHEAD + self.batch_length
        if self.batch_length < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD:
            raise DecodeError(
                f"batch length {self.batch_length} is below the header size",
                api=API,
                field="batchLength",
                offset=8,
            )
        if size > len(view):
            raise DecodeError(
                f"batch length {self.batch_length} exceeds the {len(view) - LOG_OVERHEAD}"
                " bytes available",
                api=API,
                field="batchLength",
                offset=8,
            )
        if self.record_count < 0:
            raise DecodeError(
                f"negative record count {self.record_count}",
                api=API,
                field="recordsCount",
                offset=57,
            )
        if (
            self.attributes & ATTR_COMPRESSION == 0
            and self.record_count * MIN_RECORD_SIZE > size - RECORD_BATCH_OVERHEAD
        ):
            raise DecodeError(
                f"record count {self.record_count} cannot fit in"
                f" {size - RECORD_BATCH_OVERHEAD} bytes",
                api=API,
                field="recordsCount",
                offset=57,
            )
        self._buf = view[:size]
        self._max_decompressed_size = max_decompressed_size
        self._check_crc = check_crc

    # ---- header views -------------------------------------------------

    @property
    def size_in_bytes(self) -> int:
        return len(self._buf)

    @property
    def compression(self) -> Compression:
        code = self.attributes & ATTR_COMPRESSION
        try:
            return Compression(code)
        except ValueError:
            raise DecodeError(
                f"unknown compression codec {code}", api=API, field="attributes", offset=21
            ) from None

    @property
    def timestamp_type(self) -> TimestampType:
        return (
            TimestampType.LOG_APPEND_TIME
            if self.attributes & ATTR_TIMESTAMP_TYPE
            else TimestampType.CREATE_TIME
        )

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & ATTR_DELETE_HORIZON)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        """Where the next fetch starts: past the last offset, even if compaction removed records."""
        return self.base_offset + self.last_offset_delta + 1

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record (wrapping at 2**31 - 1), or -1 without a sequence."""
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF

    @property
    def buffer(self) -> memoryview:
        """The batch's bytes, exactly ``size_in_bytes`` long (no copy)."""
        return self._buf

    def crc_valid(self) -> bool:
        """Whether the stored CRC-32C matches bytes [21, end)."""
        crc = crc32c if self._compiled else crc32c_py
        return crc(self._buf[CRC_START:]) == self.crc

    def __repr__(self) -> str:
        return (
            f"<RecordBatch v2 offsets {self.base_offset}..{self.last_offset}"
            f" count={self.record_count}"
            f" {self.compression.name.lower()} {'control ' if self.is_control else ''}"
            f"{'txn ' if self.is_transactional else ''}size={self.size_in_bytes}>"
        )

    # ---- records ------------------------------------------------------

    def _records_section(self) -> bytes:
        # The pure path end to end: its CRC and its codecs too.
        if self._check_crc:
            actual = crc32c_py(self._buf[CRC_START:])
            if actual != self.crc:
                raise CorruptRecordError(
                    f"CRC-32C is {actual:#010x}, header says {self.crc:#010x};"
                    " the batch is corrupt, fetch it again",
                    api=API,
                    field="crc",
                    offset=17,
                )
        body = self._buf[RECORD_BATCH_OVERHEAD:]
        codec = self.attributes & ATTR_COMPRESSION
        if codec == 0:
            return bytes(body)
        data = decompress_py(codec, body, max_size=self._max_decompressed_size, api=API)
        if self.record_count * MIN_RECORD_SIZE > len(data):
            raise DecodeError(
                f"record count {self.record_count} cannot fit in {len(data)} decompressed bytes",
                api=API,
                field="recordsCount",
                offset=57,
            )
        return data

    def _section(self) -> Section:
        """The pure loops' input: the records (CRC checked, inflated) and the batch's values."""
        from kafkacore.records import _decode

        uncompressed = self.attributes & ATTR_COMPRESSION == 0
        return _decode.Section(
            self._records_section(),
            self.record_count,
            self.base_offset,
            self.base_timestamp,
            self.max_timestamp if self.attributes & ATTR_TIMESTAMP_TYPE else None,
            RECORD_BATCH_OVERHEAD if uncompressed else None,
        )

    def __iter__(self) -> Iterator[Record]:
        """Yield the records one by one (the pure path decodes each when it is asked for)."""
        if self._compiled:
            return _native.iter_records(self._buf, self._check_crc, self._max_decompressed_size)
        from kafkacore.records import _decode

        return _decode.iter_records(self._section())

    def records(self) -> list[Record]:
        """All records as a list."""
        if self._compiled:
            return _native.decode_records(self._buf, self._check_crc, self._max_decompressed_size)
        return self.columns().records()

    def columns(self) -> RecordColumns:
        """Decode every record at once into parallel columns (the bulk fast path)."""
        if self._compiled:
            offsets_b, timestamps_b, keys, values, headers = _native.decode_columns(
                self._buf, self._check_crc, self._max_decompressed_size
            )
            offsets = array("q")
            offsets.frombytes(offsets_b)
            timestamps = array("q")
            timestamps.frombytes(timestamps_b)
            return RecordColumns(
                offsets=offsets,
                timestamps=timestamps,
                keys=keys,
                values=values,
                headers=[_EMPTY] * len(keys) if headers is None else headers,
            )
        from kafkacore.records import _decode

        return _decode.decode_columns(self._section())

    def arrow_columns(self) -> ArrowColumns:
        """The records as Arrow-ready buffers (see :class:`~kafkacore.records.model.ArrowColumns`).

        Raises OverflowError when the keys, values or headers of the batch
        exceed 2 GiB (Arrow's int32 offsets); :meth:`columns` has no such limit.
        """
        if self._compiled:
            return arrow_from_native(
                _native.decode_arrow(self._buf, self._check_crc, self._max_decompressed_size)
            )
        return arrow_from_columns(self.columns())

    def control_record(self) -> ControlRecord:
        """Decode the record of a control batch (a transaction marker or a KRaft record)."""
        if not self.is_control:
            raise LocalProtocolError(
                "RecordBatch.control_record() on a data batch; check is_control first"
            )
        records = self.records()
        if not records:
            raise DecodeError(
                "control batch holds no record", api=API, field="recordsCount", offset=57
            )
        return decode_control_record(records[0])


def decode_control_record(record: Record) -> ControlRecord:
    """Interpret a control record's key (version, type) and, for markers, its value."""
    key = record.key
    if key is None or len(key) < 4:
        raise DecodeError(
            "control record key must hold int16 version and int16 type", api=API, field="key"
        )
    version, ctype = struct.unpack_from(">hh", key)
    try:
        kind: ControlRecordType | int = ControlRecordType(ctype)
    except ValueError:
        kind = ctype
    epoch: int | None = None
    if kind in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        value = record.value
        if value is None or len(value) < 6:
            raise DecodeError(
                "transaction marker value must hold int16 version and int32 coordinator epoch",
                api=API,
                field="value",
            )
        (epoch,) = struct.unpack_from(">i", value, 2)
    return ControlRecord(
        offset=record.offset,
        timestamp=record.timestamp,
        version=version,
        type=kind,
        coordinator_epoch=epoch,
    )

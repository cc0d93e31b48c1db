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
pure-Python loops below, the reference. They yield the same records and
raise the same errors for the same bytes; both iterators decode a record
when it is asked for, so the records before a fault are yielded first.

Error handling: the pure record loops assume well-formed input and run
without per-field checks; any failure inside them (index past the end, bad
varint, bad UTF-8, bytes left over, an absolute offset or timestamp outside
int64) is re-parsed by a careful slow decoder that names the record, the
field and the byte offset in a :class:`~kafkacore.errors.DecodeError`.
Nothing else escapes. The compiled path runs that careful decoder's checks
in one pass and reports the same error.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterator
from itertools import accumulate
from typing import ClassVar, Final

from kafkacore.errors import DecodeError, LocalProtocolError
from kafkacore.records import _backend
from kafkacore.records._crc import crc32c, crc32c_py
from kafkacore.records._varint import read_zigzag
from kafkacore.records.compression import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    Compression,
    decompress_py,
)
from kafkacore.records.model import (
    ArrowColumns,
    BinaryColumn,
    ControlRecord,
    ControlRecordType,
    CorruptRecordError,
    Header,
    HeaderColumns,
    Record,
    RecordColumns,
    TimestampType,
)

if _backend.NATIVE:
    from kafkacore.records import _native

__all__ = ["RECORD_BATCH_OVERHEAD", "RecordBatch"]

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

_EMPTY: Final[tuple[Header, ...]] = ()
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
# A delta from a one- or two-byte varint is below 8192 in magnitude: base
# values this far from the int64 limits cannot overflow with one.
_SMALL_DELTA: Final = 8192
# Zigzag decode table for every one- and two-byte varint: _ZZ[z] where z is
# the varint's 7-bit groups put together (z = b for one byte, else
# (b2 << 7) + b - 0x80). 16 Ki small ints: cheaper than the arithmetic.
_ZZ: Final = tuple((z >> 1) ^ -(z & 1) for z in range(1 << 14))


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

    def _fixed_timestamp(self) -> int | None:
        return self.max_timestamp if self.attributes & ATTR_TIMESTAMP_TYPE else None

    def __iter__(self) -> Iterator[Record]:
        """Yield the records one by one (the pure path decodes each when it is asked for)."""
        if self._compiled:
            return _native.iter_records(self._buf, self._check_crc, self._max_decompressed_size)
        return _iter_records(
            self._records_section(),
            self.record_count,
            self.base_offset,
            self.base_timestamp,
            self._fixed_timestamp(),
            RECORD_BATCH_OVERHEAD if self.attributes & ATTR_COMPRESSION == 0 else None,
        )

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
        return _decode_columns(
            self._records_section(),
            self.record_count,
            self.base_offset,
            self.base_timestamp,
            self._fixed_timestamp(),
            RECORD_BATCH_OVERHEAD if self.attributes & ATTR_COMPRESSION == 0 else None,
        )

    def arrow_columns(self) -> ArrowColumns:
        """The records as Arrow-ready buffers (see :class:`~kafkacore.records.model.ArrowColumns`).

        Raises OverflowError when the keys, values or headers of the batch
        exceed 2 GiB (Arrow's int32 offsets); :meth:`columns` has no such limit.
        """
        if self._compiled:
            return _arrow_from_native(
                _native.decode_arrow(self._buf, self._check_crc, self._max_decompressed_size)
            )
        return _arrow_from_columns(self.columns())

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


# ---------------------------------------------------------------------------
# Arrow layout. The pure version builds from the columns; the compiled one
# hands over buffers it filled without the GIL. Both give identical bytes.
# ---------------------------------------------------------------------------

_ARROW_TOO_BIG: Final = (
    "the batch holds more than 2 GiB of keys, values or headers: "
    "Arrow's int32 offsets cannot address it; use columns()"
)


def _binary_column(items: list[bytes | None]) -> BinaryColumn:
    n = len(items)
    ends = array("q", accumulate((0 if item is None else len(item) for item in items), initial=0))
    if ends[-1] > 2**31 - 1:
        raise OverflowError(_ARROW_TOO_BIG)
    validity: memoryview | None = None
    nulls = [i for i, item in enumerate(items) if item is None]
    if nulls:
        bits = bytearray(b"\xff" * ((n + 7) // 8))
        if n % 8:
            bits[-1] = (1 << (n % 8)) - 1
        for i in nulls:
            bits[i >> 3] &= ~(1 << (i & 7)) & 0xFF
        validity = memoryview(bytes(bits))
    return BinaryColumn(
        offsets=memoryview(array("i", ends)),
        data=memoryview(b"".join(item for item in items if item)),
        validity=validity,
        null_count=len(nulls),
    )


def _arrow_from_columns(cols: RecordColumns) -> ArrowColumns:
    headers: HeaderColumns | None = None
    if any(cols.headers):
        flat = [h for hdrs in cols.headers for h in hdrs]
        ends = array("q", accumulate(map(len, cols.headers), initial=0))
        headers = HeaderColumns(
            offsets=memoryview(array("i", ends)),
            keys=_binary_column([k.encode("utf-8") for k, _ in flat]),
            values=_binary_column([v for _, v in flat]),
        )
    return ArrowColumns(
        offsets=memoryview(cols.offsets),
        timestamps=memoryview(cols.timestamps),
        keys=_binary_column(cols.keys),
        values=_binary_column(cols.values),
        headers=headers,
    )


if _backend.NATIVE:

    def _native_column(raw: _native._Column) -> BinaryColumn:
        offsets, data, validity, null_count = raw
        return BinaryColumn(
            offsets=memoryview(offsets),
            data=memoryview(data),
            validity=None if validity is None else memoryview(validity),
            null_count=null_count,
        )

    def _arrow_from_native(
        raw: tuple[
            _native.Buffer,
            _native.Buffer,
            _native._Column,
            _native._Column,
            tuple[_native.Buffer, _native._Column, _native._Column] | None,
        ],
    ) -> ArrowColumns:
        offsets, timestamps, keys, values, hdrs = raw
        headers = None
        if hdrs is not None:
            list_offsets, hkeys, hvalues = hdrs
            headers = HeaderColumns(
                offsets=memoryview(list_offsets),
                keys=_native_column(hkeys),
                values=_native_column(hvalues),
            )
        return ArrowColumns(
            offsets=memoryview(offsets),
            timestamps=memoryview(timestamps),
            keys=_native_column(keys),
            values=_native_column(values),
            headers=headers,
        )


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


# ---------------------------------------------------------------------------
# Hot loops. Both assume well-formed input; any exception is handed to
# _diagnose, which re-parses the records carefully and raises a precise
# DecodeError. Keep the two loops in step with each other and with _diagnose.
# ---------------------------------------------------------------------------


def _decode_columns(
    buf: bytes,
    count: int,
    base_offset: int,
    base_ts: int,
    fixed_ts: int | None,
    offset_base: int | None,
) -> RecordColumns:
    # Per record, only what varies is stored: offset deltas that are not the
    # record's index (compaction gaps) and headers that are not empty are
    # patched in afterwards, so the common record costs two list appends plus
    # one for its timestamp delta.
    zz = _ZZ
    slow = read_zigzag
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    ts_deltas: list[int] = []
    odd_offsets: list[tuple[int, int]] = []
    with_headers: list[tuple[int, tuple[Header, ...]]] = []
    add_key = keys.append
    add_value = values.append
    add_ts = ts_deltas.append
    pos = 0
    try:
        for i in range(count):
            b = buf[pos]
            if b < 0x80:
                end = pos + 1 + zz[b]
                pos += 2  # length and the unused attributes byte
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    end = pos + 2 + zz[(c << 7) + b - 0x80]
                    pos += 3
                else:
                    length, pos = slow(buf, pos, 5)
                    end = pos + length
                    pos += 1
            b = buf[pos]
            if b < 0x80:
                ts_delta = zz[b]
                pos += 1
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    ts_delta = zz[(c << 7) + b - 0x80]
                    pos += 2
                else:
                    ts_delta, pos = slow(buf, pos, 10)
            b = buf[pos]
            if b < 0x80:
                offset_delta = zz[b]
                pos += 1
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    offset_delta = zz[(c << 7) + b - 0x80]
                    pos += 2
                else:
                    offset_delta, pos = slow(buf, pos, 5)
            if offset_delta != i:
                odd_offsets.append((i, offset_delta))
            b = buf[pos]
            if b < 0x80:
                n = zz[b]
                pos += 1
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    n = zz[(c << 7) + b - 0x80]
                    pos += 2
                else:
                    n, pos = slow(buf, pos, 5)
            if n >= 0:
                add_key(buf[pos : pos + n])
                pos += n
            elif n == -1:
                add_key(None)
            else:
                raise ValueError
            b = buf[pos]
            if b < 0x80:
                n = zz[b]
                pos += 1
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    n = zz[(c << 7) + b - 0x80]
                    pos += 2
                else:
                    n, pos = slow(buf, pos, 5)
            if n >= 0:
                add_value(buf[pos : pos + n])
                pos += n
            elif n == -1:
                add_value(None)
            else:
                raise ValueError
            if pos + 1 != end or buf[pos]:
                # Headers present, or the record length disagrees with its fields.
                if not buf[pos]:
                    raise ValueError
                hdrs, pos = _read_headers(buf, pos)
                if pos != end:
                    raise ValueError
                with_headers.append((i, hdrs))
            pos = end
            add_ts(ts_delta)
        if fixed_ts is None:
            timestamps = array("q", map(base_ts.__add__, ts_deltas))
        else:
            timestamps = array("q", (fixed_ts,)) * count
        try:
            offsets = array("q", range(base_offset, base_offset + count))
        except OverflowError:
            # The index-based guess left int64; only real offsets may do that.
            exact = list(range(base_offset, base_offset + count))
            for index, delta in odd_offsets:
                exact[index] = base_offset + delta
            offsets = array("q", exact)
        for index, delta in odd_offsets:
            offsets[index] = base_offset + delta
    except (IndexError, ValueError, OverflowError) as exc:
        raise _diagnose(buf, count, offset_base) from exc
    if pos != len(buf):
        raise _leftover(buf, pos, count, offset_base)
    headers = [_EMPTY] * count
    for index, hdrs in with_headers:
        headers[index] = hdrs
    return RecordColumns(
        offsets=offsets, timestamps=timestamps, keys=keys, values=values, headers=headers
    )


def _iter_records(
    buf: bytes,
    count: int,
    base_offset: int,
    base_ts: int,
    fixed_ts: int | None,
    offset_base: int | None,
) -> Iterator[Record]:
    # The same decoding as _decode_columns, one record per step.
    zz = _ZZ
    slow = read_zigzag
    new = tuple.__new__
    record_type = Record
    empty = _EMPTY
    key: bytes | None
    value: bytes | None
    # Absolute offsets and timestamps must stay int64, as in _decode_columns.
    # Offset deltas are int32 and fast-path timestamp deltas small, so only
    # batches near the limits (or a slow-path timestamp) need the check.
    check_offsets = not (_INT64_MIN + 2**31 <= base_offset <= _INT64_MAX - 2**31)
    check_ts = fixed_ts is None and not (
        _INT64_MIN + _SMALL_DELTA <= base_ts <= _INT64_MAX - _SMALL_DELTA
    )
    pos = 0
    try:
        for _ in range(count):
            b = buf[pos]
            if b < 0x80:
                end = pos + 1 + zz[b]
                pos += 2
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    end = pos + 2 + zz[(c << 7) + b - 0x80]
                    pos += 3
                else:
                    length, pos = slow(buf, pos, 5)
                    end = pos + length
                    pos += 1
            b = buf[pos]
            if b < 0x80:
                ts_delta = zz[b]
                pos += 1
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    ts_delta = zz[(c << 7) + b - 0x80]
                    pos += 2
                else:
                    ts_delta, pos = slow(buf, pos, 10)
                    check_ts = fixed_ts is None
            b = buf[pos]
            if b < 0x80:
                offset_delta = zz[b]
                pos += 1
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    offset_delta = zz[(c << 7) + b - 0x80]
                    pos += 2
                else:
                    offset_delta, pos = slow(buf, pos, 5)
            if (check_offsets or check_ts) and not (
                _INT64_MIN <= base_offset + offset_delta <= _INT64_MAX
                and (fixed_ts is not None or _INT64_MIN <= base_ts + ts_delta <= _INT64_MAX)
            ):
                raise OverflowError
            b = buf[pos]
            if b < 0x80:
                n = zz[b]
                pos += 1
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    n = zz[(c << 7) + b - 0x80]
                    pos += 2
                else:
                    n, pos = slow(buf, pos, 5)
            if n >= 0:
                key = buf[pos : pos + n]
                pos += n
            elif n == -1:
                key = None
            else:
                raise ValueError
            b = buf[pos]
            if b < 0x80:
                n = zz[b]
                pos += 1
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    n = zz[(c << 7) + b - 0x80]
                    pos += 2
                else:
                    n, pos = slow(buf, pos, 5)
            if n >= 0:
                value = buf[pos : pos + n]
                pos += n
            elif n == -1:
                value = None
            else:
                raise ValueError
            if pos + 1 != end or buf[pos]:
                if not buf[pos]:
                    raise ValueError
                hdrs, pos = _read_headers(buf, pos)
                if pos != end:
                    raise ValueError
            else:
                hdrs = empty
            pos = end
            yield new(
                record_type,
                (
                    base_offset + offset_delta,
                    base_ts + ts_delta if fixed_ts is None else fixed_ts,
                    key,
                    value,
                    hdrs,
                ),
            )
    except (IndexError, ValueError, OverflowError) as exc:
        raise _diagnose(buf, count, offset_base) from exc
    if pos != len(buf):
        raise _leftover(buf, pos, count, offset_base)


def _read_headers(buf: bytes, pos: int) -> tuple[tuple[Header, ...], int]:
    count, pos = read_zigzag(buf, pos, 5)
    if count < 0 or count * 2 > len(buf) - pos:
        raise ValueError
    out: list[Header] = []
    for _ in range(count):
        n, pos = read_zigzag(buf, pos, 5)
        if n < 0 or pos + n > len(buf):
            raise ValueError
        hkey = buf[pos : pos + n].decode("utf-8")
        pos += n
        n, pos = read_zigzag(buf, pos, 5)
        if n >= 0:
            if pos + n > len(buf):
                raise ValueError
            out.append((hkey, buf[pos : pos + n]))
            pos += n
        elif n == -1:
            out.append((hkey, None))
        else:
            raise ValueError
    return tuple(out), pos


class _Fail(Exception):
    def __init__(self, field: str, pos: int, reason: str) -> None:
        self.field = field
        self.pos = pos
        self.reason = reason


def _diagnose(buf: bytes, count: int, offset_base: int | None) -> DecodeError:
    """Walk the records again from the start with every check; describe the first fault.

    Runs only after a hot loop failed, so the hot loops need not remember
    where the failing record began.
    """

    def varint(field: str, pos: int, max_bytes: int) -> tuple[int, int]:
        try:
            return read_zigzag(buf, pos, max_bytes)
        except IndexError:
            raise _Fail(field, pos, "truncated varint") from None
        except ValueError as exc:
            raise _Fail(field, pos, str(exc)) from None

    def nbytes(field: str, pos: int, n: int, limit: int) -> int:
        if n < -1:
            raise _Fail(field, pos, f"length {n} is negative")
        if n > 0 and pos + n > limit:
            raise _Fail(field, pos, f"length {n} runs past the record end")
        return pos + max(n, 0)

    def check(start: int, index: int) -> int:
        if start >= len(buf):
            raise _Fail(
                "length",
                start,
                f"record count {count} but the records section ends after {index} records",
            )
        length, pos = varint("length", start, 5)
        end = pos + length
        if length < MIN_RECORD_SIZE - 1 or end > len(buf):
            raise _Fail(
                "length",
                start,
                f"record length {length} does not fit the {len(buf) - pos} bytes left",
            )
        pos += 1
        _, pos = varint("timestampDelta", pos, 10)
        _, pos = varint("offsetDelta", pos, 5)
        n, p = varint("keyLength", pos, 5)
        pos = nbytes("key", p, n, end)
        n, p = varint("valueLength", pos, 5)
        pos = nbytes("value", p, n, end)
        hcount, p = varint("headerCount", pos, 5)
        if hcount < 0 or hcount * 2 > end - p:
            raise _Fail("headerCount", pos, f"header count {hcount} does not fit the record")
        pos = p
        for h in range(hcount):
            n, p = varint(f"headers[{h}].keyLength", pos, 5)
            if n < 0:
                raise _Fail(f"headers[{h}].keyLength", pos, "header key must not be null")
            pos = nbytes(f"headers[{h}].key", p, n, end)
            try:
                buf[p:pos].decode("utf-8")
            except UnicodeDecodeError:
                raise _Fail(f"headers[{h}].key", p, "header key is not valid UTF-8") from None
            n, p = varint(f"headers[{h}].valueLength", pos, 5)
            pos = nbytes(f"headers[{h}].value", p, n, end)
        if pos != end:
            raise _Fail(
                "length",
                start,
                f"record length is {length} but its fields end {pos - end} bytes later",
            )
        return end

    pos = 0
    index = 0
    try:
        for index in range(count):
            pos = check(pos, index)
    except _Fail as fail:
        return _error(fail.reason, f"records[{index}].{fail.field}", fail.pos, offset_base)
    # Every record is well formed, so a computed value left the int64 range.
    return _error("timestamp or offset overflows int64", "timestampDelta", 0, offset_base)


def _leftover(buf: bytes, pos: int, count: int, offset_base: int | None) -> DecodeError:
    reason = f"{len(buf) - pos} bytes left after the last of {count} records"
    return _error(reason, "recordsCount", pos, offset_base)


def _error(reason: str, field: str, pos: int, offset_base: int | None) -> DecodeError:
    if offset_base is None:
        return DecodeError(
            f"{reason} (at byte {pos} of the decompressed records)", api=API, field=field
        )
    return DecodeError(reason, api=API, field=field, offset=offset_base + pos)

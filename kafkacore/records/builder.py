"""Record batch v2 (magic 2) builder: the producer's hot path.

Theory of operation
-------------------
A :class:`RecordBatchBuilder` is a two-state machine (:class:`BuilderState`):

    OPEN  --append/append_many-->  OPEN
    OPEN  --build()------------->  BUILT   (build() again returns the same bytes)

While OPEN, records are encoded straight into one growing ``bytearray`` (the
uncompressed records section): no per-record Python object survives an
append. Varint encodings of small numbers (lengths, offset deltas,
timestamp deltas below 8192) come from a precomputed table.
:attr:`~RecordBatchBuilder.size_in_bytes` is the exact uncompressed size so
far, which a producer compares with ``batch.size`` through
:meth:`~RecordBatchBuilder.has_room_for` (the first record always fits, as in
the Java client, so an oversized record still gets a batch of its own).

``build()`` compresses the records section if asked, writes the 61-byte
header and the CRC-32C over bytes [21, end) (partitionLeaderEpoch, before the
CRC, is the broker's to change) and returns immutable ``bytes``.

Offsets inside the batch are 0..n-1 (``base_offset`` is 0 for a producer;
the broker assigns the real one). The base timestamp is the first record's
timestamp; the core has no clock, so every record's timestamp is given.

Two implementations share this surface (:mod:`kafkacore.records._backend`
picks one, at import, as ``RecordBatchBuilder``): :class:`PyRecordBatchBuilder`
(pure Python, the reference, in :mod:`kafkacore.records._py_builder`, loaded
only when it is used) and :class:`NativeRecordBatchBuilder`, whose
``append`` and ``build`` are compiled (its Rust core checks each record as
the Python one does, with the same errors, and writes the same bytes).
Argument checks, ``append_many``'s column checks and ``has_room_for`` are
Python code shared by both.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from enum import Enum
from typing import TYPE_CHECKING, Final, TypeAlias

from kafkacore.errors import LocalProtocolError
from kafkacore.records import _backend
from kafkacore.records.compression import Compression, check_level
from kafkacore.records.model import ControlRecordType, Header

if _backend.NATIVE:
    from kafkacore.records import _native
    from kafkacore.records._native import zigzag_bytes
else:
    from kafkacore.records._varint import zigzag_bytes
if TYPE_CHECKING:
    from kafkacore.records._py_builder import PyRecordBatchBuilder

#: What a key, value or header value may be given as (None means null).
BytesLike: TypeAlias = bytes | bytearray | memoryview

__all__ = [
    "BuilderState",
    "NativeRecordBatchBuilder",
    "PyRecordBatchBuilder",
    "RecordBatchBuilder",
    "control_batch",
    "estimate_record_size",
]

_NULL: Final = b"\x01"  # zigzag(-1): null key, value or header value
_NO_HEADERS: Final = b"\x00"
_ATTR: Final = b"\x00"
_INT32_MAX: Final = 2**31 - 1
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_INT32_MIN: Final = -(2**31)
_INT16_MIN: Final = -(2**15)
_INT16_MAX: Final = 2**15 - 1


class BuilderState(Enum):
    OPEN = "open"
    BUILT = "built"


_OPEN: Final = BuilderState.OPEN


def estimate_record_size(key_size: int, value_size: int, headers: Iterable[Header] = ()) -> int:
    """Upper bound of one encoded record's size (Java's ``DefaultRecord.sizeInUpperBound`` idea).

    ``key_size``/``value_size`` are byte lengths, -1 for null.
    """
    size = 21 + 5 + max(key_size, 0) + 5 + max(value_size, 0) + 5
    for hkey, hvalue in headers:
        size += 10 + len(hkey.encode("utf-8")) + (len(hvalue) if hvalue is not None else 0)
    return size


def _as_bytes(data: object, what: str) -> bytes:
    if type(data) is bytes:
        return data
    if isinstance(data, (bytes, bytearray, memoryview)):
        return memoryview(data).cast("B").tobytes()
    raise TypeError(
        f"record {what} must be bytes, bytearray, memoryview or None, not {type(data).__name__}"
    )


def _normalized(column: Sequence[BytesLike | None], what: str) -> Sequence[bytes | None]:
    # One pass over the types keeps the hot loop free of checks: after this,
    # every item is bytes or None, so len() is its size in bytes.
    if set(map(type, column)) <= {bytes, type(None)}:
        return column  # type: ignore[return-value]  # checked just above
    return [None if item is None else _as_bytes(item, what) for item in column]


def _check_args(
    compression: Compression,
    compression_level: int | None,
    batch_size: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    transactional: bool,
    base_offset: int,
    partition_leader_epoch: int,
    log_append_time: int | None,
) -> Compression:
    """Check a builder's arguments (both implementations); returns the codec."""
    compression = Compression(compression)
    if transactional and producer_id < 0:
        raise LocalProtocolError(
            "RecordBatchBuilder: a transactional batch needs a producer_id >= 0"
        )
    if batch_size <= 0:
        raise ValueError(f"RecordBatchBuilder: batch_size must be positive, got {batch_size}")
    check_level(compression, compression_level)
    # Each value goes into a fixed-width header field (NOTES.md c.2).
    for name, value, lo, hi in (
        ("producer_id", producer_id, _INT64_MIN, _INT64_MAX),
        ("producer_epoch", producer_epoch, _INT16_MIN, _INT16_MAX),
        ("base_sequence", base_sequence, _INT32_MIN, _INT32_MAX),
        ("base_offset", base_offset, _INT64_MIN, _INT64_MAX),
        ("partition_leader_epoch", partition_leader_epoch, _INT32_MIN, _INT32_MAX),
        ("batch_size", batch_size, 1, _INT64_MAX),
    ):
        if type(value) is not int or not lo <= value <= hi:
            raise ValueError(
                f"RecordBatchBuilder: {name} must be an int in [{lo}, {hi}], got {value!r}"
            )
    if log_append_time is not None and (
        type(log_append_time) is not int or not _INT64_MIN <= log_append_time <= _INT64_MAX
    ):
        raise ValueError(
            f"RecordBatchBuilder: log_append_time must be None or an int64, got {log_append_time!r}"
        )
    return compression


class _BuilderSurface:
    """What both builders share: checks, ``has_room_for`` and ``append_many``."""

    __slots__ = ()

    if TYPE_CHECKING:
        # Provided by each implementation.
        state: BuilderState
        _base_ts: int
        _max_ts: int
        _batch_size: int

        @property
        def record_count(self) -> int: ...
        @property
        def size_in_bytes(self) -> int: ...

        def _headers_bytes(self, headers: Iterable[Header]) -> bytes: ...

        def _extend(
            self,
            values: list[bytes | None],
            keys: list[bytes | None],
            timestamps: list[int],
            headers: list[bytes],
            base_ts: int,
            max_ts: int,
        ) -> None: ...

    def _check_open(self) -> None:
        if self.state is not BuilderState.OPEN:
            raise LocalProtocolError(
                "RecordBatchBuilder is built; start a new builder for more records"
            )

    def _check_timestamp(self, ts: int) -> None:
        if type(ts) is not int or not _INT64_MIN <= ts <= _INT64_MAX:
            raise TypeError(f"record timestamp must be an int64 (ms since the epoch), got {ts!r}")
        if self.record_count and not _INT64_MIN <= ts - self._base_ts <= _INT64_MAX:
            raise ValueError(
                f"record timestamp {ts} is too far from the batch base timestamp {self._base_ts}"
            )

    def has_room_for(
        self,
        key: bytes | None,
        value: bytes | None,
        headers: Iterable[Header] = (),
        *,
        timestamp: int | None = None,
    ) -> bool:
        """Whether one more record keeps the batch within ``batch_size`` (True when empty).

        The record's size is computed exactly, as Java's ``hasRoomFor`` does;
        without ``timestamp`` its delta counts as the 10-byte worst case.
        """
        if self.state is not BuilderState.OPEN:
            return False
        count = self.record_count
        if count == 0:
            return True
        ts_size = 10 if timestamp is None else len(zigzag_bytes(timestamp - self._base_ts))
        body = 1 + ts_size + len(zigzag_bytes(count)) + len(self._headers_bytes(headers))
        for item in (key, value):
            body += 1 if item is None else len(zigzag_bytes(len(item))) + len(item)
        size = len(zigzag_bytes(body)) + body
        return self.size_in_bytes + size <= self._batch_size

    def append_many(
        self,
        values: Sequence[BytesLike | None],
        keys: Sequence[BytesLike | None] | None = None,
        *,
        timestamps: int | Sequence[int],
        headers: Sequence[Iterable[Header]] | None = None,
    ) -> int:
        """Append records given as columns; returns how many were appended (all of them).

        ``keys`` (None: all keys null) and ``headers`` (None: no headers) must
        be as long as ``values``; ``timestamps`` is one int for all records or
        a sequence as long as ``values``. Does not look at ``batch_size``: the
        caller decides how many records one batch gets.
        """
        self._check_open()
        n = len(values)
        if n == 0:
            return 0
        count = self.record_count
        if count + n > _INT32_MAX:
            raise LocalProtocolError(
                "RecordBatchBuilder would exceed 2**31 - 1 records; split the columns"
            )
        vcol = _normalized(values, "value")
        kcol: Sequence[bytes | None]
        if keys is None:
            kcol = [None] * n
        elif len(keys) != n:
            raise ValueError(
                f"append_many: {len(keys)} keys for {n} values; give one key per value"
            )
        else:
            kcol = _normalized(keys, "key")
        hcol: list[bytes]
        if headers is None:
            hcol = [_NO_HEADERS] * n
        elif len(headers) != n:
            raise ValueError(
                f"append_many: {len(headers)} header lists for {n} values; give one per value"
            )
        else:
            encode = self._headers_bytes
            hcol = [encode(h) for h in headers]
        tcol: Sequence[int]
        if isinstance(timestamps, int):
            lo = hi = first = timestamps
            tcol = [timestamps] * n
        else:
            if len(timestamps) != n:
                raise ValueError(
                    f"append_many: {len(timestamps)} timestamps for {n} values; give one per value"
                )
            if not set(map(type, timestamps)) <= {int}:
                raise TypeError("append_many: timestamps must be ints (ms since the epoch)")
            lo, hi, first = min(timestamps), max(timestamps), timestamps[0]
            tcol = timestamps
        self._check_timestamp(lo)
        self._check_timestamp(hi)
        base = self._base_ts if count else first
        if not (lo - base >= _INT64_MIN and hi - base <= _INT64_MAX):
            raise ValueError("append_many: timestamps too far apart for one batch")
        self._extend(
            vcol if type(vcol) is list else list(vcol),
            kcol if type(kcol) is list else list(kcol),
            tcol if type(tcol) is list else list(tcol),
            hcol,
            base,
            max(hi, self._max_ts) if count else hi,
        )
        return n


if _backend.NATIVE:
    # The compiled base exposes state and the timestamps read-only.
    class NativeRecordBatchBuilder(_native.RecordBatchEncoder, _BuilderSurface):  # type: ignore[override]
        """The same builder with a compiled ``append`` and ``build`` (kafkacore.records._native)."""

        __slots__ = ()

        def _headers_bytes(self, headers: Iterable[Header]) -> bytes:
            return _native.encode_headers(headers)

        def append_many(
            self,
            values: Sequence[BytesLike | None],
            keys: Sequence[BytesLike | None] | None = None,
            *,
            timestamps: int | Sequence[int],
            headers: Sequence[Iterable[Header]] | None = None,
        ) -> int:
            # The common case (lists of bytes or None, int timestamps, no
            # headers) is checked and encoded in one compiled pass; anything
            # else, errors included, takes the shared path below.
            if headers is None and self._append_columns(values, keys, timestamps):
                return len(values)
            return super().append_many(values, keys, timestamps=timestamps, headers=headers)

        def __new__(
            cls,
            *,
            compression: Compression = Compression.NONE,
            compression_level: int | None = None,
            batch_size: int = 16384,
            producer_id: int = -1,
            producer_epoch: int = -1,
            base_sequence: int = -1,
            transactional: bool = False,
            base_offset: int = 0,
            partition_leader_epoch: int = -1,
            log_append_time: int | None = None,
        ) -> NativeRecordBatchBuilder:
            codec = _check_args(
                compression,
                compression_level,
                batch_size,
                producer_id,
                producer_epoch,
                base_sequence,
                transactional,
                base_offset,
                partition_leader_epoch,
                log_append_time,
            )
            return super().__new__(
                cls,
                int(codec),
                compression_level,
                batch_size,
                producer_id,
                producer_epoch,
                base_sequence,
                transactional,
                base_offset,
                partition_leader_epoch,
                log_append_time,
            )

        @property
        def compression(self) -> Compression:
            return Compression(self._codec)

        @property
        def state(self) -> BuilderState:  # type: ignore[override]  # read-only here
            return BuilderState.BUILT if self._is_built else BuilderState.OPEN

else:
    NativeRecordBatchBuilder = None  # type: ignore[assignment,misc]  # no extension

#: The active builder (see the module docstring and kafkacore.records._backend).
if TYPE_CHECKING:
    RecordBatchBuilder = PyRecordBatchBuilder
elif _backend.NATIVE:
    RecordBatchBuilder = NativeRecordBatchBuilder

    def __getattr__(name: str) -> type[PyRecordBatchBuilder]:
        # The pure builder (kafkacore.records._py_builder) loads on first use.
        if name == "PyRecordBatchBuilder":
            from kafkacore.records._py_builder import PyRecordBatchBuilder

            globals()[name] = PyRecordBatchBuilder
            return PyRecordBatchBuilder
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

else:
    # Imported last: it builds on the shared surface defined above.
    from kafkacore.records._py_builder import PyRecordBatchBuilder

    RecordBatchBuilder = PyRecordBatchBuilder


def control_batch(
    kind: ControlRecordType | int,
    *,
    producer_id: int,
    producer_epoch: int,
    timestamp: int,
    coordinator_epoch: int = 0,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
    value: bytes | None = None,
) -> bytes:
    """Build a control batch holding one control record, as the broker writes it (NOTES.md c.6).

    For ABORT/COMMIT the value is the end-transaction marker (version 0,
    ``coordinator_epoch``); for other types pass ``value``.
    """
    key = struct.pack(">hh", 0, int(kind))
    if value is None and kind in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        value = struct.pack(">hi", 0, coordinator_epoch)
    builder = RecordBatchBuilder(
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transactional=True,
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
    )
    builder._mark_control()
    builder.append(value, key, timestamp=timestamp)
    return builder.build()

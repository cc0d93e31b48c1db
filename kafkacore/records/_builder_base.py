"""What the two record batch builders share: checks, constants and ``has_room_for``.

:mod:`kafkacore.records.builder` (the public module, with the compiled
builder) and :mod:`kafkacore.records._py_builder` (the pure one) both build
on :class:`_BuilderSurface`; it lives here so that neither imports the other
to get it (the pure builder is imported only when it is used).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import Enum
from typing import TYPE_CHECKING, Final, TypeAlias

from kafkacore.errors import LocalProtocolError
from kafkacore.records import _backend
from kafkacore.records.compression import Compression, check_level
from kafkacore.records.model import Header

# has_room_for sizes varints: with the compiled function when it runs (the
# differential tests pin it equal to the pure one), so the compiled path
# loads no pure varint table.
if _backend.NATIVE:
    from kafkacore.records._native import zigzag_bytes
else:
    from kafkacore.records._varint import zigzag_bytes

#: What a key, value or header value may be given as (None means null).
BytesLike: TypeAlias = bytes | bytearray | memoryview

__all__ = ["BuilderState", "BytesLike"]

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

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
Python code shared by both (:mod:`kafkacore.records._builder_base`).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from kafkacore.records import _backend
from kafkacore.records._builder_base import (
    BuilderState,
    BytesLike,
    _BuilderSurface,
    _check_args,
)
from kafkacore.records.compression import Compression
from kafkacore.records.model import ControlRecordType, Header

if _backend.NATIVE:
    from kafkacore.records import _native
if TYPE_CHECKING or not _backend.NATIVE:
    # The pure builder: imported here on the pure path, else on first use of
    # the name (see __getattr__ below).
    from kafkacore.records._py_builder import PyRecordBatchBuilder

__all__ = [
    "BuilderState",
    "NativeRecordBatchBuilder",
    "PyRecordBatchBuilder",
    "RecordBatchBuilder",
    "control_batch",
    "estimate_record_size",
]


def estimate_record_size(key_size: int, value_size: int, headers: Iterable[Header] = ()) -> int:
    """Upper bound of one encoded record's size (Java's ``DefaultRecord.sizeInUpperBound`` idea).

    ``key_size``/``value_size`` are byte lengths, -1 for null.
    """
    size = 21 + 5 + max(key_size, 0) + 5 + max(value_size, 0) + 5
    for hkey, hvalue in headers:
        size += 10 + len(hkey.encode("utf-8")) + (len(hvalue) if hvalue is not None else 0)
    return size


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

"""aiokafka's ``create_batch``/``send_batch``: records gathered by the caller, sent together.

Theory of operation
-------------------
``producer.create_batch()`` gives a :class:`BatchBuilder`; ``append(key=,
value=, timestamp=, headers=)`` adds a record while it fits in the
producer's ``batch_size`` (measured with kafkacore's own record batch
builder, compression included, so "fits" means what the broker will see),
and returns None once the batch is full or closed (the first record is
always taken, however large, as aiokafka does). ``await
producer.send_batch(batch, topic, partition=p)`` queues the records, in
order, for that one partition and returns a future of the first record's
:class:`~kafkacore.producer.RecordMetadata` (the batch's base offset), set
once every record is acknowledged (or failed: the first error).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from kafkacore.records import Compression, RecordBatchBuilder

__all__ = ["BatchBuilder", "BatchRecord"]

BatchRecord = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]] | None, int]


class BatchMetadata:
    """What ``append`` answers (aiokafka's fields): the record's offset within
    the batch, its timestamp and the batch's size so far."""

    __slots__ = ("offset", "size", "timestamp")

    def __init__(self, offset: int, timestamp: int, size: int) -> None:
        self.offset, self.timestamp, self.size = offset, timestamp, size

    def __repr__(self) -> str:
        return f"BatchMetadata(offset={self.offset}, timestamp={self.timestamp}, size={self.size})"


class BatchBuilder:
    """See the module docstring."""

    def __init__(self, batch_size: int, compression: Compression, prepare: Any) -> None:
        self._builder = RecordBatchBuilder(compression=compression, batch_size=batch_size)
        self._prepare = prepare  # (value, key, headers) -> (key, value, headers), serialized
        self.records: list[BatchRecord] = []
        self._closed = False

    def append(
        self,
        *,
        timestamp: int | None,
        key: Any,
        value: Any,
        headers: Iterable[tuple[str, Any]] | None = None,
    ) -> BatchMetadata | None:
        """Add one record (``timestamp``: ms, None: now); None if it does not fit."""
        if self._closed:
            return None
        k, v, h = self._prepare(value, key, list(headers) if headers else None)
        ts = time.time_ns() // 1_000_000 if timestamp is None else int(timestamp)
        builder = self._builder
        if self.records and not builder.has_room_for(k, v, h or (), timestamp=ts):
            self.close()
            return None
        builder.append(v, k, timestamp=ts, headers=h)
        self.records.append((k, v, h, ts))
        return BatchMetadata(len(self.records) - 1, ts, builder.size_in_bytes)

    def close(self) -> None:
        """No more records (``append`` answers None from now on)."""
        self._closed = True

    def size(self) -> int:
        """The batch's size in bytes so far."""
        return int(self._builder.size_in_bytes)

    def record_count(self) -> int:
        return len(self.records)

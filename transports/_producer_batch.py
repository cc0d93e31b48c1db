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
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from kafkacore.producer import ProducerConfig, ProducerCore, RecordMetadata
from kafkacore.records import Compression, RecordBatchBuilder

from ._producer_future import Idiom, RecordFuture

__all__ = ["BatchBuilder", "BatchCalls", "BatchRecord"]

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


class BatchCalls:
    """``create_batch``/``send_batch`` of the async producers (see the module docstring)."""

    _NAME: str
    config: ProducerConfig
    _idiom: Idiom

    if TYPE_CHECKING:

        def _prepare(self, topic: str, value: Any, key: Any, headers: Any) -> Any: ...
        async def _append(self, what: str, fn: Callable[[ProducerCore, float], None]) -> None: ...

    def create_batch(self) -> BatchBuilder:
        """aiokafka's: an empty batch to fill with ``append`` (up to ``batch_size``)
        and hand to :meth:`send_batch` (see kafkacore.transports._producer_batch)."""
        # Serialized as they are appended, before the topic is known (as aiokafka).
        return BatchBuilder(
            self.config.batch_size,
            self.config.compression,
            lambda value, key, headers: self._prepare("", value, key, headers),
        )

    async def send_batch(self, batch: BatchBuilder, topic: str, *, partition: int) -> Any:
        """Queue ``batch``'s records, in order, for ``topic``'s ``partition``; returns
        an awaitable of the first record's RecordMetadata (every record done)."""
        if not isinstance(batch, BatchBuilder):
            raise TypeError(f"{self._NAME}.send_batch: expected a create_batch() batch")
        if isinstance(partition, bool) or not isinstance(partition, int) or partition < 0:
            raise TypeError(f"{self._NAME}.send_batch: partition must be an int >= 0")
        batch.close()
        futures: list[RecordFuture] = []
        for k, v, h, ts in batch.records:  # serialized already, by append
            token = RecordFuture(self._idiom)

            def append(
                core: ProducerCore,
                now: float,
                k: Any = k,
                v: Any = v,
                h: Any = h,
                ts: int = ts,
                token: RecordFuture = token,
            ) -> None:
                core.append(topic, v, k, h, partition=partition, timestamp=ts, token=token, now=now)

            await self._append("send_batch", append)
            futures.append(token)
        return self._first_of(futures)

    @staticmethod
    async def _first_of(futures: list[Any]) -> RecordMetadata | None:
        first = None
        for fut in futures:
            done = await fut
            first = done if first is None else first
        return first

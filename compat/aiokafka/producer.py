"""aiokafka's ``aiokafka.producer``: ``AIOKafkaProducer``.

kafkacore's asyncio producer under aiokafka's name, with aiokafka's
argument order for ``send`` and ``send_and_wait`` (``topic, value, key,
partition, timestamp_ms, headers``: kafkacore's own, as kafka-python's and
Java's, put ``headers`` fourth) and aiokafka's answer for ``acks=0``: the
record's future resolves to None (no broker answer to report; kafkacore's
own gives a RecordMetadata with offset -1, as kafka-python and Java do).
``create_batch``/``send_batch``, transactions (``async with
producer.transaction()``), ``loop=`` accepted and ignored: see
:class:`kafkacore.transports.asyncio.AsyncKafkaProducer`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from kafkacore.producer import RecordMetadata
from kafkacore.transports.asyncio import AsyncKafkaProducer

__all__ = ["AIOKafkaProducer"]


async def _sent(fut: Any) -> None:
    """An ``acks=0`` record's outcome as aiokafka's: None once it is sent."""
    await fut


class AIOKafkaProducer(AsyncKafkaProducer):
    """aiokafka's producer over kafkacore (see the module docstring)."""

    _NAME = "AIOKafkaProducer"

    async def send(  # type: ignore[override]
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Iterable[tuple[str, Any]] | None = None,
    ) -> Any:
        fut = await super().send(topic, value, key, headers, partition, timestamp_ms)
        # A task, so asyncio.wait() and add_done_callback() take it, as aiokafka's future.
        return asyncio.ensure_future(_sent(fut)) if self.config.acks_value == 0 else fut

    async def send_batch(self, batch: Any, topic: str, *, partition: int) -> Any:
        """aiokafka's: a future (a task) of the batch's first RecordMetadata."""
        return asyncio.ensure_future(await super().send_batch(batch, topic, partition=partition))

    async def send_and_wait(  # type: ignore[override]
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Iterable[tuple[str, Any]] | None = None,
    ) -> RecordMetadata | None:
        fut = await self.send(topic, value, key, partition, timestamp_ms, headers)
        result: RecordMetadata | None = await fut
        return result

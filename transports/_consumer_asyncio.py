"""asyncio Kafka consumer: the sans-IO consumer core on the running event loop.

Theory of operation
-------------------
:class:`AsyncKafkaConsumer` drives one :class:`~kafkacore.consumer.ConsumerCore`
from the loop it was started on, with the asyncio driver
(:class:`~kafkacore.transports._asyncio_driver.AsyncioDriver`), as
:class:`kafkacore.transports.asyncio.AsyncKafkaClient` does. The calls are the async
consumer surface (:mod:`kafkacore.transports._consumer_async`); this module adds the
life: NEW --await start()/async with/first call--> RUNNING --close()/stop()--> CLOSED.
``close()`` commits (with auto-commit) and leaves the group within
``timeout``, then aborts every socket. ``commit_async`` returns an asyncio
future to await (or not).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from kafkacore.client import TopicPartition
from kafkacore.consumer import ConsumerClosedError, ConsumerCore, OffsetAndMetadata

from ._asyncio_driver import AsyncioDriver, Delivery
from ._common import Parts, ignore_loop
from ._consumer_async import AsyncConsumerBase, ConsumerState

__all__ = ["AsyncKafkaConsumer", "ConsumerState"]


class AsyncKafkaConsumer(AsyncConsumerBase):
    """asyncio consumer; see the module docstring. Options as ClientConfig + ConsumerConfig."""

    _NAME = "AsyncKafkaConsumer"

    def __init__(self, *topics: str, loop: object = None, **options: Any) -> None:
        """Options as ClientConfig + ConsumerConfig; ``loop`` as aiokafka's (ignored)."""
        ignore_loop(self._NAME, loop)
        super().__init__(*topics, **options)

    def _new_driver(self, parts: Parts) -> AsyncioDriver:
        return AsyncioDriver(self._NAME, parts)

    async def start(self) -> None:
        """Bind to the running loop (idempotent) and subscribe to the constructor's
        topics; with a group, return once this member is in it (assigned, the
        listener called), as aiokafka's ``start`` does. The first call of a
        consumer not started starts it too (without waiting for the group)."""
        self._start_now()
        await self._await_group()

    def _start_now(self) -> None:
        if self._state is ConsumerState.CLOSED:
            raise ConsumerClosedError("AsyncKafkaConsumer.start: closed; make a new consumer")
        if self._state is ConsumerState.NEW:
            self._attach()

    async def __aenter__(self) -> AsyncKafkaConsumer:
        try:
            await self.start()
        except BaseException:
            await self.close()  # __aexit__ will not run
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def commit_async(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None
    ) -> asyncio.Future[Any]:
        """Start a commit now; await the returned future (or don't) for its outcome."""
        waiter = self._waiter(self._commit_command(offsets, None), "commit_async")
        assert isinstance(waiter, Delivery)
        return waiter

    def _running(self, what: str) -> ConsumerCore:
        if self._state is ConsumerState.NEW:
            self._start_now()
        if self._state is ConsumerState.CLOSED:
            raise ConsumerClosedError(f"AsyncKafkaConsumer.{what}: closed; make a new consumer")
        assert self._core is not None
        return self._core

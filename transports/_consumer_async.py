"""The consumer surface shared by the asyncio and trio consumers.

Theory of operation
-------------------
Both async consumers call the sans-IO :class:`~kafkacore.consumer.ConsumerCore`
directly from the one thread their event loop runs on, through their
driver (:class:`~kafkacore.transports._async_driver.AsyncDriver`). What each call
does is the shared consumer surface
(:class:`~kafkacore.transports._consumer_common.ConsumerSurface`); this module makes
the waiting calls awaitable: waiting loops (``poll``, ``position``,
``async for``) await the driver's change signal between their steps, and
operations (``commit``, offset lookups, ``close``) await a one-shot the
core's ``OperationCompleted`` fills.

Subclasses supply the life: ``_running(what)`` gives the core or a clear
error for a consumer that is not running (asyncio starts lazily, trio
needs ``async with``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any, TypeVar

from kafkacore.client import TopicPartition
from kafkacore.consumer import (
    ConsumerCore,
    ConsumerRecord,
    OffsetAndMetadata,
    Operation,
    PartitionBatch,
)
from kafkacore.errors import RequestCancelled

from ._async_driver import AsyncDriver, Waiter
from ._common import Parts
from ._consumer_common import REFILLED, Command, ConsumerState, ConsumerSurface, Steps, Wait

__all__ = ["AsyncConsumerBase", "ConsumerState"]

T = TypeVar("T")


class AsyncConsumerBase(ConsumerSurface):
    """The shared async surface; see the module docstring."""

    _NAME = "AsyncConsumer"

    _driver: AsyncDriver

    def _setup(self) -> None:
        self._driver = self._new_driver(self._parts)
        self._state = ConsumerState.NEW
        self._core: ConsumerCore | None = None

    def _new_driver(self, parts: Parts) -> AsyncDriver:
        raise NotImplementedError

    def _attach(self) -> None:
        """Build the core on the driver and subscribe to the constructor's topics."""
        self._core = self._driver.attach(self._build_core, self._router.on_event)
        self._state = ConsumerState.RUNNING
        if self._topics:
            self.subscribe(self._topics)

    def _running(self, what: str) -> ConsumerCore:
        raise NotImplementedError

    # -- polling ---------------------------------------------------------------
    async def poll(
        self, timeout: float = 0.0, max_records: int | None = None
    ) -> list[ConsumerRecord]:
        """Every record returned counts as consumed (Java's ``poll``)."""
        self._give_back_held()
        return await self._run(
            self._poll_steps(lambda core, now: core.poll_records(max_records, now=now), timeout)
        )

    async def poll_batches(
        self, timeout: float = 0.0, max_records: int | None = None
    ) -> list[PartitionBatch]:
        self._give_back_held()
        return await self._run(
            self._poll_steps(lambda core, now: core.poll_batches(max_records, now=now), timeout)
        )

    async def __aiter__(self) -> AsyncIterator[ConsumerRecord]:
        """Records one by one until ``close()``; a record counts as consumed once
        handed over (leaving the loop commits it, not the ones after it)."""
        driver = self._driver
        for item in self._records():
            if type(item) is Wait:
                if item is REFILLED:
                    await driver.checkpoint()
                else:
                    await driver.wait_change(self._news_since(item), item.deadline)
            else:
                yield item  # type: ignore[misc]

    async def position(self, partition: TopicPartition, timeout: float | None = None) -> int:
        return await self._run(self._position_steps(partition, timeout))

    # -- offsets ----------------------------------------------------------------------
    async def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        result: dict[TopicPartition, OffsetAndMetadata] = await self._waiter(
            self._commit_command(offsets, None), "commit"
        )
        return result

    async def committed(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        result: dict[TopicPartition, OffsetAndMetadata | None] = await self._waiter(
            self._lookup_command("committed", partitions, None), "committed"
        )
        return result

    async def end_offsets(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        result: dict[TopicPartition, int | None] = await self._waiter(
            self._lookup_command("end_offsets", partitions, None), "end_offsets"
        )
        return result

    async def beginning_offsets(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        result: dict[TopicPartition, int | None] = await self._waiter(
            self._lookup_command("beginning_offsets", partitions, None), "beginning_offsets"
        )
        return result

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, tuple[int, int] | None]:
        result: dict[TopicPartition, tuple[int, int] | None] = await self._waiter(
            self._times_command(timestamps, None), "offsets_for_times"
        )
        return result

    # -- life -------------------------------------------------------------------------
    async def close(self, timeout: float = 30.0, *, autocommit: bool = True) -> None:
        """Commit (with auto-commit), leave the group, drop sockets; within ~``timeout`` s."""
        if self._state is not ConsumerState.RUNNING:
            self._state = ConsumerState.CLOSED
            return
        core = self._running("close")
        try:
            # Best effort on the network side; the sockets are dropped below either way.
            with contextlib.suppress(Exception):
                waiter = self._waiter(self._close_command(autocommit), "close")
                await self._driver.wait(waiter, timeout, f"{self._NAME}.close")
        finally:
            self._state = ConsumerState.CLOSED
            self._driver.call(lambda now: core.shutdown(now=now))
            self._driver.abort()
            self._router.fail_all(RequestCancelled(f"{self._NAME} closed"))
            await self._driver.yield_()

    # -- the idiom: awaitables ----------------------------------------------------------
    def _call(self, fn: Command[T]) -> T:
        core = self._running("call")
        return self._driver.call(lambda now: fn(core, now))

    def _clock(self) -> float:
        return self._driver.clock()

    def _notify(self) -> None:
        self._driver.notify()

    async def _run(self, steps: Steps[T]) -> T:
        """Run ``steps`` to its value, awaiting the core's news at each wait."""
        driver = self._driver
        while True:
            try:
                wait = next(steps)
            except StopIteration as stop:
                await driver.checkpoint()
                return stop.value  # type: ignore[no-any-return]
            await driver.wait_change(self._news_since(wait), wait.deadline)

    def _waiter(self, command: Command[Operation[Any]], what: str) -> Waiter:
        """Issue ``command``; the returned one-shot gets its operation's outcome."""
        self._running(what)
        waiter = self._driver.waiter()
        self._start(command, waiter.fill)
        return waiter

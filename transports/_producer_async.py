"""The producer surface shared by the asyncio and trio producers.

Theory of operation
-------------------
Everything runs on the event loop's single thread, so user calls reach the
:class:`~kafkacore.producer.ProducerCore` directly: ``send`` checks and
serializes the record (the shared
:class:`~kafkacore.transports._producer_common.ProducerSurface`), calls
``core.append`` with a fresh one-shot from the driver as the token, and
schedules one ``Bridge.pump`` for the next loop iteration, so that a burst
of sends becomes one drain of the core's outputs. Completed batches fill
the one-shots.

When the core refuses an append (``buffer_memory`` full) the call waits for
the core's ``BufferFreed``, at most ``max_block_ms``, then raises
:class:`~kafkacore.producer.BufferExhaustedError`. ``flush`` and the
transaction calls await the :class:`~kafkacore.producer.Operation` the
core returns. Subclasses supply the life: how the driver is started and
stopped.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafkacore.client import TopicPartition
from kafkacore.consumer import ConsumerGroupMetadata
from kafkacore.errors import KafkaTimeoutError, LocalProtocolError
from kafkacore.producer import BufferFull, ProducerClosedError, ProducerCore, RecordMetadata

from ._async_driver import AsyncDriver, Waiter
from ._common import Parts
from ._producer_common import ManyResult, ProducerState, ProducerSurface, now_ms

__all__ = ["AsyncProducerBase"]

# Sends between two turns given to the event loop.
_YIELD_EVERY = 64


class AsyncProducerBase(ProducerSurface):
    """Framework-independent half of the async producers; see the module docstring."""

    _NAME = "AsyncProducer"

    _driver: AsyncDriver

    def _setup(self) -> None:
        self._driver = self._new_driver(self._parts)
        self._core: ProducerCore | None = None
        self._pump_due = False
        self._room: Waiter | None = None
        self._closed = False
        self._sends = 0

    def _new_driver(self, parts: Parts) -> AsyncDriver:
        raise NotImplementedError

    @property
    def state(self) -> ProducerState:
        if self._closed:
            return ProducerState.CLOSED
        return ProducerState.RUNNING if self._core is not None else ProducerState.NEW

    # -- wiring ---------------------------------------------------------------
    def _attach(self) -> None:
        self._core = self._driver.attach(self._build_core, self._on_event)

    def _running(self, what: str) -> ProducerCore:
        if self._closed:
            raise ProducerClosedError(f"{self._NAME}.{what}: closed; make a new producer")
        if self._core is None:
            raise LocalProtocolError(
                f"{self._NAME}.{what}: not started; use 'async with {self._NAME}(...)'"
                " or await start()"
            )
        return self._core

    def _schedule_pump(self) -> None:
        if not self._pump_due:
            self._pump_due = True
            self._driver.call_soon(self._pump)

    def _pump(self) -> None:
        self._pump_due = False
        if self._driver.attached and not self._closed:
            self._driver.bridge.pump()

    def _room_freed(self) -> None:
        room, self._room = self._room, None
        if room is not None:
            room.fill(None, None)

    async def _append(self, what: str, fn: Callable[[ProducerCore, float], None]) -> None:
        """Run ``fn(core, now)``; on BufferFull wait for room (max_block_ms) and retry."""
        driver = self._driver
        core = self._running(what)
        deadline = driver.clock() + self.config.max_block_ms / 1000
        while True:
            try:
                fn(core, driver.clock())
            except BufferFull:
                self._schedule_pump()
                remaining = deadline - driver.clock()
                if remaining <= 0:
                    raise self._exhausted(what) from None
                if self._room is None:
                    self._room = driver.waiter()
                try:
                    await driver.wait(self._room, remaining, what, shared=True)
                except KafkaTimeoutError:
                    raise self._exhausted(what) from None
                core = self._running(what)
                continue
            self._schedule_pump()
            return

    # -- sending --------------------------------------------------------------
    async def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        headers: Iterable[tuple[str, Any]] | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> Any:
        """Queue one record; returns an awaitable resolving to its RecordMetadata.

        Awaiting ``send`` itself only waits for buffer room (back-pressure).
        """
        k, v, h = self._prepare(value, key, headers)
        slot = self._driver.waiter()
        ts = now_ms() if timestamp is None else timestamp
        core = self._core
        if core is not None and not self._closed:
            try:  # fast path: room in the buffer
                core.append(
                    topic,
                    v,
                    k,
                    h,
                    partition=partition,
                    timestamp=ts,
                    token=slot,
                    now=self._driver.clock(),
                )
            except BufferFull:
                pass
            else:
                if not self._pump_due:
                    self._pump_due = True
                    self._driver.call_soon(self._pump)
                self._sends += 1
                if self._sends >= _YIELD_EVERY:
                    # Let the loop write batches: a sender that never blocks
                    # must not keep the producer's own I/O waiting.
                    self._sends = 0
                    await self._driver.yield_()
                return slot

        def append(core: ProducerCore, now: float) -> None:
            core.append(topic, v, k, h, partition=partition, timestamp=ts, token=slot, now=now)

        await self._append("send", append)
        return slot

    async def send_and_wait(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        headers: Iterable[tuple[str, Any]] | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> RecordMetadata:
        """Send one record and wait for its RecordMetadata."""
        slot = await self.send(topic, value, key, headers, partition, timestamp)
        result: RecordMetadata = await slot
        return result

    async def send_many(
        self,
        topic: str,
        records: Any,
        *,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> ManyResult:
        """Send ``(key, value)`` pairs or a ``(keys, values)`` column pair; wait for all.

        Raises the first delivery error, if any; else returns a ManyResult.
        """
        values, keys = self._columns(records)
        if not values:
            return ManyResult(topic, 0, lambda r: None)
        slot = self._driver.waiter()
        result = ManyResult(topic, len(values), lambda r: slot.fill(r, r.error))
        ts = now_ms() if timestamp is None else timestamp
        for vals, ks in self._chunks(values, keys):

            def append(core: ProducerCore, now: float, vals: Any = vals, ks: Any = ks) -> None:
                core.append_many(
                    topic, vals, ks, partition=partition, timestamp=ts, token=result, now=now
                )

            await self._append("send_many", append)
        done: ManyResult = await slot
        return done

    # -- operations -------------------------------------------------------------
    async def _operation(self, what: str, timeout: float | None, *args: Any) -> None:
        core = self._running(what)
        command = self._operation_command(what, *args)
        waiter = self._driver.waiter()
        self._driver.call(lambda now: self._expect(command(core, now), waiter.fill))
        await self._driver.wait(waiter, timeout, f"{self._NAME}.{what}")

    async def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now and wait until each record is done."""
        await self._operation("flush", timeout)

    async def init_transactions(self, timeout: float | None = None) -> None:
        await self._operation("init_transactions", timeout)

    async def begin_transaction(self) -> None:
        await self._operation("begin_transaction", None)

    async def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, int] | Mapping[tuple[str, int], int],
        group_id: str | ConsumerGroupMetadata,
        timeout: float | None = None,
    ) -> None:
        await self._operation("send_offsets_to_transaction", timeout, offsets, group_id)

    async def commit_transaction(self, timeout: float | None = None) -> None:
        await self._operation("commit_transaction", timeout)

    async def abort_transaction(self, timeout: float | None = None) -> None:
        await self._operation("abort_transaction", timeout)

    def run_on_loop(self, fn: Callable[[ProducerCore], Any]) -> Any:
        """Call ``fn(core)`` and pump afterwards (queries, tests)."""
        core = self._running("run_on_loop")
        return self._driver.call(lambda now: fn(core))

    # -- closing ----------------------------------------------------------------
    async def _flush_then_stop(self, timeout: float | None) -> None:
        if self._closed or self._core is None:
            self._closed = True
            return
        # On timeout, what is left fails with ProducerClosedError below.
        with contextlib.suppress(KafkaTimeoutError):
            await self.flush(timeout)
        self._stop_core()

    def _stop_core(self) -> None:
        if self._closed:
            return
        self._closed = True
        core = self._core
        if core is not None:
            self._driver.call(lambda now: core.close(now=now))
        error = ProducerClosedError(f"{self._NAME} closed")
        self._fail_ops(error)
        room, self._room = self._room, None
        if room is not None:
            room.fill(None, error)

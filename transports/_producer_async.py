"""The producer surface shared by the asyncio and trio producers.

Theory of operation
-------------------
Everything runs on the event loop's single thread, so user calls reach the
:class:`~kafkacore.producer.ProducerCore` directly: ``send`` checks and
serializes the record (the shared
:class:`~kafkacore.transports._producer_common.ProducerSurface`), calls
``core.append`` with a light
:class:`~kafkacore.transports._producer_future.RecordFuture` (or the caller's
``on_delivery`` callable) as the token and, when the core says a batch was
opened, schedules one ``Bridge.pump`` for the next loop iteration, so that a
burst of sends becomes one drain of the core's outputs. Completed batches
fill the futures.

When the core refuses an append (``buffer_memory`` full) the call waits for
the core's ``BufferFreed``, at most ``max_block_ms``, then raises
:class:`~kafkacore.producer.BufferExhaustedError`. ``flush`` and the
transaction calls await the :class:`~kafkacore.producer.Operation` the
core returns. Subclasses supply the life: how the driver is started and
stopped.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, overload

from kafkacore.errors import KafkaTimeoutError, LocalProtocolError
from kafkacore.producer import BufferFull, ProducerClosedError, ProducerCore, RecordMetadata

from ._async_driver import AsyncDriver, Waiter
from ._common import Parts
from ._producer_async_ops import AsyncOperations
from ._producer_batch import BatchCalls
from ._producer_common import ManyResult, OnDelivery, ProducerState, ProducerSurface, now_ms
from ._producer_future import Idiom, LightFuture, RecordFuture
from ._unclosed import weak_method

if TYPE_CHECKING:
    # Types only: importing it runs the consumer package, which a producer
    # never needs (a transactional one gets the consumer's metadata from it).
    pass

__all__ = ["AsyncProducerBase"]

# Sends between two turns given to the event loop.
_YIELD_EVERY = 64
#: The farewell's bound after close(timeout=None) (the flush itself is unbounded).
_FAREWELL_S = 5.0

_time_ns = time.time_ns


class AsyncProducerBase(BatchCalls, AsyncOperations, ProducerSurface):
    """Framework-independent half of the async producers; see the module docstring."""

    _NAME = "AsyncProducer"

    _driver: AsyncDriver

    def _setup(self) -> None:
        self._driver = self._new_driver(self._parts)
        self._idiom = self._new_idiom()
        self._clock = self._driver.clock
        self._core: ProducerCore | None = None
        self._pump_due = False
        self._room: Waiter | None = None
        self._closed = False
        self._sends = 0
        self._txn_started = False

    def _new_driver(self, parts: Parts) -> AsyncDriver:
        raise NotImplementedError

    def _new_idiom(self) -> Idiom:
        raise NotImplementedError

    def _is_open(self) -> bool:
        return self._core is not None and not self._closed

    def _drop(self) -> None:
        # Collected unclosed (see _unclosed.py): drop the connections (no await).
        with contextlib.suppress(RuntimeError):  # its event loop is closed already
            self._driver.abort()

    @property
    def state(self) -> ProducerState:
        if self._closed:
            return ProducerState.CLOSED
        return ProducerState.RUNNING if self._core is not None else ProducerState.NEW

    # -- wiring ---------------------------------------------------------------
    def _attach(self) -> None:
        self._core = self._driver.attach(self._build_core, weak_method(self._on_event))

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
    @overload
    async def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        headers: Iterable[tuple[str, Any]] | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        *,
        timestamp: int | None = None,
        on_delivery: None = None,
    ) -> RecordFuture: ...

    @overload
    async def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        headers: Iterable[tuple[str, Any]] | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        *,
        timestamp: int | None = None,
        on_delivery: OnDelivery,
    ) -> None: ...

    async def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        headers: Iterable[tuple[str, Any]] | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        *,
        timestamp: int | None = None,
        on_delivery: OnDelivery | None = None,
    ) -> RecordFuture | None:
        """Queue one record; returns its future (await it for the RecordMetadata).

        Awaiting ``send`` itself only waits for buffer room (back-pressure).
        With ``on_delivery(metadata, error)`` no future is made (None is
        returned); it is called once the record is written or failed.
        """
        if (
            type(value) is bytes
            and (key is None or type(key) is bytes)
            and not headers
            and self._value_serializer is None
            and self._key_serializer is None
        ):
            k: bytes | None = key
            v: bytes | None = value
            h: list[tuple[str, bytes | None]] | None = None
        else:
            k, v, h = self._prepare(topic, value, key, headers)
        if timestamp_ms is None:
            ts = _time_ns() // 1_000_000 if timestamp is None else timestamp
        else:
            ts = self._timestamp(timestamp_ms, timestamp)
        token: Any = RecordFuture(self._idiom) if on_delivery is None else on_delivery
        core = self._core
        if core is not None and not self._closed:
            try:  # fast path: room in the buffer
                if k is None and h is None and partition is None:
                    wake = not core.try_append(topic, v, ts, token) and core.append(
                        topic, v, None, None, timestamp=ts, token=token, now=self._clock()
                    )
                else:
                    wake = core.append(
                        topic,
                        v,
                        k,
                        h,
                        partition=partition,
                        timestamp=ts,
                        token=token,
                        now=self._clock(),
                    )
            except BufferFull:
                pass
            else:
                if wake and not self._pump_due:
                    self._pump_due = True
                    self._driver.call_soon(self._pump)
                self._sends += 1
                if self._sends >= _YIELD_EVERY:
                    # Let the loop write batches: a sender that never blocks
                    # must not keep the producer's own I/O waiting.
                    self._sends = 0
                    await self._driver.yield_()
                return token if on_delivery is None else None

        def append(core: ProducerCore, now: float) -> None:
            core.append(topic, v, k, h, partition=partition, timestamp=ts, token=token, now=now)

        await self._append("send", append)
        return token if on_delivery is None else None

    async def send_and_wait(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        headers: Iterable[tuple[str, Any]] | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        *,
        timestamp: int | None = None,
    ) -> RecordMetadata:
        """Send one record and wait for its RecordMetadata."""
        fut = await self.send(
            topic, value, key, headers, partition, timestamp_ms, timestamp=timestamp
        )
        result: RecordMetadata = await fut
        return result

    async def send_many(
        self,
        topic: str,
        records: Any = None,
        *,
        keys: Any = None,
        values: Any = None,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> ManyResult:
        """Send ``(key, value)`` tuples, or columns as ``values=`` (+ ``keys=``); wait for all.

        Raises the first delivery error, if any; else returns a ManyResult.
        """
        vals_all, keys_all = self._columns(topic, records, keys, values)
        if not vals_all:
            return ManyResult(topic, 0, lambda r: None)
        fut = LightFuture(self._idiom)
        result = ManyResult(topic, len(vals_all), lambda r: fut.fill(r, r.error))
        ts = now_ms() if timestamp is None else timestamp
        for vals, ks in self._chunks(vals_all, keys_all):

            def append(core: ProducerCore, now: float, vals: Any = vals, ks: Any = ks) -> None:
                core.append_many(
                    topic, vals, ks, partition=partition, timestamp=ts, token=result, now=now
                )

            await self._append("send_many", append)
        done: ManyResult = await fut
        return done

    # -- operations -------------------------------------------------------------
    async def _operation(self, what: str, timeout: float | None, *args: Any) -> None:
        core = self._running(what)
        command = self._operation_command(what, *args)
        waiter = self._driver.waiter()
        self._driver.call(lambda now: self._expect(command(core, now), waiter.fill))
        await self._driver.wait(waiter, timeout, f"{self._NAME}.{what}")

    def run_on_loop(self, fn: Callable[[ProducerCore], Any]) -> Any:
        """Call ``fn(core)`` and pump afterwards (queries, tests)."""
        core = self._running("run_on_loop")
        return self._driver.call(lambda now: fn(core))

    # -- queries (kafka-python's / aiokafka's names) ----------------------------
    async def partitions_for(self, topic: str) -> set[int]:
        """``topic``'s partition ids; waits up to max_block_ms for its metadata."""
        deadline = self._driver.clock() + self.config.max_block_ms / 1000
        while True:
            core = self._running("partitions_for")
            parts = self._known_partitions(core, topic, self._driver.clock())
            if parts is not None:
                await self._driver.checkpoint()
                return parts
            self._schedule_pump()
            now = self._driver.clock()
            if now >= deadline:
                raise self._no_partitions(topic)
            # Metadata comes with no producer event: look again shortly.
            await self._driver.wait_change(lambda: False, min(deadline, now + 0.05))

    def metrics(self, raw: bool = False) -> dict[str, dict[str, float]]:
        """kafka-python's ``metrics()`` shape: ``{"producer-metrics": {name: value}}``."""
        return self._metrics_of(self._running("metrics"))

    def bootstrap_connected(self) -> bool:
        """Whether a bootstrap broker answered."""
        return self._core is not None and self._connected(self._core)

    # -- closing ----------------------------------------------------------------
    async def _flush_then_stop(self, timeout: float | None) -> None:
        if self._closed or self._core is None:
            self._closed = True
            return
        end = None if timeout is None else self._driver.clock() + timeout
        # On timeout, what is left fails with ProducerClosedError below.
        with contextlib.suppress(KafkaTimeoutError):
            await self.flush(timeout)
        # The farewell (KIP-714's terminating push) gets what the flush left of
        # ``timeout`` (5 s after an unbounded flush); the sockets stay open meanwhile.
        left = _FAREWELL_S if end is None else end - self._driver.clock()
        await self._driver.farewell(left)
        self._stop_core()

    def _stop_core(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._close_serializers()
        core = self._core
        if core is not None:
            self._driver.call(lambda now: core.close(now=now))
        error = ProducerClosedError(f"{self._NAME} closed")
        self._fail_ops(error)
        room, self._room = self._room, None
        if room is not None:
            room.fill(None, error)

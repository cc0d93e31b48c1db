"""Blocking Kafka producer: the producer core on a ``selectors`` loop thread.

Theory of operation
-------------------
:class:`KafkaProducer` owns one :class:`~kafkacore.producer.ProducerCore`
driven by the selector transport's driver
(:class:`~kafkacore.transports._selector_driver.LoopThread`) on a background thread,
as the Java producer's sender thread. What is the same for every producer
(records checked and serialized, batches fanned out to their futures,
operations) is the shared surface
(:class:`~kafkacore.transports._producer_common.ProducerSurface`).

The core is guarded by one reentrant *core lock*: the loop thread holds it
whenever it feeds the core a fact and drains it (the driver's locked
bridge), and ``send`` holds it while it appends the record to the core
*in the caller's thread*, as Java's ``send`` appends to its accumulator.
No thread hand-off, no queue, no ``concurrent.futures.Future``: the record's
token is a light :class:`~kafkacore.transports._producer_future.RecordFuture`
(or the caller's ``on_delivery`` callable). The core's ``append`` says when
the loop must look (a batch was opened, so the linger deadline may have
moved earlier; a full batch made the core write a request): only then is
the loop woken, once, to drain the core and re-arm its timer. A burst of
sends into open batches wakes nothing.

When the core refuses an append (``buffer_memory`` full) ``send`` waits on
the lock's condition (at most ``max_block_ms``, then
:class:`~kafkacore.producer.BufferExhaustedError`) until the core's
``BufferFreed``. ``flush`` and the transaction calls run their core command
in the caller's thread too (so they are ordered after the caller's sends)
and wait for its operation. Delivery callbacks run on the loop thread; a
blocking call there (``result()``, ``get()``, ``flush()``, ``close()``, a
``send`` that would wait for room) raises at once instead of deadlocking.

Life: ``RUNNING --close()--> CLOSED`` (:class:`ProducerState`).
``close(timeout)`` flushes for at most ``timeout`` seconds, then stops the
core (what is left fails with ProducerClosedError) and closes every socket.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any, overload

from kafkacore.errors import KafkaTimeoutError
from kafkacore.producer import BufferExhaustedError, BufferFull, ProducerClosedError

from ._producer_common import (
    BlockingOperations,
    ManyResult,
    OnDelivery,
    ProducerState,
    now_ms,
)
from ._producer_future import LightFuture, RecordFuture, ThreadIdiom, WaitTimeoutError
from ._producer_selector_queries import BlockingQueries
from ._selector_driver import LoopThread
from ._unclosed import weak_method

__all__ = ["KafkaProducer", "ProducerState"]

_monotonic = time.monotonic
#: The farewell's bound after close(timeout=None) (the flush itself is unbounded).
_FAREWELL_S = 5.0
_time_ns = time.time_ns
_sleep = time.sleep


class KafkaProducer(BlockingOperations, BlockingQueries):
    """Blocking producer; see the module docstring. Options as ProducerConfig + ClientConfig."""

    _NAME = "KafkaProducer"

    def _setup(self) -> None:
        self._max_block_s = self.config.max_block_ms / 1000
        self._loop = LoopThread(
            self._NAME, self._parts, noun="producer", thread_name="kafkacore-producer"
        )
        self._core = self._build_core(self._loop.clock())
        self._lock = threading.RLock()
        self._idiom = ThreadIdiom(self._NAME, self._lock, self._loop)
        self._cond = self._idiom.cond
        self._wake_due = False
        self._full = False
        # A sender that opens a batch yields the GIL to the loop above 4 buffered
        # batches, at most every 0.5 ms (measured: the p99/throughput balance).
        self._backlog = 4 * self.config.batch_size
        self._next_yield = 0.0
        self._state = ProducerState.RUNNING
        self._open = True  # RUNNING and the loop alive: checked per record
        self._loop.start(
            self._core,
            weak_method(self._on_loop_event),
            on_crash=weak_method(self._crashed),
            lock=self._lock,
        )
        self._bridge: Any = self._loop.bridge  # its ``wanted`` flag is read per record
        self._try_append = self._core.try_append

    # -- life ---------------------------------------------------------------
    @property
    def state(self) -> ProducerState:
        return self._state

    def _is_open(self) -> bool:
        return self._state is ProducerState.RUNNING

    def _drop(self) -> None:
        self._loop.abandon()

    def __enter__(self) -> KafkaProducer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self, timeout: float | None = None) -> None:
        """Flush for at most ``timeout`` s (None: until done), then stop; bounded."""
        if self._state is ProducerState.CLOSED:
            return
        self._idiom.check_off_loop("close")
        end = None if timeout is None else _monotonic() + timeout
        # On timeout, what is left fails with ProducerClosedError below.
        if self._loop.crashed is None:
            with contextlib.suppress(KafkaTimeoutError):
                self.flush(timeout)
        with self._lock:
            self._state = ProducerState.CLOSED
            self._open = False
            self._cond.notify_all()
        self._close_serializers()
        # The loop's farewell (KIP-714's terminating push) gets what the flush
        # left of ``timeout`` (5 s after an unbounded flush).
        left = _FAREWELL_S if end is None else max(0.0, end - _monotonic())
        self._loop.stop(self._shutdown_core, left)
        # A loop that did not get to close the core (hung, crashed): do it here.
        if self._lock.acquire(timeout=1.0):
            try:
                if not self._core.closed:
                    self._core.close(now=_monotonic())
                    for event in self._core.pull_events():
                        self._on_loop_event(event)
            finally:
                self._lock.release()

    def _shutdown_core(self) -> None:
        self._loop.bridge.command(lambda now: self._core.close(now=now))

    def _crashed(self, error: BaseException) -> None:
        """The loop thread died (a bug): fail every waiter rather than hang it."""
        with self._lock:
            self._open = False
            self._idiom.broken = self._loop.refusal() or error
            self._cond.notify_all()
        self._fail_ops(error)

    def _refused(self) -> BaseException:
        if self._state is ProducerState.CLOSED:
            return ProducerClosedError(f"{self._NAME}: closed; make a new producer")
        return self._loop.refusal() or ProducerClosedError(f"{self._NAME}: stopped")

    # -- the loop's side ------------------------------------------------------
    def _on_loop_event(self, event: object) -> None:
        self._on_event(event)
        if self._idiom.waiters:
            self._cond.notify_all()

    def _wake(self) -> None:
        """Have the loop drain the core and re-arm its timer (at most one pending)."""
        if not self._wake_due:
            self._wake_due = True
            self._loop.io.call_soon_threadsafe(self._pump)

    def _pump(self) -> None:
        if not self._loop.stopping:
            self._loop.bridge.command(self._woken)

    def _woken(self, now: float) -> None:
        self._wake_due = False  # under the lock: later appends wake again

    def _room_freed(self) -> None:
        self._full = False
        self._cond.notify_all()

    # -- sending ------------------------------------------------------------
    @overload
    def send(
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
    def send(
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

    def send(
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
        """Queue one record; returns its future (None with ``on_delivery``).

        ``on_delivery(metadata, error)`` is called on the I/O thread once the
        record is written (``error`` None) or failed, with no future made.
        ``timestamp_ms`` (or ``timestamp``): the record's CreateTime in ms.
        """
        # Inlined fast path of _prepare (this runs once per record): plain
        # bytes and no headers need no conversion or check.
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
        if self._bridge.wanted:
            self._loop.let_loop_in()
        with self._lock:
            if not self._open:
                raise self._refused()
            try:
                if k is None and h is None and partition is None:
                    wake = not self._try_append(topic, v, ts, token) and self._core.append(
                        topic, v, None, None, timestamp=ts, token=token, now=_monotonic()
                    )
                else:
                    wake = self._core.append(
                        topic,
                        v,
                        k,
                        h,
                        partition=partition,
                        timestamp=ts,
                        token=token,
                        now=_monotonic(),
                    )
            except BufferFull:
                wake = self._append_waiting(
                    "send",
                    lambda now: self._core.append(
                        topic, v, k, h, partition=partition, timestamp=ts, token=token, now=now
                    ),
                )
            if wake and not self._wake_due:
                self._wake_due = True
                self._loop.io.call_soon_threadsafe(self._pump)
        if wake and self._core.buffer_used > self._backlog:
            # Records pile up: the loop gets the GIL now (as the async producers
            # yield to theirs), not at the next 5 ms switch, to write and complete.
            now = _monotonic()
            if now >= self._next_yield:
                self._next_yield = now + 0.0005
                _sleep(0)
        return token if on_delivery is None else None

    def send_many(
        self,
        topic: str,
        records: Any = None,
        *,
        keys: Any = None,
        values: Any = None,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> LightFuture:
        """Queue many records: ``(key, value)`` tuples, or columns as ``values=`` (+ ``keys=``).

        One future for all of them, resolved with a :class:`ManyResult` when
        every record is done (its ``error`` is the first failure, if any).
        """
        vals_all, keys_all = self._columns(topic, records, keys, values)
        fut = LightFuture(self._idiom)
        if not vals_all:
            fut.fill(ManyResult(topic, 0, lambda r: None), None)
            return fut
        result = ManyResult(topic, len(vals_all), lambda r: fut.fill(r, r.error))
        ts = now_ms() if timestamp is None else timestamp
        for vals, ks in self._chunks(vals_all, keys_all):
            self._loop.let_loop_in()
            with self._lock:
                if not self._open:
                    raise self._refused()

                def append(now: float, vals: Any = vals, ks: Any = ks) -> None:
                    self._core.append_many(
                        topic, vals, ks, partition=partition, timestamp=ts, token=result, now=now
                    )

                try:
                    append(_monotonic())
                except BufferFull:
                    self._append_waiting("send_many", append)
                self._wake()
        return fut

    def _append_waiting(self, what: str, append: Callable[[float], Any]) -> Any:
        """Under the lock, after BufferFull: retry ``append`` as room frees, up to max_block_ms."""
        if self._loop.on_loop:
            raise BufferExhaustedError(
                f"{self._NAME}.{what}: buffer_memory is full and it was called on the "
                "producer's I/O thread (a delivery callback), which cannot wait; send from "
                "your own thread"
            )
        self._wake()  # the loop must send what fills the buffer
        deadline = _monotonic() + self._max_block_s
        while True:
            self._full = True
            remaining = deadline - _monotonic()
            if remaining <= 0:
                raise self._exhausted(what)
            self._cond.wait(remaining)
            if not self._open:
                raise self._refused()
            if self._full:
                continue
            try:
                return append(_monotonic())
            except BufferFull:
                continue

    # -- operations -----------------------------------------------------------
    def _operation(self, what: str, timeout: float | None, *args: Any) -> None:
        """Run the core's ``what`` in the caller's thread (after its sends); wait for it."""
        if self._state is ProducerState.CLOSED:
            raise ProducerClosedError(f"{self._NAME}.{what}: closed; make a new producer")
        self._idiom.check_off_loop(what)
        fut = LightFuture(self._idiom)
        command = self._operation_command(what, *args)
        with self._lock:
            if not self._open:
                raise self._refused()
            self._expect(command(self._core, _monotonic()), fut.fill)
            self._wake()
        try:
            fut.result(timeout)
        except WaitTimeoutError:
            raise KafkaTimeoutError(
                f"{self._NAME}.{what}: not finished within {timeout} s"
            ) from None

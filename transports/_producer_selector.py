"""Blocking Kafka producer: the producer core on a ``selectors`` loop thread.

Theory of operation
-------------------
:class:`KafkaProducer` owns one :class:`~kafkacore.producer.ProducerCore`
driven by the selector transport's driver
(:class:`~kafkacore.transports._selector_driver.LoopThread`) on a background thread,
as the Java producer's sender thread. What is the same for every producer
(records checked and serialized, batches fanned out to their futures,
operations) is the shared surface
(:class:`~kafkacore.transports._producer_common.ProducerSurface`). ``send`` runs in
the caller's thread: it serializes and checks the record, stamps the
wall-clock timestamp, and puts it on a *hand-off* deque
together with a ``concurrent.futures.Future``; the loop is woken only when
the deque was idle, so a burst of sends costs one wake-up. The loop moves
hand-off items into the core; when the core refuses one (``buffer_memory``
full) the item stays first in line, ``send`` callers block (at most
``max_block_ms``, then :class:`~kafkacore.producer.BufferExhaustedError`)
and the loop resumes on the core's ``BufferFreed``.

Producer life (:class:`ProducerState`)::

    RUNNING --close()--> CLOSED

``flush`` and the transaction calls are ordered after every ``send`` made
before them: they run on the loop once the hand-off deque has drained.
``close(timeout)`` flushes for at most ``timeout`` seconds, then stops the
core (what is left fails with ProducerClosedError) and closes every socket.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any

from kafkacore.client import TopicPartition
from kafkacore.consumer import ConsumerGroupMetadata
from kafkacore.errors import KafkaTimeoutError, LocalProtocolError
from kafkacore.producer import (
    BufferExhaustedError,
    BufferFull,
    ProducerClosedError,
    RecordMetadata,
)

from ._producer_common import ManyResult, ProducerState, ProducerSurface, fail_token, now_ms
from ._selector_driver import Delivery, LoopThread, failer

__all__ = ["KafkaProducer", "ProducerState"]

# Hand-off items beyond this make send() wait too: bounds the deque when the
# loop thread falls behind even though buffer_memory has room.
_HANDOFF_LIMIT = 2048
# Records moved into the core per loop iteration, between I/O polls.
_FEED_BUDGET = 1024


class KafkaProducer(ProducerSurface):
    """Blocking producer; see the module docstring. Options as ProducerConfig + ClientConfig."""

    _NAME = "KafkaProducer"

    def _setup(self) -> None:
        self._max_block_s = self.config.max_block_ms / 1000
        self._loop = LoopThread(
            self._NAME, self._parts, noun="producer", thread_name="kafkacore-producer"
        )
        self._core = self._build_core(self._loop.clock())
        self._cond = threading.Condition(threading.Lock())
        self._handoff: deque[tuple[Any, ...]] = deque()
        self._scheduled = False
        self._full = False
        self._blocked = 0  # send() callers waiting on _cond
        self._after_handoff: list[Callable[[float], None]] = []
        self._state = ProducerState.RUNNING
        self._loop.start(
            self._core,
            self._on_event,
            on_crash=self._fail_handoff,
            between_passes=self._between_passes,
        )

    # -- life ---------------------------------------------------------------
    @property
    def state(self) -> ProducerState:
        return self._state

    def __enter__(self) -> KafkaProducer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _between_passes(self) -> float | None:
        # Hand-off items are fed between I/O polls, a bounded number at a
        # time, so a fast sender cannot keep the loop from writing batches.
        if self._handoff and not self._full:
            self._loop.bridge.command(self._feed)
        return 0.0 if self._handoff and not self._full else None

    def close(self, timeout: float | None = None) -> None:
        """Flush for at most ``timeout`` s (None: until done), then stop; bounded."""
        if self._state is ProducerState.CLOSED:
            return
        if self._loop.on_loop:
            raise LocalProtocolError(
                "KafkaProducer.close: called from a delivery callback on the loop thread; "
                "call it from user code"
            )
        # On timeout, what is left fails with ProducerClosedError below.
        if self._loop.crashed is None:
            with contextlib.suppress(KafkaTimeoutError):
                self.flush(timeout)
        with self._cond:
            self._state = ProducerState.CLOSED
            self._cond.notify_all()
        self._loop.stop(self._shutdown_core, 5.0 if timeout is None else max(timeout, 1.0))
        self._fail_handoff(ProducerClosedError("KafkaProducer closed before the record was sent"))

    def _shutdown_core(self) -> None:
        self._loop.bridge.command(lambda now: self._core.close(now=now))
        self._fail_handoff(ProducerClosedError("KafkaProducer closed before the record was sent"))

    def _fail_handoff(self, error: BaseException) -> None:
        with self._cond:
            items = list(self._handoff)
            self._handoff.clear()
            after, self._after_handoff = self._after_handoff, []
        for item in items:
            fail_token(item[-1], error)
        for fn in after:
            fn(-1.0)
        self._fail_ops(error)

    # -- sending ------------------------------------------------------------
    def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        headers: Iterable[tuple[str, Any]] | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> concurrent.futures.Future[RecordMetadata]:
        """Queue one record; the future resolves to its RecordMetadata (or its error)."""
        # Inlined fast path of _prepare (this runs once per record): plain
        # bytes and no headers need no conversion or check.
        if (
            type(value) is bytes
            and (key is None or type(key) is bytes)
            and not headers
            and self._value_serializer is None
        ):
            k: bytes | None = key
            v: bytes | None = value
            h: list[tuple[str, bytes | None]] | None = None
        else:
            k, v, h = self._prepare(value, key, headers)
        fut = Delivery()
        ts = time.time_ns() // 1_000_000 if timestamp is None else timestamp  # as now_ms()
        self._submit((topic, v, k, h, partition, ts, fut))
        return fut

    def send_many(
        self,
        topic: str,
        records: Any,
        *,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> concurrent.futures.Future[ManyResult]:
        """Queue many records: ``(key, value)`` pairs or a ``(keys, values)`` column pair.

        One future for all of them, resolved with a :class:`ManyResult` when
        every record is done (its ``error`` is the first failure, if any).
        """
        values, keys = self._columns(records)
        fut = Delivery()
        if not values:
            fut.set_result(ManyResult(topic, 0, lambda r: None))
            return fut
        result = ManyResult(topic, len(values), lambda r: fut.fill(r, r.error))
        ts = now_ms() if timestamp is None else timestamp
        for vals, ks in self._chunks(values, keys):
            self._submit((topic, vals, ks, partition, ts, result))
        return fut

    def _submit(self, item: tuple[Any, ...]) -> None:
        wake = False
        with self._cond:
            if self._state is ProducerState.CLOSED:
                raise ProducerClosedError("KafkaProducer: closed; make a new producer")
            loop = self._loop
            if loop.crashed is not None or loop.io.closed:  # (refusal() is not None)
                refused = loop.refusal()  # the loop thread died (a bug), or stopped
                if refused is not None:
                    raise refused
            if self._full or len(self._handoff) >= _HANDOFF_LIMIT:
                self._wait_for_room()
            self._handoff.append(item)
            if not self._scheduled:
                self._scheduled = wake = True
        if wake:
            self._loop.wake()  # the loop feeds after polling

    def _wait_for_room(self) -> None:
        if self._loop.on_loop:
            raise BufferExhaustedError(
                "KafkaProducer.send: buffer_memory is full and send() was called on the loop "
                "thread (a delivery callback), which cannot wait; send from user code"
            )
        deadline = time.monotonic() + self._max_block_s
        self._blocked += 1
        try:
            while self._full or len(self._handoff) >= _HANDOFF_LIMIT:
                if self._state is ProducerState.CLOSED:
                    raise ProducerClosedError("KafkaProducer: closed while send() waited")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self._exhausted("send")
                self._cond.wait(remaining)
        finally:
            self._blocked -= 1

    def _feed(self, now: float) -> None:
        """Loop thread: move hand-off items into the core until empty or full."""
        core = self._core
        handoff = self._handoff
        budget = _FEED_BUDGET
        while handoff and budget:
            budget -= 1
            item = handoff[0]
            try:
                if len(item) == 7:
                    topic, value, key, headers, partition, ts, fut = item
                    core.append(
                        topic,
                        value,
                        key,
                        headers,
                        partition=partition,
                        timestamp=ts,
                        token=fut,
                        now=now,
                    )
                else:
                    topic, values, keys, partition, ts, result = item
                    core.append_many(
                        topic,
                        values,
                        keys,
                        partition=partition,
                        timestamp=ts,
                        token=result,
                        now=now,
                    )
            except BufferFull:
                with self._cond:
                    self._full = True
                return  # resumed by BufferFreed
            except Exception as exc:
                handoff.popleft()
                fail_token(item[-1], exc)
            else:
                handoff.popleft()
            if self._blocked and len(handoff) < _HANDOFF_LIMIT // 2:
                with self._cond:
                    self._cond.notify_all()
        with self._cond:
            if handoff:
                return  # the loop feeds again after its next poll
            self._scheduled = False
            after, self._after_handoff = self._after_handoff, []
            if self._blocked:
                self._cond.notify_all()
        for fn in after:
            fn(now)

    def _room_freed(self) -> None:
        with self._cond:
            self._full = False
            self._cond.notify_all()

    # -- operations -----------------------------------------------------------
    def _operation(self, what: str, timeout: float | None, *args: Any) -> None:
        """Run the core's ``what`` on the loop after the hand-off drained; wait for it."""
        if self._state is ProducerState.CLOSED:
            raise ProducerClosedError(f"KafkaProducer.{what}: closed; make a new producer")
        if self._loop.on_loop:
            raise LocalProtocolError(
                f"KafkaProducer.{what}: would block the producer's loop thread; "
                "do not call it from a delivery callback"
            )
        refused = self._loop.refusal()  # the loop thread died (a bug)
        if refused is not None:
            raise refused
        fut = Delivery()
        command = self._operation_command(what, *args)

        def run(now: float) -> None:
            if now < 0:
                fut.fill(None, ProducerClosedError(f"KafkaProducer.{what}: closed"))
                return
            try:
                handle = command(self._core, now)
            except Exception as exc:
                fut.fill(None, exc)
                return
            self._expect(handle, fut.fill)

        def schedule() -> None:
            with self._cond:
                if self._handoff:
                    self._after_handoff.append(run)
                    return
            self._loop.bridge.command(run)

        self._loop.io.call_soon_threadsafe(schedule)
        try:
            fut.result(timeout)
        except concurrent.futures.TimeoutError:
            raise KafkaTimeoutError(
                f"KafkaProducer.{what}: not finished within {timeout} s"
            ) from None

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now and wait until each record is done."""
        self._operation("flush", timeout)

    def init_transactions(self, timeout: float | None = None) -> None:
        self._operation("init_transactions", timeout)

    def begin_transaction(self) -> None:
        self._operation("begin_transaction", None)

    def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, int] | Mapping[tuple[str, int], int],
        group_id: str | ConsumerGroupMetadata,
        timeout: float | None = None,
    ) -> None:
        self._operation("send_offsets_to_transaction", timeout, offsets, group_id)

    def commit_transaction(self, timeout: float | None = None) -> None:
        self._operation("commit_transaction", timeout)

    def abort_transaction(self, timeout: float | None = None) -> None:
        self._operation("abort_transaction", timeout)

    def run_on_loop(self, fn: Callable[[Any], Any], timeout: float | None = None) -> Any:
        """Run ``fn(core)`` on the loop thread and return its result (queries, tests)."""
        fut = Delivery()
        self._loop.post(lambda now: fut.set_result(fn(self._core)), failer(fut))
        return fut.result(timeout)

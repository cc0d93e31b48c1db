"""Blocking Kafka producer: the producer core on a ``selectors`` loop thread.

Theory of operation
-------------------
:class:`KafkaProducer` owns one :class:`~kafkacore.producer.ProducerCore`
driven by a Bridge on a background thread (as the Java producer's sender
thread). ``send`` runs in the caller's thread: it serializes and checks the
record, stamps the wall-clock timestamp, and puts it on a *hand-off* deque
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
import enum
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

from kafkacore.client import TopicPartition
from kafkacore.consumer import ConsumerGroupMetadata
from kafkacore.errors import KafkaTimeoutError, LocalProtocolError
from kafkacore.producer import (
    BatchCompleted,
    BufferExhaustedError,
    BufferFreed,
    BufferFull,
    Operation,
    OperationCompleted,
    ProducerClosedError,
    RecordMetadata,
    prepare_record,
)
from kafkacore.producer.serde import Serializer, check_bytes

from ._bridge import Bridge
from ._producer_common import ManyResult, fan_out, make_producer_parts, now_ms, to_columns
from ._selector_io import SelectorIo
from ._sockets import Address

__all__ = ["KafkaProducer", "ProducerState"]

# Hand-off items beyond this make send() wait too: bounds the deque when the
# loop thread falls behind even though buffer_memory has room.
_HANDOFF_LIMIT = 2048
# Records moved into the core per loop iteration, between I/O polls.
_FEED_BUDGET = 1024


class ProducerState(enum.Enum):
    RUNNING = "running"
    CLOSED = "closed"


class KafkaProducer:
    """Blocking producer; see the module docstring. Options as ProducerConfig + ClientConfig."""

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str] | None = "localhost:9092",
        *,
        key_serializer: Serializer | None = None,
        value_serializer: Serializer | None = None,
        source_address: Address | None = None,
        ssl_server_hostname: str | None = None,
        rng: random.Random | None = None,
        **options: Any,
    ) -> None:
        pp = make_producer_parts(
            "KafkaProducer",
            bootstrap_servers,
            source_address=source_address,
            ssl_server_hostname=ssl_server_hostname,
            rng=rng,
            options=options,
        )
        self.config = pp.config
        self._key_serializer = key_serializer
        self._value_serializer = value_serializer
        self._max_block_s = pp.config.max_block_ms / 1000
        self._io = SelectorIo(
            sockets=pp.parts.sockets,
            ssl_context=pp.parts.ssl_context_factory(),
            ssl_server_hostname=ssl_server_hostname,
        )
        self._core = pp.build_core(self._io.clock())
        self._bridge = Bridge(self._core, self._io, clock=self._io.clock, on_event=self._on_event)
        self._io.bridge = self._bridge
        self._cond = threading.Condition(threading.Lock())
        self._handoff: deque[tuple[Any, ...]] = deque()
        self._scheduled = False
        self._full = False
        self._blocked = 0  # send() callers waiting on _cond
        self._after_handoff: list[Callable[[float], None]] = []
        self._ops: dict[Operation[Any], concurrent.futures.Future[None]] = {}
        self._state = ProducerState.RUNNING
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="kafkacore-producer", daemon=True)
        self._thread.start()
        self._io.call_soon_threadsafe(self._bridge.pump)

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

    def _run(self) -> None:
        # Hand-off items are fed between I/O polls, a bounded number at a
        # time, so a fast sender cannot keep the loop from writing batches.
        io = self._io
        handoff = self._handoff
        while not self._stopping:
            busy = bool(handoff) and not self._full
            io.run_once(0.0 if busy else None)
            if handoff and not self._full and not self._stopping:
                self._bridge.command(self._feed)

    def close(self, timeout: float | None = None) -> None:
        """Flush for at most ``timeout`` s (None: until done), then stop; bounded."""
        if self._state is ProducerState.CLOSED:
            return
        if self._thread is threading.current_thread():
            raise LocalProtocolError(
                "KafkaProducer.close: called from a delivery callback on the loop thread; "
                "call it from user code"
            )
        # On timeout, what is left fails with ProducerClosedError below.
        with contextlib.suppress(KafkaTimeoutError):
            self.flush(timeout)
        with self._cond:
            self._state = ProducerState.CLOSED
            self._cond.notify_all()
        self._io.call_soon_threadsafe(self._shutdown_core)
        self._thread.join(5.0 if timeout is None else max(timeout, 1.0))
        self._io.close_all()
        for fn in self._io.drain_calls():
            fn()
        self._fail_handoff(ProducerClosedError("KafkaProducer closed before the record was sent"))

    def _shutdown_core(self) -> None:
        self._stopping = True
        self._bridge.command(lambda now: self._core.close(now=now))
        self._fail_handoff(ProducerClosedError("KafkaProducer closed before the record was sent"))

    def _fail_handoff(self, error: BaseException) -> None:
        with self._cond:
            items = list(self._handoff)
            self._handoff.clear()
            after, self._after_handoff = self._after_handoff, []
        for item in items:
            _fail_item(item, error)
        for fn in after:
            fn(-1.0)
        for fut in self._ops.values():
            if not fut.done():
                fut.set_exception(error)
        self._ops.clear()

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
        if (
            type(value) is bytes
            and (key is None or type(key) is bytes)
            and not headers
            and self._value_serializer is None
        ):
            # Plain bytes and no headers: nothing to convert or check.
            item_key: bytes | None = key
            item_value: bytes | None = value
            item_headers: list[tuple[str, bytes | None]] | None = None
        else:
            rec = prepare_record(
                value,
                key,
                headers,
                key_serializer=self._key_serializer,
                value_serializer=self._value_serializer,
                owner="KafkaProducer.send",
            )
            item_key, item_value, item_headers = rec
        fut: concurrent.futures.Future[RecordMetadata] = concurrent.futures.Future()
        ts = now_ms() if timestamp is None else timestamp
        self._submit((topic, item_value, item_key, item_headers, partition, ts, fut))
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
        values, keys = to_columns(records, "KafkaProducer.send_many")
        values, keys = self._serialize_columns(values, keys)
        fut: concurrent.futures.Future[ManyResult] = concurrent.futures.Future()
        if not values:
            fut.set_result(ManyResult(topic, 0, lambda r: None))
            return fut

        def done(result: ManyResult) -> None:
            if fut.done():
                return
            if result.error is not None:
                fut.set_exception(result.error)
            else:
                fut.set_result(result)

        result = ManyResult(topic, len(values), done)
        ts = now_ms() if timestamp is None else timestamp
        step = 4096  # bounded appends: each fits buffer_memory and moves on quickly
        for start in range(0, len(values), step):
            chunk_keys = None if keys is None else keys[start : start + step]
            self._submit((topic, values[start : start + step], chunk_keys, partition, ts, result))
        return fut

    def _serialize_columns(
        self, values: list[Any], keys: list[Any] | None
    ) -> tuple[list[bytes | None], list[bytes | None] | None]:
        vs, ks = self._value_serializer, self._key_serializer
        if vs is not None:
            values = [vs(v) for v in values]
        if ks is not None and keys is not None:
            keys = [None if k is None else ks(k) for k in keys]
        if not set(map(type, values)) <= {bytes, type(None)}:
            values = [check_bytes(v, "value", "KafkaProducer.send_many") for v in values]
        if keys is not None:
            if all(k is None for k in keys):
                keys = None
            elif not set(map(type, keys)) <= {bytes, type(None)}:
                keys = [check_bytes(k, "key", "KafkaProducer.send_many") for k in keys]
        return values, keys

    def _submit(self, item: tuple[Any, ...]) -> None:
        wake = False
        with self._cond:
            if self._state is ProducerState.CLOSED:
                raise ProducerClosedError("KafkaProducer: closed; make a new producer")
            if self._full or len(self._handoff) >= _HANDOFF_LIMIT:
                self._wait_for_room()
            self._handoff.append(item)
            if not self._scheduled:
                self._scheduled = wake = True
        if wake:
            self._io.call_soon_threadsafe(_noop)  # wake the loop; it feeds after polling

    def _wait_for_room(self) -> None:
        if self._thread is threading.current_thread():
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
                    raise BufferExhaustedError(
                        f"KafkaProducer.send: buffer_memory={self.config.buffer_memory} stayed "
                        f"full for max_block_ms={self.config.max_block_ms}; the brokers take "
                        "records slower than they are sent"
                    )
                self._cond.wait(remaining)
        finally:
            self._blocked -= 1

    def _feed(self, now: float) -> None:
        """Loop thread: move hand-off items into the core until empty or full."""
        core = self._core
        handoff = self._handoff
        budget = _FEED_BUDGET
        while True:
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
                    _fail_item(item, exc)
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
            return

    def _on_event(self, event: object) -> None:
        if isinstance(event, BatchCompleted):
            fan_out(event, _resolve)
        elif isinstance(event, BufferFreed):
            with self._cond:
                self._full = False
                self._cond.notify_all()
        elif isinstance(event, OperationCompleted):
            fut = self._ops.pop(event.handle, None)
            if fut is not None and not fut.done():
                if event.error is not None:
                    fut.set_exception(event.error)
                else:
                    fut.set_result(None)

    # -- operations -----------------------------------------------------------
    def _operation(
        self, start: Callable[[float], Operation[Any] | None], what: str, timeout: float | None
    ) -> None:
        """Run ``start(now)`` on the loop after the hand-off drained; wait for its handle."""
        if self._state is ProducerState.CLOSED:
            raise ProducerClosedError(f"KafkaProducer.{what}: closed; make a new producer")
        if self._thread is threading.current_thread():
            raise LocalProtocolError(
                f"KafkaProducer.{what}: would block the producer's loop thread; "
                "do not call it from a delivery callback"
            )
        fut: concurrent.futures.Future[None] = concurrent.futures.Future()

        def run(now: float) -> None:
            if now < 0:
                if not fut.done():
                    fut.set_exception(ProducerClosedError(f"KafkaProducer.{what}: closed"))
                return
            try:
                handle = start(now)
            except Exception as exc:
                fut.set_exception(exc)
                return
            if handle is None:
                fut.set_result(None)
            elif handle.done:
                if handle.error is not None:
                    fut.set_exception(handle.error)
                else:
                    fut.set_result(None)
            else:
                self._ops[handle] = fut

        def schedule() -> None:
            with self._cond:
                if self._handoff:
                    self._after_handoff.append(run)
                    return
            self._bridge.command(run)

        self._io.call_soon_threadsafe(schedule)
        try:
            fut.result(timeout)
        except concurrent.futures.TimeoutError:
            raise KafkaTimeoutError(
                f"KafkaProducer.{what}: not finished within {timeout} s"
            ) from None

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now and wait until each record is done."""
        self._operation(lambda now: self._core.flush(now=now), "flush", timeout)

    def init_transactions(self, timeout: float | None = None) -> None:
        self._operation(
            lambda now: self._core.init_transactions(now=now), "init_transactions", timeout
        )

    def begin_transaction(self) -> None:
        self._operation(
            lambda now: self._core.begin_transaction(now=now), "begin_transaction", None
        )

    def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, int] | Mapping[tuple[str, int], int],
        group_id: str | ConsumerGroupMetadata,
        timeout: float | None = None,
    ) -> None:
        self._operation(
            lambda now: self._core.send_offsets_to_transaction(offsets, group_id, now=now),
            "send_offsets_to_transaction",
            timeout,
        )

    def commit_transaction(self, timeout: float | None = None) -> None:
        self._operation(
            lambda now: self._core.commit_transaction(now=now), "commit_transaction", timeout
        )

    def abort_transaction(self, timeout: float | None = None) -> None:
        self._operation(
            lambda now: self._core.abort_transaction(now=now), "abort_transaction", timeout
        )

    def run_on_loop(self, fn: Callable[[Any], Any], timeout: float | None = None) -> Any:
        """Run ``fn(core)`` on the loop thread and return its result (queries, tests)."""
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def run(now: float) -> None:
            try:
                fut.set_result(fn(self._core))
            except Exception as exc:
                fut.set_exception(exc)

        self._io.call_soon_threadsafe(lambda: self._bridge.command(run))
        return fut.result(timeout)


def _noop() -> None:
    pass


def _resolve(token: Any, value: Any, error: BaseException | None) -> None:
    if token.done():
        return  # cancelled by the user
    if error is not None:
        token.set_exception(error)
    else:
        token.set_result(value)


def _fail_item(item: tuple[Any, ...], error: BaseException) -> None:
    token = item[-1]
    if isinstance(token, ManyResult):
        token._add(-1, -1, token.expected - token.count - token.failed, error)
    elif not token.done():
        token.set_exception(error)

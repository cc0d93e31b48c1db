"""Blocking Kafka consumer: the sans-IO consumer core on a selector loop thread.

Theory of operation
-------------------
:class:`KafkaConsumer` owns one :class:`~kafkacore.consumer.ConsumerCore`
driven by a background thread running the selector loop, exactly like
:class:`transports.selector.KafkaClient`: only that thread touches the
core, so heartbeats, fetches and auto-commits go on while user code works
between polls. User calls become closures run on the loop thread
(:meth:`_call`) and wait on a ``concurrent.futures.Future``.

``poll(timeout)`` asks the core for buffered records; when there are none
it sleeps on a condition that every core event notifies (the router bumps
a sequence number), then asks again, until records arrive or the timeout
passes. Rebalance listeners are called from ``poll`` in the user's thread.

``for record in consumer`` borrows a batch and hands it over one record at
a time (:class:`~transports._consumer_common.HeldRecords`): commits, also
automatic and on ``close``, cover the records handed over, the one being
processed when the loop breaks or raises included, and never the rest.

Life (:class:`ConsumerState`): RUNNING from construction, CLOSED after
``close()``, which is bounded: commit (with auto-commit) and leave the
group within ``timeout``, then stop the loop and close every socket.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import enum
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

from kafkacore.client import TopicPartition
from kafkacore.consumer import (
    ConsumerCore,
    ConsumerGroupMetadata,
    ConsumerRecord,
    OffsetAndMetadata,
    Operation,
    PartitionBatch,
)
from kafkacore.errors import (
    KafkaTimeoutError,
    LocalProtocolError,
    RequestCancelled,
)

from ._bridge import Bridge
from ._consumer_common import (
    ConsumerRouter,
    HeldRecords,
    RebalanceListener,
    position_timeout,
    split_options,
    timeout_ms,
)
from ._selector_io import SelectorIo
from ._sockets import Address

__all__ = ["ConsumerState", "KafkaConsumer"]

T = TypeVar("T")


class ConsumerState(enum.Enum):
    RUNNING = "running"
    CLOSED = "closed"


class KafkaConsumer:
    """Blocking consumer; see the module docstring. Options as ClientConfig + ConsumerConfig."""

    def __init__(
        self,
        *topics: str,
        bootstrap_servers: str | Sequence[str] | None = "localhost:9092",
        source_address: Address | None = None,
        ssl_server_hostname: str | None = None,
        rng: random.Random | None = None,
        listener: RebalanceListener | None = None,
        **options: Any,
    ) -> None:
        parts, config = split_options(
            "KafkaConsumer",
            bootstrap_servers,
            source_address=source_address,
            ssl_server_hostname=ssl_server_hostname,
            rng=rng,
            options=options,
        )
        self.config = config
        self.client_config = parts.config
        self._io = SelectorIo(
            sockets=parts.sockets,
            ssl_context=parts.ssl_context_factory(),
            ssl_server_hostname=ssl_server_hostname,
        )
        self._cond = threading.Condition()
        self._router = ConsumerRouter(wake=self._notify)
        self._core = ConsumerCore(parts.config, config, now=self._io.clock(), rng=parts.rng)
        self._bridge = Bridge(
            self._core, self._io, clock=self._io.clock, on_event=self._router.on_event
        )
        self._io.bridge = self._bridge
        self._listener = listener
        self._core.await_revocation_ack = listener is not None
        self._held = HeldRecords(self._router)
        self._state = ConsumerState.RUNNING
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="kafkacore-consumer", daemon=True)
        self._thread.start()
        self._io.call_soon_threadsafe(self._bridge.pump)
        if topics:
            self.subscribe(list(topics))

    # -- life -------------------------------------------------------------
    @property
    def state(self) -> ConsumerState:
        return self._state

    def __enter__(self) -> KafkaConsumer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self, timeout: float = 30.0, *, autocommit: bool = True) -> None:
        """Commit (with auto-commit), leave the group, close sockets; within ~``timeout`` s."""
        if self._state is ConsumerState.CLOSED:
            return
        try:
            handle_fut = self._op(
                lambda now: self._synced(now, self._core.close, autocommit=autocommit)
            )
            # Best effort on the network side; the sockets close below either way.
            with contextlib.suppress(concurrent.futures.TimeoutError, Exception):
                handle_fut.result(timeout)
        finally:
            self._state = ConsumerState.CLOSED
            self._io.call_soon_threadsafe(self._shutdown_core)
            self._thread.join(timeout)
            self._io.close_all()
            for fn in self._io.drain_calls():
                fn()

    def _shutdown_core(self) -> None:
        self._stopping = True
        self._bridge.command(lambda now: self._core.shutdown(now=now))
        self._router.fail_all(RequestCancelled("KafkaConsumer closed"))

    def _run(self) -> None:
        io = self._io
        while not self._stopping:
            io.run_once()

    # -- subscription ---------------------------------------------------------
    def subscribe(
        self,
        topics: Iterable[str] | None = None,
        *,
        pattern: str | None = None,
        listener: RebalanceListener | None = None,
    ) -> None:
        """Join the group for ``topics`` (or every topic matching ``pattern``)."""
        if listener is not None:
            self._listener = listener
        names = None if topics is None else list(topics)
        wait = self._listener is not None

        def issue(now: float) -> None:
            self._held.give_back(self._core, now)
            self._core.await_revocation_ack = wait
            self._core.subscribe(names, pattern=pattern, now=now)

        self._call(issue)

    def unsubscribe(self) -> None:
        self._call(lambda now: self._given_back(now, self._core.unsubscribe))

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        tps = [TopicPartition(*tp) for tp in partitions]
        self._call(lambda now: self._given_back(now, self._core.assign, tps))

    def assignment(self) -> frozenset[TopicPartition]:
        return self._call(lambda now: self._core.assignment())

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This member's group identity, for ``send_offsets_to_transaction`` (KIP-447)."""
        return self._call(lambda now: self._core.group_metadata())

    def subscription(self) -> frozenset[str]:
        return self._call(lambda now: self._core.subscription())

    # -- polling ---------------------------------------------------------------
    def poll(self, timeout: float = 0.0, max_records: int | None = None) -> list[ConsumerRecord]:
        """Records fetched so far, waiting up to ``timeout`` s for some to arrive.

        Every record returned counts as consumed (Java's ``poll``).
        """
        if self._held:
            self._call(lambda now: self._held.give_back(self._core, now))
        return self._poll(lambda now: self._core.poll_records(max_records, now=now), timeout)

    def poll_batches(
        self, timeout: float = 0.0, max_records: int | None = None
    ) -> list[PartitionBatch]:
        """Like :meth:`poll`, as per-partition columnar batches (the bulk path)."""
        if self._held:
            self._call(lambda now: self._held.give_back(self._core, now))
        return self._poll(lambda now: self._core.poll_batches(max_records, now=now), timeout)

    def __iter__(self) -> Iterator[ConsumerRecord]:
        """Records one by one, for ever (until ``close()``).

        A record counts as consumed once it is handed over: leaving the loop
        (``break``, an exception) commits it with those before it, and not
        the ones after it, which the next iteration (or the next member of
        the group) gets again.
        """
        held = self._held
        router = self._router

        def run_listener() -> None:
            router.dispatch(self._listener, self._ack)

        while self._state is ConsumerState.RUNNING:
            if router.changed:
                held.look(run_listener)
            records = held.records
            for record in records:
                if router.changed:  # look again before handing more over
                    if held.records is records:  # (not replaced by seek, poll, ...)
                        held.unpull()
                    break
                yield record  # handed over, hence consumed, from here on
            else:
                self._poll(lambda now: held.fill(self._core, now), 1.0)

    def _poll(self, fn: Callable[[float], list[T]], timeout: float) -> list[T]:
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            seq = self._router.seq
            out = self._call(fn)
            self._router.dispatch(self._listener, self._ack)
            if out:
                return out
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return out
            self._wait_change(seq, remaining)

    # -- positions ----------------------------------------------------------------
    def seek(self, partition: TopicPartition, offset: int) -> None:
        tp = TopicPartition(*partition)
        self._call(lambda now: self._given_back(now, self._core.seek, tp, offset))

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        self._call(lambda now: self._given_back(now, self._core.seek_to_beginning, partitions))

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        self._call(lambda now: self._given_back(now, self._core.seek_to_end, partitions))

    def position(self, partition: TopicPartition, timeout: float | None = None) -> int:
        """The next offset to hand out, waiting until it is known (reset, committed)."""
        tp = TopicPartition(*partition)
        limit = self.config.default_api_timeout_ms / 1000 if timeout is None else timeout
        deadline = time.monotonic() + limit
        while True:
            seq = self._router.seq
            pos, cause, hopeless = self._call(lambda now: self._position(tp, now))
            if pos is not None:
                return pos
            if hopeless:
                assert cause is not None
                raise cause  # no retry will help
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise position_timeout("KafkaConsumer", tp, limit, cause)
            self._wait_change(seq, remaining)

    def pause(self, *partitions: TopicPartition) -> None:
        self._call(lambda now: self._given_back(now, self._core.pause, partitions))

    def resume(self, *partitions: TopicPartition) -> None:
        self._call(lambda now: self._given_back(now, self._core.resume, partitions))

    def paused(self) -> frozenset[TopicPartition]:
        return self._call(lambda now: self._core.paused())

    def lag(self, partition: TopicPartition) -> int | None:
        tp = TopicPartition(*partition)
        return self._call(lambda now: self._lag(tp, now))

    # -- offsets ----------------------------------------------------------------------
    def commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        timeout: float | None = None,
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Commit and wait (default: every position consumed so far)."""
        ms = timeout_ms(timeout)
        result: dict[TopicPartition, OffsetAndMetadata] = self._wait(
            self._op(lambda now: self._synced(now, self._core.commit, offsets, timeout_ms=ms)),
            timeout,
            "commit",
        )
        return result

    def commit_async(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None
    ) -> concurrent.futures.Future[Any]:
        return self._op(lambda now: self._synced(now, self._core.commit, offsets))

    def committed(
        self, partitions: Iterable[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        tps = [TopicPartition(*tp) for tp in partitions]
        result: dict[TopicPartition, OffsetAndMetadata | None] = self._wait(
            self._op(
                lambda now: self._core.committed(tps, now=now, timeout_ms=timeout_ms(timeout))
            ),
            timeout,
            "committed",
        )
        return result

    def end_offsets(
        self, partitions: Iterable[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, int | None]:
        tps = [TopicPartition(*tp) for tp in partitions]
        result: dict[TopicPartition, int | None] = self._wait(
            self._op(
                lambda now: self._core.end_offsets(tps, now=now, timeout_ms=timeout_ms(timeout))
            ),
            timeout,
            "end_offsets",
        )
        return result

    def beginning_offsets(
        self, partitions: Iterable[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, int | None]:
        tps = [TopicPartition(*tp) for tp in partitions]
        result: dict[TopicPartition, int | None] = self._wait(
            self._op(
                lambda now: self._core.beginning_offsets(
                    tps, now=now, timeout_ms=timeout_ms(timeout)
                )
            ),
            timeout,
            "beginning_offsets",
        )
        return result

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int], timeout: float | None = None
    ) -> dict[TopicPartition, tuple[int, int] | None]:
        query = {TopicPartition(*tp): ts for tp, ts in timestamps.items()}
        result: dict[TopicPartition, tuple[int, int] | None] = self._wait(
            self._op(
                lambda now: self._core.offsets_for_times(
                    query, now=now, timeout_ms=timeout_ms(timeout)
                )
            ),
            timeout,
            "offsets_for_times",
        )
        return result

    def missing_topics(self) -> frozenset[str]:
        """Followed topics that metadata says do not exist (logged as a warning too)."""
        return self._call(lambda now: self._core.missing_topics())

    def run_on_loop(self, fn: Callable[[ConsumerCore], T]) -> T:
        """Run ``fn(core)`` on the loop thread (for queries in tests and tools)."""
        return self._call(lambda now: fn(self._core))

    # -- plumbing -------------------------------------------------------------------
    def _synced(self, now: float, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        """On the loop: tell the core what the iterator handed over, then ``fn``."""
        self._held.sync(self._core, now)
        return fn(*args, now=now, **kw)

    def _position(
        self, tp: TopicPartition, now: float
    ) -> tuple[int | None, BaseException | None, bool]:
        self._held.sync(self._core, now)
        hopeless = self._core.hopeless_cause()
        return self._core.position(tp), hopeless or self._core.stall_cause(), hopeless is not None

    def _lag(self, tp: TopicPartition, now: float) -> int | None:
        self._held.sync(self._core, now)
        return self._core.lag(tp)

    def _given_back(self, now: float, fn: Callable[..., T], *args: Any) -> T:
        """On the loop: give the iterator's unhanded records back, then ``fn``."""
        self._held.give_back(self._core, now)
        return fn(*args, now=now)

    def _ack(self, token: int) -> None:
        self._call(lambda now: self._core.revocation_done(token, now=now))

    def _notify(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def _wait_change(self, seq: int, timeout: float) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._router.seq != seq, timeout)

    def _call(self, fn: Callable[[float], T]) -> T:
        """Run ``fn(now)`` as a core command on the loop thread and return its result."""
        if self._state is ConsumerState.CLOSED:
            raise LocalProtocolError("KafkaConsumer: closed; make a new consumer")
        if threading.current_thread() is self._thread:
            raise LocalProtocolError(
                "KafkaConsumer: called on its own loop thread; call from user code"
            )
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            if self._stopping:
                fut.set_exception(RequestCancelled("KafkaConsumer closed"))
                return
            box: list[T] = []
            try:
                self._bridge.command(lambda now: box.append(fn(now)))
            except BaseException as exc:  # handed to the caller's thread
                fut.set_exception(exc)
                self._bridge.pump()  # what the command queued before raising still goes out
                return
            fut.set_result(box[0])

        self._io.call_soon_threadsafe(run)
        return fut.result()

    def _op(self, fn: Callable[[float], Operation[Any]]) -> concurrent.futures.Future[Any]:
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def done(value: Any, error: BaseException | None) -> None:
            if fut.done():
                return
            if error is not None:
                fut.set_exception(error)
            else:
                fut.set_result(value)

        def issue(now: float) -> None:
            self._router.expect(fn(now), done)

        self._call(issue)
        return fut

    def _wait(self, fut: concurrent.futures.Future[T], timeout: float | None, what: str) -> T:
        # The core fails the operation at its timeout, naming the cause; this
        # is a backstop a second later.
        limit = (self.config.default_api_timeout_ms / 1000 if timeout is None else timeout) + 1
        try:
            return fut.result(limit)
        except concurrent.futures.TimeoutError:
            raise KafkaTimeoutError(f"KafkaConsumer.{what}: no answer within {limit} s") from None

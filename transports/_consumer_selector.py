"""Blocking Kafka consumer: the sans-IO consumer core on a selector loop thread.

Theory of operation
-------------------
:class:`KafkaConsumer` owns one :class:`~kafkacore.consumer.ConsumerCore`
driven by the selector transport's driver
(:class:`~kafkacore.transports._selector_driver.LoopThread`), exactly like
:class:`kafkacore.transports.selector.KafkaClient`: only the loop thread touches the
core, so heartbeats, fetches and auto-commits go on while user code works
between polls. What each call does is the shared consumer surface
(:class:`~kafkacore.transports._consumer_common.ConsumerSurface`); this module only
makes it blocking: core commands hop to the loop thread and back, waiting
loops (``poll``, ``position``, the iterator) sleep on a condition that
every core event notifies, and operations (``commit``, offset lookups)
resolve a ``concurrent.futures.Future``. Rebalance listeners are called
from ``poll`` in the user's thread.

Life (:class:`ConsumerState`): RUNNING from construction, CLOSED after
``close()``, which is bounded: commit (with auto-commit) and leave the
group within ``timeout``, then stop the loop and close every socket.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import TracebackType
from typing import Any, TypeVar, cast, overload

from kafkacore.client import TopicPartition
from kafkacore.consumer import (
    ConsumerClosedError,
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    Operation,
    PartitionBatch,
)
from kafkacore.errors import KafkaTimeoutError, RequestCancelled

from ._consumer_args import (
    by_partition,
    duration_s,
    one_partition,
    partition_list,
)
from ._consumer_args import max_records as check_max_records
from ._consumer_common import Command, ConsumerState, ConsumerSurface, Wait, drive
from ._consumer_common import timeout_ms as to_ms
from ._selector_driver import Delivery, LoopThread

__all__ = ["ConsumerState", "KafkaConsumer"]

T = TypeVar("T")

#: ``close()``'s bound when none is given (seconds).
_CLOSE_S = 30.0


class KafkaConsumer(ConsumerSurface):
    """Blocking consumer; see the module docstring. Options as ClientConfig + ConsumerConfig."""

    _NAME = "KafkaConsumer"

    def _setup(self) -> None:
        self._loop = LoopThread(
            self._NAME, self._parts, noun="consumer", thread_name="kafkacore-consumer"
        )
        self._core = self._build_core(self._loop.clock())
        self._iterator: Iterator[ConsumerRecord] | None = None
        self._state = ConsumerState.RUNNING
        self._loop.start(self._core, self._router.on_event, on_crash=self._router.fail_all)
        if self._topics:
            self.subscribe(self._topics)

    # -- life -------------------------------------------------------------
    def _drop(self) -> None:
        self._loop.abandon()

    def __enter__(self) -> KafkaConsumer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(
        self,
        autocommit: bool = True,
        timeout_ms: int | None = None,
        *,
        timeout: float | None = None,
    ) -> None:
        """Commit (with auto-commit and ``autocommit``), leave the group, close
        sockets; within ~``timeout_ms`` (default 30 s). kafka-python's order."""
        if not isinstance(autocommit, bool):
            raise TypeError(
                f"KafkaConsumer.close: autocommit must be True or False, got {autocommit!r} "
                "(the first argument is autocommit, as in kafka-python; give timeout_ms=)"
            )
        limit = duration_s("KafkaConsumer.close", timeout_ms, timeout, _CLOSE_S)
        if self._state is ConsumerState.CLOSED:
            return
        end = self._loop.clock() + (_CLOSE_S if limit is None else limit)
        try:
            # Best effort on the network side; the sockets close below either way
            # (also when the loop thread died and nothing can be sent).
            with contextlib.suppress(Exception):
                self._future(self._close_command(autocommit)).result(limit)
        finally:
            self._state = ConsumerState.CLOSED
            # The loop's farewell (KIP-714's terminating push) gets what is left.
            self._loop.stop(self._shutdown_core, max(0.0, end - self._loop.clock()))

    def _shutdown_core(self) -> None:
        self._loop.bridge.command(lambda now: self._core.shutdown(now=now))
        self._router.fail_all(RequestCancelled("KafkaConsumer closed"))

    # -- polling ---------------------------------------------------------------
    def poll(
        self,
        timeout_ms: int | None = None,
        max_records: int | None = None,
        update_offsets: bool = True,
        *,
        timeout: float | None = None,
    ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Records fetched so far by partition, waiting up to ``timeout_ms`` for
        some to arrive (kafka-python's ``poll``). Every record returned counts
        as consumed (Java's ``poll``)."""
        if update_offsets is not True:
            raise ValueError("KafkaConsumer.poll: update_offsets=False is not supported")
        return by_partition(self._poll_list("poll", timeout_ms, max_records, timeout))

    def poll_records(
        self,
        timeout_ms: int | None = None,
        max_records: int | None = None,
        *,
        timeout: float | None = None,
    ) -> list[ConsumerRecord]:
        """Like :meth:`poll`, as one list in fetch order (Java's ``ConsumerRecords``)."""
        return self._poll_list("poll_records", timeout_ms, max_records, timeout)

    def _poll_list(
        self, what: str, timeout_ms: Any, max_records: Any, timeout: Any
    ) -> list[ConsumerRecord]:
        wait = duration_s(f"KafkaConsumer.{what}", timeout_ms, timeout, 0.0)
        limit = check_max_records(f"KafkaConsumer.{what}", max_records)
        self._give_back_held()
        steps = self._poll_steps(lambda core, now: core.poll_records(limit, now=now), wait or 0.0)
        records = drive(steps, self._block)
        extras = self._extras
        return [extras.deserialize(r) for r in records] if extras.deserializes else records

    def poll_batches(
        self,
        timeout_ms: int | None = None,
        max_records: int | None = None,
        *,
        timeout: float | None = None,
    ) -> list[PartitionBatch]:
        """Like :meth:`poll`, as per-partition columnar batches (the bulk path;
        the deserializers are not applied)."""
        wait = duration_s("KafkaConsumer.poll_batches", timeout_ms, timeout, 0.0)
        limit = check_max_records("KafkaConsumer.poll_batches", max_records)
        self._give_back_held()
        steps = self._poll_steps(lambda core, now: core.poll_batches(limit, now=now), wait or 0.0)
        return drive(steps, self._block)

    def __iter__(self) -> KafkaConsumer:
        """Records one by one, until ``close()`` (or ``consumer_timeout_ms`` without
        one); the consumer is its own iterator, as kafka-python's (``next(consumer)``)."""
        return self

    def __next__(self) -> ConsumerRecord:
        if self._iterator is None:
            # With a blocking waiter the generator never yields a Wait.
            self._iterator = cast(Iterator[ConsumerRecord], self._records(self._block))
        try:
            return next(self._iterator)
        except BaseException:
            # Ended (closed, consumer_timeout_ms) or raised: the next iteration
            # starts afresh; what was handed over is on the consumer, not here.
            self._iterator = None
            raise

    def position(
        self,
        partition: TopicPartition,
        timeout_ms: int | None = None,
        *,
        timeout: float | None = None,
    ) -> int:
        """The next offset to hand out, waiting until it is known (reset, committed)."""
        limit = duration_s("KafkaConsumer.position", timeout_ms, timeout, None)
        tp = one_partition(partition, "position")
        return drive(self._position_steps(tp, limit), self._block)

    def topics(self, timeout_ms: int | None = None) -> set[str]:
        """Every topic of the cluster (internal ones as ``exclude_internal_topics``)."""
        limit = duration_s("KafkaConsumer.topics", timeout_ms, None, None)
        return self._topic_names(drive(self._listing_steps("topics", limit), self._block))

    def partitions_for_topic(self, topic: str, timeout_ms: int | None = None) -> set[int] | None:
        """The partition ids of ``topic``, None when the cluster has no such topic."""
        if not isinstance(topic, str):
            raise TypeError(
                f"KafkaConsumer.partitions_for_topic: expected a topic name, got {topic!r}"
            )
        limit = duration_s("KafkaConsumer.partitions_for_topic", timeout_ms, None, None)
        listing = drive(self._listing_steps("partitions_for_topic", limit), self._block)
        found = listing.get(topic)
        return None if found is None else set(found[0])

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        """Seek ``partitions`` (none: every assigned one) to their first offset."""
        self._seek_to_beginning(partitions)

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        """Seek ``partitions`` (none: every assigned one) to their end."""
        self._seek_to_end(partitions)

    # -- offsets ----------------------------------------------------------------------
    def commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        timeout_ms: int | None = None,
        *,
        timeout: float | None = None,
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Commit and wait (default: every position consumed so far)."""
        limit = duration_s("KafkaConsumer.commit", timeout_ms, timeout, None)
        command = self._commit_command(offsets, to_ms(limit))
        result: dict[TopicPartition, OffsetAndMetadata] = self._wait(command, limit, "commit")
        return result

    def commit_async(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        callback: Callable[[Any, Any], Any] | None = None,
    ) -> concurrent.futures.Future[Any]:
        """Start a commit; ``callback(offsets, result or exception)`` (kafka-python's;
        default ``default_offset_commit_callback``) runs on the consumer's loop
        thread when it completes: it must not call the consumer's blocking calls."""
        fut = self._future(self._commit_command(offsets, None))
        call = callback or self._extras.default_offset_commit_callback
        if call is not None:
            fut.add_done_callback(lambda f: call(offsets, f.exception() or f.result()))
        return fut

    @overload
    def committed(
        self,
        partitions: TopicPartition,
        metadata: bool = False,
        timeout_ms: int | None = None,
        *,
        timeout: float | None = None,
    ) -> Any: ...

    @overload
    def committed(
        self,
        partitions: Iterable[TopicPartition],
        metadata: bool = False,
        timeout_ms: int | None = None,
        *,
        timeout: float | None = None,
    ) -> dict[TopicPartition, OffsetAndMetadata | None]: ...

    def committed(
        self,
        partitions: TopicPartition | Iterable[TopicPartition],
        metadata: bool = False,
        timeout_ms: int | None = None,
        *,
        timeout: float | None = None,
    ) -> Any:
        """The group's committed offsets. kafka-python's ``committed(tp)``: that
        partition's offset (an int; its ``OffsetAndMetadata`` with ``metadata=True``)
        or None; kafkacore's ``committed([tp, ...])``: ``{tp: OffsetAndMetadata | None}``."""
        limit = duration_s("KafkaConsumer.committed", timeout_ms, timeout, None)
        one = isinstance(partitions, TopicPartition)
        tps = partition_list([partitions] if one else partitions, "committed")
        command = self._lookup_command("committed", tps, to_ms(limit))
        result: dict[TopicPartition, OffsetAndMetadata | None] = self._wait(
            command, limit, "committed"
        )
        if not one:
            return result
        found = result.get(cast(TopicPartition, partitions))
        return found if metadata or found is None else found.offset

    def bootstrap(self, timeout_ms: int | None = None, refresh: bool = False) -> None:
        """Block until the consumer has cluster metadata (kafka-python 3's call);
        ``refresh``: a fresh answer even if it has some. KafkaTimeoutError after
        ``timeout_ms`` (None: no bound); NoBrokersAvailable when no address answers."""
        limit = duration_s("KafkaConsumer.bootstrap", timeout_ms, None, None)
        drive(self._bootstrap_steps(limit, refresh), self._block)

    def seek_to_committed(self, *partitions: TopicPartition) -> dict[TopicPartition, int | None]:
        """Seek ``partitions`` (none: every assigned one) to the group's committed
        offsets (aiokafka's call); returns ``{tp: committed offset or None}``."""
        return self._seek_committed(self.committed(self._committed_targets(partitions)))

    def end_offsets(
        self,
        partitions: Iterable[TopicPartition],
        timeout_ms: int | None = None,
        *,
        timeout: float | None = None,
    ) -> dict[TopicPartition, int | None]:
        limit = duration_s("KafkaConsumer.end_offsets", timeout_ms, timeout, None)
        tps = partition_list(partitions, "end_offsets")
        command = self._lookup_command("end_offsets", tps, to_ms(limit))
        result: dict[TopicPartition, int | None] = self._wait(command, limit, "end_offsets")
        return result

    def beginning_offsets(
        self,
        partitions: Iterable[TopicPartition],
        timeout_ms: int | None = None,
        *,
        timeout: float | None = None,
    ) -> dict[TopicPartition, int | None]:
        limit = duration_s("KafkaConsumer.beginning_offsets", timeout_ms, timeout, None)
        tps = partition_list(partitions, "beginning_offsets")
        command = self._lookup_command("beginning_offsets", tps, to_ms(limit))
        result: dict[TopicPartition, int | None] = self._wait(command, limit, "beginning_offsets")
        return result

    def offsets_for_times(
        self,
        timestamps: Mapping[TopicPartition, int],
        timeout_ms: int | None = None,
        *,
        timeout: float | None = None,
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        limit = duration_s("KafkaConsumer.offsets_for_times", timeout_ms, timeout, None)
        command = self._times_command(timestamps, to_ms(limit))
        result: dict[TopicPartition, OffsetAndTimestamp | None] = self._wait(
            command, limit, "offsets_for_times"
        )
        return result

    # -- the idiom: blocking ----------------------------------------------------------
    def _call(self, fn: Command[T]) -> T:
        """Run ``fn(core, now)`` as a core command on the loop thread and return its result."""
        if self._state is ConsumerState.CLOSED:
            raise ConsumerClosedError("KafkaConsumer: closed; make a new consumer")
        core = self._core
        return self._loop.call(lambda now: fn(core, now))

    def _clock(self) -> float:
        return self._loop.clock()

    def _notify(self) -> None:
        self._loop.notify()

    def _block(self, wait: Wait) -> None:
        self._loop.wait_change(self._news_since(wait), wait.deadline)

    def _future(self, command: Command[Operation[Any]]) -> concurrent.futures.Future[Any]:
        fut = Delivery()
        self._start(command, fut.fill)
        return fut

    def _wait(self, command: Command[Operation[Any]], timeout: float | None, what: str) -> Any:
        fut = self._future(command)
        # The core fails the operation at its timeout, naming the cause; this
        # is a backstop a second later.
        limit = (self.config.default_api_timeout_ms / 1000 if timeout is None else timeout) + 1
        try:
            return fut.result(limit)
        except concurrent.futures.TimeoutError:
            raise KafkaTimeoutError(f"KafkaConsumer.{what}: no answer within {limit} s") from None

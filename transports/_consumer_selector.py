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
from collections.abc import Iterable, Iterator, Mapping
from types import TracebackType
from typing import Any, TypeVar, cast

from kafkacore.client import TopicPartition
from kafkacore.consumer import ConsumerRecord, OffsetAndMetadata, Operation, PartitionBatch
from kafkacore.errors import KafkaTimeoutError, LocalProtocolError, RequestCancelled

from ._consumer_common import Command, ConsumerState, ConsumerSurface, Wait, drive, timeout_ms
from ._selector_driver import Delivery, LoopThread

__all__ = ["ConsumerState", "KafkaConsumer"]

T = TypeVar("T")


class KafkaConsumer(ConsumerSurface):
    """Blocking consumer; see the module docstring. Options as ClientConfig + ConsumerConfig."""

    _NAME = "KafkaConsumer"

    def _setup(self) -> None:
        self._loop = LoopThread(
            self._NAME, self._parts, noun="consumer", thread_name="kafkacore-consumer"
        )
        self._core = self._build_core(self._loop.clock())
        self._state = ConsumerState.RUNNING
        self._loop.start(self._core, self._router.on_event, on_crash=self._router.fail_all)
        if self._topics:
            self.subscribe(self._topics)

    # -- life -------------------------------------------------------------
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
            # Best effort on the network side; the sockets close below either way
            # (also when the loop thread died and nothing can be sent).
            with contextlib.suppress(Exception):
                self._future(self._close_command(autocommit)).result(timeout)
        finally:
            self._state = ConsumerState.CLOSED
            self._loop.stop(self._shutdown_core, timeout)

    def _shutdown_core(self) -> None:
        self._loop.bridge.command(lambda now: self._core.shutdown(now=now))
        self._router.fail_all(RequestCancelled("KafkaConsumer closed"))

    def subscription(self) -> frozenset[str]:
        return self._call(lambda core, now: core.subscription())

    # -- polling ---------------------------------------------------------------
    def poll(self, timeout: float = 0.0, max_records: int | None = None) -> list[ConsumerRecord]:
        """Records fetched so far, waiting up to ``timeout`` s for some to arrive.

        Every record returned counts as consumed (Java's ``poll``).
        """
        self._give_back_held()
        steps = self._poll_steps(lambda core, now: core.poll_records(max_records, now=now), timeout)
        return drive(steps, self._block)

    def poll_batches(
        self, timeout: float = 0.0, max_records: int | None = None
    ) -> list[PartitionBatch]:
        """Like :meth:`poll`, as per-partition columnar batches (the bulk path)."""
        self._give_back_held()
        steps = self._poll_steps(lambda core, now: core.poll_batches(max_records, now=now), timeout)
        return drive(steps, self._block)

    def __iter__(self) -> Iterator[ConsumerRecord]:
        """Records one by one, for ever (until ``close()``); see ``ConsumerSurface._records``."""
        # With a blocking waiter the generator never yields a Wait.
        return cast(Iterator[ConsumerRecord], self._records(self._block))

    def position(self, partition: TopicPartition, timeout: float | None = None) -> int:
        """The next offset to hand out, waiting until it is known (reset, committed)."""
        return drive(self._position_steps(partition, timeout), self._block)

    # -- offsets ----------------------------------------------------------------------
    def commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        timeout: float | None = None,
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Commit and wait (default: every position consumed so far)."""
        command = self._commit_command(offsets, timeout_ms(timeout))
        result: dict[TopicPartition, OffsetAndMetadata] = self._wait(command, timeout, "commit")
        return result

    def commit_async(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None
    ) -> concurrent.futures.Future[Any]:
        return self._future(self._commit_command(offsets, None))

    def committed(
        self, partitions: Iterable[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        command = self._lookup_command("committed", partitions, timeout_ms(timeout))
        result: dict[TopicPartition, OffsetAndMetadata | None] = self._wait(
            command, timeout, "committed"
        )
        return result

    def end_offsets(
        self, partitions: Iterable[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, int | None]:
        command = self._lookup_command("end_offsets", partitions, timeout_ms(timeout))
        result: dict[TopicPartition, int | None] = self._wait(command, timeout, "end_offsets")
        return result

    def beginning_offsets(
        self, partitions: Iterable[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, int | None]:
        command = self._lookup_command("beginning_offsets", partitions, timeout_ms(timeout))
        result: dict[TopicPartition, int | None] = self._wait(command, timeout, "beginning_offsets")
        return result

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int], timeout: float | None = None
    ) -> dict[TopicPartition, tuple[int, int] | None]:
        command = self._times_command(timestamps, timeout_ms(timeout))
        result: dict[TopicPartition, tuple[int, int] | None] = self._wait(
            command, timeout, "offsets_for_times"
        )
        return result

    # -- the idiom: blocking ----------------------------------------------------------
    def _call(self, fn: Command[T]) -> T:
        """Run ``fn(core, now)`` as a core command on the loop thread and return its result."""
        if self._state is ConsumerState.CLOSED:
            raise LocalProtocolError("KafkaConsumer: closed; make a new consumer")
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

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

The calls are kafkacore's and aiokafka's (``getone``, ``getmany``,
``stop``, ``committed(tp)``, awaitable ``seek_to_beginning``); durations are
milliseconds (:mod:`kafkacore.transports._consumer_args`).

Subclasses supply the life: ``_running(what)`` gives the core or a clear
error for a consumer that is not running (asyncio starts lazily, trio
needs ``async with``).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import AsyncIterator
from typing import Any, TypeVar

from kafkacore.client import TopicPartition
from kafkacore.consumer import (
    ConsumerClosedError,
    ConsumerCore,
    ConsumerRecord,
    Operation,
    PartitionBatch,
)
from kafkacore.errors import RequestCancelled

from ._async_driver import AsyncDriver, Waiter
from ._common import Parts
from ._consumer_args import (
    Applied,
    by_partition,
    duration_s,
    one_partition,
    partitions_one_by_one,
)
from ._consumer_args import max_records as check_max_records
from ._consumer_async_offsets import AsyncOffsets
from ._consumer_common import REFILLED, Command, ConsumerState, ConsumerSurface, Steps, Wait
from ._consumer_listener import ListenerCalls
from ._consumer_start import await_group
from ._consumer_steps import LISTEN
from ._unclosed import weak_method

__all__ = ["AsyncConsumerBase", "ConsumerState"]

T = TypeVar("T")

#: ``close()``'s bound when none is given (seconds).
_CLOSE_S = 30.0


class AsyncConsumerBase(AsyncOffsets, ConsumerSurface):
    """The shared async surface; see the module docstring."""

    _NAME = "AsyncConsumer"
    _LISTENER_INLINE = False  # aiokafka's way: see _consumer_listener.py

    _driver: AsyncDriver

    def _setup(self) -> None:
        self._driver = self._new_driver(self._parts)
        self._state = ConsumerState.NEW
        self._core: ConsumerCore | None = None
        me = weakref.ref(self)  # the loop's task must not keep the consumer alive
        self._listener_calls = ListenerCalls(
            self._NAME,
            router=self._router,
            driver=self._driver,
            listener=lambda: getattr(me(), "_listener", None),
            ack=weak_method(self._ack),
            running=lambda: getattr(me(), "_state", None) is ConsumerState.RUNNING,
        )

    def _new_driver(self, parts: Parts) -> AsyncDriver:
        raise NotImplementedError

    def _attach(self) -> None:
        """Build the core on the driver and subscribe to the constructor's topics."""
        self._core = self._driver.attach(self._build_core, self._router.on_event)
        self._state = ConsumerState.RUNNING
        self._driver.spawn(self._listener_calls.background)
        if self._topics:
            self.subscribe(self._topics)

    def _running(self, what: str) -> ConsumerCore:
        raise NotImplementedError

    def _drop(self) -> None:
        # Collected unclosed (see _unclosed.py): drop the connections (no await).
        with contextlib.suppress(RuntimeError):  # its event loop is closed already
            self._driver.abort()

    #: What ``start`` waits for before the group: "known" (each subscribed topic
    #: described or reported missing), "described" (aiokafka's: described, or
    #: UnknownTopicOrPartitionError at request_timeout_ms).
    _START_TOPICS = "known"

    async def _await_group(self) -> None:
        """``start``'s wait for the group (see :func:`~._consumer_start.await_group`)."""
        await await_group(self, self._START_TOPICS == "described")

    # -- polling ---------------------------------------------------------------
    async def poll(
        self,
        timeout_ms: int | None = None,
        max_records: int | None = None,
        *,
        timeout: float | None = None,
    ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Records by partition, waiting up to ``timeout_ms`` for some (as
        ``getmany``); every record returned counts as consumed (Java's ``poll``)."""
        return by_partition(await self._poll_list("poll", timeout_ms, max_records, timeout))

    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """aiokafka's ``getmany``: records by partition, waiting up to ``timeout_ms``;
        with ``partitions``, from those (assigned) partitions only, the others'
        records kept for later calls. A consumer closed while this waits makes it
        answer ``{}``, as aiokafka's does (the next call raises ConsumerClosedError)."""
        only = self._named("getmany", partitions)
        was_open = self._state is ConsumerState.RUNNING
        try:
            records = await self._poll_list("getmany", timeout_ms, max_records, None, only)
        except ConsumerClosedError:
            if was_open:
                return {}  # closed while waiting: the call ends empty
            raise
        return by_partition(records)

    async def getone(self, *partitions: TopicPartition) -> ConsumerRecord:
        """aiokafka's ``getone``: the next record (of ``partitions`` when given,
        which must be assigned), waiting as long as it takes."""
        only = self._named("getone", partitions)
        while True:
            records = await self._poll_list("getone", 1000, 1, None, only)
            if records:
                return records[0]

    async def poll_records(
        self,
        timeout_ms: int | None = None,
        max_records: int | None = None,
        *,
        timeout: float | None = None,
    ) -> list[ConsumerRecord]:
        """Like :meth:`poll`, as one list in fetch order (Java's ``ConsumerRecords``)."""
        return await self._poll_list("poll_records", timeout_ms, max_records, timeout)

    async def _poll_list(
        self,
        what: str,
        timeout_ms: Any,
        max_records: Any,
        timeout: Any,
        only: frozenset[TopicPartition] | None = None,
    ) -> list[ConsumerRecord]:
        wait = duration_s(f"{self._NAME}.{what}", timeout_ms, timeout, 0.0)
        limit = check_max_records(f"{self._NAME}.{what}", max_records)
        self._give_back_held()
        records = await self._run(
            self._poll_steps(
                lambda core, now: core.poll_records(limit, now=now, only=only), wait or 0.0
            )
        )
        extras = self._extras
        return [extras.deserialize(r) for r in records] if extras.deserializes else records

    def _named(
        self, what: str, partitions: tuple[TopicPartition, ...]
    ) -> frozenset[TopicPartition] | None:
        """aiokafka's ``*partitions``: None (every assigned one) when none are given."""
        tps = partitions_one_by_one(partitions, f"{self._NAME}.{what}")
        return frozenset(tps) or None

    async def poll_batches(
        self,
        timeout_ms: int | None = None,
        max_records: int | None = None,
        *,
        timeout: float | None = None,
    ) -> list[PartitionBatch]:
        """Per-partition columnar batches (the bulk path; no deserializers)."""
        wait = duration_s(f"{self._NAME}.poll_batches", timeout_ms, timeout, 0.0)
        limit = check_max_records(f"{self._NAME}.poll_batches", max_records)
        self._give_back_held()
        return await self._run(
            self._poll_steps(lambda core, now: core.poll_batches(limit, now=now), wait or 0.0)
        )

    async def __aiter__(self) -> AsyncIterator[ConsumerRecord]:
        """Records one by one until ``close()`` (or ``consumer_timeout_ms`` without
        one); a record counts as consumed once handed over (leaving the loop
        commits it, not the ones after it). A consumer closed meanwhile (by another
        task) ends the loop, as aiokafka's does."""
        driver = self._driver
        self._running("__aiter__")  # a closed consumer: ConsumerClosedError, as aiokafka
        records = self._records()
        while True:
            try:
                item = next(records)
            except StopIteration:
                return
            except ConsumerClosedError:
                if self._state is ConsumerState.CLOSED:
                    return  # closed by another task while this one iterated
                raise
            if type(item) is Wait:
                if item is REFILLED:
                    await driver.checkpoint()
                elif item is LISTEN:
                    await self._listener_calls.run()
                else:
                    await driver.wait_change(self._news_since(item), item.deadline)
            else:
                yield item  # type: ignore[misc]

    async def position(
        self,
        partition: TopicPartition,
        timeout_ms: int | None = None,
        *,
        timeout: float | None = None,
    ) -> int:
        limit = duration_s(f"{self._NAME}.position", timeout_ms, timeout, None)
        tp = one_partition(partition, "position")
        return await self._run(self._position_steps(tp, limit))

    async def topics(self) -> set[str]:
        """Every topic of the cluster (internal ones as ``exclude_internal_topics``)."""
        return self._topic_names(await self._run(self._listing_steps("topics", None)))

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        """The partition ids of ``topic`` in the metadata known now (aiokafka's:
        None when not known; ``await topics()`` or a subscription fetches it)."""
        if not isinstance(topic, str):
            raise TypeError(
                f"{self._NAME}.partitions_for_topic: expected a topic name, got {topic!r}"
            )
        return self._call(lambda core, now: core.client.cluster.partitions_for_topic(topic))

    def seek_to_beginning(self, *partitions: TopicPartition) -> Applied:
        """Seek ``partitions`` (none: every assigned one) to their first offset, now;
        awaiting the result (aiokafka's style) is optional."""
        self._seek_to_beginning(partitions)
        return Applied()

    def seek_to_end(self, *partitions: TopicPartition) -> Applied:
        """Seek ``partitions`` (none: every assigned one) to their end, now;
        awaiting the result (aiokafka's style) is optional."""
        self._seek_to_end(partitions)
        return Applied()

    # -- life -------------------------------------------------------------------------
    async def close(
        self,
        autocommit: bool = True,
        timeout_ms: int | None = None,
        *,
        timeout: float | None = None,
    ) -> None:
        """Commit (with auto-commit and ``autocommit``), leave the group, drop
        sockets; within ~``timeout_ms`` (default 30 s)."""
        if not isinstance(autocommit, bool):
            raise TypeError(
                f"{self._NAME}.close: autocommit must be True or False, got {autocommit!r} "
                "(the first argument is autocommit; give timeout_ms=)"
            )
        limit = duration_s(f"{self._NAME}.close", timeout_ms, timeout, _CLOSE_S) or 0.0
        if self._state is not ConsumerState.RUNNING:
            self._state = ConsumerState.CLOSED
            return
        core = self._running("close")
        end = self._driver.clock() + limit
        try:
            # Best effort on the network side; the sockets are dropped below either way.
            with contextlib.suppress(Exception):
                waiter = self._waiter(self._close_command(autocommit), "close")
                await self._driver.wait(waiter, limit, f"{self._NAME}.close")
            # Then the farewell (KIP-714's terminating push) in what is left.
            await self._driver.farewell(end - self._driver.clock())
        finally:
            self._state = ConsumerState.CLOSED
            self._driver.call(lambda now: core.shutdown(now=now))
            self._driver.abort()
            self._router.fail_all(RequestCancelled(f"{self._NAME} closed"))
            # A poll or iterator waiting in another task ends now: let it see that
            # before close returns (aiokafka: a getmany in flight is done by then).
            self._driver.notify()
            for _ in range(16):
                await self._driver.yield_()
                if not self._driver.waiting:
                    break

    async def stop(self) -> None:
        """aiokafka's name of :meth:`close`."""
        await self.close()

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
            if wait is LISTEN:
                await self._listener_calls.run()
            else:
                await driver.wait_change(self._news_since(wait), wait.deadline)

    def _waiter(self, command: Command[Operation[Any]], what: str) -> Waiter:
        """Issue ``command``; the returned one-shot gets its operation's outcome."""
        self._running(what)
        waiter = self._driver.waiter()
        self._start(command, waiter.fill)
        return waiter

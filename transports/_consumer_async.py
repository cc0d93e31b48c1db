"""The consumer surface shared by the asyncio and trio consumers.

Theory of operation
-------------------
Both async consumers call the sans-IO :class:`~kafkacore.consumer.ConsumerCore`
directly from the one thread their event loop runs on, through the shared
:class:`~transports._bridge.Bridge`. Everything they offer is therefore the
same code; only four things depend on the framework, and subclasses supply
them:

- ``_running(what)``: the core and bridge, or a clear error for a consumer
  that is not running (asyncio starts lazily, trio needs ``async with``);
- ``_op(fn)``: issue a core command that completes later and await its
  ``OperationCompleted`` (an asyncio future or a trio event);
- ``_loop_time()``, ``_clear_changed()``, ``_wait_changed(deadline)``: the
  framework's clock and the "some core event happened" signal that ``poll``
  and ``position`` sleep on instead of spinning;
- ``_checkpoint()``: trio's rule that every async call is a checkpoint
  (a no-op on asyncio).

``async for record in consumer`` borrows a batch and hands it over one
record at a time (:class:`~transports._consumer_common.HeldRecords`):
commits, also automatic and on ``close``, cover the records handed over,
the one being processed when the loop breaks or raises included, and never
the rest. The batch lives on the consumer, not in the async generator, so
leaving the loop needs no generator finalisation to be exact.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any, TypeVar

from kafkacore.client import TopicPartition
from kafkacore.consumer import (
    ConsumerConfig,
    ConsumerCore,
    ConsumerGroupMetadata,
    ConsumerRecord,
    OffsetAndMetadata,
    Operation,
    PartitionBatch,
)

from ._bridge import Bridge
from ._consumer_common import ConsumerRouter, HeldRecords, RebalanceListener, position_timeout

__all__ = ["AsyncConsumerBase", "ConsumerState"]

T = TypeVar("T")


class ConsumerState(enum.Enum):
    NEW = "new"
    RUNNING = "running"
    CLOSED = "closed"


class AsyncConsumerBase:
    """The shared async surface; see the module docstring."""

    _NAME = "AsyncConsumer"  # the public class name, for error messages
    config: ConsumerConfig
    _router: ConsumerRouter
    _listener: RebalanceListener | None
    _state: ConsumerState
    _core: ConsumerCore | None
    _bridge: Bridge | None
    _held_batch: HeldRecords | None = None

    @property
    def _held(self) -> HeldRecords:
        if self._held_batch is None:
            self._held_batch = HeldRecords(self._router)
        return self._held_batch

    @property
    def state(self) -> ConsumerState:
        return self._state

    # -- framework hooks ----------------------------------------------------
    def _running(self, what: str) -> tuple[ConsumerCore, Bridge]:
        raise NotImplementedError

    async def _op(self, fn: Callable[[float], Operation[Any]]) -> Any:
        raise NotImplementedError

    def _loop_time(self) -> float:
        raise NotImplementedError

    def _clear_changed(self) -> None:
        raise NotImplementedError

    async def _wait_changed(self, deadline: float) -> None:
        raise NotImplementedError

    async def _checkpoint(self) -> None:
        return None

    # -- subscription ---------------------------------------------------------
    def subscribe(
        self,
        topics: Iterable[str] | None = None,
        *,
        pattern: str | None = None,
        listener: RebalanceListener | None = None,
    ) -> None:
        if listener is not None:
            self._listener = listener
        names = None if topics is None else list(topics)
        wait = self._listener is not None

        def issue(core: ConsumerCore, now: float) -> None:
            self._held.give_back(core, now)
            core.await_revocation_ack = wait
            core.subscribe(names, pattern=pattern, now=now)

        self._call(issue)

    def unsubscribe(self) -> None:
        self._call(lambda core, now: self._given_back(core, now, core.unsubscribe))

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        tps = [TopicPartition(*tp) for tp in partitions]
        self._call(lambda core, now: self._given_back(core, now, core.assign, tps))

    def assignment(self) -> frozenset[TopicPartition]:
        return self._call(lambda core, now: core.assignment())

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This member's group identity, for ``send_offsets_to_transaction`` (KIP-447)."""
        return self._call(lambda core, now: core.group_metadata())

    # -- polling ---------------------------------------------------------------
    async def poll(
        self, timeout: float = 0.0, max_records: int | None = None
    ) -> list[ConsumerRecord]:
        """Every record returned counts as consumed (Java's ``poll``)."""
        self._give_back_held()
        return await self._poll(lambda core, now: core.poll_records(max_records, now=now), timeout)

    async def poll_batches(
        self, timeout: float = 0.0, max_records: int | None = None
    ) -> list[PartitionBatch]:
        self._give_back_held()
        return await self._poll(lambda core, now: core.poll_batches(max_records, now=now), timeout)

    async def __aiter__(self) -> AsyncIterator[ConsumerRecord]:
        """Records one by one until ``close()``; a record counts as consumed once
        handed over (leaving the loop commits it, not the ones after it)."""
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
                await self._poll(lambda core, now: held.fill(core, now), 1.0)

    async def _poll(self, fn: Callable[[ConsumerCore, float], list[T]], timeout: float) -> list[T]:
        deadline = self._loop_time() + max(timeout, 0.0)
        while True:
            self._clear_changed()
            out = self._call(fn)
            self._router.dispatch(self._listener, self._ack)
            if out or self._loop_time() >= deadline:
                await self._checkpoint()
                return out
            await self._wait_changed(deadline)

    # -- positions ----------------------------------------------------------------
    def seek(self, partition: TopicPartition, offset: int) -> None:
        tp = TopicPartition(*partition)
        self._call(lambda core, now: self._given_back(core, now, core.seek, tp, offset))

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        self._call(
            lambda core, now: self._given_back(core, now, core.seek_to_beginning, partitions)
        )

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        self._call(lambda core, now: self._given_back(core, now, core.seek_to_end, partitions))

    async def position(self, partition: TopicPartition, timeout: float | None = None) -> int:
        tp = TopicPartition(*partition)
        limit = self.config.default_api_timeout_ms / 1000 if timeout is None else timeout
        deadline = self._loop_time() + limit
        while True:
            self._clear_changed()
            pos, cause, hopeless = self._call(lambda core, now: self._position(core, tp, now))
            if pos is not None:
                await self._checkpoint()
                return pos
            if hopeless:
                assert cause is not None
                raise cause  # no retry will help
            if self._loop_time() >= deadline:
                raise position_timeout(self._NAME, tp, limit, cause)
            await self._wait_changed(deadline)

    def pause(self, *partitions: TopicPartition) -> None:
        self._call(lambda core, now: self._given_back(core, now, core.pause, partitions))

    def resume(self, *partitions: TopicPartition) -> None:
        self._call(lambda core, now: self._given_back(core, now, core.resume, partitions))

    def paused(self) -> frozenset[TopicPartition]:
        return self._call(lambda core, now: core.paused())

    def lag(self, partition: TopicPartition) -> int | None:
        tp = TopicPartition(*partition)
        return self._call(lambda core, now: self._lag(core, tp, now))

    # -- offsets ----------------------------------------------------------------------
    async def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        core, _ = self._running("commit")
        result: dict[TopicPartition, OffsetAndMetadata] = await self._op(
            lambda now: self._synced(core, now, core.commit, offsets)
        )
        return result

    async def committed(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        tps = [TopicPartition(*tp) for tp in partitions]
        core, _ = self._running("committed")
        result: dict[TopicPartition, OffsetAndMetadata | None] = await self._op(
            lambda now: core.committed(tps, now=now)
        )
        return result

    async def end_offsets(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        tps = [TopicPartition(*tp) for tp in partitions]
        core, _ = self._running("end_offsets")
        result: dict[TopicPartition, int | None] = await self._op(
            lambda now: core.end_offsets(tps, now=now)
        )
        return result

    async def beginning_offsets(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        tps = [TopicPartition(*tp) for tp in partitions]
        core, _ = self._running("beginning_offsets")
        result: dict[TopicPartition, int | None] = await self._op(
            lambda now: core.beginning_offsets(tps, now=now)
        )
        return result

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, tuple[int, int] | None]:
        query = {TopicPartition(*tp): ts for tp, ts in timestamps.items()}
        core, _ = self._running("offsets_for_times")
        result: dict[TopicPartition, tuple[int, int] | None] = await self._op(
            lambda now: core.offsets_for_times(query, now=now)
        )
        return result

    def missing_topics(self) -> frozenset[str]:
        """Followed topics that metadata says do not exist (logged as a warning too)."""
        return self._call(lambda core, now: core.missing_topics())

    def run_on_loop(self, fn: Callable[[ConsumerCore], T]) -> T:
        return self._call(lambda core, now: fn(core))

    # -- plumbing -------------------------------------------------------------------
    def _synced(
        self, core: ConsumerCore, now: float, fn: Callable[..., T], *args: Any, **kw: Any
    ) -> T:
        """Tell the core what the iterator handed over, then ``fn``."""
        self._held.sync(core, now)
        return fn(*args, now=now, **kw)

    def _position(
        self, core: ConsumerCore, tp: TopicPartition, now: float
    ) -> tuple[int | None, BaseException | None, bool]:
        self._held.sync(core, now)
        hopeless = core.hopeless_cause()
        return core.position(tp), hopeless or core.stall_cause(), hopeless is not None

    def _lag(self, core: ConsumerCore, tp: TopicPartition, now: float) -> int | None:
        self._held.sync(core, now)
        return core.lag(tp)

    def _given_back(self, core: ConsumerCore, now: float, fn: Callable[..., T], *args: Any) -> T:
        """Give the iterator's unhanded records back to the core, then ``fn``."""
        self._held.give_back(core, now)
        return fn(*args, now=now)

    def _give_back_held(self) -> None:
        if self._held:
            self._call(lambda core, now: self._held.give_back(core, now))

    def _ack(self, token: int) -> None:
        self._call(lambda core, now: core.revocation_done(token, now=now))

    def _call(self, fn: Callable[[ConsumerCore, float], T]) -> T:
        core, bridge = self._running("call")
        box: list[T] = []
        bridge.command(lambda now: box.append(fn(core, now)))
        return box[0]

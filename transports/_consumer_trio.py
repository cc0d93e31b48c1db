"""trio Kafka consumer: the sans-IO consumer core driven by tasks in its own nursery.

Theory of operation
-------------------
:class:`TrioKafkaConsumer` is used as ``async with TrioKafkaConsumer(...) as c``:
entering opens a nursery holding the timer task and one task per broker
connection (:mod:`transports._trio_io`), as :class:`transports.trio.TrioKafkaClient`
does. User calls issue core commands directly (one thread); calls that
complete later wait on a ``trio.Event`` the core's ``OperationCompleted``
event sets. ``await poll(timeout)`` waits on an event that every core
event sets, so no busy loop. ``async for`` iterates for ever. Leaving the
block commits (with auto-commit) and leaves the group, bounded, then
cancels the nursery, which closes every socket.
"""

from __future__ import annotations

import contextlib
import enum
import random
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import trio

from kafkacore.client import TopicPartition
from kafkacore.consumer import (
    ConsumerCore,
    ConsumerRecord,
    OffsetAndMetadata,
    OperationHandle,
    PartitionBatch,
)
from kafkacore.errors import KafkaTimeoutError, LocalProtocolError, RequestCancelled

from ._bridge import Bridge
from ._consumer_common import ConsumerRouter, RebalanceListener, split_options
from ._sockets import Address
from ._trio_io import TrioIo

__all__ = ["ConsumerState", "TrioKafkaConsumer"]

T = TypeVar("T")


class ConsumerState(enum.Enum):
    NEW = "new"
    RUNNING = "running"
    CLOSED = "closed"


class _Slot:
    __slots__ = ("error", "event", "value")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.value: Any = None
        self.error: BaseException | None = None

    def done(self, value: Any, error: BaseException | None) -> None:
        if self.event.is_set():
            return
        self.value, self.error = value, error
        self.event.set()

    async def wait(self) -> Any:
        await self.event.wait()
        if self.error is not None:
            raise self.error
        return self.value


class TrioKafkaConsumer:
    """trio consumer; see the module docstring. Options as ClientConfig + ConsumerConfig."""

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
        self._parts, self.config = split_options(
            "TrioKafkaConsumer",
            bootstrap_servers,
            source_address=source_address,
            ssl_server_hostname=ssl_server_hostname,
            rng=rng,
            options=options,
        )
        self._ssl_server_hostname = ssl_server_hostname
        self._topics = list(topics)
        self._listener = listener
        self._changed = trio.Event()
        self._router = ConsumerRouter(wake=self._wake)
        self._state = ConsumerState.NEW
        self._nursery_cm: Any = None
        self._io: TrioIo | None = None
        self._core: ConsumerCore | None = None
        self._bridge: Bridge | None = None

    def _wake(self) -> None:
        self._changed.set()

    @property
    def state(self) -> ConsumerState:
        return self._state

    async def __aenter__(self) -> TrioKafkaConsumer:
        if self._state is not ConsumerState.NEW:
            raise LocalProtocolError(
                f"TrioKafkaConsumer: cannot enter a consumer that is {self._state.value}"
            )
        self._nursery_cm = trio.open_nursery()
        nursery = await self._nursery_cm.__aenter__()
        io = TrioIo(
            nursery,
            sockets=self._parts.sockets,
            ssl_context=self._parts.ssl_context_factory(),
            ssl_server_hostname=self._ssl_server_hostname,
        )
        core = ConsumerCore(self._parts.config, self.config, now=io.clock(), rng=self._parts.rng)
        bridge = Bridge(core, io, clock=io.clock, on_event=self._router.on_event)
        io.bridge = bridge
        self._io, self._core, self._bridge = io, core, bridge
        self._state = ConsumerState.RUNNING
        nursery.start_soon(io.run_timer)
        bridge.pump()
        if self._topics:
            self.subscribe(self._topics)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        await self.close()
        await self._nursery_cm.__aexit__(None, None, None)
        return False

    async def close(self, timeout: float = 30.0, *, autocommit: bool = True) -> None:
        """Commit (with auto-commit), leave the group, close sockets; within ~``timeout`` s."""
        if self._state is not ConsumerState.RUNNING:
            self._state = ConsumerState.CLOSED
            return
        core, bridge = self._running("close")
        with trio.move_on_after(timeout):
            # Best effort on the network side; the sockets close below either way.
            with contextlib.suppress(Exception):
                await self._op(lambda now: core.close(now=now, autocommit=autocommit))
        self._state = ConsumerState.CLOSED
        bridge.command(lambda now: core.shutdown(now=now))
        assert self._io is not None
        self._io.abort_all()
        self._router.fail_all(RequestCancelled("TrioKafkaConsumer closed"))
        await trio.lowlevel.checkpoint()

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
            core.await_revocation_ack = wait
            core.subscribe(names, pattern=pattern, now=now)

        self._call(issue)

    def unsubscribe(self) -> None:
        self._call(lambda core, now: core.unsubscribe(now=now))

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        tps = [TopicPartition(*tp) for tp in partitions]
        self._call(lambda core, now: core.assign(tps, now=now))

    def assignment(self) -> frozenset[TopicPartition]:
        return self._call(lambda core, now: core.assignment())

    # -- polling ---------------------------------------------------------------
    async def poll(
        self, timeout: float = 0.0, max_records: int | None = None
    ) -> list[ConsumerRecord]:
        return await self._poll(lambda core, now: core.poll_records(max_records, now=now), timeout)

    async def poll_batches(
        self, timeout: float = 0.0, max_records: int | None = None
    ) -> list[PartitionBatch]:
        return await self._poll(lambda core, now: core.poll_batches(max_records, now=now), timeout)

    async def __aiter__(self) -> AsyncIterator[ConsumerRecord]:
        while self._state is ConsumerState.RUNNING:
            for record in await self.poll(1.0):
                yield record

    async def _poll(self, fn: Callable[[ConsumerCore, float], list[T]], timeout: float) -> list[T]:
        deadline = trio.current_time() + max(timeout, 0.0)
        while True:
            if self._changed.is_set():
                self._changed = trio.Event()
            out = self._call(fn)
            self._router.dispatch(self._listener, self._ack)
            if out:
                await trio.lowlevel.checkpoint()
                return out
            if trio.current_time() >= deadline:
                await trio.lowlevel.checkpoint()
                return out
            with trio.move_on_at(deadline):
                await self._changed.wait()

    # -- positions ----------------------------------------------------------------
    def seek(self, partition: TopicPartition, offset: int) -> None:
        self._call(lambda core, now: core.seek(TopicPartition(*partition), offset, now=now))

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        self._call(lambda core, now: core.seek_to_beginning(partitions, now=now))

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        self._call(lambda core, now: core.seek_to_end(partitions, now=now))

    async def position(self, partition: TopicPartition, timeout: float | None = None) -> int:
        tp = TopicPartition(*partition)
        limit = self.config.default_api_timeout_ms / 1000 if timeout is None else timeout
        deadline = trio.current_time() + limit
        while True:
            if self._changed.is_set():
                self._changed = trio.Event()
            pos = self._call(lambda core, now: core.position(tp))
            if pos is not None:
                return pos
            if trio.current_time() >= deadline:
                raise KafkaTimeoutError(f"TrioKafkaConsumer.position: {tp} unknown after {limit} s")
            with trio.move_on_at(deadline):
                await self._changed.wait()

    def pause(self, *partitions: TopicPartition) -> None:
        self._call(lambda core, now: core.pause(partitions, now=now))

    def resume(self, *partitions: TopicPartition) -> None:
        self._call(lambda core, now: core.resume(partitions, now=now))

    def paused(self) -> frozenset[TopicPartition]:
        return self._call(lambda core, now: core.paused())

    def lag(self, partition: TopicPartition) -> int | None:
        return self._call(lambda core, now: core.lag(TopicPartition(*partition)))

    # -- offsets ----------------------------------------------------------------------
    async def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        core, _ = self._running("commit")
        result: dict[TopicPartition, OffsetAndMetadata] = await self._op(
            lambda now: core.commit(offsets, now=now)
        )
        return result

    def commit_async(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None
    ) -> None:
        """Start a commit and return at once (its outcome is not reported)."""
        core, bridge = self._running("commit_async")
        bridge.command(lambda now: core.commit(offsets, now=now))

    async def committed(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        core, _ = self._running("committed")
        tps = [TopicPartition(*tp) for tp in partitions]
        result: dict[TopicPartition, OffsetAndMetadata | None] = await self._op(
            lambda now: core.committed(tps, now=now)
        )
        return result

    async def end_offsets(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        core, _ = self._running("end_offsets")
        tps = [TopicPartition(*tp) for tp in partitions]
        result: dict[TopicPartition, int | None] = await self._op(
            lambda now: core.end_offsets(tps, now=now)
        )
        return result

    async def beginning_offsets(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        core, _ = self._running("beginning_offsets")
        tps = [TopicPartition(*tp) for tp in partitions]
        result: dict[TopicPartition, int | None] = await self._op(
            lambda now: core.beginning_offsets(tps, now=now)
        )
        return result

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, tuple[int, int] | None]:
        core, _ = self._running("offsets_for_times")
        query = {TopicPartition(*tp): ts for tp, ts in timestamps.items()}
        result: dict[TopicPartition, tuple[int, int] | None] = await self._op(
            lambda now: core.offsets_for_times(query, now=now)
        )
        return result

    def run_on_loop(self, fn: Callable[[ConsumerCore], T]) -> T:
        return self._call(lambda core, now: fn(core))

    # -- plumbing -------------------------------------------------------------------
    def _ack(self, token: int) -> None:
        self._call(lambda core, now: core.revocation_done(token, now=now))

    def _running(self, what: str) -> tuple[ConsumerCore, Bridge]:
        if self._state is not ConsumerState.RUNNING:
            hint = (
                "use 'async with TrioKafkaConsumer(...)'"
                if self._state is ConsumerState.NEW
                else "make a new one"
            )
            raise LocalProtocolError(
                f"TrioKafkaConsumer.{what}: consumer is {self._state.value}; {hint}"
            )
        assert self._core is not None and self._bridge is not None
        return self._core, self._bridge

    def _call(self, fn: Callable[[ConsumerCore, float], T]) -> T:
        core, bridge = self._running("call")
        box: list[T] = []
        bridge.command(lambda now: box.append(fn(core, now)))
        return box[0]

    async def _op(self, fn: Callable[[float], OperationHandle]) -> Any:
        _, bridge = self._running("call")
        slot = _Slot()
        bridge.command(lambda now: self._router.expect(fn(now), slot.done))
        return await slot.wait()

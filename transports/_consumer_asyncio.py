"""asyncio Kafka consumer: the sans-IO consumer core on the running event loop.

Theory of operation
-------------------
:class:`AsyncKafkaConsumer` drives one :class:`~kafkacore.consumer.ConsumerCore`
from the loop it was started on, with the same I/O backend as
:class:`transports.asyncio.AsyncKafkaClient`. Every user call issues a core
command synchronously (we are on the loop) through the Bridge; calls that
complete later await an asyncio future that the core's
``OperationCompleted`` event resolves. ``await poll(timeout)`` asks the core
for buffered records and, when there are none, waits on an ``asyncio.Event``
that every core event sets. ``async for record in consumer`` iterates for
ever. Rebalance listeners run inside ``poll``.

Life: NEW --start()/async with--> RUNNING --close()--> CLOSED. ``close()``
commits (with auto-commit) and leaves the group within ``timeout``, then
aborts every socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import random
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

from kafkacore.client import TopicPartition
from kafkacore.consumer import (
    ConsumerCore,
    ConsumerRecord,
    OffsetAndMetadata,
    OperationHandle,
    PartitionBatch,
)
from kafkacore.errors import KafkaTimeoutError, LocalProtocolError, RequestCancelled

from ._asyncio_io import AsyncioIo
from ._bridge import Bridge
from ._consumer_common import ConsumerRouter, RebalanceListener, split_options
from ._sockets import Address

__all__ = ["AsyncKafkaConsumer", "ConsumerState"]

T = TypeVar("T")


class ConsumerState(enum.Enum):
    NEW = "new"
    RUNNING = "running"
    CLOSED = "closed"


class AsyncKafkaConsumer:
    """asyncio consumer; see the module docstring. Options as ClientConfig + ConsumerConfig."""

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
            "AsyncKafkaConsumer",
            bootstrap_servers,
            source_address=source_address,
            ssl_server_hostname=ssl_server_hostname,
            rng=rng,
            options=options,
        )
        self._ssl_server_hostname = ssl_server_hostname
        self._topics = list(topics)
        self._listener = listener
        self._changed = asyncio.Event()
        self._router = ConsumerRouter(wake=self._changed.set)
        self._state = ConsumerState.NEW
        self._io: AsyncioIo | None = None
        self._core: ConsumerCore | None = None
        self._bridge: Bridge | None = None

    # -- life -------------------------------------------------------------
    @property
    def state(self) -> ConsumerState:
        return self._state

    def start(self) -> None:
        """Bind to the running loop (idempotent); subscribes to the constructor's topics."""
        if self._state is ConsumerState.CLOSED:
            raise LocalProtocolError("AsyncKafkaConsumer.start: closed; make a new consumer")
        if self._state is ConsumerState.RUNNING:
            return
        loop = asyncio.get_running_loop()
        io = AsyncioIo(
            loop,
            sockets=self._parts.sockets,
            ssl_context=self._parts.ssl_context_factory(),
            ssl_server_hostname=self._ssl_server_hostname,
        )
        core = ConsumerCore(self._parts.config, self.config, now=io.clock(), rng=self._parts.rng)
        bridge = Bridge(core, io, clock=io.clock, on_event=self._router.on_event)
        io.bridge = bridge
        self._io, self._core, self._bridge = io, core, bridge
        self._state = ConsumerState.RUNNING
        bridge.pump()
        if self._topics:
            self.subscribe(self._topics)

    async def __aenter__(self) -> AsyncKafkaConsumer:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self, timeout: float = 30.0, *, autocommit: bool = True) -> None:
        """Commit (with auto-commit), leave the group, abort sockets; within ~``timeout`` s."""
        if self._state is not ConsumerState.RUNNING:
            self._state = ConsumerState.CLOSED
            return
        core, bridge = self._running("close")
        try:
            # Best effort on the network side; the sockets are aborted below either way.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(
                    self._op(lambda now: core.close(now=now, autocommit=autocommit)), timeout
                )
        finally:
            self._state = ConsumerState.CLOSED
            bridge.command(lambda now: core.shutdown(now=now))
            assert self._io is not None
            self._io.abort_all()
            self._router.fail_all(RequestCancelled("AsyncKafkaConsumer closed"))
            await asyncio.sleep(0)

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
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout, 0.0)
        while True:
            self._changed.clear()
            out = self._call(fn)
            self._router.dispatch(self._listener, self._ack)
            if out:
                return out
            remaining = deadline - loop.time()
            if remaining <= 0:
                return out
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

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
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        while True:
            self._changed.clear()
            pos = self._call(lambda core, now: core.position(tp))
            if pos is not None:
                return pos
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise KafkaTimeoutError(
                    f"AsyncKafkaConsumer.position: {tp} unknown after {limit} s"
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

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
        result: dict[TopicPartition, OffsetAndMetadata] = await self._op(
            lambda now: self._running("commit")[0].commit(offsets, now=now)
        )
        return result

    def commit_async(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None
    ) -> asyncio.Future[Any]:
        """Start a commit now; await the returned future (or don't) for its outcome."""
        core, _ = self._running("commit_async")
        return self._issue(lambda now: core.commit(offsets, now=now))

    async def committed(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        tps = [TopicPartition(*tp) for tp in partitions]
        result: dict[TopicPartition, OffsetAndMetadata | None] = await self._op(
            lambda now: self._running("committed")[0].committed(tps, now=now)
        )
        return result

    async def end_offsets(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        tps = [TopicPartition(*tp) for tp in partitions]
        result: dict[TopicPartition, int | None] = await self._op(
            lambda now: self._running("end_offsets")[0].end_offsets(tps, now=now)
        )
        return result

    async def beginning_offsets(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        tps = [TopicPartition(*tp) for tp in partitions]
        result: dict[TopicPartition, int | None] = await self._op(
            lambda now: self._running("beginning_offsets")[0].beginning_offsets(tps, now=now)
        )
        return result

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, tuple[int, int] | None]:
        query = {TopicPartition(*tp): ts for tp, ts in timestamps.items()}
        result: dict[TopicPartition, tuple[int, int] | None] = await self._op(
            lambda now: self._running("offsets_for_times")[0].offsets_for_times(query, now=now)
        )
        return result

    def run_on_loop(self, fn: Callable[[ConsumerCore], T]) -> T:
        return self._call(lambda core, now: fn(core))

    # -- plumbing -------------------------------------------------------------------
    def _ack(self, token: int) -> None:
        self._call(lambda core, now: core.revocation_done(token, now=now))

    def _running(self, what: str) -> tuple[ConsumerCore, Bridge]:
        if self._state is ConsumerState.NEW:
            self.start()
        if self._state is ConsumerState.CLOSED:
            raise LocalProtocolError(f"AsyncKafkaConsumer.{what}: closed; make a new consumer")
        assert self._core is not None and self._bridge is not None
        return self._core, self._bridge

    def _call(self, fn: Callable[[ConsumerCore, float], T]) -> T:
        core, bridge = self._running("call")
        box: list[T] = []
        bridge.command(lambda now: box.append(fn(core, now)))
        return box[0]

    def _issue(self, fn: Callable[[float], OperationHandle]) -> asyncio.Future[Any]:
        _, bridge = self._running("call")
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def done(value: Any, error: BaseException | None) -> None:
            if fut.done():
                return
            if error is not None:
                fut.set_exception(error)
            else:
                fut.set_result(value)

        bridge.command(lambda now: self._router.expect(fn(now), done))
        return fut

    async def _op(self, fn: Callable[[float], OperationHandle]) -> Any:
        return await self._issue(fn)

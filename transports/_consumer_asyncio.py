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
import random
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any

from kafkacore.client import TopicPartition
from kafkacore.consumer import ConsumerCore, OffsetAndMetadata, Operation
from kafkacore.errors import LocalProtocolError, RequestCancelled

from ._asyncio_io import AsyncioIo
from ._bridge import Bridge
from ._consumer_async import AsyncConsumerBase, ConsumerState
from ._consumer_common import ConsumerRouter, RebalanceListener, split_options
from ._sockets import Address

__all__ = ["AsyncKafkaConsumer", "ConsumerState"]


class AsyncKafkaConsumer(AsyncConsumerBase):
    """asyncio consumer; see the module docstring. Options as ClientConfig + ConsumerConfig."""

    _NAME = "AsyncKafkaConsumer"

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
                    self._op(
                        lambda now: self._synced(core, now, core.close, autocommit=autocommit)
                    ),
                    timeout,
                )
        finally:
            self._state = ConsumerState.CLOSED
            bridge.command(lambda now: core.shutdown(now=now))
            assert self._io is not None
            self._io.abort_all()
            self._router.fail_all(RequestCancelled("AsyncKafkaConsumer closed"))
            await asyncio.sleep(0)

    def commit_async(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None
    ) -> asyncio.Future[Any]:
        """Start a commit now; await the returned future (or don't) for its outcome."""
        core, _ = self._running("commit_async")
        return self._issue(lambda now: self._synced(core, now, core.commit, offsets))

    # -- framework hooks (see transports._consumer_async) -------------------------
    def _running(self, what: str) -> tuple[ConsumerCore, Bridge]:
        if self._state is ConsumerState.NEW:
            self.start()
        if self._state is ConsumerState.CLOSED:
            raise LocalProtocolError(f"AsyncKafkaConsumer.{what}: closed; make a new consumer")
        assert self._core is not None and self._bridge is not None
        return self._core, self._bridge

    def _issue(self, fn: Callable[[float], Operation[Any]]) -> asyncio.Future[Any]:
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

    async def _op(self, fn: Callable[[float], Operation[Any]]) -> Any:
        return await self._issue(fn)

    def _loop_time(self) -> float:
        return asyncio.get_running_loop().time()

    def _clear_changed(self) -> None:
        self._changed.clear()

    async def _wait_changed(self, deadline: float) -> None:
        remaining = deadline - self._loop_time()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), remaining)

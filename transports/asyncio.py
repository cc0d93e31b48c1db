"""asyncio Kafka client: the sans-IO core on the running event loop.

Theory of operation
-------------------
:class:`AsyncKafkaClient` owns one :class:`~kafkacore.client.KafkaClientCore`
and drives it from the loop it was started on: connections are
``asyncio.Protocol`` objects (:mod:`transports._asyncio_io`), the timer is
one ``loop.call_at`` handle, and every user call issues a core command
synchronously (we are on the loop thread) and awaits an asyncio future that
the core's completion event resolves. Because commands are issued when the
coroutine starts, ``asyncio.gather(*(client.send(r) for r in reqs))``
pipelines them on the wire.

Cancelling an awaiting task cancels its request in the core. Client life
(:class:`ClientState`)::

    NEW --start()/connect()/async with--> RUNNING --close()--> CLOSED

``close()`` never waits on the network: it shuts the core down (pending
requests end with ``RequestCancelled``) and aborts every socket.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

from kafkacore.client import ClusterMetadata, KafkaClientCore, Target
from kafkacore.errors import LocalProtocolError, RequestCancelled

from ._asyncio_io import AsyncioIo
from ._bridge import Bridge
from ._common import ClientState, Parts, make_parts, resolve_target
from ._consumer_asyncio import AsyncKafkaConsumer
from ._producer_asyncio import AsyncKafkaProducer
from ._router import Router

__all__ = ["AsyncKafkaClient", "AsyncKafkaConsumer", "AsyncKafkaProducer", "ClientState"]


class AsyncKafkaClient:
    """asyncio client; see the module docstring. Options as ``ClientConfig``."""

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str] | None = "localhost:9092",
        *,
        ssl_server_hostname: str | None = None,
        rng: random.Random | None = None,
        **options: Any,
    ) -> None:
        self._parts: Parts = make_parts(
            "AsyncKafkaClient",
            bootstrap_servers,
            ssl_server_hostname=ssl_server_hostname,
            rng=rng,
            options=options,
        )
        self._ssl_server_hostname = ssl_server_hostname
        self.config = self._parts.config
        self._router = Router()
        self._state = ClientState.NEW
        self._loop: asyncio.AbstractEventLoop | None = None
        self._io: AsyncioIo | None = None
        self._core: KafkaClientCore | None = None
        self._bridge: Bridge | None = None

    # -- life -------------------------------------------------------------
    @property
    def state(self) -> ClientState:
        return self._state

    def start(self) -> None:
        """Bind to the running loop and let the core open connections (idempotent)."""
        if self._state is ClientState.CLOSED:
            raise LocalProtocolError("AsyncKafkaClient.start: client is closed; make a new one")
        if self._state is ClientState.RUNNING:
            self._check_loop("start")
            return
        loop = asyncio.get_running_loop()
        io = AsyncioIo(
            loop,
            sockets=self._parts.sockets,
            ssl_context=self._parts.ssl_context_factory(),
            ssl_server_hostname=self._ssl_server_hostname,
        )
        core = KafkaClientCore(self._parts.config, now=io.clock(), rng=self._parts.rng)
        bridge = Bridge(core, io, clock=io.clock, on_event=self._router.on_event)
        io.bridge = bridge
        self._loop, self._io, self._core, self._bridge = loop, io, core, bridge
        self._state = ClientState.RUNNING
        bridge.pump()  # the core may have asked for connections while being built

    async def connect(self) -> None:
        """Start and wait until cluster metadata arrived (bootstrap done).

        Raises ``NoBrokersAvailable`` when every bootstrap address failed.
        """
        self.start()
        fut = self._future()
        self._router.expect_bootstrap(_resolver(fut))
        await fut

    async def __aenter__(self) -> AsyncKafkaClient:
        try:
            await self.connect()
        except BaseException:
            await self.close()  # __aexit__ will not run: leave nothing open
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Cancel everything and drop every connection; does not wait on the network."""
        if self._state is ClientState.CLOSED:
            return
        old, self._state = self._state, ClientState.CLOSED
        if old is ClientState.RUNNING:
            assert self._bridge is not None and self._core is not None and self._io is not None
            core = self._core
            self._bridge.command(lambda now: core.shutdown(now=now))
            self._io.abort_all()
        self._router.fail_all(RequestCancelled("AsyncKafkaClient closed"))
        await asyncio.sleep(0)  # let aborted transports run their callbacks

    # -- requests -----------------------------------------------------------
    async def send(
        self,
        request: Any,
        *,
        node_id: int | None = None,
        target: Target | None = None,
        lane: str | None = None,
        timeout_ms: int | None = None,
    ) -> Any:
        """Send ``request`` and return its decoded response (or raise its error)."""
        dest = resolve_target("AsyncKafkaClient.send", node_id, target)
        core, bridge = self._running("send")
        fut = self._future()
        box: list[Any] = []

        def issue(now: float) -> None:
            kwargs: dict[str, Any] = {"now": now, "target": dest, "timeout_ms": timeout_ms}
            if lane is not None:
                kwargs["lane"] = lane
            handle = core.send(request, **kwargs)
            box.append(handle)
            self._router.expect_request(handle, _resolver(fut))

        bridge.command(issue)
        try:
            return await fut
        except asyncio.CancelledError:
            if box and not box[0].done and self._state is ClientState.RUNNING:
                self._router.forget(box[0])
                handle = box[0]
                bridge.command(lambda now: core.cancel(handle, now=now))
            raise

    # -- metadata -----------------------------------------------------------
    async def metadata(self, topics: Sequence[str] | None = None) -> ClusterMetadata:
        """Refresh metadata (tracking ``topics`` too) and return the live view."""
        core, bridge = self._running("metadata")
        fut = self._future()

        def issue(now: float) -> None:
            if topics:
                core.set_topics(core.topics | set(topics), now=now)
            waiter = core.request_metadata_update(now=now)
            self._router.expect_metadata(waiter, _resolver(fut))

        bridge.command(issue)
        await fut
        return core.cluster

    def cluster(self) -> ClusterMetadata:
        """The core's live cluster metadata (same thread: no copy needed)."""
        core, _ = self._running("cluster")
        return core.cluster

    def run_on_loop(self, fn: Callable[[KafkaClientCore], Any]) -> Any:
        """Call ``fn(core)`` and pump the core afterwards (for queries and commands)."""
        core, bridge = self._running("run_on_loop")
        box: list[Any] = []
        bridge.command(lambda now: box.append(fn(core)))
        return box[0]

    # -- plumbing -------------------------------------------------------------
    def _running(self, what: str) -> tuple[KafkaClientCore, Bridge]:
        if self._state is ClientState.NEW:
            self.start()
        if self._state is ClientState.CLOSED:
            raise LocalProtocolError(f"AsyncKafkaClient.{what}: client is closed; make a new one")
        self._check_loop(what)
        assert self._core is not None and self._bridge is not None
        return self._core, self._bridge

    def _check_loop(self, what: str) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not self._loop:
            raise LocalProtocolError(
                f"AsyncKafkaClient.{what}: called outside the event loop the client started "
                "on; use one client per loop"
            )

    def _future(self) -> asyncio.Future[Any]:
        loop = self._loop if self._loop is not None else asyncio.get_running_loop()
        return loop.create_future()


def _resolver(fut: asyncio.Future[Any]) -> Callable[[Any, BaseException | None], None]:
    def done(value: Any, error: BaseException | None) -> None:
        if fut.done():
            return
        if error is not None:
            fut.set_exception(error)
        else:
            fut.set_result(value)

    return done

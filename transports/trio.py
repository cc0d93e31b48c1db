"""trio Kafka client: the sans-IO core driven by tasks in the client's nursery.

Theory of operation
-------------------
:class:`TrioKafkaClient` is used as ``async with TrioKafkaClient(...) as c``:
entering opens a nursery holding the timer task and one task per broker
connection (:mod:`transports._trio_io`). Everything runs in trio's single
thread, so user calls issue core commands directly and wait on a
:class:`~transports._trio_io.TrioSlot` (a ``trio.Event`` plus the outcome) that the core's
completion event fills. Several tasks calling ``send`` at once pipeline
their requests on the wire.

Cancelling a waiting task (a cancel scope, a timeout) cancels its request
in the core. Client life (:class:`ClientState`)::

    NEW --async with--> RUNNING --close()/exit--> CLOSED

Leaving the block (or ``close()``) is bounded: the core is shut down
(pending requests end with ``RequestCancelled``), and the timer and every
connection task are cancelled through their own scopes, which closes every
socket without waiting for the peer. The nursery's own scope is never
cancelled: it encloses the user's ``async with`` body.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

import trio

from kafkacore.client import ClusterMetadata, KafkaClientCore, Target
from kafkacore.errors import LocalProtocolError, RequestCancelled

from ._bridge import Bridge
from ._common import ClientState, Parts, make_parts, resolve_target
from ._consumer_trio import TrioKafkaConsumer
from ._producer_trio import TrioKafkaProducer
from ._router import Router
from ._trio_io import TrioIo, TrioSlot

__all__ = ["ClientState", "TrioKafkaClient", "TrioKafkaConsumer", "TrioKafkaProducer"]


class TrioKafkaClient:
    """trio client; see the module docstring. Options as ``ClientConfig``."""

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str] | None = "localhost:9092",
        *,
        ssl_server_hostname: str | None = None,
        rng: random.Random | None = None,
        **options: Any,
    ) -> None:
        self._parts: Parts = make_parts(
            "TrioKafkaClient",
            bootstrap_servers,
            ssl_server_hostname=ssl_server_hostname,
            rng=rng,
            options=options,
        )
        self._ssl_server_hostname = ssl_server_hostname
        self.config = self._parts.config
        self._router = Router()
        self._state = ClientState.NEW
        self._nursery_cm: Any = None
        self._nursery: trio.Nursery | None = None
        self._io: TrioIo | None = None
        self._core: KafkaClientCore | None = None
        self._bridge: Bridge | None = None

    # -- life -------------------------------------------------------------
    @property
    def state(self) -> ClientState:
        return self._state

    async def __aenter__(self) -> TrioKafkaClient:
        if self._state is not ClientState.NEW:
            raise LocalProtocolError(
                f"TrioKafkaClient: cannot enter a client that is {self._state.value}; "
                "make a new one"
            )
        self._nursery_cm = trio.open_nursery()
        nursery = await self._nursery_cm.__aenter__()
        try:
            io = TrioIo(
                nursery,
                sockets=self._parts.sockets,
                ssl_context=self._parts.ssl_context_factory(),
                ssl_server_hostname=self._ssl_server_hostname,
            )
            core = KafkaClientCore(self._parts.config, now=io.clock(), rng=self._parts.rng)
            bridge = Bridge(core, io, clock=io.clock, on_event=self._router.on_event)
            io.bridge = bridge
            self._nursery, self._io, self._core, self._bridge = nursery, io, core, bridge
            self._state = ClientState.RUNNING
            nursery.start_soon(io.run_timer)
            bridge.pump()  # the core may have asked for connections while being built
            await self.connect()
        except BaseException:
            # Leave the nursery cleanly and raise the error itself, not a
            # group wrapping it: a failed bootstrap is one plain error.
            self._shutdown()
            await self._nursery_cm.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        self._shutdown()
        # The block's own exception propagates unwrapped; the nursery only
        # holds our connection and timer tasks, which _shutdown cancelled.
        await self._nursery_cm.__aexit__(None, None, None)
        return False

    async def connect(self) -> None:
        """Wait until cluster metadata arrived (``async with`` already does this).

        Raises ``NoBrokersAvailable`` when every bootstrap address failed.
        """
        self._running("connect")
        slot = TrioSlot()
        self._router.expect_bootstrap(slot.done)
        await slot.wait()

    async def close(self) -> None:
        """Cancel everything and close every connection; the ``async with`` block may go on."""
        self._shutdown()
        await trio.lowlevel.checkpoint()

    def _shutdown(self) -> None:
        if self._state is ClientState.CLOSED:
            return
        old, self._state = self._state, ClientState.CLOSED
        if old is ClientState.RUNNING:
            assert self._bridge is not None and self._core is not None
            assert self._io is not None and self._nursery is not None
            core = self._core
            self._bridge.command(lambda now: core.shutdown(now=now))
            self._io.abort_all()
        self._router.fail_all(RequestCancelled("TrioKafkaClient closed"))

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
        dest = resolve_target("TrioKafkaClient.send", node_id, target)
        core, bridge = self._running("send")
        slot = TrioSlot()
        box: list[Any] = []

        def issue(now: float) -> None:
            kwargs: dict[str, Any] = {"now": now, "target": dest, "timeout_ms": timeout_ms}
            if lane is not None:
                kwargs["lane"] = lane
            handle = core.send(request, **kwargs)
            box.append(handle)
            self._router.expect_request(handle, slot.done)

        bridge.command(issue)
        try:
            return await slot.wait()
        except trio.Cancelled:
            if box and not box[0].done and self._state is ClientState.RUNNING:
                self._router.forget(box[0])
                handle = box[0]
                bridge.command(lambda now: core.cancel(handle, now=now))
            raise

    # -- metadata -----------------------------------------------------------
    async def metadata(self, topics: Sequence[str] | None = None) -> ClusterMetadata:
        """Refresh metadata (tracking ``topics`` too) and return the live view."""
        core, bridge = self._running("metadata")
        slot = TrioSlot()

        def issue(now: float) -> None:
            if topics:
                core.set_topics(core.topics | set(topics), now=now)
            waiter = core.request_metadata_update(now=now)
            self._router.expect_metadata(waiter, slot.done)

        bridge.command(issue)
        await slot.wait()
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

    def inspect_core(self, fn: Callable[[KafkaClientCore], Any]) -> Any:
        """Call ``fn(core)`` in any state after entry, closed included (diagnostics)."""
        if self._core is None:
            raise LocalProtocolError("TrioKafkaClient.inspect_core: client was never entered")
        return fn(self._core)

    # -- plumbing -------------------------------------------------------------
    def _running(self, what: str) -> tuple[KafkaClientCore, Bridge]:
        if self._state is not ClientState.RUNNING:
            hint = (
                "use 'async with TrioKafkaClient(...)'"
                if self._state is ClientState.NEW
                else "make a new one"
            )
            raise LocalProtocolError(
                f"TrioKafkaClient.{what}: client is {self._state.value}; {hint}"
            )
        assert self._core is not None and self._bridge is not None
        return self._core, self._bridge

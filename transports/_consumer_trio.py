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
import random
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any

import trio

from kafkacore.client import TopicPartition
from kafkacore.consumer import ConsumerCore, OffsetAndMetadata, Operation
from kafkacore.errors import LocalProtocolError, RequestCancelled

from ._bridge import Bridge
from ._consumer_async import AsyncConsumerBase, ConsumerState
from ._consumer_common import ConsumerRouter, RebalanceListener, split_options
from ._sockets import Address
from ._trio_io import TrioIo, TrioSlot

__all__ = ["ConsumerState", "TrioKafkaConsumer"]


class TrioKafkaConsumer(AsyncConsumerBase):
    """trio consumer; see the module docstring. Options as ClientConfig + ConsumerConfig."""

    _NAME = "TrioKafkaConsumer"

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
                await self._op(
                    lambda now: self._synced(core, now, core.close, autocommit=autocommit)
                )
        self._state = ConsumerState.CLOSED
        bridge.command(lambda now: core.shutdown(now=now))
        assert self._io is not None
        self._io.abort_all()
        self._router.fail_all(RequestCancelled("TrioKafkaConsumer closed"))
        await trio.lowlevel.checkpoint()

    def commit_async(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None
    ) -> None:
        """Start a commit and return at once (its outcome is not reported)."""
        core, bridge = self._running("commit_async")
        bridge.command(lambda now: self._synced(core, now, core.commit, offsets))

    # -- framework hooks (see transports._consumer_async) -------------------------
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

    async def _op(self, fn: Callable[[float], Operation[Any]]) -> Any:
        _, bridge = self._running("call")
        slot = TrioSlot()
        bridge.command(lambda now: self._router.expect(fn(now), slot.done))
        return await slot.wait()

    def _loop_time(self) -> float:
        return trio.current_time()

    def _clear_changed(self) -> None:
        if self._changed.is_set():
            self._changed = trio.Event()

    async def _wait_changed(self, deadline: float) -> None:
        with trio.move_on_at(deadline):
            await self._changed.wait()

    async def _checkpoint(self) -> None:
        await trio.lowlevel.checkpoint()

"""What the asyncio and trio drivers share: one core driven from the loop's own thread.

Theory of operation
-------------------
An event loop runs user code and I/O on one thread, so a user call reaches
the core directly: :meth:`AsyncDriver.call` runs ``fn(now)`` as a core
command through the :class:`~kafkacore.transports._bridge.Bridge` and returns its
value. What differs between asyncio and trio is small, and each driver
supplies it (:mod:`kafkacore.transports._asyncio_driver`,
:mod:`kafkacore.transports._trio_driver`):

- how the I/O backend is bound (the running loop; a nursery) and started;
- the clock, and a one-shot :class:`Waiter` that a core completion fills
  and user code awaits (:meth:`wait`, bounded by a timeout);
- the "the core reported something" signal that waiting loops sleep on
  (:meth:`notify` from the core's events, :meth:`wait_change` in user
  code), so ``poll`` and ``position`` never spin;
- scheduling (``call_soon``), giving the loop a turn (``yield_``), trio's
  rule that every async call is a checkpoint (``checkpoint``), and how
  every connection is dropped at once (``abort``).

Life: NEW --attach(core)--> RUNNING; ``await farewell(timeout)`` lets the
client core send its last words (KIP-714's terminating push,
:mod:`kafkacore.transports._lifecycle`) while the loop goes on serving its I/O;
``abort`` then ends every connection and the timer; the user-facing class
keeps its own state on top. ``attach`` measures the clock's offset to Unix
time (telemetry dates its points with it).
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Protocol, TypeVar

from kafkacore.client.events import CredentialsNeeded

from ._bridge import Bridge, DrivenCore, IoBackend
from ._common import Parts
from ._lifecycle import closer_of, farewell_ms, set_wall_clock

__all__ = ["AsyncDriver", "Waiter"]

T = TypeVar("T")
C = TypeVar("C", bound=DrivenCore)


class Waiter(Protocol):
    """A one-shot outcome owned by the event loop library."""

    def done(self) -> bool: ...

    def fill(self, value: Any, error: BaseException | None) -> None: ...

    def __await__(self) -> Generator[Any, None, Any]: ...


class ClockedIo(IoBackend, Protocol):
    bridge: Bridge | None

    def clock(self) -> float: ...


class AsyncDriver(abc.ABC):
    """One core driven from an event loop's thread; see the module docstring."""

    #: How many tasks wait in :meth:`wait_change` now.
    waiting = 0

    def __init__(self, owner: str, parts: Parts) -> None:
        self.owner = owner
        self.parts = parts
        self._bridge: Bridge | None = None

    @property
    def bridge(self) -> Bridge:
        if self._bridge is None:  # pragma: no cover - wiring bug
            raise RuntimeError(f"{self.owner}: driver not attached")
        return self._bridge

    @property
    def attached(self) -> bool:
        return self._bridge is not None

    def attach(self, build: Callable[[float], C], on_event: Callable[[object], None]) -> C:
        """Bind the I/O backend, build the core with ``build(now)`` and drive it."""
        io = self._make_io()
        core = build(io.clock())
        set_wall_clock(core, io.clock)
        bridge = _WatchedBridge(
            core, io, clock=io.clock, on_event=on_event, on_credentials=self._fulfil_credentials
        )
        io.bridge = bridge
        self._bridge = bridge
        self._started()
        bridge.pump()  # the core may have asked for connections while being built
        return core

    async def farewell(self, timeout: float | None) -> None:
        """Let the client core say its last words before the sockets close: begin
        its close and serve I/O until it has nothing more to send, at most
        ``timeout`` s (None or 0: not at all). Then the owner shuts the core
        down and calls :meth:`abort`."""
        budget_ms = farewell_ms(timeout)
        bridge = self._bridge
        closer = None if bridge is None or not budget_ms else closer_of(bridge.core)
        if bridge is None or closer is None:
            return
        assert isinstance(bridge, _WatchedBridge)
        deadline = self.clock() + budget_ms / 1000
        self.call(lambda now: closer.begin_close(now=now, timeout_ms=budget_ms))
        # Every fact the loop feeds (the push's answer, the close deadline's
        # timer) may be the one that ends it: wake the wait below after each.
        bridge.watch = self.notify
        try:
            while not closer.closing_done and self.clock() < deadline:
                await self.wait_change(lambda: closer.closing_done, deadline)
        finally:
            bridge.watch = None

    def call(self, fn: Callable[[float], T]) -> T:
        """Run ``fn(now)`` as a core command, pump the core, return the value."""
        box: list[T] = []
        self.bridge.command(lambda now: box.append(fn(now)))
        return box[0]

    # -- what each event loop library supplies ---------------------------
    @abc.abstractmethod
    def _fulfil_credentials(self, event: CredentialsNeeded) -> None:
        """Run the event's call off the loop; answer through ``bridge.answer_credentials``."""

    @abc.abstractmethod
    def _make_io(self) -> ClockedIo: ...

    def _started(self) -> None:
        """After the core exists: start what the backend runs beside it."""
        return None

    @abc.abstractmethod
    def clock(self) -> float: ...

    @abc.abstractmethod
    def waiter(self) -> Waiter: ...

    @abc.abstractmethod
    async def wait(
        self, waiter: Waiter, timeout: float | None, what: str, *, shared: bool = False
    ) -> Any:
        """Await ``waiter``'s value (or error); KafkaTimeoutError naming ``what``
        after ``timeout`` s (None: no bound). A ``shared`` waiter (others
        await it too) stays pending after a timeout; else it may be dropped."""

    @abc.abstractmethod
    def notify(self) -> None:
        """The core reported something: wake :meth:`wait_change`."""

    @abc.abstractmethod
    async def wait_change(self, changed: Callable[[], bool], deadline: float) -> None:
        """Return when ``changed()`` or after one :meth:`notify`, or at ``deadline``."""

    @abc.abstractmethod
    def call_soon(self, fn: Callable[[], None]) -> None: ...

    @abc.abstractmethod
    def spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Run ``fn()`` as a background task of the client, cancelled by :meth:`abort`
        (aiokafka's consumer runs its rebalance listener from such a task)."""

    @abc.abstractmethod
    async def yield_(self) -> None:
        """Give the event loop one turn."""

    async def checkpoint(self) -> None:
        """Where trio wants every async call to be a checkpoint (asyncio: nothing)."""
        return None

    @abc.abstractmethod
    def abort(self) -> None:
        """Stop the timer and drop every connection at once."""


class _WatchedBridge(Bridge):
    """A :class:`Bridge` that calls ``watch()`` after each fact or command it
    fed, while one is set (during :meth:`AsyncDriver.farewell`)."""

    __slots__ = ("watch",)

    watch: Callable[[], None] | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.watch = None

    def _feed(self, fn: Callable[..., object], args: tuple[object, ...] | None) -> None:
        Bridge._feed(self, fn, args)
        watch = self.watch
        if watch is not None:
            watch()

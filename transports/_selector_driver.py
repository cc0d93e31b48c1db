"""The selector transport's driver: one ``selectors`` loop on its own thread, any core.

Theory of operation
-------------------
A :class:`LoopThread` owns a :class:`~kafkacore.transports._selector_io.SelectorIo`,
the :class:`~kafkacore.transports._bridge.Bridge` to one core (a client, a producer
or a consumer core: anything the bridge drives) and the thread running the
loop, as the Java client's network thread. Only that thread touches the
core, so heartbeats and timeouts go on while user code works. Other
threads reach the core in two ways:

- :meth:`post` queues ``fn(now)`` as a core command and returns at once;
  its error goes to a callback;
- :meth:`call` runs ``fn(now)`` and blocks the calling thread until it has
  run, returning its value or raising its error there.

Both go through the loop's queue plus one byte on its wake-up socketpair.
Life::

    NEW --start(core)--> RUNNING --stop()--> STOPPED
                            \\--(crash: a bug)--> STOPPED, ``crashed`` set

:meth:`stop` is bounded. First the loop says goodbye
(:mod:`kafkacore.transports._lifecycle`): it tells the client core to begin
closing and goes on serving its I/O until the core has nothing more to
send (the KIP-714 terminating push answered) or ``timeout`` is up; then
it runs the owner's last command (shut the core down, fail what waits) and
ends. ``stop`` waits for the thread at most ``timeout`` plus a short grace
for that last command, then closes every socket itself either way and
runs the calls that never reached the loop (each fails with "closed").
The loop measures its clock's offset to Unix time when it starts
(telemetry dates its points with it). A loop that
crashes fails every waiter through ``on_crash`` and refuses later calls,
naming the crash, rather than letting anyone block for ever.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from kafkacore.client.events import CredentialsNeeded
from kafkacore.errors import LocalProtocolError, RequestCancelled

from ._bridge import Bridge, DrivenCore
from ._common import Parts
from ._credentials import CredentialsAnswer, fulfil_in_thread
from ._delivery import Delivery, failer
from ._lifecycle import Closer, closer_of, farewell_ms, set_wall_clock
from ._selector_io import SelectorIo

__all__ = ["CoreLock", "Delivery", "LoopThread", "failer"]

T = TypeVar("T")

_sleep = time.sleep

#: How long stop() waits, beyond its timeout, for the owner's last command
#: (local work: shut the core down, fail what waits) once the farewell ended.
LAST_COMMAND_GRACE_S = 1.0


class LoopThread:
    """One core on one selector loop thread; see the module docstring."""

    def __init__(self, owner: str, parts: Parts, *, noun: str, thread_name: str) -> None:
        self.owner = owner
        self._noun = noun  # "client", "consumer", "producer": for messages
        self.io = SelectorIo(
            sockets=parts.sockets,
            ssl_context=parts.ssl_context_factory(),
            ssl_server_hostname=parts.ssl_server_hostname,
        )
        self._thread_name = thread_name
        self._bridge: Bridge | None = None
        self._between: Callable[[], float | None] | None = None
        self._on_crash: Callable[[BaseException], None] | None = None
        self.thread: threading.Thread | None = None
        #: Set on the loop thread when it must stop (or by stop() if it never ran).
        self.stopping = False
        self.crashed: BaseException | None = None
        self._last: Callable[[], None] | None = None
        #: While the loop says goodbye: the client core and when to give up.
        self._farewell: tuple[Closer, float] | None = None
        self._changed = threading.Condition()

    def clock(self) -> float:
        return self.io.clock()

    @property
    def bridge(self) -> Bridge:
        if self._bridge is None:  # pragma: no cover - wiring bug
            raise RuntimeError(f"{self.owner}: loop not started")
        return self._bridge

    @property
    def on_loop(self) -> bool:
        """True when called from the loop thread itself."""
        return threading.current_thread() is self.thread

    def start(
        self,
        core: DrivenCore,
        on_event: Callable[[object], None],
        *,
        on_crash: Callable[[BaseException], None] | None = None,
        between_passes: Callable[[], float | None] | None = None,
        lock: CoreLock | None = None,
    ) -> None:
        """Drive ``core`` from a new loop thread.

        ``between_passes()`` runs on the loop after every pass and returns
        how long the next pass may wait for I/O (None: until something
        happens). With ``lock`` the loop holds it whenever it touches the
        core (each fact or command with its drain and the owner's event
        callbacks), so the owner may call the core from other threads under
        the same lock (the producer appends in the caller's thread); it must
        be reentrant, since an event callback may call the owner again.
        """
        bridge_type = Bridge if lock is None else _LockedBridge
        self._bridge = bridge_type(
            core,
            self.io,
            clock=self.io.clock,
            on_event=on_event,
            on_credentials=self._fulfil_credentials,
        )
        if lock is not None:
            assert isinstance(self._bridge, _LockedBridge)
            self._bridge.lock = lock
            self._bridge.wanted = False
        self.io.bridge = self._bridge
        set_wall_clock(core, self.io.clock)
        self._on_crash = on_crash
        self._between = between_passes
        self.thread = threading.Thread(target=self._run, name=self._thread_name, daemon=True)
        self.thread.start()
        # The core may have asked for connections while being built.
        self.io.call_soon_threadsafe(self._bridge.pump)

    def _fulfil_credentials(self, event: CredentialsNeeded) -> None:
        """A token provider or Kerberos step runs on a worker thread, never on
        the loop; its answer comes back through the loop's call queue."""

        def deliver(reply: CredentialsAnswer) -> None:
            self.io.call_soon_threadsafe(lambda: self.bridge.answer_credentials(reply))

        fulfil_in_thread(event, deliver)

    def _run(self) -> None:
        io = self.io
        between = self._between
        wait: float | None = None
        try:
            while not self.stopping:
                io.run_once(wait)
                if between is not None and not self.stopping:
                    wait = between()
                if self._farewell is not None and not self.stopping:
                    wait = self._farewell_wait(wait)
            # stop()'s last command runs after the pass that took it has
            # flushed its writes: what the core wrote just before (an acks=0
            # batch already reported sent) reaches the socket before the close.
            last, self._last = self._last, None
            if last is not None:
                last()
        except BaseException as exc:
            # A bug in the core or here. Nobody may wait forever on a dead
            # loop: fail every waiter with the error and refuse new calls.
            self.crashed = exc
            self.stopping = True
            if self._on_crash is not None:
                self._on_crash(exc)
            for fn in io.drain_calls():
                fn()
            io.close_all()
            raise

    # -- user calls -----------------------------------------------------------
    def refusal(self) -> BaseException | None:
        """Why a new call cannot run (crashed or stopped), or None."""
        if self.crashed is not None:
            return LocalProtocolError(
                f"{self.owner}: its loop thread died ({self.crashed!r}); close it and make a "
                f"new {self._noun}"
            )
        if self.io.closed:
            return LocalProtocolError(f"{self.owner}: closed; make a new {self._noun}")
        return None

    def post(
        self, fn: Callable[[float], object], fail: Callable[[BaseException], None] | None
    ) -> None:
        """Run ``fn(now)`` as a core command on the loop; its error goes to ``fail``.

        On the loop thread itself it runs at once. Without ``fail``, a call
        that cannot run is dropped and an error of ``fn`` (a bug) is raised
        on the loop.
        """
        refused = self.refusal()
        if refused is not None:
            if fail is not None:
                fail(refused)
            return

        def run() -> None:
            if self.stopping:
                if fail is not None:
                    fail(self.crashed or RequestCancelled(f"{self.owner} closed"))
                return
            try:
                self.bridge.command(fn)
            except Exception as exc:
                if fail is None:
                    raise
                fail(exc)

        if self.on_loop:
            run()
        else:
            self.io.call_soon_threadsafe(run)

    def call(self, fn: Callable[[float], T]) -> T:
        """Run ``fn(now)`` as a core command on the loop; block for its value or error."""
        refused = self.refusal()
        if refused is not None:
            raise refused
        if self.on_loop:
            raise LocalProtocolError(
                f"{self.owner}: called on its own loop thread; call from user code"
            )
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            if self.stopping:
                fut.set_exception(self.crashed or RequestCancelled(f"{self.owner} closed"))
                return
            box: list[T] = []
            try:
                self.bridge.command(lambda now: box.append(fn(now)))
            except BaseException as exc:  # handed to the caller's thread
                fut.set_exception(exc)
                self.bridge.pump()  # what the command queued before raising still goes out
                return
            fut.set_result(box[0])

        self.io.call_soon_threadsafe(run)
        return fut.result()

    @property
    def lock_wanted(self) -> bool:
        """The loop waits for the core lock (see :class:`_LockedBridge`)."""
        bridge = self._bridge
        return isinstance(bridge, _LockedBridge) and bridge.wanted

    def let_loop_in(self) -> None:
        """Before taking the core lock: give it to the loop first if it waits for it.

        Bounded (a few ms at most): a loop that keeps wanting the lock must
        not stall the caller for ever.
        """
        bridge = self._bridge
        if not isinstance(bridge, _LockedBridge):
            return
        for _ in range(200):
            if not bridge.wanted:
                return
            _sleep(0)  # drops the GIL: the loop thread, owning the lock by now, runs

    def notify(self) -> None:
        """On the loop, after a core event: wake the threads in :meth:`wait_change`."""
        with self._changed:
            self._changed.notify_all()

    def wait_change(self, changed: Callable[[], bool], deadline: float) -> None:
        """Block until ``changed()`` (checked after each :meth:`notify`) or ``deadline``."""
        with self._changed:
            self._changed.wait_for(changed, deadline - self.clock())

    def wake(self) -> None:
        """Interrupt the loop's wait (new work for ``between_passes``)."""
        self.io.call_soon_threadsafe(_noop)

    # -- life -------------------------------------------------------------------
    def stop(self, last: Callable[[], None] | None, timeout: float | None) -> None:
        """Say goodbye (at most ``timeout`` s), run ``last()`` on the loop, stop it, close.

        The farewell lets the client core send its last words (KIP-714's
        terminating push) before the sockets close; ``None`` or 0 skips it.
        ``last`` runs after ``stopping`` is set: it shuts the core down and
        fails what still waits. The thread is waited for at most ``timeout``
        plus :data:`LAST_COMMAND_GRACE_S`. Never call from the loop thread.
        """
        thread = self.thread
        if thread is None or self.crashed is not None:
            self.stopping = True
        else:
            budget_ms = farewell_ms(timeout)

            def final() -> None:
                self._last = last
                if not self._begin_farewell(budget_ms):
                    self.stopping = True

            self.io.call_soon_threadsafe(final)
            thread.join(None if timeout is None else max(timeout, 0.0) + LAST_COMMAND_GRACE_S)
        # Whether or not the loop finished, no socket survives stop().
        self.io.close_all()
        for fn in self.io.drain_calls():
            fn()  # never-run user calls: they fail with "closed"

    def abandon(self) -> None:
        """Its client was collected unclosed: end the loop and close every socket.
        From another thread this waits (briefly) for the loop, then closes the
        sockets itself, as :meth:`stop` does; from a garbage collection on the
        loop thread itself it only asks the loop to end, which closes them."""
        if not self.on_loop:
            self.stop(None, 0)
            return

        def end() -> None:
            self._last = self.io.close_all
            self.stopping = True

        if self.thread is None:
            self.io.close_all()
        else:
            self.io.call_soon_threadsafe(end)  # a SimpleQueue: safe from __del__

    def _begin_farewell(self, budget_ms: int) -> bool:
        """On the loop: ask the client core to begin closing; False when there is
        nothing to wait for (no budget, no client core, nothing to say)."""
        closer = closer_of(self.bridge.core) if budget_ms > 0 else None
        if closer is None:
            return False
        until = self.io.clock() + budget_ms / 1000
        self.bridge.command(lambda now: closer.begin_close(now=now, timeout_ms=budget_ms))
        if closer.closing_done:
            return False
        self._farewell = (closer, until)
        return True

    def _farewell_wait(self, wait: float | None) -> float | None:
        """After a pass while saying goodbye: stop once the core is done or the time
        is up; otherwise wait no longer than the time left."""
        assert self._farewell is not None
        closer, until = self._farewell
        left = until - self.io.clock()
        if closer.closing_done or left <= 0:
            self.stopping = True
            return None
        return left if wait is None else min(wait, left)


def _noop() -> None:
    pass


class CoreLock(Protocol):
    """A reentrant lock (``threading.RLock``)."""

    def acquire(self, blocking: bool = ..., timeout: float = ...) -> bool: ...

    def release(self) -> None: ...

    def __enter__(self) -> bool: ...

    def __exit__(self, t: Any, v: Any, tb: Any, /) -> None: ...


class _LockedBridge(Bridge):
    """A :class:`Bridge` that holds the owner's core lock while it feeds and drains.

    Python's locks are not fair: a user thread that releases the lock and
    takes it again at once (a tight ``send`` loop) wins nearly every time
    over the loop thread, which must first be scheduled and get the GIL.
    So the loop raises :attr:`wanted` while it waits for the lock, and the
    owner's threads step aside (:meth:`LoopThread.let_loop_in`) before they
    take it while the flag is up.
    """

    __slots__ = ("lock", "wanted")

    lock: CoreLock

    def _feed(self, fn: Callable[..., object], args: tuple[object, ...] | None) -> None:
        lock = self.lock
        if not lock.acquire(False):
            self.wanted = True
            lock.acquire()
        try:
            Bridge._feed(self, fn, args)
        finally:
            self.wanted = False
            lock.release()

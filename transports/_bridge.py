"""The part of "drive the core" that is the same for every transport.

Theory of operation
-------------------
After every fact (connected, data, lost, timer) and every user command the
transport calls :meth:`Bridge.pump`. It drains the core completely:
``pull_actions()`` go to the transport's :class:`IoBackend` (open, write,
close), ``pull_events()`` go to the client layer's event sink, and finally
``next_deadline()`` re-arms the transport's single timer. Draining loops
while events come, because handing an event to user callbacks may issue
new commands (a round with no event ends it: only an event's handler can
make the core act again).

Facts are fed through :meth:`Bridge.feed_*`, which stamp ``now`` from the
transport's clock and pump afterwards, so no transport can forget either.
The bridge holds no Kafka knowledge; it only routes.

Re-entrancy: a backend may report a fact synchronously while an action is
being executed (e.g. a write that finds the socket dead). Such facts are
queued and applied after the current drain step, so the core is never
entered twice at once.

Logging: the bridge attaches :class:`~kafkacore.transports._log.ClientLog` to the
client core it drives (directly, or as a producer's or consumer's
``client``), so every transport logs connection changes, retries and
errors on ``kafkacore.client`` the same way.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol

from kafkacore.client.driver import (
    Action,
    CloseConnection,
    ConnId,
    Driven,
    OpenConnection,
    WriteData,
)
from kafkacore.client.events import CredentialsNeeded

from ._credentials import CredentialsAnswer, answer
from ._log import attach_client_log
from ._tls import refused_certificate

__all__ = ["Bridge", "DrivenCore", "IoBackend"]


class DrivenCore(Driven, Protocol):
    """A :class:`Driven` core that also hands events to the user layer."""

    def pull_events(self) -> Sequence[object]: ...


class IoBackend(Protocol):
    """What a transport's I/O side does for the bridge."""

    def open(self, action: OpenConnection) -> None: ...

    def write(self, conn_id: ConnId, data: bytes | bytearray | memoryview) -> None: ...

    def close(self, conn_id: ConnId) -> None: ...

    def set_deadline(self, deadline: float | None) -> None: ...


class Bridge:
    """Feeds facts into one core and routes its outputs; see module docstring."""

    __slots__ = ("_busy", "_clock", "_core", "_io", "_on_credentials", "_on_event", "_pending")

    def __init__(
        self,
        core: DrivenCore,
        io: IoBackend,
        *,
        clock: Callable[[], float],
        on_event: Callable[[object], None],
        on_credentials: Callable[[CredentialsNeeded], None] | None = None,
    ) -> None:
        self._core = core
        self._io = io
        self._clock = clock
        self._on_event = on_event
        #: Runs a token provider or Kerberos step off the loop (the driver's
        #: idiom) and later hands the answer to :meth:`answer_credentials`.
        self._on_credentials = on_credentials
        self._busy = False
        self._pending: deque[tuple[Callable[..., object], tuple[object, ...] | None]] = deque()
        attach_client_log(core)

    @property
    def core(self) -> DrivenCore:
        return self._core

    def now(self) -> float:
        return self._clock()

    # -- facts -----------------------------------------------------------
    # A fact is the core's method and its arguments, called with ``now=``:
    # no closure per fact (one Python frame less on every read, issue 12).
    def feed_connected(self, conn_id: ConnId) -> None:
        self._feed(self._core.connection_made, (conn_id,))

    def feed_failed(self, conn_id: ConnId, error: BaseException) -> None:
        self._feed(self._core.connection_failed, (conn_id, error))

    def feed_data(self, conn_id: ConnId, data: bytes | bytearray | memoryview) -> None:
        self._feed(self._core.data_received, (conn_id, data))

    def feed_lost(self, conn_id: ConnId, error: BaseException | None) -> None:
        # A certificate the broker refused is an authentication verdict, not
        # a lost connection to retry.
        reason = refused_certificate(error) or error
        self._feed(self._core.connection_lost, (conn_id, reason))

    def feed_timeout(self) -> None:
        self._feed(self._core.handle_timeout, ())

    def command(self, fn: Callable[[float], object]) -> None:
        """Run a user command ``fn(now)`` on the core, then pump."""
        self._feed(fn, None)

    def _feed(self, fn: Callable[..., object], args: tuple[object, ...] | None) -> None:
        """Run ``fn(*args, now=now)`` (a fact) or ``fn(now)`` (``args`` None: a
        command), then drain; queued when a drain is already running."""
        self._pending.append((fn, args))
        if self._busy:
            return  # applied by the drain loop already running below us
        self._busy = True
        # A call that raises must not lose the facts queued behind it (bytes a
        # socket delivered, a connection lost): each is applied, then the
        # first error goes to the caller of the outermost feed.
        errors: list[BaseException] = []
        try:
            while self._pending:
                fn, args = self._pending.popleft()
                try:
                    if args is None:
                        fn(self._clock())
                    else:
                        fn(*args, now=self._clock())
                except BaseException as exc:  # re-raised below
                    errors.append(exc)
                self._drain(errors)
        finally:
            self._busy = False
        self._io.set_deadline(self._core.next_deadline())
        if errors:
            raise errors[0]

    def answer_credentials(self, reply: CredentialsAnswer) -> None:
        """Give the core the outcome of a ``CredentialsNeeded`` call (on the loop)."""
        self._feed(lambda now: answer(self._core, reply, now=now), None)  # type: ignore[arg-type]

    def pump(self) -> None:
        """Drain the core without feeding anything (after a direct call)."""
        self._feed(lambda now: None, None)

    def _drain(self, errors: list[BaseException]) -> None:
        """Carry out the core's actions and hand its events on; an event handler
        that raises (user code) is recorded in ``errors`` and the events after
        it are still handed on."""
        core = self._core
        io = self._io
        while True:
            actions: list[Action] = core.pull_actions()
            for action in actions:
                if isinstance(action, WriteData):
                    io.write(action.conn_id, action.data)
                elif isinstance(action, OpenConnection):
                    io.open(action)
                elif isinstance(action, CloseConnection):
                    io.close(action.conn_id)
                else:  # pragma: no cover - the Action union is closed
                    raise TypeError(f"Bridge: unknown core action {action!r}")
            events = core.pull_events()
            if not events:
                # Only an event's handler (user code, a router) can have made
                # the core act again; a fact an action reported is queued in
                # _pending and fed by _feed's loop. Nothing to look at twice.
                return
            for event in events:
                try:
                    if self._on_credentials is not None and isinstance(event, CredentialsNeeded):
                        self._on_credentials(event)
                    else:
                        self._on_event(event)
                except BaseException as exc:  # re-raised by _feed
                    errors.append(exc)

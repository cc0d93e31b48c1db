"""The one way a machine stacks on the client core (docs/stacking.md).

The producer and the consumer are sans-IO machines built on a
:class:`~kafkacore.client.core.KafkaClientCore`. :class:`StackedMachine`
is their shared base and the whole stacking contract in code:

- A transport fact goes to the client core first, then the stacked machine
  runs **one** step (:meth:`StackedMachine._step`). A step never runs a
  second step inside itself: a fact arriving while a step runs (a command
  issued from a response callback, say) only queues work for the running
  loop.
- The loop alternates between stepping the client when a command left
  it work (:meth:`KafkaClientCore.step`: sending runs no client step, so a
  request sent from inside this step leaves with the client's step in
  the next round, never by a client step nested in ours; one nobody waits
  ahead of is already encoded into its connection at ``send``), draining the
  client core's events (a completed request goes to the callback
  registered when it was sent; anything else to :meth:`_on_client_event`)
  and the machine's own work (:meth:`_work`), until none moves. It runs at most
  :data:`MAX_STEP_ROUNDS` rounds; work left after that is continued by a
  deadline due at once, so one busy step cannot starve the transport's
  loop and nothing is forgotten.
- Time arrives as ``now`` on every call and is passed down; nothing here
  keeps a copy of it.
- The machine's timers live in one :class:`~kafkacore.timers.Deadlines`
  (:attr:`deadlines`); :meth:`handle_timeout` hands each due key to
  :meth:`_on_deadline`, and :meth:`next_deadline` is the earliest of the
  client's, the machine's and its sub-machines' (:meth:`_sub_deadlines`).
- Requests go out through :meth:`_request`, which returns the typed
  :class:`~kafkacore.client.handles.RequestHandle` and remembers the
  callback; ``build=`` lets a request be filled for the version negotiated
  on the connection that carries it.
- The seam is typed by the request (issue 23): a generated request class is
  a ``Request[R]`` naming its response class ``R``, and the callback given
  with it is an :data:`OnAnswer` ``[R]``, called with the :data:`Answer`
  ``[R]`` and the time. An answer is the decoded response or the error the
  request failed with, one value (never a pair), so a handler narrows it with
  ``isinstance(answer, BaseException)`` and then reads a response a type
  checker knows. The one request without a response, a Produce with
  ``acks=0``, is answered ``None``; the producer's callback takes that too.
  Both names live in :mod:`kafkacore.client.handles`, below the client
  core, whose own requests (Metadata, FindCoordinator, telemetry) finish
  through the dispatcher with the same shape.
  :class:`Send` is that shape as a protocol: every machine that sends (group
  and share members, the consumer's and producer's parts, the admin commands)
  is handed one, :meth:`_request` itself or a wrapper of it, or a fake.
- A ``CredentialsNeeded`` event of the client (a token provider or a
  Kerberos step the transport must run off its loop) passes straight
  through to the transport, which answers with :meth:`credentials_ready`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast

from kafkacore.client.core import DEFAULT_LANE, KafkaClientCore
from kafkacore.client.driver import Action, ConnId
from kafkacore.client.events import CredentialsNeeded, RequestCompleted
from kafkacore.client.handles import Answer, OnAnswer, RequestHandle
from kafkacore.client.routing import Target
from kafkacore.protocol._base import Request, Response
from kafkacore.timers import Deadlines

__all__ = ["MAX_STEP_ROUNDS", "Answer", "OnAnswer", "Send", "StackedMachine"]

#: Rounds of (drain client events, do own work) in one step. Enough for a
#: response to trigger follow-up requests several levels deep; a step that
#: still has work continues at once through the ``"continue"`` deadline.
MAX_STEP_ROUNDS = 64

#: The response class of a request (``HeartbeatRequest`` is a
#: ``Request[HeartbeatResponse]``).
R = TypeVar("R", bound=Response)


class Send(Protocol):
    """How a machine sends: :meth:`StackedMachine._request`'s shape.

    ``on_done`` runs inside a later step with the :data:`Answer` (response
    or error) and the time. ``build``, when given, makes the message for the
    version negotiated on the connection that carries it (``request`` then
    only names the API).
    """

    def __call__(
        self,
        request: Request[R],
        on_done: OnAnswer[R],
        *,
        now: float,
        target: Target | None = None,
        lane: str = DEFAULT_LANE,
        timeout_ms: int | None = None,
        max_version: int | None = None,
        build: Callable[[int], Request[R]] | None = None,
    ) -> RequestHandle[R]: ...


_CONTINUE = "continue"

#: The closed union of events a stacked machine emits.
E = TypeVar("E")


class StackedMachine(Generic[E]):
    """Base of a sans-IO machine driven through a client core.

    ``E`` is the machine's closed event union and :attr:`EVENT_TYPES` its
    classes: :meth:`_emit` refuses anything else, so ``pull_events()`` is
    exactly ``list[E]``.
    """

    EVENT_TYPES: ClassVar[tuple[type, ...]] = ()

    def __init__(self, client: KafkaClientCore) -> None:
        self.client = client
        #: The client's actions are ours: the driver takes them straight from
        #: its sink (no delegating frame on every write, issue 11).
        self.pull_actions: Callable[[], list[Action]] = client.pull_actions
        # Our loop steps the client: its commands (a request sent from our
        # step) only queue work, so no client step runs nested in ours.
        client.set_stacked()
        self.deadlines: Deadlines[Hashable] = Deadlines()
        # Callbacks of every response type, by handle id: the one place the
        # seam's type is erased (each was checked against its request by _request).
        self._responses: dict[int, OnAnswer[Any]] = {}
        self._out: list[object] = []
        self._stepping = False
        #: While a request's callback runs: the broker that answered it (its
        #: errors name that node, ``BrokerError.node_id``); None otherwise.
        self.answered_by: int | None = None

    # ------------------------------------------------- hooks for subclasses
    def _on_client_event(self, event: object, now: float) -> None:
        """A client event that is not the completion of one of our requests."""

    def _work(self, now: float) -> bool:
        """Do what the machine can do now; True if it did anything."""
        return False

    def _on_deadline(self, key: Hashable, now: float) -> None:
        """``key`` in :attr:`deadlines` came due."""

    def _sub_deadlines(self) -> Iterable[float | None]:
        """Deadlines of machines this one drives besides the client (group members)."""
        return ()

    def _on_answer(self, error: BaseException | None, now: float) -> None:
        """One of our requests completed (``error`` None: answered), before its
        callback runs: a hook for bookkeeping on every answer (the consumer
        notes which brokers answer). It gets no response, so it is not one
        more hop on the way of the data."""

    def _stopped(self) -> bool:
        """True once the machine does no more work (closed)."""
        return False

    # ---------------------------------------------------- driver contract
    def connection_made(self, conn_id: ConnId, *, now: float) -> None:
        self.client.connection_made(conn_id, now=now)
        self._step(now)

    def connection_failed(self, conn_id: ConnId, error: BaseException, *, now: float) -> None:
        self.client.connection_failed(conn_id, error, now=now)
        self._step(now)

    def data_received(
        self, conn_id: ConnId, data: bytes | bytearray | memoryview, *, now: float
    ) -> None:
        self.client.data_received(conn_id, data, now=now)
        self._step(now)

    def connection_lost(self, conn_id: ConnId, error: BaseException | None, *, now: float) -> None:
        self.client.connection_lost(conn_id, error, now=now)
        self._step(now)

    def handle_timeout(self, *, now: float) -> None:
        self.client.handle_timeout(now=now)
        for key in self.deadlines.pop_due(now):
            if key != _CONTINUE:
                self._on_deadline(key, now)
        self._step(now)

    def next_deadline(self) -> float | None:
        found = [t for t in (self.client.next_deadline(), self.deadlines.next()) if t is not None]
        found.extend(t for t in self._sub_deadlines() if t is not None)
        return min(found) if found else None

    def pull_events(self) -> list[E]:
        out, self._out = self._out, []
        # Every item passed _emit's check against EVENT_TYPES (the union E).
        return cast(list[E], out)

    def credentials_ready(
        self,
        request_id: int,
        result: Any = None,
        *,
        error: BaseException | None = None,
        now: float,
    ) -> bool:
        """Answer a passed-through ``CredentialsNeeded`` (see the client core's method)."""
        answered = self.client.credentials_ready(request_id, result, error=error, now=now)
        self._step(now)
        return answered

    # ------------------------------------------------------------ helpers
    def _emit(self, event: object) -> None:
        """Queue an event for the transport (``pull_events``)."""
        if not isinstance(event, self.EVENT_TYPES):
            # A machine emitting outside its declared union is a bug here.
            raise AssertionError(
                f"{type(self).__name__} emitted {type(event).__name__}, "
                f"not one of its events {[t.__name__ for t in self.EVENT_TYPES]}"
            )
        self._out.append(event)

    def _request(
        self,
        request: Request[R],
        on_done: OnAnswer[R],
        *,
        now: float,
        target: Target | None = None,
        lane: str = DEFAULT_LANE,
        timeout_ms: int | None = None,
        max_version: int | None = None,
        build: Callable[[int], Request[R]] | None = None,
    ) -> RequestHandle[R]:
        """Send ``request`` through the client; ``on_done`` runs inside a later
        step with its :data:`Answer` (a :class:`Send`)."""
        handle = self.client.send(
            request,
            now=now,
            target=target,
            lane=lane,
            timeout_ms=timeout_ms,
            max_version=max_version,
            build=build,
        )
        self._responses[handle.id] = on_done
        return handle

    def _forget(self, handle: RequestHandle[R]) -> None:
        """Drop the callback of ``handle`` (its answer, if any, is then ignored)."""
        self._responses.pop(handle.id, None)

    # --------------------------------------------------------------- step
    def _step(self, now: float) -> None:
        if self._stepping:
            return  # the running loop sees whatever the caller queued
        self._stepping = True
        client = self.client
        try:
            for _ in range(MAX_STEP_ROUNDS):
                # The client's step, when our commands or callbacks queued
                # work for it (requests to write, metadata to ask for).
                client.step(now=now)
                events = client.pull_events()
                for event in events:
                    if isinstance(event, RequestCompleted):
                        callback = self._responses.pop(event.handle.id, None)
                        if callback is not None:
                            self.answered_by = event.handle.node_id
                            error = event.error
                            try:
                                self._on_answer(error, now)
                                callback(event.response if error is None else error, now)
                            finally:
                                self.answered_by = None
                            continue
                    elif isinstance(event, CredentialsNeeded):
                        self._emit(event)
                        continue
                    self._on_client_event(event, now)
                worked = False if self._stopped() else self._work(now)
                if not events and not worked and not client.step_due:
                    self.deadlines.cancel(_CONTINUE)
                    break
            else:
                self.deadlines.set(_CONTINUE, now)
        finally:
            self._stepping = False

"""Routes the consumer core's events to the user side, for every consumer.

Theory of operation
-------------------
:class:`ConsumerRouter` receives every event the bridge drains from the
:class:`~kafkacore.consumer.ConsumerCore`: an ``OperationCompleted``
resolves the completion registered for its handle; assignment changes and
truncation notices are queued for the user's rebalance listener, which the
consumer calls from ``poll`` (in the user's thread or task, as Java does);
every event bumps ``seq`` and calls ``wake`` so a waiting ``poll`` looks
again. What the user should hear about without an exception (followed topics
that do not exist, a cluster no broker of which answers) is logged as a
warning on the ``kafkacore.consumer`` logger. Kafka logic stays in the core.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kafkacore.consumer import (
    OperationCompleted,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    PartitionsRevoking,
    TruncationDetected,
)
from kafkacore.consumer.events import BrokersUnreachable, TopicsNotFound

from ._router import Completion

__all__ = ["ConsumerRouter", "ListenerCall", "RebalanceListener"]

log = logging.getLogger("kafkacore.consumer")
log.addHandler(
    logging.NullHandler()
)  # a library stays quiet until the application configures logging


class RebalanceListener(Protocol):
    """Called with the partitions that changed hands: from ``poll`` on the
    blocking consumer; from a task of their own on the async ones, whose
    methods may be coroutine functions (aiokafka's). ``on_partitions_lost``
    is optional (revoked stands in for it)."""

    def on_partitions_assigned(self, partitions: frozenset[Any]) -> Any: ...

    def on_partitions_revoked(self, partitions: frozenset[Any]) -> Any: ...


@dataclass(frozen=True, slots=True)
class ListenerCall:
    """One call of the user's rebalance listener; ``token``: the revocation to
    acknowledge once it ran (None: nothing waits for it)."""

    method: Callable[[frozenset[Any]], Any] | None
    partitions: frozenset[Any]
    token: int | None = None


class ConsumerRouter:
    """Routes consumer-core events; see the module docstring."""

    __slots__ = ("_announced", "_ops", "changed", "notices", "removed", "seq", "wake")

    def __init__(self, wake: Callable[[], None] = lambda: None) -> None:
        self._ops: dict[object, Completion] = {}
        self.notices: deque[object] = deque(maxlen=10000)
        #: Partitions the core took away (revoked, lost, truncated), for the
        #: iterator's batch; appended on the loop, drained by the iterator.
        self.removed: deque[frozenset[Any]] = deque(maxlen=10000)
        #: Set (after the append) whenever ``notices`` or ``removed`` grows:
        #: the one flag the iterator reads per record. The reader clears it
        #: before draining both, so nothing appended meanwhile goes unseen.
        self.changed = False
        self.seq = 0
        self.wake = wake
        self._announced: set[object] = set()

    def expect(self, handle: object, done: Completion) -> None:
        if getattr(handle, "done", False):
            done(getattr(handle, "value", None), getattr(handle, "error", None))
            return
        self._ops[handle] = done

    def fail_all(self, error: BaseException) -> None:
        ops, self._ops = self._ops, {}
        for done in ops.values():
            done(None, error)

    def on_event(self, event: object) -> None:
        if isinstance(event, OperationCompleted):
            done = self._ops.pop(event.handle, None)
            if done is not None:
                done(event.handle.value, event.handle.error)
        elif isinstance(
            event,
            PartitionsAssigned
            | PartitionsRevoked
            | PartitionsRevoking
            | PartitionsLost
            | TruncationDetected,
        ):
            self.notices.append(event)
            if isinstance(event, PartitionsRevoked | PartitionsLost):
                self.removed.append(event.partitions)
            elif isinstance(event, TruncationDetected):
                self.removed.append(frozenset({event.partition}))
            self.changed = True
        elif isinstance(event, TopicsNotFound):
            log.warning(
                "topics %s do not exist (UNKNOWN_TOPIC_OR_PARTITION); waiting for them "
                "to be created",
                sorted(event.topics),
            )
        elif isinstance(event, BrokersUnreachable):
            log.warning("%s", event.error)
        self.seq += 1
        self.wake()

    def next_call(self, listener: RebalanceListener | None) -> ListenerCall | None:
        """The next listener call the queued notices ask for; None when none is left.

        A ``PartitionsRevoking`` is answered with its ``token`` once the call
        ran (:meth:`dispatch`, or an async consumer awaiting the call), so the
        core lets the partitions go only then; the ``PartitionsRevoked`` that
        follows is not announced twice. A listener without
        ``on_partitions_lost`` (aiokafka's has none) hears lost partitions as
        revoked, as Java's default ``onPartitionsLost`` does.
        """
        while self.notices:
            event = self.notices.popleft()
            if isinstance(event, PartitionsRevoking):
                if listener is None:
                    return ListenerCall(None, event.partitions, event.token)
                self._announced.update(event.partitions)
                return ListenerCall(listener.on_partitions_revoked, event.partitions, event.token)
            if listener is None:
                continue
            if isinstance(event, PartitionsAssigned):
                return ListenerCall(listener.on_partitions_assigned, event.partitions)
            if isinstance(event, PartitionsRevoked):
                fresh = frozenset(p for p in event.partitions if p not in self._announced)
                self._announced.difference_update(event.partitions)
                if fresh:
                    return ListenerCall(listener.on_partitions_revoked, fresh)
            elif isinstance(event, PartitionsLost):
                lost = getattr(listener, "on_partitions_lost", listener.on_partitions_revoked)
                return ListenerCall(lost, event.partitions)
        return None

    def dispatch(
        self, listener: RebalanceListener | None, ack: Callable[[int], None] | None = None
    ) -> None:
        """Make the queued listener calls (from the user's thread, as Java does)."""
        while (call := self.next_call(listener)) is not None:
            try:
                if call.method is not None:
                    call.method(call.partitions)
            finally:
                if call.token is not None and ack is not None:
                    ack(call.token)

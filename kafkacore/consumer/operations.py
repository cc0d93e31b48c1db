"""The consumer's pending operations, their retries and their timers.

Theory of operation
-------------------
A command that completes later (commit, committed, an offset lookup,
close) gets an :class:`~kafkacore.operation.Operation` from
:meth:`OperationTable.new`. :meth:`OperationTable.complete` sets its
outcome exactly once and emits
:class:`~kafkacore.operation.OperationCompleted`; an *internal* operation
(the commit made before a revocation, by auto-commit, before leaving) is
not the user's, so it runs the continuations registered with
:meth:`OperationTable.then` instead of emitting.

Retries: :meth:`OperationTable.retry_or_fail` runs ``again`` after
``retry_backoff_ms`` (at once with ``immediate``) unless that would pass
the operation's deadline, in which case ``fail`` gets the error, made to
name the failure behind it (:meth:`CauseTracker.explain
<kafkacore.consumer.causes.CauseTracker.explain>`), or ``NoBrokersAvailable``
naming each bootstrap server's last error when no broker was ever reached.
An authentication failure fails at once: the same credentials get the same
answer. A cluster not reached yet is retried until the deadline (issue 26:
a broker started a moment after its consumer must be used).

Timers: a callback due at a time (:meth:`OperationTable.later`) is a
:class:`Later` key in the owner's deadlines; the owner hands due keys back
through :meth:`OperationTable.on_deadline`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from kafkacore.client.pool import unreachable_within
from kafkacore.consumer.causes import CauseTracker, ReachClient
from kafkacore.errors import (
    AuthenticationError,
    KafkaTimeoutError,
    LocalProtocolError,
    NoBrokersAvailable,
)
from kafkacore.operation import Operation, OperationCompleted
from kafkacore.timers import Deadlines

__all__ = ["Later", "OperationTable"]

Then = Callable[[float], None]


@dataclass(frozen=True, slots=True)
class Later:
    """Deadline key of a callback scheduled with :meth:`OperationTable.later`."""

    seq: int


class OperationTable:
    """Pending operations and scheduled callbacks; see the module docstring."""

    def __init__(
        self,
        *,
        client: ReachClient,
        causes: CauseTracker,
        deadlines: Deadlines[Hashable],
        emit: Callable[[object], None],
        retry_backoff_ms: int,
        api_timeout_ms: int,
    ) -> None:
        self._client = client
        self._causes = causes
        self._deadlines = deadlines
        self._emit = emit
        self._backoff = retry_backoff_ms / 1000
        self._api_timeout = api_timeout_ms / 1000
        self._next_id = 1
        #: id -> (operation, when it started, internal)
        self._pending: dict[int, tuple[Operation[Any], float, bool]] = {}
        self._then: dict[int, list[Then]] = {}
        self._later: dict[int, Then] = {}
        self._next_seq = 0

    # ----------------------------------------------------------- operations
    def new(self, kind: str, now: float, *, internal: bool = False) -> Operation[Any]:
        op: Operation[Any] = Operation(self._next_id, kind)
        self._next_id += 1
        self._pending[op.id] = (op, now, internal)
        return op

    def timeout(self, what: str, timeout_ms: int | None) -> float:
        """Seconds an operation may take: ``timeout_ms`` or ``default_api_timeout_ms``."""
        if timeout_ms is None:
            return self._api_timeout
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < 0:
            raise LocalProtocolError(f"{what}: timeout_ms {timeout_ms!r} must be an int >= 0")
        return timeout_ms / 1000

    def then(self, op: Operation[Any], fn: Then) -> None:
        """Run ``fn(now)`` when the internal ``op`` completes."""
        self._then.setdefault(op.id, []).append(fn)

    def complete(
        self, op: Operation[Any], value: Any, error: BaseException | None, now: float
    ) -> None:
        """Set ``op``'s outcome (once; later calls are ignored) and announce it."""
        if op.done:
            return
        entry = self._pending.pop(op.id, None)
        op._complete(value, error)
        if entry is not None and entry[2]:
            for fn in self._then.pop(op.id, []):
                fn(now)
            return
        self._emit(OperationCompleted(handle=op))

    def fail_pending(self, error: BaseException, now: float, *, spare: str = "close") -> None:
        """Fail every pending operation but those of kind ``spare`` with ``error``."""
        for op, _, _ in list(self._pending.values()):
            if op.kind != spare:
                self.complete(op, None, error, now)

    # --------------------------------------------------------------- timers
    def later(self, when: float, fn: Then) -> None:
        """Call ``fn(now)`` once ``when`` has come."""
        self._next_seq += 1
        self._later[self._next_seq] = fn
        self._deadlines.set(Later(self._next_seq), when)

    def on_deadline(self, key: Later, now: float) -> None:
        fn = self._later.pop(key.seq, None)
        if fn is not None:
            fn(now)

    def clear_timers(self) -> None:
        """Forget every scheduled callback (the consumer shut down)."""
        for seq in self._later:
            self._deadlines.cancel(Later(seq))
        self._later.clear()

    # -------------------------------------------------------------- retries
    def retry(
        self,
        op: Operation[Any],
        deadline: float,
        now: float,
        error: BaseException,
        again: Then,
        *,
        immediate: bool = False,
    ) -> None:
        """Retry the work of ``op`` (unless it is done by then), or fail ``op``."""
        entry = self._pending.get(op.id)
        self.retry_or_fail(
            deadline,
            now,
            error,
            lambda t: None if op.done else again(t),
            lambda e: self.complete(op, None, e, now),
            immediate=immediate,
            since=None if entry is None else entry[1],
        )

    def retry_or_fail(
        self,
        deadline: float,
        now: float,
        error: BaseException | None,
        again: Then,
        fail: Callable[[BaseException], None],
        *,
        immediate: bool = False,
        since: float | None = None,
    ) -> None:
        if isinstance(error, AuthenticationError | LocalProtocolError):
            # The same credentials, or the same request we cannot encode, get the
            # same answer: fail the caller now, with the cause (issue 21).
            fail(error)
            return
        at = now if immediate else now + self._backoff
        if at >= deadline:
            unreachable = self._client.unreachable_from_the_start()
            if isinstance(error, NoBrokersAvailable):
                fail(error)  # a request that expired says so already
            elif unreachable is not None:
                fail(unreachable_within(str(error or "deadline passed"), unreachable))
            else:
                fail(self._causes.explain(error or KafkaTimeoutError("deadline passed"), since))
            return
        self.later(at, again)

"""The one handle every core machine returns for work that finishes later.

Part of the stacking contract (``docs/stacking.md``): a command on a core
machine (send a request, commit, flush, begin a transaction, look up
offsets) returns an :class:`Operation` at once. The machine completes it
exactly once, in a later step, and in that same step emits
:class:`OperationCompleted` naming it; that event is how a transport learns
to resolve its own future, awaitable or callback.

An operation is a record, not a future: it has no callbacks and never
blocks, so it is safe to create and complete inside a sans-IO machine.
``Operation[T]`` types the value: a commit is ``Operation[dict[...]]``, a
request is a :class:`~kafkacore.client.handles.RequestHandle` typed by its
response.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kafkacore.errors import LocalProtocolError

__all__ = ["Operation", "OperationCompleted"]

T = TypeVar("T")


class Operation(Generic[T]):
    """One pending piece of work of a core machine: ``kind`` says which.

    ``id`` is unique per machine. Exactly one of ``value``/``error`` is
    meaningful once ``done``.
    """

    __slots__ = ("_done", "_error", "_value", "id", "kind")

    def __init__(self, id: int, kind: str) -> None:
        self.id = id
        self.kind = kind
        self._done = False
        self._error: BaseException | None = None
        self._value: T | None = None

    @property
    def done(self) -> bool:
        """True once the outcome is set (and its event emitted)."""
        return self._done

    @property
    def error(self) -> BaseException | None:
        """The failure, or None (also None while pending)."""
        return self._error

    @property
    def value(self) -> T | None:
        """The value (None while pending, on failure, or when there is none)."""
        return self._value

    def result(self) -> T:
        """The value; raises the error if the operation failed.

        Asking before it is done is a caller mistake: wait for the event.
        """
        if not self._done:
            raise LocalProtocolError(f"{self!r} is still pending; wait for its event")
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]

    def _complete(self, value: T | None, error: BaseException | None) -> None:
        if self._done:
            # Exactly-once is an invariant of every core; breaking it is a bug.
            raise AssertionError(f"{self!r} completed twice")
        self._done = True
        self._value = value
        self._error = error

    def _state(self) -> str:
        return "pending" if not self._done else ("failed" if self._error else "done")

    def __repr__(self) -> str:
        return f"<Operation #{self.id} {self.kind} {self._state()}>"


@dataclass(frozen=True, slots=True, kw_only=True)
class OperationCompleted:
    """``handle`` finished: its value or error is set."""

    handle: Operation[Any]

    @property
    def error(self) -> BaseException | None:
        """The handle's error (None on success)."""
        return self.handle.error

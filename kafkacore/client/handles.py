"""Plain handles returned by commands; the core completes them exactly once.

A handle is a record, not a future: it has no callbacks and never blocks.
The core sets its outcome and, in the same step, emits an event naming it
(``RequestCompleted``, ``MetadataUpdated``/``MetadataUpdateFailed``), which
is how a transport learns to resolve its own future or awaitable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkacore.errors import LocalProtocolError

if TYPE_CHECKING:
    from kafkacore.client.routing import Target

__all__ = ["MetadataWaiter", "RequestHandle"]


class _Outcome:
    __slots__ = ("_done", "_error", "_value")

    def __init__(self) -> None:
        self._done = False
        self._error: BaseException | None = None
        self._value: Any = None

    @property
    def done(self) -> bool:
        """True once the outcome is set (and its event emitted)."""
        return self._done

    @property
    def error(self) -> BaseException | None:
        """The failure, or None (also None while pending)."""
        return self._error

    def _complete(self, value: Any, error: BaseException | None) -> None:
        if self._done:
            # Exactly-once is an invariant of the core; breaking it is a bug.
            raise AssertionError(f"{self!r} completed twice")
        self._done = True
        self._value = value
        self._error = error


class RequestHandle(_Outcome):
    """One request sent through :meth:`KafkaClientCore.send`.

    ``id`` is unique per core. ``node_id`` and ``api_version`` are filled in
    when the request is written to a connection (None before). Exactly one of
    ``response``/``error`` is set when ``done``.
    """

    __slots__ = ("api_key", "api_version", "id", "lane", "node_id", "request", "target")

    def __init__(self, *, id: int, request: Any, api_key: int, target: Target, lane: str) -> None:
        super().__init__()
        self.id = id
        self.request = request
        self.api_key = api_key
        self.target = target
        self.lane = lane
        self.node_id: int | None = None
        self.api_version: int | None = None

    @property
    def response(self) -> Any:
        """The decoded response (None for pending, failed, or no-response requests)."""
        return self._value

    def result(self) -> Any:
        """The response; raises the error if the request failed."""
        if not self._done:
            raise LocalProtocolError(f"request #{self.id} is still pending; wait for its event")
        if self._error is not None:
            raise self._error
        return self._value

    def __repr__(self) -> str:
        state = "pending" if not self._done else ("failed" if self._error else "done")
        return f"<RequestHandle #{self.id} api={self.api_key} {state}>"


class MetadataWaiter(_Outcome):
    """Completed by the next metadata update (or failed by the next failure)."""

    __slots__ = ("id",)

    def __init__(self, id: int) -> None:
        super().__init__()
        self.id = id

    def __repr__(self) -> str:
        return f"<MetadataWaiter #{self.id} {'done' if self._done else 'pending'}>"

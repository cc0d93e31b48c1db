"""Plain handles returned by commands; the core completes them exactly once.

A handle is a record, not a future: it has no callbacks and never blocks.
The core sets its outcome and, in the same step, emits an event naming it
(``RequestCompleted``, ``MetadataUpdated``/``MetadataUpdateFailed``), which
is how a transport learns to resolve its own future or awaitable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias, TypeGuard, TypeVar

from kafkacore.operation import Operation

if TYPE_CHECKING:
    # Named only inside the string base of MetadataWaiter, which ruff does not read.
    from kafkacore.client.events import RequestCompleted
    from kafkacore.client.metadata import ClusterMetadata  # noqa: F401
    from kafkacore.client.routing import Target
    from kafkacore.protocol._base import Request, Response

__all__ = ["Answer", "MetadataWaiter", "OnAnswer", "RequestHandle"]

#: The decoded response type of a request (``Any`` where not known): the
#: generated ``MetadataRequest`` is a ``Request[MetadataResponse]``, so
#: ``send(MetadataRequest())`` returns a ``RequestHandle[MetadataResponse]``.
R = TypeVar("R", bound="Response")

#: What a request's callback gets: the decoded response, or the error the
#: request failed with (one value, never a pair; ``None`` only for a Produce
#: with ``acks=0``). Defined here, below the client core, so that the core's
#: own requests (Metadata, FindCoordinator, telemetry) and the stacked
#: machines (:mod:`kafkacore.client.stack`) share one shape.
Answer: TypeAlias = R | BaseException

#: Called with (answer, now) when a request completes.
OnAnswer: TypeAlias = Callable[[Answer[R], float], None]


class RequestHandle(Operation[R]):
    """One request sent through :meth:`KafkaClientCore.send`.

    ``id`` is unique per core. ``node_id`` and ``api_version`` are filled in
    when the request is written to a connection (None before). Exactly one of
    ``response``/``error`` is set when ``done``. ``request`` is the message
    as given (with ``build=``, the template that names the API).
    """

    __slots__ = ("api_key", "api_version", "lane", "node_id", "request", "target")

    def __init__(
        self, *, id: int, request: Request[R], api_key: int, target: Target, lane: str
    ) -> None:
        super().__init__(id, "request")
        self.request = request
        self.api_key = api_key
        self.target = target
        self.lane = lane
        self.node_id: int | None = None
        self.api_version: int | None = None

    @property
    def response(self) -> R | None:
        """The decoded response (None for pending, failed, or no-response requests)."""
        return self._value

    def completed_by(self, event: object) -> TypeGuard[RequestCompleted[R]]:
        """True if ``event`` is this request's ``RequestCompleted``; narrows its
        ``response`` to this request's response type::

            if handle.completed_by(event):
                event.response  # MetadataResponse | None for a Metadata request
        """
        from kafkacore.client.events import RequestCompleted

        return isinstance(event, RequestCompleted) and event.handle is self

    def __repr__(self) -> str:
        state = "pending" if not self._done else ("failed" if self._error else "done")
        return f"<RequestHandle #{self.id} api={self.api_key} {state}>"


class MetadataWaiter(Operation["ClusterMetadata"]):
    """Completed by the next metadata update (or failed by the next failure)."""

    __slots__ = ()

    def __init__(self, id: int) -> None:
        super().__init__(id, "metadata")

    def __repr__(self) -> str:
        return f"<MetadataWaiter #{self.id} {'done' if self._done else 'pending'}>"

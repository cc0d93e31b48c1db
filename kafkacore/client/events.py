"""Events the client core emits through ``pull_events()``.

Every event is a frozen, slotted, keyword-only dataclass named in the past
tense, and a subclass of :class:`Event`. Requests complete through
:class:`RequestCompleted` exactly once each.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeAlias

from kafkacore.client.connection import ConnectionState
from kafkacore.client.credentials import CredentialKind, CredentialsCall
from kafkacore.client.handles import MetadataWaiter, R, RequestHandle

__all__ = [
    "CLIENT_EVENTS",
    "AuthenticationFailed",
    "BootstrapFailed",
    "ClientEvent",
    "ConnectionStateChanged",
    "CredentialsNeeded",
    "Event",
    "MetadataUpdateFailed",
    "MetadataUpdated",
    "RequestCompleted",
]


class Event:
    """Base of every client event (an empty marker)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestCompleted(Event, Generic[R]):
    """A request finished: ``response`` set, or ``error`` set (never both).

    ``error`` is a :class:`~kafkacore.errors.KafkaTimeoutError` (deadline),
    :class:`~kafkacore.errors.KafkaConnectionError` (connection lost or
    failed), :class:`~kafkacore.errors.RequestCancelled`,
    :class:`~kafkacore.errors.NoCommonVersionError`,
    :class:`~kafkacore.errors.AuthenticationError` or a
    :class:`~kafkacore.errors.RemoteProtocolError`. Error codes inside a
    response are not errors here; they are in ``response``.

    Generic in the response type: ``handle.completed_by(event)`` narrows an
    event to ``RequestCompleted[<that request's response>]``.
    """

    handle: RequestHandle[R]
    response: R | None = None
    error: BaseException | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionStateChanged(Event):
    """A connection to ``node_id`` on ``lane`` moved to ``state``.

    ``error`` says why for CLOSED after a failure (None for a clean close).
    """

    node_id: int
    lane: str
    conn_id: int
    state: ConnectionState
    error: BaseException | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MetadataUpdated(Event):
    """Cluster metadata was replaced by a fresh Metadata response."""

    cluster_id: str | None
    controller_id: int | None
    broker_ids: frozenset[int]
    topics: frozenset[str]
    waiters: tuple[MetadataWaiter, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class MetadataUpdateFailed(Event):
    """A metadata refresh failed; the core retries after its backoff (exponential
    from ``retry_backoff_ms`` to ``retry_backoff_max_ms``)."""

    error: BaseException
    waiters: tuple[MetadataWaiter, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class BootstrapFailed(Event):
    """Every bootstrap address failed before any metadata arrived.

    ``error`` is :class:`~kafkacore.errors.NoBrokersAvailable` naming the
    addresses (``__cause__``: the last connection error). A report, not a
    failure: the core keeps retrying with the reconnect backoff, and every
    request or wait goes on until its own timeout (issue 26), when a
    cluster never reached fails it with ``NoBrokersAvailable``.
    """

    error: BaseException


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthenticationFailed(Event):
    """Authentication failed on a connection to ``node_id`` (SASL refused the
    credentials, or TLS refused a certificate); emitted once per core.

    The core has stopped: it opens no more connections, and every waiting or
    later request, and every metadata waiter, fails with ``error`` (an
    :class:`~kafkacore.errors.AuthenticationError`; also
    :attr:`KafkaClientCore.authentication_error`). Make a new client with
    corrected settings.
    """

    node_id: int
    error: BaseException


@dataclass(frozen=True, slots=True, kw_only=True)
class CredentialsNeeded(Event):
    """A connection's SASL exchange waits for a call the transport must make
    (only with ``ClientConfig.defer_credentials``; see
    :mod:`kafkacore.client.credentials`).

    Make ``call`` (a blocking callable off the event loop, a coroutine
    function by awaiting it) and answer with
    ``core.credentials_ready(request_id, result, error=..., now=...)`` before
    ``deadline``, or the connection fails with a KafkaTimeoutError.
    """

    request_id: int
    node_id: int
    conn_id: int
    kind: CredentialKind
    mechanism: str
    call: Callable[[], Any]
    deadline: float

    @classmethod
    def of(
        cls, request_id: int, node_id: int, conn_id: int, need: CredentialsCall, deadline: float
    ) -> CredentialsNeeded:
        return cls(
            request_id=request_id,
            node_id=node_id,
            conn_id=conn_id,
            kind=need.kind,
            mechanism=need.mechanism,
            call=need.call,
            deadline=deadline,
        )


#: Everything the client core's ``pull_events()`` can return: a closed union.
ClientEvent: TypeAlias = (
    RequestCompleted[Any]
    | ConnectionStateChanged
    | MetadataUpdated
    | MetadataUpdateFailed
    | BootstrapFailed
    | AuthenticationFailed
    | CredentialsNeeded
)

#: The classes of :data:`ClientEvent`, for ``isinstance`` checks.
CLIENT_EVENTS: tuple[type[Event], ...] = (
    RequestCompleted,
    ConnectionStateChanged,
    MetadataUpdated,
    MetadataUpdateFailed,
    BootstrapFailed,
    AuthenticationFailed,
    CredentialsNeeded,
)

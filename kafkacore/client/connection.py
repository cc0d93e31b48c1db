"""One broker connection as a sans-IO state machine.

Theory of operation
-------------------
A :class:`BrokerConnection` lives from the moment the client asks the
transport to open a socket until that socket is closed; a reconnect is a new
object with a new ``conn_id``. It moves through

    CONNECTING -> API_VERSIONS -> [SASL_HANDSHAKE -> SASL_AUTHENTICATE] -> READY -> CLOSED

(any state may go to CLOSED). On ``connection_made`` it writes an
ApiVersions request at the highest version kafkacore knows; if the broker
answers UNSUPPORTED_VERSION it retries once at the version the broker
names (KIP-511). From the broker's ranges it fixes, per API, the version
``min(ours.max, broker.max)``, refusing with
:class:`~kafkacore.errors.NoCommonVersionError` when that is below either
minimum. With SASL it then runs the exchange of a
:class:`~kafkacore.client.authenticator.SaslAuthenticator` sub-machine
(SaslHandshake v1, one SaslAuthenticate round trip per token, KIP-152)
before READY. Only READY accepts
user requests, and at most ``max_in_flight_requests_per_connection`` of them
at a time.

Framing is :class:`~kafkacore.client.frames.FrameAssembler`: bounded (a
frame claiming more than ``max_response_bytes`` is a DecodeError, never an
allocation), and at most one copy of a response (a frame inside one read is
a view of it; one spread over reads is joined once).
Responses on one connection come back in request order, so each frame must
carry the correlation id at the head of the in-flight queue; anything else
is a :class:`~kafkacore.errors.RemoteProtocolError`. Correlation ids count up
per connection and skip any id still in flight.

Deadlines: connect setup (``socket_connection_setup_timeout_ms``), every
in-flight request (``request_timeout_ms``; a timeout closes the connection,
as in the Java client, because the response order is then unknown), and
idleness (``connections_max_idle_ms`` with nothing in flight), and SASL
re-authentication: when the broker gives the session a lifetime, the
connection goes READY -> SASL_HANDSHAKE -> SASL_AUTHENTICATE -> READY again
at a random point in 85-95% of it (KIP-368). The owner asks
:meth:`next_deadline` and calls :meth:`handle_timeout`.

The machine never raises on broker input: a broken stream or a refusal
moves it to CLOSED, failing everything in flight, and
:attr:`close_error` says why. The owner drains :meth:`pull_writes` and
:meth:`pull_completions`.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from kafkacore.client import _codec
from kafkacore.client.authenticator import SaslAuthenticator
from kafkacore.client.credentials import CredentialsCall
from kafkacore.client.frames import FrameAssembler
from kafkacore.client.listener_hints import frame_size_error, tls_answer, wrong_protocol_error
from kafkacore.client.sasl import create_mechanism
from kafkacore.errors import (
    DecodeError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    LocalProtocolError,
    NoCommonVersionError,
    RemoteProtocolError,
)
from kafkacore.protocol._base import Request, Response
from kafkacore.protocol.enums import ApiKey, ErrorCode
from kafkacore.protocol.messages import (
    ApiVersionsResponse,
    SaslAuthenticateResponse,
    SaslHandshakeResponse,
)

if TYPE_CHECKING:
    from kafkacore.client.config import ClientConfig
    from kafkacore.client.handles import RequestHandle

__all__ = ["BrokerConnection", "Completion", "ConnectionState", "negotiate_version"]

_INT31 = 0x7FFFFFFF


class ConnectionState(Enum):
    """Life of one connection (see module docstring)."""

    CONNECTING = "connecting"
    API_VERSIONS = "api_versions"
    SASL_HANDSHAKE = "sasl_handshake"
    SASL_AUTHENTICATE = "sasl_authenticate"
    READY = "ready"
    CLOSED = "closed"


_S = ConnectionState
#: Allowed transitions; anything else is a bug in this module.
TRANSITIONS: Mapping[ConnectionState, frozenset[ConnectionState]] = {
    _S.CONNECTING: frozenset({_S.API_VERSIONS, _S.CLOSED}),
    _S.API_VERSIONS: frozenset({_S.API_VERSIONS, _S.SASL_HANDSHAKE, _S.READY, _S.CLOSED}),
    _S.SASL_HANDSHAKE: frozenset({_S.SASL_AUTHENTICATE, _S.CLOSED}),
    _S.SASL_AUTHENTICATE: frozenset({_S.READY, _S.CLOSED}),
    # READY -> SASL_HANDSHAKE: re-authentication before the session expires (KIP-368).
    _S.READY: frozenset({_S.SASL_HANDSHAKE, _S.CLOSED}),
    _S.CLOSED: frozenset(),
}


@dataclass(frozen=True, slots=True)
class Completion:
    """A user request finished on this connection."""

    handle: RequestHandle[Any]
    response: Response | None
    error: BaseException | None


@dataclass(slots=True)
class _InFlight:
    correlation_id: int
    api_key: int
    version: int
    handle: RequestHandle[Any] | None  # None: the connection's own request
    sent_at: float
    deadline: float


def negotiate_version(
    api_key: int, ours: tuple[int, int] | None, theirs: tuple[int, int] | None, *, name: str = ""
) -> int:
    """``min(ours.max, theirs.max)``, or NoCommonVersionError naming both ranges."""
    label = name or f"API key {api_key}"
    if ours is None:
        raise NoCommonVersionError(f"{label}: kafkacore has no codec for this API")
    if theirs is None:
        raise NoCommonVersionError(
            f"{label}: the broker does not offer this API "
            f"(kafkacore supports v{ours[0]}-v{ours[1]})"
        )
    version = min(ours[1], theirs[1])
    if version < ours[0] or version < theirs[0]:
        raise NoCommonVersionError(
            f"{label}: no common version (kafkacore v{ours[0]}-v{ours[1]}, "
            f"broker v{theirs[0]}-v{theirs[1]}); upgrade the older side"
        )
    return version


class BrokerConnection:
    """One connection's machine; see the module docstring."""

    def __init__(
        self,
        *,
        conn_id: int,
        node_id: int,
        lane: str,
        host: str,
        config: ClientConfig,
        port: int | None = None,
        rng: random.Random,
        now: float,
    ) -> None:
        self.conn_id = conn_id
        self.node_id = node_id
        self.lane = lane
        self.host = host
        self.port = port
        #: How messages name the peer: which broker, at which address.
        self.peer = _describe_peer(node_id, host, port)
        self._config = config
        self._request_timeout_s = config.request_timeout_ms / 1000
        self._rng = rng
        self.state = ConnectionState.CONNECTING
        self.close_error: BaseException | None = None
        self._reader = FrameAssembler(max_frame_size=config.max_response_bytes)
        self._in_flight: deque[_InFlight] = deque()
        self._next_correlation = 0
        self._writes: list[bytes] = []
        #: Finished requests not yet taken by the owner (``pull_completions``,
        #: or swapped out directly by the client core's drain).
        self.completions: list[Completion] = []
        self._setup_deadline = now + config.socket_connection_setup_timeout_ms / 1000
        #: When the connection became READY (None before): how long it was healthy.
        self.ready_since: float | None = None
        self.last_activity = now
        self.broker_versions: dict[int, tuple[int, int]] = {}
        #: Finalized feature levels (KIP-584), e.g. ``{"transaction.version": 2}``.
        self.finalized_features: dict[str, int] = {}
        self._versions: dict[int, int] = {}
        self._api_versions_retried = False
        self._sasl: SaslAuthenticator | None = None
        #: A credentials call the SASL exchange waits for (defer_credentials),
        #: not yet pulled by the owner (:meth:`pull_credentials`), and the auth
        #: deadline of the wait.
        self.credentials_calls: list[CredentialsCall] = []
        self.credentials_deadline: float | None = None
        self.session_lifetime_ms = 0
        self._reauth_at: float | None = None
        self.reauthentications = 0
        self.bytes_sent = 0
        self.bytes_received = 0
        #: Responses to the owner's requests (ApiVersions and SASL not counted).
        self.answered = 0
        self.latencies_ms: list[float] = []

    # -- queries -----------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self.state is ConnectionState.READY

    @property
    def in_flight_count(self) -> int:
        """User requests in flight (the connection's own ones excluded)."""
        return sum(1 for f in self._in_flight if f.handle is not None)

    @property
    def closed(self) -> bool:
        return self.state is ConnectionState.CLOSED

    @property
    def idle(self) -> bool:
        """Nothing in flight, the connection's own requests included."""
        return not self._in_flight

    @property
    def has_pending_output(self) -> bool:
        return bool(self._writes or self.completions or self.credentials_calls)

    @property
    def can_send(self) -> bool:
        return (
            self.state is ConnectionState.READY
            and len(self._in_flight) < self._config.max_in_flight_requests_per_connection
        )

    @property
    def in_flight_correlation_ids(self) -> list[int]:
        return [f.correlation_id for f in self._in_flight]

    def version_for(self, api_key: int) -> int:
        """The negotiated version of ``api_key``; NoCommonVersionError if none."""
        if self.state is not ConnectionState.READY and not self.broker_versions:
            raise LocalProtocolError(
                f"connection {self.conn_id} to node {self.node_id} is {self.state.value}; "
                "versions are known once ApiVersions is done"
            )
        version = self._versions.get(api_key)
        if version is not None:
            return version
        version = negotiate_version(
            api_key,
            _codec.our_version_range(api_key),
            self.broker_versions.get(api_key),
            name=_codec.api_name(api_key),
        )
        self._versions[api_key] = version
        return version

    # -- outputs -----------------------------------------------------------
    def pull_writes(self) -> list[bytes]:
        out, self._writes = self._writes, []
        return out

    def pull_completions(self) -> list[Completion]:
        out, self.completions = self.completions, []
        return out

    def pull_credentials(self) -> list[CredentialsCall]:
        """Calls the SASL exchange waits for (``defer_credentials``); answer each
        with :meth:`credentials_ready` before :attr:`credentials_deadline`."""
        out, self.credentials_calls = self.credentials_calls, []
        return out

    def next_deadline(self) -> float | None:
        state = self.state
        if state is ConnectionState.CLOSED:
            return None
        if state is ConnectionState.CONNECTING:
            return self._setup_deadline
        times: list[float] = []
        if self._in_flight:
            times.append(min(f.deadline for f in self._in_flight))
        if self.credentials_deadline is not None:
            times.append(self.credentials_deadline)
        if state is ConnectionState.READY:
            if not self._in_flight:
                times.append(self.last_activity + self._config.connections_max_idle_ms / 1000)
            if self._reauth_at is not None:
                times.append(self._reauth_at)
        return min(times) if times else None

    # -- facts -------------------------------------------------------------
    def connection_made(self, *, now: float) -> None:
        if self.state is not ConnectionState.CONNECTING:
            raise LocalProtocolError(
                f"connection {self.conn_id}: connection_made in state {self.state.value}"
            )
        self.last_activity = now
        self._goto(ConnectionState.API_VERSIONS)
        ours = _codec.our_version_range(ApiKey.API_VERSIONS)
        self._send_api_versions(ours[1] if ours else 0, now=now)

    def data_received(self, data: bytes | bytearray | memoryview, *, now: float) -> None:
        if self.state is ConnectionState.CLOSED:
            return  # late bytes after we closed: the transport may still deliver some
        if self.state is ConnectionState.CONNECTING:
            self.close(RemoteProtocolError(f"{self.peer}: bytes before connect"))
            return
        if not self.bytes_received and not self._config.tls and tls_answer(data):
            # A TLS port answering our clear-text ApiVersions (listener_hints).
            self.close(
                wrong_protocol_error(self.peer, security_protocol=self._config.security_protocol)
            )
            return
        self.bytes_received += len(data)
        self.last_activity = now
        reader = self._reader
        try:
            # Every frame completed before a bad size prefix is handled first
            # (a Produce acknowledgement must not be lost to garbage behind
            # it); then the reader's error fails the connection.
            frames = reader.feed(data)
            for frame in frames:
                self._on_frame(frame, now=now)
                if self.closed:
                    return
            if reader.error is not None:
                raise reader.error
        except DecodeError as exc:
            if exc.api == "frame" and exc is reader.error:
                exc = frame_size_error(exc, max_response_bytes=self._config.max_response_bytes)
            self.close(exc.located(self.peer))
        except KafkaError as exc:
            # Broken stream, refused authentication, no common version: the
            # connection is unusable; the owner sees why in close_error.
            self.close(exc)

    def handle_timeout(self, *, now: float) -> None:
        state = self.state
        if state is ConnectionState.CLOSED:
            return
        if state is ConnectionState.CONNECTING:
            if now >= self._setup_deadline:
                self.close(
                    KafkaConnectionError(
                        f"{self.peer}: connect did not finish within "
                        f"{self._config.socket_connection_setup_timeout_ms} ms"
                    )
                )
            return
        waited = self.credentials_deadline
        if waited is not None and now >= waited:
            self.close(
                KafkaTimeoutError(
                    f"{self.peer}: the SASL exchange waited {self._request_timeout_s * 1000:.0f} "
                    "ms for credentials (CredentialsNeeded) that the transport never supplied"
                )
            )
            return
        expired = [f for f in self._in_flight if f.deadline <= now]
        if expired:
            first = expired[0]
            what = f"request #{first.handle.id}" if first.handle else self.state.value
            self.close(
                KafkaTimeoutError(
                    f"{self.peer}: {what} got no response within "
                    f"{(first.deadline - first.sent_at) * 1000:.0f} ms; connection closed"
                ),
                timed_out={id(f) for f in expired},
            )
            return
        if state is not ConnectionState.READY:
            return
        if not self._in_flight and (
            now >= self.last_activity + self._config.connections_max_idle_ms / 1000
        ):
            self.close(None)
        elif self._reauth_at is not None and now >= self._reauth_at:
            # KIP-368: authenticate again on this connection before the broker's
            # session expires. Responses still in flight keep arriving in order
            # ahead of the handshake's; new requests wait until READY again.
            self._reauth_at = None
            self.reauthentications += 1
            try:
                self._start_sasl(now)
            except KafkaError as exc:
                self.close(exc)

    # -- commands ----------------------------------------------------------
    def send(
        self,
        handle: RequestHandle[Any],
        request: Request[Response],
        *,
        version: int,
        now: float,
        expect_response: bool = True,
        timeout_s: float | None = None,
    ) -> None:
        """Write one user request; the caller checked :attr:`can_send`.

        ``timeout_s`` (default ``request_timeout_ms``) bounds the wait for its
        response; when it passes, the connection is closed.
        """
        if not self.can_send:
            raise LocalProtocolError(
                f"connection {self.conn_id} to node {self.node_id} cannot take a request "
                f"({self.state.value}, {len(self._in_flight)} in flight); wait for READY"
            )
        correlation_id = self._write(handle.api_key, request, version=version, now=now)
        handle.node_id = self.node_id
        handle.api_version = version
        if expect_response:
            self._in_flight.append(
                _InFlight(
                    correlation_id,
                    handle.api_key,
                    version,
                    handle,
                    now,
                    now + (timeout_s if timeout_s is not None else self._request_timeout_s),
                )
            )
        else:
            # Produce with acks=0: the broker never answers.
            self.completions.append(Completion(handle, None, None))

    def close(self, error: BaseException | None, *, timed_out: set[int] | None = None) -> None:
        """Move to CLOSED, failing everything in flight. Idempotent."""
        if self.state is ConnectionState.CLOSED:
            return
        self._goto(ConnectionState.CLOSED)
        self.close_error = error
        for flight in self._in_flight:
            if flight.handle is None:
                continue
            if timed_out is not None and id(flight) in timed_out:
                exc: BaseException = KafkaTimeoutError(
                    f"request #{flight.handle.id} ({_codec.api_name(flight.api_key)}) to "
                    f"{self.peer} got no response within "
                    f"{(flight.deadline - flight.sent_at) * 1000:.0f} ms"
                )
            else:
                reason = f": {error}" if error is not None else ""
                exc = KafkaConnectionError(
                    f"connection to {self.peer} closed with request "
                    f"#{flight.handle.id} ({_codec.api_name(flight.api_key)}) in flight{reason}"
                )
                if error is not None:
                    exc.__cause__ = error
            self.completions.append(Completion(flight.handle, None, exc))
        self._in_flight.clear()
        self._writes.clear()
        self.credentials_calls.clear()
        self.credentials_deadline = None

    def credentials_ready(self, result: Any, error: BaseException | None, *, now: float) -> None:
        """The answer to the call the SASL exchange waits for (see
        :mod:`kafkacore.client.credentials`); a failure closes the connection."""
        if self.state is ConnectionState.CLOSED:
            return
        if self._sasl is None or self._sasl.waiting is None:
            raise LocalProtocolError(
                f"connection {self.conn_id} to node {self.node_id} is not waiting for "
                f"credentials ({self.state.value})"
            )
        self.credentials_deadline = None
        self.last_activity = now
        try:
            self._sasl_next(self._sasl.resume(result, error), now)
        except KafkaError as exc:
            self.close(exc)

    # -- internals ---------------------------------------------------------
    def _goto(self, new: ConnectionState) -> None:
        if new not in TRANSITIONS[self.state]:
            raise AssertionError(f"connection {self.conn_id}: {self.state.name} -> {new.name}")
        self.state = new

    def _goto_ready(self, now: float) -> None:
        self._goto(ConnectionState.READY)
        if self.ready_since is None:  # re-authentication keeps the first time
            self.ready_since = now

    def _write(self, api_key: int, request: Request[Response], *, version: int, now: float) -> int:
        correlation_id = self._next_correlation
        in_use = {f.correlation_id for f in self._in_flight}
        while correlation_id in in_use:
            correlation_id = (correlation_id + 1) & _INT31
        self._next_correlation = (correlation_id + 1) & _INT31
        frame = _codec.encode_request(
            request,
            version=version,
            correlation_id=correlation_id,
            client_id=self._config.client_id,
        )
        self._writes.append(frame)
        self.bytes_sent += len(frame)
        self.last_activity = now
        return correlation_id

    def _send_internal(
        self,
        api_key: int,
        request: Request[Response],
        *,
        version: int,
        now: float,
        timeout_s: float | None = None,
    ) -> None:
        correlation_id = self._write(api_key, request, version=version, now=now)
        self._in_flight.append(
            _InFlight(
                correlation_id,
                api_key,
                version,
                None,
                now,
                now + (self._request_timeout_s if timeout_s is None else timeout_s),
            )
        )

    def _send_api_versions(self, version: int, *, now: float) -> None:
        from kafkacore.protocol.messages import ApiVersionsRequest

        request = ApiVersionsRequest(
            client_software_name=self._config.client_software_name if version >= 3 else "",
            client_software_version=self._config.client_software_version if version >= 3 else "",
        )
        # api_version_auto_timeout_ms (the seed's bound on the version probe)
        # bounds the ApiVersions exchange that opens every connection, so a
        # peer that accepts TCP but never speaks Kafka fails in seconds.
        timeout_s = min(self._config.api_version_auto_timeout_ms, self._config.request_timeout_ms)
        self._send_internal(
            ApiKey.API_VERSIONS, request, version=version, now=now, timeout_s=timeout_s / 1000
        )

    def _on_frame(self, frame: bytes | memoryview, *, now: float) -> None:
        if len(frame) < 4:
            raise DecodeError("frame shorter than a correlation id", api="ResponseHeader", offset=0)
        correlation_id = int.from_bytes(frame[:4], "big", signed=True)
        if not self._in_flight:
            raise RemoteProtocolError(
                f"{self.peer}: response with correlation id {correlation_id} "
                "but nothing is in flight"
            )
        head = self._in_flight[0]
        if correlation_id != head.correlation_id:
            raise RemoteProtocolError(
                f"{self.peer}: response correlation id {correlation_id}, expected "
                f"{head.correlation_id}; responses out of order"
            )
        if head.handle is not None:
            # Decode while the request is still in flight: if the answer does
            # not decode, close() fails this request with the DecodeError as
            # its cause instead of dropping it unanswered.
            response = _codec.parse_response(frame, head.api_key, head.version)
            self._in_flight.popleft()
            self.answered += 1
            self.latencies_ms.append((now - head.sent_at) * 1000)
            self.completions.append(Completion(head.handle, response, None))
            return
        self._in_flight.popleft()
        self.latencies_ms.append((now - head.sent_at) * 1000)
        if head.api_key == ApiKey.API_VERSIONS:
            self._on_api_versions(frame, head.version, now=now)
        elif head.api_key == ApiKey.SASL_HANDSHAKE:
            self._on_sasl_handshake(
                _codec.parse_as(SaslHandshakeResponse, frame, head.version), now
            )
        elif head.api_key == ApiKey.SASL_AUTHENTICATE:
            response = _codec.parse_as(SaslAuthenticateResponse, frame, head.version)
            self._on_sasl_authenticate(response, now)
        else:  # pragma: no cover - only the three above are sent internally
            raise AssertionError(f"unexpected internal api {head.api_key}")

    def _on_api_versions(self, frame: bytes | memoryview, version: int, *, now: float) -> None:
        code = _codec.peek_error_code(frame)
        if code == ErrorCode.UNSUPPORTED_VERSION and version > 0:
            # KIP-511: the broker answers in v0 and lists its ApiVersions range.
            refused = _codec.parse_as(ApiVersionsResponse, frame, 0)
            if self._api_versions_retried:
                raise RemoteProtocolError(
                    f"{self.peer}: ApiVersions refused twice (UNSUPPORTED_VERSION)"
                )
            self._api_versions_retried = True
            retry = 0
            for key in refused.api_keys:
                if key.api_key == ApiKey.API_VERSIONS:
                    retry = min(key.max_version, version - 1)
            self._goto(ConnectionState.API_VERSIONS)
            self._send_api_versions(max(retry, 0), now=now)
            return
        response = _codec.parse_as(ApiVersionsResponse, frame, version)
        if response.error_code:
            raise RemoteProtocolError(
                f"{self.peer}: ApiVersions failed with {_codec.error_name(response.error_code)}"
            )
        self.broker_versions = {
            k.api_key: (k.min_version, k.max_version) for k in response.api_keys
        }
        self.finalized_features = {f.name: f.max_version_level for f in response.finalized_features}
        self._versions.clear()
        if self._config.sasl:
            self._start_sasl(now)
        else:
            self._goto_ready(now)

    def _start_sasl(self, now: float) -> None:
        config = self._config
        assert config.sasl_mechanism is not None
        version = self.version_for(ApiKey.SASL_HANDSHAKE)
        if version < 1:
            raise NoCommonVersionError(
                f"node {self.node_id}: broker only has SaslHandshake v0 (raw SASL tokens); "
                "kafkacore needs v1 (KIP-152)"
            )
        mechanism = create_mechanism(
            mechanism=config.sasl_mechanism,
            host=self.host,
            username=config.sasl_plain_username,
            password=config.sasl_plain_password,
            oauth_token_provider=config.sasl_oauth_token_provider,
            factory=config.sasl_mechanism_factory,
            rng=self._rng,
        )
        self._sasl = SaslAuthenticator(
            mechanism,
            node_id=self.node_id,
            error_name=_codec.error_name,
            defer=config.defer_credentials,
        )
        self._goto(ConnectionState.SASL_HANDSHAKE)
        self._send_internal(
            ApiKey.SASL_HANDSHAKE, self._sasl.handshake_request(), version=version, now=now
        )

    def _on_sasl_handshake(self, response: SaslHandshakeResponse, now: float) -> None:
        assert self._sasl is not None
        step = self._sasl.on_handshake(response)
        self._goto(ConnectionState.SASL_AUTHENTICATE)
        self._sasl_next(step, now)

    def _on_sasl_authenticate(self, response: SaslAuthenticateResponse, now: float) -> None:
        assert self._sasl is not None
        self._sasl_next(self._sasl.on_authenticate(response), now)

    def _sasl_next(self, step: Any, now: float) -> None:
        """Send the exchange's next request, wait for credentials, or finish (None)."""
        assert self._sasl is not None
        if isinstance(step, CredentialsCall):
            self.credentials_calls.append(step)
            self.credentials_deadline = now + self._request_timeout_s
        elif step is not None:
            self._send_internal(
                ApiKey.SASL_AUTHENTICATE,
                step,
                version=self.version_for(ApiKey.SASL_AUTHENTICATE),
                now=now,
            )
        else:
            self._sasl_done(now)

    def _sasl_done(self, now: float) -> None:
        assert self._sasl is not None
        self.session_lifetime_ms = self._sasl.session_lifetime_ms
        if self.session_lifetime_ms > 0:
            # Java re-authenticates at a random point in 85%-95% of the lifetime.
            share = self._rng.uniform(0.85, 0.95)
            self._reauth_at = now + self.session_lifetime_ms / 1000 * share
        self._goto_ready(now)


def _describe_peer(node_id: int, host: str, port: int | None) -> str:
    address = host if port is None else (f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    if node_id < 0:
        return f"bootstrap server {address}"
    return f"broker {node_id} at {address}"

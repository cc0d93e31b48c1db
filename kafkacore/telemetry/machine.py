"""Client telemetry (KIP-714): when to ask for the subscription, when to push.

Theory of operation
-------------------
A broker with a client-telemetry plugin tells each client what it wants
(GetTelemetrySubscriptions: the client instance id, a subscription id, the
metric name prefixes, the push interval, the accepted compression types,
the largest payload) and receives its metrics (PushTelemetry, an OTLP
``MetricsData``). :class:`TelemetryMachine` is the client's side, sans-IO:
its owner (the client core) calls :meth:`~TelemetryMachine.poll` in every
step, sends the request it returns to any broker (least loaded) and hands
the answer back to :meth:`~TelemetryMachine.on_response`::

    SUBSCRIPTION_NEEDED --poll--> SUBSCRIPTION_IN_PROGRESS
        --prefixes--> PUSH_NEEDED          (first push after interval * U[0.5, 1.5])
        --none wanted--> SUBSCRIPTION_NEEDED (asks again after the push interval)
    PUSH_NEEDED --poll--> PUSH_IN_PROGRESS --ok--> PUSH_NEEDED (after the interval)
    any --initiate_close--> TERMINATING_PUSH_NEEDED (when it has a subscription
        with metrics) --> TERMINATING_PUSH_IN_PROGRESS --> TERMINATED, else TERMINATED
    any --API not offered / unrecoverable error--> DISABLED

A ``*_NEEDED`` state waits for its deadline (none: due now). The first
subscription fetch also waits for a usable (READY) connection, whose
ApiVersions say whether a broker offers the API at all (no timer meanwhile:
a connection's arrival steps the core anyway). Later requests go out when
due, connection or not: the owner sends them to the least loaded broker
and connects to it if it must, as the Java client does, so an idle client
whose connections were closed still pushes. The terminating push is the
exception: a client that is closing opens no connection to say goodbye.

Errors (KIP-714 *Error handling*, as the Java client 4.x reads it):

* the API is not offered (NoCommonVersionError: a broker without a
  telemetry plugin does not advertise it), INVALID_REQUEST, INVALID_RECORD,
  UNSUPPORTED_VERSION and codes KIP-714 does not list: stop for good;
* UNKNOWN_SUBSCRIPTION_ID, UNSUPPORTED_COMPRESSION_TYPE: the subscription
  changed; fetch it again at once (after a push) or after a backoff (when
  the fetch itself got the error, so that it cannot loop);
* TELEMETRY_TOO_LARGE, THROTTLING_QUOTA_EXCEEDED: push again after the
  interval (a payload found too large is bounded to half its size);
* no answer (connection lost, timeout): fetch the subscription again after
  an exponential backoff with +-20% jitter (``retry_backoff_ms`` to
  ``retry_backoff_max_ms``, KIP-580, as the rest of the core).

Randomness (the first push's jitter, the backoff's) comes from the injected
``random.Random``; time comes in as ``now``, and the points are dated
``now + wall_offset`` (the owner measures Unix time minus its clock: the
machine reads no wall clock).

Closing (KIP-714 *Client termination*): the owner calls
:meth:`~TelemetryMachine.initiate_close` when the client begins to close;
the terminating push is due at once, and the machine is no longer
:attr:`~TelemetryMachine.active` once it was answered, failed or was not
needed. The owner keeps the connections open until then (the client
core's ``begin_close`` / ``closing_done``), bounded by the close timeout.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Final

from kafkacore.errors import NoCommonVersionError
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.messages import (
    GetTelemetrySubscriptionsRequest,
    GetTelemetrySubscriptionsResponse,
    PushTelemetryRequest,
    PushTelemetryResponse,
)
from kafkacore.records.compression import Compression
from kafkacore.telemetry.collect import TelemetryCollector, TelemetryRole, infer_role
from kafkacore.telemetry.payload import build_payload, choose_compression
from kafkacore.timers import Deadlines

if TYPE_CHECKING:
    from kafkacore.client.handles import Answer, OnAnswer
    from kafkacore.client.metrics import ClientMetrics

__all__ = [
    "DEFAULT_PUSH_INTERVAL_MS",
    "ERROR_ACTIONS",
    "TRANSITIONS",
    "ErrorAction",
    "Subscription",
    "TelemetryMachine",
    "TelemetryRequest",
    "TelemetryResponse",
    "TelemetryState",
]

#: Used when a broker's PushIntervalMs is not positive (the Java client's default).
DEFAULT_PUSH_INTERVAL_MS: Final = 300_000
#: KIP-714: the first push comes after the interval scaled by U[0.5, 1.5].
FIRST_PUSH_JITTER: Final = (0.5, 1.5)
_BACKOFF_JITTER: Final = 0.2
_ZERO_UUID: Final = uuid.UUID(int=0)
_NOT_OFFERED: Final = "the broker does not offer client telemetry"

TelemetryRequest = GetTelemetrySubscriptionsRequest | PushTelemetryRequest
TelemetryResponse = GetTelemetrySubscriptionsResponse | PushTelemetryResponse
Trace = Callable[..., None]


class TelemetryState(Enum):
    SUBSCRIPTION_NEEDED = "subscription_needed"
    SUBSCRIPTION_IN_PROGRESS = "subscription_in_progress"
    PUSH_NEEDED = "push_needed"
    PUSH_IN_PROGRESS = "push_in_progress"
    TERMINATING_PUSH_NEEDED = "terminating_push_needed"
    TERMINATING_PUSH_IN_PROGRESS = "terminating_push_in_progress"
    TERMINATED = "terminated"
    DISABLED = "disabled"


_S = TelemetryState
TRANSITIONS: Mapping[TelemetryState, frozenset[TelemetryState]] = {
    _S.SUBSCRIPTION_NEEDED: frozenset({_S.SUBSCRIPTION_IN_PROGRESS, _S.TERMINATED, _S.DISABLED}),
    _S.SUBSCRIPTION_IN_PROGRESS: frozenset(
        {_S.SUBSCRIPTION_NEEDED, _S.PUSH_NEEDED, _S.TERMINATED, _S.DISABLED}
    ),
    # PUSH_NEEDED -> PUSH_NEEDED: a push skipped (not even an empty payload fits).
    _S.PUSH_NEEDED: frozenset({_S.PUSH_NEEDED, _S.PUSH_IN_PROGRESS, _S.TERMINATING_PUSH_NEEDED}),
    _S.PUSH_IN_PROGRESS: frozenset(
        {_S.PUSH_NEEDED, _S.SUBSCRIPTION_NEEDED, _S.TERMINATING_PUSH_NEEDED, _S.DISABLED}
    ),
    _S.TERMINATING_PUSH_NEEDED: frozenset({_S.TERMINATING_PUSH_IN_PROGRESS, _S.TERMINATED}),
    _S.TERMINATING_PUSH_IN_PROGRESS: frozenset({_S.TERMINATED}),
    _S.TERMINATED: frozenset(),
    _S.DISABLED: frozenset(),
}

#: The state that waits for each deadline key.
_WAITS: Final = {
    _S.SUBSCRIPTION_NEEDED: "subscribe",
    _S.PUSH_NEEDED: "push",
    _S.TERMINATING_PUSH_NEEDED: "push",
}


class ErrorAction(Enum):
    """What a broker error code in a telemetry answer makes the client do."""

    DISABLE = "disable"
    RESUBSCRIBE = "resubscribe"
    WAIT_INTERVAL = "wait_interval"


#: KIP-714's error table; a code not listed disables telemetry (as Java 4.x).
ERROR_ACTIONS: Mapping[int, ErrorAction] = {
    ErrorCode.INVALID_REQUEST: ErrorAction.DISABLE,
    ErrorCode.INVALID_RECORD: ErrorAction.DISABLE,
    ErrorCode.UNSUPPORTED_VERSION: ErrorAction.DISABLE,
    ErrorCode.UNKNOWN_SUBSCRIPTION_ID: ErrorAction.RESUBSCRIBE,
    ErrorCode.UNSUPPORTED_COMPRESSION_TYPE: ErrorAction.RESUBSCRIBE,
    ErrorCode.TELEMETRY_TOO_LARGE: ErrorAction.WAIT_INTERVAL,
    ErrorCode.THROTTLING_QUOTA_EXCEEDED: ErrorAction.WAIT_INTERVAL,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Subscription:
    """What a GetTelemetrySubscriptions answer asked for."""

    subscription_id: int
    prefixes: tuple[str, ...]
    push_interval_ms: int
    compression: Compression
    max_bytes: int
    delta: bool


class TelemetryMachine:
    """The KIP-714 client machine; see the module docstring."""

    def __init__(
        self,
        *,
        rng: random.Random,
        now: float,
        client_id: str,
        version: str,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1000,
        wall_offset: float = 0.0,
        trace: Trace | None = None,
    ) -> None:
        self.state = TelemetryState.SUBSCRIPTION_NEEDED
        self.client_instance_id: uuid.UUID | None = None
        self.subscription: Subscription | None = None
        #: Set by an owner that knows what it is; otherwise read from the traffic.
        self.role: TelemetryRole | None = None
        #: Why the machine stopped (DISABLED), or the last error it retried.
        self.last_error: BaseException | None = None
        self.pushes = 0
        self._rng = rng
        self._version = version
        self._backoff_ms = (retry_backoff_ms, max(retry_backoff_ms, retry_backoff_max_ms))
        self._failures = 0
        self._size_cap: int | None = None
        self._last_size = 0
        # The request whose answer the machine waits for (an older one is stale).
        self._in_flight: TelemetryRequest | None = None
        self._collector = TelemetryCollector(
            client_id=client_id, start=now, wall_offset=wall_offset
        )
        self._deadlines: Deadlines[str] = Deadlines()
        self._trace = trace

    # ------------------------------------------------------------------ queries
    @property
    def active(self) -> bool:
        """False once TERMINATED or DISABLED: nothing more will be sent."""
        return self.state not in (TelemetryState.TERMINATED, TelemetryState.DISABLED)

    def next_deadline(self) -> float | None:
        return self._deadlines.next()

    @property
    def wall_offset(self) -> float:
        """Unix time minus the owner's clock (``now``), in seconds: the points are
        dated ``now + wall_offset`` (Unix nanoseconds on the wire); the start time too."""
        return self._collector.wall_offset

    @wall_offset.setter
    def wall_offset(self, offset: float) -> None:
        self._collector.wall_offset = offset

    # ----------------------------------------------------------------- commands
    def poll(
        self,
        now: float,
        *,
        usable: bool,
        metrics: Callable[[], ClientMetrics],
        offered: bool = True,
    ) -> TelemetryRequest | None:
        """The request to send now (any broker), or None; ``metrics`` is read for a push.

        ``offered``: whether the brokers' ApiVersions list GetTelemetrySubscriptions
        (a broker without a telemetry plugin does not); if not, the machine stops
        without sending anything.
        """
        key = _WAITS.get(self.state)
        if key is None:
            return None
        at = self._deadlines.get(key)
        if at is not None and at > now:
            return None
        self._deadlines.cancel(key)  # due: now it waits only for a connection
        if not usable:
            if self.state is TelemetryState.TERMINATING_PUSH_NEEDED:
                self._goto(TelemetryState.TERMINATED)  # nothing to say goodbye on
                return None
            if self.client_instance_id is None:
                return None  # the first question: once a broker's ApiVersions are known
        if self.state is TelemetryState.SUBSCRIPTION_NEEDED:
            if not offered:
                error = NoCommonVersionError(
                    "GetTelemetrySubscriptions: the broker does not offer this API"
                    " (no client telemetry plugin)"
                )
                self._disable(error, _NOT_OFFERED)
                return None
            self._goto(TelemetryState.SUBSCRIPTION_IN_PROGRESS)
            request: TelemetryRequest | None = GetTelemetrySubscriptionsRequest(
                client_instance_id=self.client_instance_id or _ZERO_UUID
            )
        else:
            request = self._push(now, metrics())
        if request is not None:
            self._in_flight = request
        return request

    def completion(self, request: TelemetryRequest) -> OnAnswer[TelemetryResponse]:
        """The callback that hands ``request``'s answer to :meth:`on_response`."""

        def done(answer: Answer[TelemetryResponse], now: float) -> None:
            if request is self._in_flight:
                self._in_flight = None
                self.on_response(answer, now)
            # else: the answer of a push overtaken by close; dropped.

        return done

    def initiate_close(self, now: float) -> None:
        """The client closes: one terminating push if there is a subscription with metrics."""
        del now  # the terminating push is due at once
        if self.state in (TelemetryState.PUSH_NEEDED, TelemetryState.PUSH_IN_PROGRESS):
            # A push in flight is overtaken: its answer no longer matters.
            self._deadlines.cancel("push")
            self._goto(TelemetryState.TERMINATING_PUSH_NEEDED)
        elif self.state in (
            TelemetryState.SUBSCRIPTION_NEEDED,
            TelemetryState.SUBSCRIPTION_IN_PROGRESS,
        ):
            self._deadlines.cancel("subscribe")
            self._goto(TelemetryState.TERMINATED)

    def on_response(self, answer: Answer[TelemetryResponse], now: float) -> None:
        """The answer (the response, or the error it failed with) of the request
        :meth:`poll` returned last (use :meth:`completion`, which drops the
        answers of overtaken requests)."""
        state = self.state
        if state is TelemetryState.SUBSCRIPTION_IN_PROGRESS:
            # The request in flight asked for the subscription: this is its answer.
            if (
                isinstance(answer, GetTelemetrySubscriptionsResponse)
                and answer.error_code == ErrorCode.NONE
            ):
                self._subscribed(answer, now)
            else:
                self._failed(answer, now, subscribing=True)
        elif state is TelemetryState.PUSH_IN_PROGRESS:
            if not isinstance(answer, BaseException) and answer.error_code == ErrorCode.NONE:
                self._failures = 0
                self.pushes += 1
                self._wait_push(now)
            else:
                self._failed(answer, now, subscribing=False)
        elif state is TelemetryState.TERMINATING_PUSH_IN_PROGRESS:
            if not isinstance(answer, BaseException) and answer.error_code == ErrorCode.NONE:
                self.pushes += 1
            self._goto(TelemetryState.TERMINATED)
        # TERMINATED or DISABLED: nothing more to do.

    # ---------------------------------------------------------------- internals
    def _push(self, now: float, metrics: ClientMetrics) -> PushTelemetryRequest | None:
        sub = self.subscription
        assert sub is not None and self.client_instance_id is not None
        terminating = self.state is TelemetryState.TERMINATING_PUSH_NEEDED
        role = self.role or infer_role(metrics)
        points = self._collector.collect(metrics, role, sub.prefixes, now=now, delta=sub.delta)
        limit = sub.max_bytes if self._size_cap is None else min(sub.max_bytes, self._size_cap)
        payload = build_payload(
            self._collector.resource,
            points,
            compression=sub.compression,
            max_bytes=limit,
            version=self._version,
        )
        if payload is None:
            # Not even an empty MetricsData fits: skip this push.
            if terminating:
                self._goto(TelemetryState.TERMINATED)
            else:
                self._wait_push(now)
            return None
        self._goto(
            TelemetryState.TERMINATING_PUSH_IN_PROGRESS
            if terminating
            else TelemetryState.PUSH_IN_PROGRESS
        )
        self._last_size = len(payload.data)
        return PushTelemetryRequest(
            client_instance_id=self.client_instance_id,
            subscription_id=sub.subscription_id,
            terminating=terminating,
            compression_type=payload.compression,
            metrics=payload.data,
        )

    def _subscribed(self, response: GetTelemetrySubscriptionsResponse, now: float) -> None:
        self._failures = 0
        first = self.client_instance_id is None
        if response.client_instance_id != _ZERO_UUID:
            self.client_instance_id = response.client_instance_id
        if self.client_instance_id is None:
            self._disable(None, "the broker assigned no client instance id")
            return
        interval = response.push_interval_ms
        if interval <= 0:
            interval = DEFAULT_PUSH_INTERVAL_MS
        self.subscription = sub = Subscription(
            subscription_id=response.subscription_id,
            prefixes=tuple(response.requested_metrics),
            push_interval_ms=interval,
            compression=choose_compression(response.accepted_compression_types),
            max_bytes=response.telemetry_max_bytes,
            delta=response.delta_temporality,
        )
        self._size_cap = None
        if not sub.prefixes:
            # KIP-714: nothing wanted now; ask again after the interval, so that
            # a subscription the operator adds later is found without a restart.
            self._goto(TelemetryState.SUBSCRIPTION_NEEDED)
            self._deadlines.set("subscribe", now + interval / 1000)
            return
        scale = self._rng.uniform(*FIRST_PUSH_JITTER) if first else 1.0
        self._goto(TelemetryState.PUSH_NEEDED)
        self._deadlines.set("push", now + interval * scale / 1000)

    def _wait_push(self, now: float) -> None:
        sub = self.subscription
        assert sub is not None
        self._goto(TelemetryState.PUSH_NEEDED)
        self._deadlines.set("push", now + sub.push_interval_ms / 1000)

    def _failed(self, answer: Answer[TelemetryResponse], now: float, *, subscribing: bool) -> None:
        if isinstance(answer, BaseException):
            if isinstance(answer, NoCommonVersionError):
                self._disable(answer, _NOT_OFFERED)
            else:
                self._retry_later(answer, now)
            return
        code = answer.error_code
        action = ERROR_ACTIONS.get(code, ErrorAction.DISABLE)
        cause = _BrokerCode(code)
        if action is ErrorAction.DISABLE:
            self._disable(cause, f"the broker answered error code {code}")
        elif action is ErrorAction.RESUBSCRIBE and not subscribing:
            self.last_error = cause
            self._goto(TelemetryState.SUBSCRIPTION_NEEDED)  # due at once
        elif action is ErrorAction.WAIT_INTERVAL and not subscribing:
            self.last_error = cause
            if code == ErrorCode.TELEMETRY_TOO_LARGE:
                self._size_cap = max(1, self._last_size // 2)
            self._wait_push(now)
        else:
            self._retry_later(cause, now)

    def _retry_later(self, error: BaseException, now: float) -> None:
        self.last_error = error
        self._failures += 1
        base, cap = self._backoff_ms
        raw = min(base * (1 << min(self._failures - 1, 30)), cap)
        delay_ms = raw * (1 + self._rng.uniform(-_BACKOFF_JITTER, _BACKOFF_JITTER))
        self._goto(TelemetryState.SUBSCRIPTION_NEEDED)
        self._deadlines.set("subscribe", now + delay_ms / 1000)

    def _disable(self, error: BaseException | None, why: str) -> None:
        self.last_error = error
        self._deadlines = Deadlines()
        self._goto(TelemetryState.DISABLED, why=why)

    def _goto(self, new: TelemetryState, *, why: str | None = None) -> None:
        if new not in TRANSITIONS[self.state]:
            raise AssertionError(f"telemetry: {self.state.name} -> {new.name}")
        old, self.state = self.state, new
        if self._trace is not None:
            self._trace("telemetry", old=old.value, state=new.value, why=why, error=self.last_error)


class _BrokerCode(Exception):
    """A telemetry error code, kept as ``last_error`` (never raised at a caller)."""

    def __init__(self, code: int) -> None:
        super().__init__(f"client telemetry: broker error code {code}")
        self.code = code

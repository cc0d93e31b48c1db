"""Client metrics as KIP-714 names them, read from the client core's snapshots.

Theory of operation
-------------------
The client core counts as it goes (:class:`~kafkacore.client.metrics.ClientMetrics`,
a frozen snapshot). :class:`TelemetryCollector` turns two successive
snapshots into OTLP points named the way the Java client names the same
metrics (``org.apache.kafka`` + the metric group without ``-metrics`` + the
metric name, dashes as dots: the producer's ``connection-creation-total``
is ``org.apache.kafka.producer.connection.creation.total``). Per counter:

* ``<ns>.<name>.total``: a monotonic sum, cumulative since the client
  started, or the change since the previous push when the broker asked for
  delta temporality (KIP-714 ``DeltaTemporality``);
* ``<ns>.<name>.rate``: a gauge, the change per second since the previous
  push (since the client started, for the first one);

plus ``<ns>.request.latency.avg`` (ms, over the responses since the
previous push, when there were any). The namespace is the client's role:
what it has sent tells a producer (Produce) from a consumer (Fetch, group
membership, share fetches); an owner may also say it (:class:`TelemetryRole`).

Only the metrics whose names start with one of the subscription's
prefixes are sent (KIP-714 ``RequestedMetrics``; ``*`` or ``""`` alone: all
of them; none: nothing).

Times are Unix nanoseconds: ``now`` (the transport's monotonic clock) plus
``wall_offset`` (Unix time minus that clock, in seconds). The core reads no
wall clock, so the offset is what the transport measured and handed in
(``KafkaClientCore(wall_offset=)``, ``set_wall_offset``); at 0, the default,
the timestamps count from the transport clock's origin (near 1970 for a
collector). A wall clock stepped while the client runs is not followed: the
offset is measured once, when the transport starts the core.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import TYPE_CHECKING, Final

from kafkacore.protocol.enums import ApiKey
from kafkacore.telemetry.otlp import Attributes, MetricKind, MetricPoint, Temporality

if TYPE_CHECKING:
    from kafkacore.client.metrics import ClientMetrics

__all__ = ["COUNTERS", "TelemetryCollector", "TelemetryRole", "infer_role", "selected"]


class TelemetryRole(Enum):
    """Which client the metrics describe: the namespace of their names."""

    PRODUCER = "org.apache.kafka.producer"
    CONSUMER = "org.apache.kafka.consumer"
    #: A bare client or an admin client: neither a producer nor a consumer.
    CLIENT = "org.apache.kafka.client"


_CONSUMER_APIS: Final = (
    ApiKey.FETCH,
    ApiKey.JOIN_GROUP,
    ApiKey.CONSUMER_GROUP_HEARTBEAT,
    ApiKey.SHARE_FETCH,
    ApiKey.SHARE_GROUP_HEARTBEAT,
)

#: (metric name without namespace, ClientMetrics field, unit, description).
COUNTERS: Final = (
    ("connection.creation", "connections_opened", "{connection}", "Connections opened"),
    ("connection.close", "connections_closed", "{connection}", "Connections closed"),
    ("request", "requests_sent", "{request}", "Requests sent"),
    ("response", "responses_received", "{response}", "Responses received"),
    ("outgoing.byte", "bytes_sent", "By", "Bytes sent to brokers"),
    ("incoming.byte", "bytes_received", "By", "Bytes received from brokers"),
    ("failed.authentication", "authentication_failures", "{connection}", "Failed logins"),
)

_NS_PER_S: Final = 1_000_000_000


def infer_role(metrics: ClientMetrics) -> TelemetryRole:
    """The role what the client has sent shows (Produce: a producer; ...)."""
    sent = metrics.requests_by_api
    if sent.get(ApiKey.PRODUCE, 0):
        return TelemetryRole.PRODUCER
    if any(sent.get(api, 0) for api in _CONSUMER_APIS):
        return TelemetryRole.CONSUMER
    return TelemetryRole.CLIENT


def selected(name: str, prefixes: Sequence[str]) -> bool:
    """Whether a subscription's ``RequestedMetrics`` asks for metric ``name``."""
    return any(p == "*" or name.startswith(p) for p in prefixes)


class TelemetryCollector:
    """Successive snapshots -> points; remembers the previous one for deltas and rates."""

    __slots__ = ("_attributes", "_previous", "_previous_at", "_start", "wall_offset")

    def __init__(self, *, client_id: str, start: float, wall_offset: float = 0.0) -> None:
        self._attributes: Attributes = (("client_id", client_id),)
        self._start = start
        #: Unix time minus the transport's clock, in seconds (see the module docstring).
        self.wall_offset = wall_offset
        self._previous: ClientMetrics | None = None
        self._previous_at = start

    @property
    def resource(self) -> Attributes:
        """The OTLP resource attributes of this client."""
        return self._attributes

    def _ns(self, t: float) -> int:
        """Transport time ``t`` as Unix nanoseconds (never negative: OTLP's field is unsigned)."""
        return max(0, round(t * _NS_PER_S) + round(self.wall_offset * _NS_PER_S))

    def collect(
        self,
        metrics: ClientMetrics,
        role: TelemetryRole,
        prefixes: Sequence[str],
        *,
        now: float,
        delta: bool,
    ) -> list[MetricPoint]:
        """The subscribed points at ``now``; ``metrics`` becomes the previous snapshot."""
        prev, prev_at = self._previous, self._previous_at
        self._previous, self._previous_at = metrics, now
        elapsed = now - prev_at
        at = self._ns(now)
        ns = role.value
        points: list[MetricPoint] = []
        for name, field, unit, what in COUNTERS:
            value: int = getattr(metrics, field)
            before: int = 0 if prev is None else getattr(prev, field)
            points.append(
                MetricPoint(
                    name=f"{ns}.{name}.total",
                    kind=MetricKind.SUM,
                    value=value - before if delta else value,
                    time_ns=at,
                    start_ns=self._ns(prev_at if delta else self._start),
                    temporality=Temporality.DELTA if delta else Temporality.CUMULATIVE,
                    unit=unit,
                    description=f"{what}, in total",
                    attributes=self._attributes,
                )
            )
            if elapsed > 0:
                rate = (value - before) / elapsed
                per_s = f"{what}, per second"
                points.append(self._gauge(f"{ns}.{name}.rate", rate, at, f"{unit}/s", per_s))
        latency = metrics.latency
        count = latency.count - (0 if prev is None else prev.latency.count)
        if count > 0:
            total = latency.total_ms - (0.0 if prev is None else prev.latency.total_ms)
            what = "Request latency, average since the previous push"
            points.append(self._gauge(f"{ns}.request.latency.avg", total / count, at, "ms", what))
        return [p for p in points if selected(p.name, prefixes)]

    def _gauge(self, name: str, value: float, at: int, unit: str, what: str) -> MetricPoint:
        return MetricPoint(
            name=name,
            kind=MetricKind.GAUGE,
            value=value,
            time_ns=at,
            unit=unit,
            description=what,
            attributes=self._attributes,
        )

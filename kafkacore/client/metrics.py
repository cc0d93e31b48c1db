"""Counters of the client core, readable as an immutable snapshot.

No logging and no clock: the core counts as it goes and
:meth:`Counters.snapshot` copies the numbers into a frozen
:class:`ClientMetrics`. Latencies are response-minus-send times measured
with the transport's ``now`` values.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["ClientMetrics", "Counters", "LatencySummary"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LatencySummary:
    """Request latency in milliseconds over all responses so far."""

    count: int = 0
    total_ms: float = 0.0
    min_ms: float | None = None
    max_ms: float | None = None

    @property
    def avg_ms(self) -> float | None:
        return self.total_ms / self.count if self.count else None


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientMetrics:
    """One immutable snapshot of the counters (see :meth:`KafkaClientCore.metrics`)."""

    prefix: str = ""
    requests_sent: int = 0
    responses_received: int = 0
    requests_failed: int = 0
    requests_timed_out: int = 0
    requests_cancelled: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    connections_opened: int = 0
    connections_ready: int = 0
    connection_failures: int = 0
    connections_closed: int = 0
    reconnects: int = 0
    authentication_failures: int = 0
    metadata_updates: int = 0
    metadata_failures: int = 0
    rebootstraps: int = 0
    latency: LatencySummary = field(default_factory=LatencySummary)
    requests_by_api: Mapping[int, int] = field(default_factory=lambda: MappingProxyType({}))


class Counters:
    """The mutable side, owned by the core."""

    __slots__ = (
        "authentication_failures",
        "by_api",
        "bytes_received",
        "bytes_sent",
        "connection_failures",
        "connections_closed",
        "connections_opened",
        "connections_ready",
        "lat_count",
        "lat_max",
        "lat_min",
        "lat_total",
        "metadata_failures",
        "metadata_updates",
        "prefix",
        "rebootstraps",
        "reconnects",
        "requests_cancelled",
        "requests_failed",
        "requests_sent",
        "requests_timed_out",
        "responses_received",
    )

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self.requests_sent = 0
        self.responses_received = 0
        self.requests_failed = 0
        self.requests_timed_out = 0
        self.requests_cancelled = 0
        self.bytes_sent = 0
        self.bytes_received = 0
        self.connections_opened = 0
        self.connections_ready = 0
        self.connection_failures = 0
        self.connections_closed = 0
        self.reconnects = 0
        self.authentication_failures = 0
        self.metadata_updates = 0
        self.metadata_failures = 0
        self.rebootstraps = 0
        self.lat_count = 0
        self.lat_total = 0.0
        self.lat_min: float | None = None
        self.lat_max: float | None = None
        self.by_api: Counter[int] = Counter()

    def latency(self, ms: float) -> None:
        self.lat_count += 1
        self.lat_total += ms
        self.lat_min = ms if self.lat_min is None else min(self.lat_min, ms)
        self.lat_max = ms if self.lat_max is None else max(self.lat_max, ms)

    def snapshot(self) -> ClientMetrics:
        return ClientMetrics(
            prefix=self.prefix,
            requests_sent=self.requests_sent,
            responses_received=self.responses_received,
            requests_failed=self.requests_failed,
            requests_timed_out=self.requests_timed_out,
            requests_cancelled=self.requests_cancelled,
            bytes_sent=self.bytes_sent,
            bytes_received=self.bytes_received,
            connections_opened=self.connections_opened,
            connections_ready=self.connections_ready,
            connection_failures=self.connection_failures,
            connections_closed=self.connections_closed,
            reconnects=self.reconnects,
            authentication_failures=self.authentication_failures,
            metadata_updates=self.metadata_updates,
            metadata_failures=self.metadata_failures,
            rebootstraps=self.rebootstraps,
            latency=LatencySummary(
                count=self.lat_count,
                total_ms=self.lat_total,
                min_ms=self.lat_min,
                max_ms=self.lat_max,
            ),
            requests_by_api=MappingProxyType(dict(self.by_api)),
        )

"""Shared builders for the telemetry tests."""

from __future__ import annotations

import random
import uuid
from types import MappingProxyType
from typing import Any

from kafkacore.client.metrics import ClientMetrics, LatencySummary
from kafkacore.protocol.messages import (
    GetTelemetrySubscriptionsResponse,
    PushTelemetryResponse,
)
from kafkacore.telemetry import TelemetryMachine

INSTANCE = uuid.UUID("6f1c0b8e-2f44-4c5e-9d5e-0123456789ab")
ALL_CODECS = [4, 3, 1, 2]  # zstd, lz4, gzip, snappy (the broker's list)


def subscription(**fields: Any) -> GetTelemetrySubscriptionsResponse:
    values: dict[str, Any] = {
        "client_instance_id": INSTANCE,
        "subscription_id": 5,
        "accepted_compression_types": list(ALL_CODECS),
        "push_interval_ms": 1000,
        "telemetry_max_bytes": 1 << 20,
        "delta_temporality": False,
        "requested_metrics": ["org.apache.kafka."],
    }
    values.update(fields)
    return GetTelemetrySubscriptionsResponse(**values)


def pushed(error_code: int = 0) -> PushTelemetryResponse:
    return PushTelemetryResponse(error_code=error_code)


def snapshot(
    *, by_api: dict[int, int] | None = None, latency: tuple[int, float] = (0, 0.0), **counts: int
) -> ClientMetrics:
    count, total = latency
    return ClientMetrics(
        requests_by_api=MappingProxyType(dict(by_api or {})),
        latency=LatencySummary(count=count, total_ms=total),
        **counts,
    )


def machine(seed: int = 0, *, now: float = 0.0, **kw: Any) -> TelemetryMachine:
    return TelemetryMachine(rng=random.Random(seed), now=now, client_id="c1", version="9.9", **kw)

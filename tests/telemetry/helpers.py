"""Shared builders for the telemetry tests."""

from __future__ import annotations

import random
import uuid
from types import MappingProxyType
from typing import Any

from kafkacore.client.config import ClientConfig
from kafkacore.client.core import KafkaClientCore
from kafkacore.client.metrics import ClientMetrics, LatencySummary
from kafkacore.protocol.enums import ApiKey
from kafkacore.protocol.messages import (
    GetTelemetrySubscriptionsResponse,
    MetadataRequest,
    PushTelemetryResponse,
)
from kafkacore.telemetry import TelemetryMachine
from tests.client.fakebroker import FakeBroker, Pump, make_cluster

TELEMETRY_APIS = (ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY)
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


# ------------------------------------------------------- the core on fake brokers
def with_plugin(broker: FakeBroker, **fields: Any) -> None:
    """A broker with a telemetry plugin: advertises and answers both APIs."""
    broker.cluster.api_ranges[ApiKey.GET_TELEMETRY_SUBSCRIPTIONS] = (0, 0)
    broker.cluster.api_ranges[ApiKey.PUSH_TELEMETRY] = (0, 0)
    broker.handlers[ApiKey.GET_TELEMETRY_SUBSCRIPTIONS] = lambda b, body, v, s: subscription(
        **fields
    )
    broker.handlers[ApiKey.PUSH_TELEMETRY] = lambda b, body, v, s: pushed()


def without_plugin(broker: FakeBroker) -> None:
    """A broker without one: like Kafka 4.3.1, it does not advertise the APIs."""
    for api in TELEMETRY_APIS:
        broker.cluster.api_ranges.pop(api, None)


def start_core(
    plugin: bool, *, seed: int = 0, wall_offset: float = 0.0, **config: Any
) -> tuple[KafkaClientCore, Pump, FakeBroker]:
    """A bare client core on one fake broker, with or without a telemetry plugin."""
    _, fakes = make_cluster(1)
    (broker,) = fakes.values()
    if plugin:
        with_plugin(broker)
    else:
        without_plugin(broker)
    core = KafkaClientCore(
        ClientConfig(bootstrap_servers="127.0.0.1:9092", **config),
        now=0.0,
        rng=random.Random(seed),
        wall_offset=wall_offset,
    )
    pump = Pump(core, fakes)
    return core, pump, broker


def sent(broker: FakeBroker, api: int) -> list[Any]:
    """The bodies of the ``api`` requests ``broker`` received, in order."""
    return [body for key, _, body in broker.received if key == api]


def connect(core: KafkaClientCore, pump: Pump) -> None:
    """A READY connection to the broker (the bootstrap one closed after metadata)."""
    pump.run(until=lambda: core.cluster.update_count > 0)
    handle = core.send(MetadataRequest(topics=[]), now=pump.now)
    pump.run(until=lambda: handle.done)
    assert core._pool.any_ready()

"""Metric names, roles, deltas, rates and the prefix filter."""

from __future__ import annotations

import pytest

from kafkacore.protocol.enums import ApiKey
from kafkacore.telemetry.collect import (
    COUNTERS,
    TelemetryCollector,
    TelemetryRole,
    infer_role,
    selected,
)
from kafkacore.telemetry.otlp import MetricKind, Temporality
from tests.telemetry.helpers import snapshot

ALL = ("*",)


@pytest.mark.parametrize(
    ("by_api", "role"),
    [
        ({ApiKey.PRODUCE: 2, ApiKey.FETCH: 1}, TelemetryRole.PRODUCER),
        ({ApiKey.FETCH: 1}, TelemetryRole.CONSUMER),
        ({ApiKey.CONSUMER_GROUP_HEARTBEAT: 1}, TelemetryRole.CONSUMER),
        ({ApiKey.JOIN_GROUP: 1}, TelemetryRole.CONSUMER),
        ({ApiKey.SHARE_FETCH: 1}, TelemetryRole.CONSUMER),
        ({ApiKey.METADATA: 9}, TelemetryRole.CLIENT),
        ({}, TelemetryRole.CLIENT),
    ],
)
def test_role_from_what_the_client_sent(by_api: dict[int, int], role: TelemetryRole) -> None:
    assert infer_role(snapshot(by_api=by_api)) is role


@pytest.mark.parametrize(
    ("prefixes", "name", "wanted"),
    [
        ((), "org.apache.kafka.producer.request.total", False),
        (("*",), "org.apache.kafka.producer.request.total", True),
        (("",), "anything", True),
        (("org.apache.kafka.producer.",), "org.apache.kafka.producer.request.total", True),
        (("org.apache.kafka.producer.",), "org.apache.kafka.consumer.request.total", False),
        (("x", "org.apache.kafka.consumer.req"), "org.apache.kafka.consumer.request.rate", True),
    ],
)
def test_prefix_selection(prefixes: tuple[str, ...], name: str, wanted: bool) -> None:
    assert selected(name, prefixes) is wanted


def test_names_follow_the_java_clients_convention() -> None:
    c = TelemetryCollector(client_id="c", start=0.0)
    points = c.collect(snapshot(), TelemetryRole.PRODUCER, ALL, now=1.0, delta=False)
    names = {p.name for p in points}
    for suffix, _, _, _ in COUNTERS:
        assert f"org.apache.kafka.producer.{suffix}.total" in names
        assert f"org.apache.kafka.producer.{suffix}.rate" in names
    assert "org.apache.kafka.producer.connection.creation.total" in names
    assert all(p.attributes == (("client_id", "c"),) for p in points)
    assert c.resource == (("client_id", "c"),)


def test_cumulative_sums_and_rates_over_the_interval() -> None:
    c = TelemetryCollector(client_id="c", start=10.0, wall_offset=1000.0)
    first = {
        p.name: p
        for p in c.collect(
            snapshot(requests_sent=4), TelemetryRole.CLIENT, ALL, now=12.0, delta=False
        )
    }
    total = first["org.apache.kafka.client.request.total"]
    assert total.kind is MetricKind.SUM and total.temporality is Temporality.CUMULATIVE
    assert total.value == 4
    assert total.start_ns == 1010 * 10**9 and total.time_ns == 1012 * 10**9
    assert first["org.apache.kafka.client.request.rate"].value == pytest.approx(2.0)
    second = {
        p.name: p
        for p in c.collect(
            snapshot(requests_sent=10), TelemetryRole.CLIENT, ALL, now=14.0, delta=False
        )
    }
    assert second["org.apache.kafka.client.request.total"].value == 10
    assert second["org.apache.kafka.client.request.total"].start_ns == 1010 * 10**9
    assert second["org.apache.kafka.client.request.rate"].value == pytest.approx(3.0)


def test_delta_temporality_sends_the_change_since_the_previous_push() -> None:
    c = TelemetryCollector(client_id="c", start=0.0)
    c.collect(snapshot(bytes_sent=100), TelemetryRole.PRODUCER, ALL, now=1.0, delta=True)
    points = {
        p.name: p
        for p in c.collect(
            snapshot(bytes_sent=250), TelemetryRole.PRODUCER, ALL, now=3.0, delta=True
        )
    }
    total = points["org.apache.kafka.producer.outgoing.byte.total"]
    assert total.value == 150 and total.temporality is Temporality.DELTA
    assert total.start_ns == 1 * 10**9 and total.time_ns == 3 * 10**9


def test_no_rate_when_no_time_passed() -> None:
    c = TelemetryCollector(client_id="c", start=5.0)
    points = c.collect(snapshot(), TelemetryRole.CLIENT, ALL, now=5.0, delta=False)
    assert not any(p.name.endswith(".rate") for p in points)


def test_latency_average_over_the_responses_since_the_previous_push() -> None:
    c = TelemetryCollector(client_id="c", start=0.0)
    name = "org.apache.kafka.consumer.request.latency.avg"
    first = c.collect(snapshot(latency=(2, 30.0)), TelemetryRole.CONSUMER, ALL, now=1, delta=False)
    assert {p.name: p.value for p in first}[name] == pytest.approx(15.0)
    second = c.collect(
        snapshot(latency=(4, 130.0)), TelemetryRole.CONSUMER, ALL, now=2, delta=False
    )
    assert {p.name: p.value for p in second}[name] == pytest.approx(50.0)
    idle = c.collect(snapshot(latency=(4, 130.0)), TelemetryRole.CONSUMER, ALL, now=3, delta=False)
    assert name not in {p.name for p in idle}


def test_only_subscribed_metrics() -> None:
    c = TelemetryCollector(client_id="c", start=0.0)
    points = c.collect(
        snapshot(),
        TelemetryRole.PRODUCER,
        ("org.apache.kafka.producer.connection.creation.",),
        now=1.0,
        delta=False,
    )
    assert sorted(p.name for p in points) == [
        "org.apache.kafka.producer.connection.creation.rate",
        "org.apache.kafka.producer.connection.creation.total",
    ]
    assert c.collect(snapshot(), TelemetryRole.PRODUCER, (), now=2.0, delta=False) == []

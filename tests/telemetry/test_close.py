"""The graceful close of the client core (KIP-714's terminating push) and the
wall-clock dates of the points: scripted brokers, jumping time, no sockets."""

from __future__ import annotations

import random
from typing import Any

import pytest
import zstandard
from opentelemetry.proto.metrics.v1 import metrics_pb2

from kafkacore.client.config import ClientConfig
from kafkacore.client.core import KafkaClientCore
from kafkacore.consumer.config import ConsumerConfig
from kafkacore.consumer.core import ConsumerCore
from kafkacore.protocol.enums import ApiKey
from kafkacore.telemetry import TelemetryState
from tests.client.fakebroker import Pump, Topic, make_cluster
from tests.consumer.fake import FakeKafka
from tests.telemetry.helpers import connect, sent, start_core, with_plugin

S = TelemetryState
PUSH = ApiKey.PUSH_TELEMETRY
UNIX_2024 = 1_700_000_000.0  # a wall offset: Unix time at the transport clock's origin


def _subscribed(**config: Any) -> tuple[KafkaClientCore, Pump, Any]:
    """A bare core with a subscription and a READY connection, no push yet."""
    core, pump, broker = start_core(plugin=True, **config)
    telemetry = core.telemetry
    assert telemetry is not None
    pump.run(until=lambda: telemetry.state is S.PUSH_NEEDED)
    connect(core, pump)
    assert sent(broker, PUSH) == []
    return core, pump, broker


def _terminating(broker: Any) -> list[Any]:
    return [p for p in sent(broker, PUSH) if p.terminating]


def _points(push: Any) -> list[Any]:
    data = metrics_pb2.MetricsData.FromString(zstandard.ZstdDecompressor().decompress(push.metrics))
    return [
        point
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
        for point in (*metric.sum.data_points, *metric.gauge.data_points)
    ]


# ------------------------------------------------------------------- the close
def test_begin_close_sends_one_terminating_push_then_says_done() -> None:
    core, pump, broker = _subscribed()
    assert not core.closing and not core.closing_done
    core.begin_close(now=pump.now, timeout_ms=5000)
    assert core.closing
    # Written at once (a bare core steps after a command), not answered yet.
    assert not core.closing_done
    pump.run(until=lambda: core.closing_done)
    (goodbye,) = _terminating(broker)
    telemetry = core.telemetry
    assert telemetry is not None and telemetry.state is S.TERMINATED
    # Asking again, letting time pass, shutting down: still exactly one.
    core.begin_close(now=pump.now, timeout_ms=5000)
    pump.run(max_time=pump.now + 60, rounds=500)
    core.shutdown(now=pump.now)
    pump.drain()
    assert len(sent(broker, PUSH)) == 1 and goodbye.terminating
    assert core.closing_done


def test_the_done_signal_waits_for_the_brokers_answer() -> None:
    core, pump, broker = _subscribed()
    broker.hold = True  # the broker has the push but has not answered
    core.begin_close(now=pump.now, timeout_ms=5000)
    pump.run(rounds=20, jump=False)
    assert len(_terminating(broker)) == 1
    assert not core.closing_done
    pump.release()
    pump.run(until=lambda: core.closing_done, jump=False)


def test_a_broker_that_never_answers_cannot_hold_the_close() -> None:
    core, pump, broker = _subscribed()
    broker.hold = True
    start = pump.now
    core.begin_close(now=start, timeout_ms=2000)
    # The close deadline is the core's: a transport wakes for it.
    assert core.next_deadline() == pytest.approx(start + 2.0)
    pump.run(until=lambda: core.closing_done)
    # Ended by begin_close's timeout, not by the request's (30 s).
    assert pump.now == pytest.approx(start + 2.0)
    telemetry = core.telemetry
    assert telemetry is not None and telemetry.state is S.TERMINATING_PUSH_IN_PROGRESS
    core.shutdown(now=pump.now)
    pump.drain()
    assert len(_terminating(broker)) == 1  # shutdown does not push a second time
    assert core.next_deadline() is None


def test_a_zero_timeout_gives_up_at_the_first_wake() -> None:
    core, pump, broker = _subscribed()
    broker.hold = True
    core.begin_close(now=pump.now, timeout_ms=0)
    assert core.next_deadline() == pump.now
    core.handle_timeout(now=pump.now)
    assert core.closing_done


def test_no_ready_connection_means_nothing_to_say() -> None:
    core, pump, broker = start_core(plugin=True)
    telemetry = core.telemetry
    assert telemetry is not None
    pump.run(until=lambda: telemetry.state is S.PUSH_NEEDED)
    core.close(now=pump.now)  # every connection closed by the user
    pump.drain()
    core.begin_close(now=pump.now, timeout_ms=5000)
    assert core.closing_done and telemetry.state is S.TERMINATED
    pump.run(rounds=50)
    assert sent(broker, PUSH) == []


def test_telemetry_off_closes_as_before() -> None:
    core, pump, broker = start_core(plugin=True, enable_metrics_push=False)
    pump.run(until=lambda: core.cluster.update_count > 0)
    pump.run(rounds=50)
    core.begin_close(now=pump.now, timeout_ms=5000)
    assert core.closing_done  # nothing to wait for
    assert core.pull_actions() == []
    assert core._deadlines.get("close") is None  # no reason to wake for the close
    core.shutdown(now=pump.now)
    assert sent(broker, PUSH) == []
    assert sent(broker, ApiKey.GET_TELEMETRY_SUBSCRIPTIONS) == []


def test_a_broker_without_a_plugin_gets_nothing() -> None:
    core, pump, broker = start_core(plugin=False)
    connect(core, pump)
    telemetry = core.telemetry
    assert telemetry is not None and telemetry.state is S.DISABLED
    core.begin_close(now=pump.now, timeout_ms=5000)
    assert core.closing_done
    assert core.pull_actions() == []
    assert sent(broker, PUSH) == sent(broker, ApiKey.GET_TELEMETRY_SUBSCRIPTIONS) == []


def test_a_broker_that_never_subscribed_us_gets_nothing() -> None:
    # A plugin, but no client metrics subscription matches this client.
    _, fakes = make_cluster(1)
    (broker,) = fakes.values()
    with_plugin(broker, requested_metrics=[])
    core = KafkaClientCore(
        ClientConfig(bootstrap_servers="127.0.0.1:9092"), now=0.0, rng=random.Random(0)
    )
    pump = Pump(core, fakes)
    telemetry = core.telemetry
    assert telemetry is not None
    pump.run(until=lambda: telemetry.subscription is not None)
    assert telemetry.state is S.SUBSCRIPTION_NEEDED  # nothing wanted
    core.begin_close(now=pump.now, timeout_ms=5000)
    assert core.closing_done
    pump.run(rounds=50)
    assert sent(broker, PUSH) == []


def test_close_while_the_subscription_is_asked_sends_nothing() -> None:
    core, pump, broker = start_core(plugin=True)
    telemetry = core.telemetry
    assert telemetry is not None
    # The broker takes the question and never answers it.
    broker.handlers[ApiKey.GET_TELEMETRY_SUBSCRIPTIONS] = lambda b, body, v, s: None
    pump.run(until=lambda: telemetry.state is S.SUBSCRIPTION_IN_PROGRESS)
    core.begin_close(now=pump.now, timeout_ms=5000)
    assert core.closing_done
    pump.run(rounds=50)
    assert sent(broker, PUSH) == []


@pytest.mark.parametrize("timeout_ms", [-1, 1.5, True, None])
def test_a_bad_close_timeout_is_the_callers_mistake(timeout_ms: Any) -> None:
    core, pump, _ = start_core(plugin=True)
    with pytest.raises((TypeError, ValueError), match="begin_close: timeout_ms"):
        core.begin_close(now=pump.now, timeout_ms=timeout_ms)
    assert not core.closing


def test_a_consumer_says_its_own_goodbye_first() -> None:
    # As a transport closes a consumer: its close operation (commit, LeaveGroup),
    # then the client core's graceful close, then shutdown.
    cluster, fakes = make_cluster(1, [Topic("t", 2)])
    cluster.api_ranges[ApiKey.FETCH] = (4, 12)
    FakeKafka().install(fakes)
    (broker,) = fakes.values()
    with_plugin(broker)
    core = ConsumerCore(
        ClientConfig(bootstrap_servers="127.0.0.1:9092"),
        ConsumerConfig(group_id="g"),
        now=0.0,
        rng=random.Random(0),
    )
    pump = Pump(core, fakes)  # type: ignore[arg-type]  # the pump only uses Driven methods
    core.subscribe(["t"], now=pump.now)
    telemetry = core.client.telemetry
    assert telemetry is not None
    pump.run(
        until=lambda: telemetry.state is S.PUSH_NEEDED and bool(sent(broker, ApiKey.SYNC_GROUP)),
        rounds=2000,
    )
    closed = core.close(now=pump.now)
    pump.run(until=lambda: closed.done, rounds=2000)
    assert sent(broker, ApiKey.LEAVE_GROUP)
    core.client.begin_close(now=pump.now, timeout_ms=5000)
    pump.run(until=lambda: core.client.closing_done, rounds=2000)
    core.shutdown(now=pump.now)
    pump.drain()
    order = [api for api, _, _ in broker.received]
    assert order.count(PUSH) == 1 and order[-1] == PUSH
    assert order.index(ApiKey.LEAVE_GROUP) < order.index(PUSH)
    (goodbye,) = sent(broker, PUSH)
    assert goodbye.terminating
    names = {p.name for p in metrics_pb2.MetricsData.FromString(
        zstandard.ZstdDecompressor().decompress(goodbye.metrics)
    ).resource_metrics[0].scope_metrics[0].metrics}  # fmt: skip
    assert "org.apache.kafka.consumer.request.total" in names


# ------------------------------------------------------------------ wall clock
def test_points_are_dated_in_unix_nanoseconds_from_the_offset() -> None:
    _, pump, broker = start_core(plugin=True, wall_offset=UNIX_2024)
    pump.run(until=lambda: bool(sent(broker, PUSH)), rounds=2000)
    at = pump.now  # the push was built at this transport time
    points = _points(sent(broker, PUSH)[0])
    assert points
    want = round(at * 1e9) + round(UNIX_2024 * 1e9)
    assert {p.time_unix_nano for p in points} == {want}
    # Cumulative sums start when the client did (transport time 0).
    starts = {p.start_time_unix_nano for p in points if p.start_time_unix_nano}
    assert starts == {round(UNIX_2024 * 1e9)}


def test_an_offset_set_later_dates_the_next_points() -> None:
    core, pump, broker = _subscribed()
    core.set_wall_offset(UNIX_2024)
    core.begin_close(now=pump.now, timeout_ms=5000)
    pump.run(until=lambda: core.closing_done)
    points = _points(_terminating(broker)[0])
    assert {p.time_unix_nano for p in points} == {round(pump.now * 1e9) + round(UNIX_2024 * 1e9)}


def test_without_an_offset_points_count_from_the_clocks_origin() -> None:
    core, pump, broker = _subscribed()
    core.begin_close(now=pump.now, timeout_ms=5000)
    pump.run(until=lambda: core.closing_done)
    points = _points(_terminating(broker)[0])
    assert {p.time_unix_nano for p in points} == {round(pump.now * 1e9)}


@pytest.mark.parametrize(
    ("offset", "error"),
    [("1", TypeError), (True, TypeError), (float("nan"), ValueError), (float("inf"), ValueError)],
)
def test_a_bad_wall_offset_is_the_callers_mistake(offset: Any, error: type[Exception]) -> None:
    core, _, _ = start_core(plugin=True)
    with pytest.raises(error, match="wall_offset"):
        core.set_wall_offset(offset)
    with pytest.raises(error, match="wall_offset"):
        start_core(plugin=True, wall_offset=offset)

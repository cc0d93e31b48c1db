"""The client core drives telemetry: scripted brokers, jumping time, no sockets."""

from __future__ import annotations

from typing import Any

import pytest
import zstandard
from opentelemetry.proto.metrics.v1 import metrics_pb2

from kafkacore.client.config import ClientConfig
from kafkacore.client.driver import WriteData
from kafkacore.client.events import RequestCompleted
from kafkacore.options import Role, split_options
from kafkacore.protocol.enums import ApiKey, ErrorCode
from kafkacore.protocol.messages import MetadataRequest
from kafkacore.telemetry import TelemetryState
from tests.telemetry.helpers import INSTANCE, connect, pushed, sent, start_core


def test_shutdown_without_a_connection_just_terminates() -> None:
    core, pump, _ = start_core(plugin=True)
    telemetry = core.telemetry
    assert telemetry is not None
    pump.run(until=lambda: telemetry.state is TelemetryState.PUSH_NEEDED)
    if core._pool.any_ready():
        core.close(now=pump.now)
    core.shutdown(now=pump.now)
    assert telemetry.state is TelemetryState.TERMINATED
    assert not [a for a in core.pull_actions() if isinstance(a, WriteData)]


def test_broker_without_plugin_costs_no_telemetry_request() -> None:
    core, pump, broker = start_core(plugin=False)
    pump.run(until=lambda: core.cluster.update_count > 0)
    pump.run(max_time=3600.0, rounds=2000)
    assert sent(broker, ApiKey.GET_TELEMETRY_SUBSCRIPTIONS) == []
    assert sent(broker, ApiKey.PUSH_TELEMETRY) == []
    telemetry = core.telemetry
    assert telemetry is not None
    assert telemetry.state is TelemetryState.DISABLED  # decided from ApiVersions
    assert telemetry.next_deadline() is None
    metrics = core.metrics()
    assert metrics.requests_failed == 0  # not even a local attempt
    assert ApiKey.GET_TELEMETRY_SUBSCRIPTIONS not in metrics.requests_by_api
    # Nothing of it reached the user layer.
    assert not [e for e in pump.events if isinstance(e, RequestCompleted)]


def test_pushes_at_the_brokers_interval_through_the_core() -> None:
    core, pump, broker = start_core(plugin=True, seed=4)
    pump.run(until=lambda: bool(sent(broker, ApiKey.GET_TELEMETRY_SUBSCRIPTIONS)))
    first = sent(broker, ApiKey.GET_TELEMETRY_SUBSCRIPTIONS)[0]
    assert str(first.client_instance_id) == "00000000-0000-0000-0000-000000000000"
    telemetry = core.telemetry
    assert telemetry is not None
    pump.run(until=lambda: telemetry.state is TelemetryState.PUSH_NEEDED)
    due = telemetry.next_deadline()
    assert due is not None
    # The machine's deadline is folded into the core's.
    core_deadline = core.next_deadline()
    assert core_deadline is not None and core_deadline <= due
    pump.run(until=lambda: len(sent(broker, ApiKey.PUSH_TELEMETRY)) >= 3, rounds=5000)
    pushes = sent(broker, ApiKey.PUSH_TELEMETRY)
    assert all(p.client_instance_id == INSTANCE and not p.terminating for p in pushes)
    assert len(sent(broker, ApiKey.GET_TELEMETRY_SUBSCRIPTIONS)) == 1
    data = metrics_pb2.MetricsData.FromString(
        zstandard.ZstdDecompressor().decompress(pushes[-1].metrics)
    )
    names = {m.name for m in data.resource_metrics[0].scope_metrics[0].metrics}
    assert "org.apache.kafka.client.request.total" in names
    assert not [e for e in pump.events if isinstance(e, RequestCompleted)]


def test_unknown_subscription_id_refetches_through_the_core() -> None:
    _, pump, broker = start_core(plugin=True)
    answers = iter([pushed(ErrorCode.UNKNOWN_SUBSCRIPTION_ID)])
    broker.handlers[ApiKey.PUSH_TELEMETRY] = lambda b, body, v, s: next(answers, pushed())
    pump.run(until=lambda: len(sent(broker, ApiKey.PUSH_TELEMETRY)) >= 2, rounds=5000)
    assert len(sent(broker, ApiKey.GET_TELEMETRY_SUBSCRIPTIONS)) == 2
    again = sent(broker, ApiKey.GET_TELEMETRY_SUBSCRIPTIONS)[1]
    assert again.client_instance_id == INSTANCE


def test_shutdown_writes_a_terminating_push_before_closing() -> None:
    core, pump, _ = start_core(plugin=True)
    telemetry = core.telemetry
    assert telemetry is not None
    pump.run(until=lambda: telemetry.state is TelemetryState.PUSH_NEEDED)
    connect(core, pump)
    core.shutdown(now=pump.now)
    actions = core.pull_actions()
    writes = [a for a in actions if isinstance(a, WriteData)]
    assert len(writes) == 1
    assert telemetry.state is TelemetryState.TERMINATED  # its in-flight push was cancelled
    # The bytes are a PushTelemetry marked terminating, written before the close.
    from kafkacore.protocol import framing

    header, body = framing.decode_request(bytes(writes[0].data)[4:])
    assert header.request_api_key == ApiKey.PUSH_TELEMETRY
    assert body.terminating is True
    assert actions.index(writes[0]) == 0


def _written_apis(actions: list[Any]) -> list[int]:
    from kafkacore.protocol import framing

    apis = []
    for action in actions:
        if isinstance(action, WriteData):
            header, _ = framing.decode_request(bytes(action.data)[4:])
            apis.append(header.request_api_key)
    return apis


def test_shutdown_does_not_write_queued_user_requests() -> None:
    core, pump, _ = start_core(plugin=True)
    telemetry = core.telemetry
    assert telemetry is not None
    pump.run(until=lambda: telemetry.state is TelemetryState.PUSH_NEEDED)
    connect(core, pump)
    # 5 requests fill the in-flight limit; 3 more wait in the queue.
    handles = [core.send(MetadataRequest(topics=[]), now=pump.now) for _ in range(8)]
    core.shutdown(now=pump.now)
    assert _written_apis(core.pull_actions()) == [ApiKey.METADATA] * 5
    assert all(h.done and h.error is not None for h in handles)
    # No room for the goodbye either: it is dropped, not forced through.
    assert telemetry.state is TelemetryState.TERMINATED


def test_disabled_by_the_option() -> None:
    core, pump, broker = start_core(plugin=True, enable_metrics_push=False)
    pump.run(until=lambda: core.cluster.update_count > 0)
    pump.run(max_time=3600.0, rounds=500)
    assert core.telemetry is None
    assert sent(broker, ApiKey.GET_TELEMETRY_SUBSCRIPTIONS) == []
    core.shutdown(now=pump.now)


@pytest.mark.parametrize("role", [Role.PRODUCER, Role.CONSUMER, Role.CLIENT, Role.ADMIN])
def test_option_reaches_every_client_kind(role: Role) -> None:
    assert ClientConfig().enable_metrics_push is True  # the Java default
    split = split_options("X", role, "h:1", {"enable_metrics_push": False})
    assert split.client.enable_metrics_push is False


def test_an_idle_client_whose_connections_closed_still_pushes() -> None:
    # The subscription came on the bootstrap connection, which the core then
    # closed (it is no broker of the cluster): nothing else would reconnect a
    # bare client that does nothing, so the due push connects itself.
    core, pump, broker = start_core(plugin=True)
    telemetry = core.telemetry
    assert telemetry is not None
    pump.run(until=lambda: telemetry.state is TelemetryState.PUSH_NEEDED)
    core.close(now=pump.now)
    pump.drain()
    assert not core._pool.any_ready()
    # Due within 1.5 intervals (1 s), long before a metadata refresh (5 min)
    # would open a connection for another reason.
    pump.run(until=lambda: telemetry.pushes == 1, rounds=500, max_time=pump.now + 2.0)
    assert sent(broker, ApiKey.PUSH_TELEMETRY)

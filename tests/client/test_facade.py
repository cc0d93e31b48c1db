"""KafkaClientCore as a facade: the queries, trace hooks and facts its sub-machines serve."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import pytest

from kafkacore.client import (
    ClientConfig,
    ConnectionStateChanged,
    GroupCoordinator,
    KafkaClientCore,
    Node,
)
from kafkacore.client.response_errors import error_codes
from kafkacore.errors import (
    AuthenticationError,
    LocalProtocolError,
    NoBrokersAvailable,
)
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ApiKey, ErrorCode
from tests.client.fakebroker import Pump, boot


def test_trace_hooks_are_added_and_removed() -> None:
    core = KafkaClientCore(now=0.0, rng=random.Random(0))
    seen: list[str] = []

    def hook(name: str, fields: Any) -> None:
        seen.append(name)

    with pytest.raises(LocalProtocolError, match="is not callable"):
        core.add_trace("log")  # type: ignore[arg-type]
    core.add_trace(hook)
    assert core.trace_hooks == (hook,)
    core.close(now=0.0)  # the bootstrap connection: traced
    core.remove_trace(hook)
    assert core.trace_hooks == ()
    with pytest.raises(LocalProtocolError, match="never added"):
        core.remove_trace(hook)
    assert "connection_state" in seen


def test_queries_before_and_after_the_first_connection() -> None:
    config = ClientConfig(client_id="me")
    core = KafkaClientCore(config, now=0.0, rng=random.Random(0))
    assert core.config is config and core.client_id == "me"
    assert core.finalized_features() is None and core.get_api_versions() is None
    with pytest.raises(LocalProtocolError, match="no connection has finished ApiVersions"):
        core.api_version(ApiKey.METADATA)
    core, _pump, _ = boot(1)
    assert core.finalized_features(-1) == {} and core.finalized_features() == {}
    assert core.check_version() == core.get_api_versions()
    assert core.in_flight_request_count() == 0 and core.queued_request_count() == 0


def test_unreachable_from_the_start_once_every_address_failed_its_last_attempt() -> None:
    config = ClientConfig(bootstrap_servers="127.0.0.1:1,127.0.0.1:2")
    core = KafkaClientCore(config, now=0.0, rng=random.Random(0))
    pump = Pump(core, {})
    assert core.unreachable_from_the_start() is None  # nothing tried yet
    pump.run(until=lambda: all(core.node_error(n) is not None for n in (-1, -2)))
    # A state, not a count of rounds: one failure of each address is enough.
    error = core.unreachable_from_the_start()
    assert isinstance(error, NoBrokersAvailable) and "127.0.0.1:1" in str(error)
    assert core.unavailable_cause() is not None


def test_bad_topic_names_and_a_second_shutdown() -> None:
    core = KafkaClientCore(now=0.0, rng=random.Random(0))
    with pytest.raises(LocalProtocolError, match="is not a topic name"):
        core.set_topics(["ok", ""], now=0.0)
    core.shutdown(now=0.0)
    core.shutdown(now=0.0)  # idempotent
    with pytest.raises(LocalProtocolError, match="shut down"):
        core.send(m.MetadataRequest(), now=0.0)


def test_facts_about_forgotten_connections_are_ignored() -> None:
    core = KafkaClientCore(now=0.0, rng=random.Random(0))
    core.pull_actions()
    core.connection_made(999, now=0.0)
    core.connection_failed(999, OSError("x"), now=0.0)
    core.data_received(999, b"x", now=0.0)
    core.connection_lost(999, None, now=0.0)
    assert core.pull_actions() == []


@pytest.mark.parametrize("fact", ["failed", "lost"])
def test_a_tls_refusal_from_the_transport_stops_the_client(fact: str) -> None:
    core = KafkaClientCore(now=0.0, rng=random.Random(0))
    [opened] = core.pull_actions()
    refusal = AuthenticationError("certificate verify failed")
    if fact == "failed":
        core.connection_failed(opened.conn_id, refusal, now=0.0)
    else:
        core.connection_made(opened.conn_id, now=0.0)
        core.connection_lost(opened.conn_id, refusal, now=0.0)
    assert isinstance(core.authentication_error, AuthenticationError)
    assert "certificate verify failed" in str(core.authentication_error)
    closed = [e for e in core.pull_events() if isinstance(e, ConnectionStateChanged) and e.error]
    assert closed and isinstance(closed[-1].error, AuthenticationError)


def test_a_coordinator_that_moved_is_looked_up_again() -> None:
    core, pump, cluster = boot(2)
    cluster.coordinators[(0, "g")] = 1
    calls = {"n": 0}

    def heartbeat(broker: Any, body: Any, version: int, session: Any) -> Any:
        calls["n"] += 1
        code = ErrorCode.NOT_COORDINATOR if calls["n"] == 1 else ErrorCode.NONE
        return m.HeartbeatResponse(error_code=code)

    for broker in pump.brokers.values():
        broker.handlers[ApiKey.HEARTBEAT] = heartbeat
    first = core.send(m.HeartbeatRequest(group_id="g"), now=pump.now)
    pump.run(until=lambda: first.done)
    assert first.result().error_code == ErrorCode.NOT_COORDINATOR
    assert core.cluster.coordinator_for_group("g") is None  # forgotten
    second = core.send(m.HeartbeatRequest(group_id="g"), now=pump.now)
    pump.run(until=lambda: second.done)
    assert second.node_id == 1 and second.target == GroupCoordinator("g")
    finds = [b for f in pump.brokers.values() for k, _, b in f.received if k == 10]
    assert len(finds) == 2


def test_in_flight_map_stays_visible_for_tests() -> None:
    core, pump, _ = boot(1)
    handle = core.send(m.MetadataRequest(topics=[]), target=Node(0), now=pump.now)
    pump.run(until=lambda: handle.id in core._in_flight, jump=False)
    pump.run(until=lambda: handle.done)
    assert handle.id not in core._in_flight


@dataclass
class _Meta:
    attr: str
    struct: type | None


class _Inner:
    FIELDS = (_Meta("error_code", None),)

    def __init__(self, code: int) -> None:
        self.error_code = code


class _Outer:
    FIELDS = (_Meta("inner", _Inner), _Meta("other", _Inner))

    def __init__(self) -> None:
        self.inner = _Inner(ErrorCode.NOT_COORDINATOR)
        self.other: _Inner | None = None


def test_a_single_nested_struct_is_scanned_too() -> None:
    assert error_codes(_Outer()) == {ErrorCode.NOT_COORDINATOR}

"""The per-connection machine, driven through the client core and a fake broker."""

from __future__ import annotations

import random
from typing import Any

import pytest

from kafkacore.client import (
    ClientConfig,
    ConnectionState,
    ConnectionStateChanged,
    KafkaClientCore,
    Node,
)
from kafkacore.client.connection import TRANSITIONS, BrokerConnection, negotiate_version
from kafkacore.errors import (
    AuthenticationError,
    DecodeError,
    KafkaConnectionError,
    KafkaTimeoutError,
    LocalProtocolError,
    NoCommonVersionError,
    RemoteProtocolError,
)
from kafkacore.protocol import messages as m
from kafkacore.protocol.api import APIS
from kafkacore.protocol.messages.api_versions_response import ApiVersion
from tests.client.fakebroker import FakeBroker, Pump, Topic, boot, make_cluster

METADATA = 3


def send_metadata(core: KafkaClientCore, pump: Pump, node: int = 0, **kw: Any) -> Any:
    return core.send(m.MetadataRequest(topics=[]), target=Node(node), now=pump.now, **kw)


def warm(core: KafkaClientCore, pump: Pump, node: int = 0) -> None:
    """Make the connection to ``node`` READY (so that holding replies holds only ours)."""
    h = send_metadata(core, pump, node)
    pump.run(until=lambda: h.done)
    assert h.error is None and core.connected(node)


def test_negotiates_min_of_both_maxima() -> None:
    cluster, fakes = make_cluster(1)
    cluster.api_ranges[METADATA] = (0, 9)
    core = KafkaClientCore(
        ClientConfig(bootstrap_servers="127.0.0.1:9092"), now=0, rng=random.Random(0)
    )
    pump = Pump(core, fakes)
    pump.run(until=lambda: core.cluster.update_count > 0)
    broker = next(iter(fakes.values()))
    assert {v for k, v, _ in broker.received if k == METADATA} == {9}
    assert broker.received[0][:2] == (18, APIS[18].max_version)
    assert core.get_api_versions()[METADATA] == (0, 9)  # type: ignore[index]
    assert core.api_version(METADATA) == 9
    # ours is higher than theirs and vice versa
    assert negotiate_version(3, (0, 13), (0, 9)) == 9
    assert negotiate_version(3, (0, 9), (0, 13)) == 9


def test_no_common_version_names_api_and_both_ranges() -> None:
    core, pump, cluster = boot(1)
    cluster.api_ranges[METADATA] = (14, 20)
    core.close(now=pump.now)
    h = send_metadata(core, pump)
    pump.run(until=lambda: h.done)
    assert isinstance(h.error, NoCommonVersionError)
    text = str(h.error)
    assert "Metadata" in text and "v0-v13" in text and "v14-v20" in text
    with pytest.raises(NoCommonVersionError, match="does not offer"):
        negotiate_version(3, (0, 13), None, name="Metadata")
    with pytest.raises(NoCommonVersionError, match="no codec"):
        negotiate_version(999, None, (0, 1))


def test_api_versions_unsupported_version_retries_at_broker_version_kip511() -> None:
    cluster, fakes = make_cluster(1)
    broker = next(iter(fakes.values()))
    original = broker.handlers.get(18)
    del original

    def old_broker(b: FakeBroker, body: Any, version: int, session: dict[str, Any]) -> Any:
        if version > 2:
            refusal = m.ApiVersionsResponse(
                error_code=35, api_keys=[ApiVersion(api_key=18, min_version=0, max_version=2)]
            )
            return refusal, 0  # a refusal is always encoded in v0
        return m.ApiVersionsResponse(
            api_keys=[
                ApiVersion(api_key=k, min_version=lo, max_version=hi)
                for k, (lo, hi) in sorted(cluster.api_ranges.items())
            ]
        )

    broker.handlers[18] = old_broker
    core = KafkaClientCore(
        ClientConfig(bootstrap_servers="127.0.0.1:9092"), now=0, rng=random.Random(0)
    )
    pump = Pump(core, fakes)
    pump.run(until=lambda: core.cluster.update_count > 0)
    versions = [v for k, v, _ in broker.received if k == 18]
    assert versions == [APIS[18].max_version, 2]


def test_api_versions_refused_twice_closes() -> None:
    _cluster, fakes = make_cluster(1)
    broker = next(iter(fakes.values()))

    def stubborn(b: FakeBroker, body: Any, version: int, session: dict[str, Any]) -> Any:
        return m.ApiVersionsResponse(
            error_code=35, api_keys=[ApiVersion(api_key=18, min_version=0, max_version=3)]
        ), 0

    broker.handlers[18] = stubborn
    core = KafkaClientCore(
        ClientConfig(bootstrap_servers="127.0.0.1:9092"), now=0, rng=random.Random(0)
    )
    pump = Pump(core, fakes)
    pump.run(rounds=20)
    closes = [
        e
        for e in pump.events
        if isinstance(e, ConnectionStateChanged) and e.state is ConnectionState.CLOSED
    ]
    assert closes and isinstance(closes[0].error, RemoteProtocolError)
    assert "refused twice" in str(closes[0].error)


def test_oversized_frame_is_a_protocol_error_not_an_allocation() -> None:
    core, pump, _ = boot(1, max_response_bytes=1024)
    warm(core, pump)
    broker = next(iter(pump.brokers.values()))
    broker.hold = True
    h = send_metadata(core, pump)
    pump.run(until=lambda: bool(pump.held))
    conn_id = pump.held[0][0]
    pump.held.clear()
    pump.inject(conn_id, (2**31 - 1).to_bytes(4, "big") + b"x")
    pump.run(until=lambda: h.done)
    assert isinstance(h.error, KafkaConnectionError)
    assert isinstance(h.error.__cause__, DecodeError)
    assert "2147483647" in str(h.error.__cause__)


def test_wrong_correlation_id_closes_connection() -> None:
    core, pump, _ = boot(1)
    warm(core, pump)
    broker = next(iter(pump.brokers.values()))
    broker.hold = True
    h = send_metadata(core, pump)
    pump.run(until=lambda: bool(pump.held))
    conn_id, reply = pump.held.pop()
    bad = reply[:4] + (12345).to_bytes(4, "big") + reply[8:]
    pump.inject(conn_id, bad)
    pump.run(until=lambda: h.done)
    assert isinstance(h.error, KafkaConnectionError)
    assert isinstance(h.error.__cause__, RemoteProtocolError)
    assert "out of order" in str(h.error.__cause__)


def test_in_flight_limit_and_queueing() -> None:
    core, pump, _ = boot(1, max_in_flight_requests_per_connection=3)
    warm(core, pump)
    broker = next(iter(pump.brokers.values()))
    broker.hold = True
    handles = [send_metadata(core, pump) for _ in range(8)]
    pump.run(rounds=10, jump=False)
    assert core.in_flight_request_count(0) == 3
    assert core.queued_request_count() == 5
    for _ in range(10):
        pump.release()
        pump.run(rounds=5, jump=False)
        assert core.in_flight_request_count() <= 3
    assert all(h.done and h.error is None for h in handles)
    ids = [h.id for h in handles]
    done_order = [e.handle.id for e in pump.completed() if e.handle.id in ids]
    assert done_order == ids  # one connection: responses in request order


def test_request_timeout_closes_connection_and_fails_in_flight() -> None:
    core, pump, _ = boot(1, request_timeout_ms=5000)
    warm(core, pump)
    broker = next(iter(pump.brokers.values()))
    broker.hold = True
    h1 = send_metadata(core, pump)
    pump.run(rounds=5, jump=False)
    h2 = send_metadata(core, pump, timeout_ms=60000)
    pump.run(rounds=5, jump=False)
    assert core.in_flight_request_count(0) == 2
    sent_at = pump.now
    pump.run(until=lambda: h1.done and h2.done)
    assert pump.now == pytest.approx(sent_at + 5.0)
    assert isinstance(h1.error, KafkaTimeoutError)
    assert isinstance(h2.error, KafkaConnectionError)
    assert not core.connected(0)


def test_idle_connection_is_closed_without_error() -> None:
    core, pump, _ = boot(1, connections_max_idle_ms=1000, metadata_max_age_ms=100000)
    h = send_metadata(core, pump)
    pump.run(until=lambda: h.done)
    assert core.connected(0)
    t0 = pump.now
    pump.run(until=lambda: not core.connected(0))
    assert pump.now == pytest.approx(t0 + 1.0)
    closed = [
        e
        for e in pump.events
        if isinstance(e, ConnectionStateChanged)
        and e.node_id == 0
        and e.state is ConnectionState.CLOSED
    ]
    assert closed[-1].error is None
    assert core.connection_delay(0, now=pump.now) == 0  # no backoff after a clean close


def test_connect_setup_timeout() -> None:
    _cluster, fakes = make_cluster(1)
    core = KafkaClientCore(
        ClientConfig(bootstrap_servers="127.0.0.1:9092", socket_connection_setup_timeout_ms=2000),
        now=0.0,
        rng=random.Random(0),
    )
    pump = Pump(core, fakes)
    pump.stall.add(("127.0.0.1", 9092))
    pump.run(
        until=lambda: any(
            isinstance(e, ConnectionStateChanged) and e.state is ConnectionState.CLOSED
            for e in pump.events
        )
    )
    assert pump.now == pytest.approx(2.0)
    assert pump.closed == [1]  # the core told the transport to give up


def test_one_byte_chunks() -> None:
    core, pump, _ = boot(2, [Topic("t", 3)], chunk=1)
    h = core.send(m.MetadataRequest(topics=None), now=pump.now)
    pump.run(until=lambda: h.done)
    assert h.error is None and [t.name for t in h.response.topics] == ["t"]


def test_acks_zero_produce_completes_without_response() -> None:
    core, pump, _ = boot(1, [Topic("t", 1)])
    h = core.send(m.ProduceRequest(acks=0), target=Node(0), now=pump.now)
    pump.run(until=lambda: h.done)
    assert h.error is None and h.response is None
    assert core.in_flight_request_count() == 0


def test_transition_table_is_closed() -> None:
    for state in ConnectionState:
        assert state in TRANSITIONS
        assert all(target in ConnectionState for target in TRANSITIONS[state])
    assert TRANSITIONS[ConnectionState.CLOSED] == frozenset()


def test_connection_direct_misuse() -> None:
    conn = BrokerConnection(
        conn_id=1,
        node_id=0,
        lane="default",
        host="h",
        config=ClientConfig(),
        rng=random.Random(0),
        now=0.0,
    )
    with pytest.raises(LocalProtocolError, match="connecting"):
        conn.version_for(METADATA)
    assert conn.next_deadline() == pytest.approx(10.0)
    conn.connection_made(now=0.0)
    with pytest.raises(LocalProtocolError, match="connection_made"):
        conn.connection_made(now=0.0)
    writes = conn.pull_writes()
    assert len(writes) == 1 and writes[0][4:6] == b"\x00\x12"  # ApiVersions first
    conn.close(None)
    conn.data_received(b"late bytes", now=1.0)  # ignored after close
    assert conn.closed and conn.pull_completions() == []


# -- SASL ---------------------------------------------------------------------------


def sasl_boot(mechanism: str, **kw: Any) -> tuple[KafkaClientCore, Pump, FakeBroker]:
    _cluster, fakes = make_cluster(1)
    broker = next(iter(fakes.values()))
    broker.require_auth = True
    config = dict(
        bootstrap_servers="127.0.0.1:9092",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username="alice",
        sasl_plain_password="alice-secret",
    )
    config.update(kw)
    core = KafkaClientCore(ClientConfig(**config), now=0.0, rng=random.Random(3))  # type: ignore[arg-type]
    pump = Pump(core, fakes)
    return core, pump, broker


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_success(mechanism: str) -> None:
    core, pump, broker = sasl_boot(mechanism)
    pump.run(until=lambda: core.cluster.update_count > 0)
    keys = [k for k, _, _ in broker.received]
    assert keys[:2] == [18, 17] and 36 in keys
    assert keys.index(3) > max(i for i, k in enumerate(keys) if k == 36)
    states = [
        e.state for e in pump.events if isinstance(e, ConnectionStateChanged) and e.node_id == -1
    ]
    assert states[:5] == [
        ConnectionState.CONNECTING,
        ConnectionState.API_VERSIONS,
        ConnectionState.SASL_HANDSHAKE,
        ConnectionState.SASL_AUTHENTICATE,
        ConnectionState.READY,
    ]


def test_sasl_oauthbearer() -> None:
    core, pump, _broker = sasl_boot("OAUTHBEARER", sasl_oauth_token_provider=lambda: "good-token")
    pump.run(until=lambda: core.cluster.update_count > 0)
    assert core.cluster.update_count == 1


@pytest.mark.parametrize(
    ("mechanism", "kw", "match"),
    [
        ("PLAIN", {"sasl_plain_password": "wrong"}, "Authentication failed"),
        ("SCRAM-SHA-512", {"sasl_plain_password": "wrong"}, "Authentication failed"),
        ("OAUTHBEARER", {"sasl_oauth_token_provider": lambda: "bad"}, "Authentication failed"),
    ],
)
def test_sasl_failure_fails_waiting_requests(
    mechanism: str, kw: dict[str, Any], match: str
) -> None:
    core, pump, broker = sasl_boot(mechanism, **kw)
    h = core.send(m.MetadataRequest(topics=[]), now=0.0)
    pump.run(until=lambda: h.done)
    assert isinstance(h.error, AuthenticationError)
    assert match in str(h.error)
    assert core.metrics().authentication_failures >= 1
    assert all(k in (17, 18, 36) for k, _, _ in broker.received)


def test_sasl_mechanism_not_enabled() -> None:
    core, pump, broker = sasl_boot("SCRAM-SHA-256")
    broker.sasl_mechanisms = ["PLAIN"]
    h = core.send(m.MetadataRequest(topics=[]), now=0.0)
    pump.run(until=lambda: h.done)
    assert isinstance(h.error, AuthenticationError)
    assert "broker offers: PLAIN" in str(h.error)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_sasl_reauthentication_kip368(mechanism: str) -> None:
    core, pump, broker = sasl_boot(mechanism, metadata_max_age_ms=3_600_000)
    broker.session_lifetime_ms = 10_000
    h = core.send(m.MetadataRequest(topics=[]), target=Node(0), now=0.0)
    pump.run(until=lambda: h.done)
    authenticated_at = pump.now

    def handshakes() -> int:
        return sum(1 for k, _, _ in broker.received if k == 17)

    before = handshakes()
    pump.run(until=lambda: handshakes() > before, max_time=100.0)
    assert 8.5 - 1e-9 <= pump.now - authenticated_at <= 9.5 + 1e-9
    # A request issued while re-authenticating waits for READY again.
    mark = len(broker.received)
    h2 = core.send(m.MetadataRequest(topics=[]), target=Node(0), now=pump.now)
    pump.run(until=lambda: h2.done)
    assert h2.error is None
    keys = [k for k, _, _ in broker.received[mark:]]
    assert keys.index(3) > max(i for i, k in enumerate(keys) if k == 36)
    assert core.connected(0)

"""ConnectionPool: opening, state reports, forgetting, least loaded, unavailability."""

from __future__ import annotations

import math
import random
from typing import Any

from kafkacore.client.backoff import ExponentialBackoff
from kafkacore.client.config import ClientConfig
from kafkacore.client.connection import BrokerConnection, ConnectionState
from kafkacore.client.driver import CloseConnection, OpenConnection
from kafkacore.client.events import ConnectionStateChanged
from kafkacore.client.health import NodeHealthTable
from kafkacore.client.metadata import ClusterMetadata
from kafkacore.client.metrics import Counters
from kafkacore.client.outputs import Outputs
from kafkacore.client.pool import ConnectionPool, Slot, broker_address
from kafkacore.errors import KafkaConnectionError, NoBrokersAvailable
from kafkacore.protocol import framing
from kafkacore.protocol import messages as m
from kafkacore.protocol.messages.metadata_response import MetadataResponseBroker
from tests.client.fakebroker import FakeBroker, make_cluster

LANE = "default"


def make(
    brokers: int = 0, **config: Any
) -> tuple[ConnectionPool, ClusterMetadata, Outputs, list[tuple[str, dict[str, Any]]]]:
    cfg = ClientConfig(bootstrap_servers="h1:1,[::1]:2", **config)
    cluster = ClusterMetadata(bootstrap_servers=["h1:1", "[::1]:2"])
    if brokers:
        cluster.update_metadata(
            m.MetadataResponse(
                brokers=[
                    MetadataResponseBroker(node_id=n, host="127.0.0.1", port=9092 + n)
                    for n in range(brokers)
                ]
            ),
            now=0.0,
        )
    rng = random.Random(0)
    health = NodeHealthTable(ExponentialBackoff(50, 1000), rng=rng, stable_s=1.0)
    traces: list[tuple[str, dict[str, Any]]] = []
    out = Outputs(Counters(""), (lambda name, fields: traces.append((name, dict(fields))),))
    return ConnectionPool(cfg, cluster, health, rng=rng, out=out), cluster, out, traces


def make_ready(pool: ConnectionPool, node: int, broker: FakeBroker) -> BrokerConnection:
    """Open (node, default lane) and answer its ApiVersions."""
    slot = pool.slot(node, LANE)
    assert pool.open(slot, 0.0)
    conn = slot.conn
    assert conn is not None
    conn.connection_made(now=0.0)
    session: dict[str, Any] = {}
    reader = framing.FrameReader(max_frame_size=1 << 20)
    for data in conn.pull_writes():
        for frame in reader.feed(data):
            reply = broker.respond(frame, session)
            assert reply is not None
            conn.data_received(reply, now=0.0)
    assert conn.ready
    pool.note_state(conn)
    return conn


def test_open_announces_connecting() -> None:
    pool, _, out, traces = make()
    slot = pool.slot(-1, LANE)
    assert pool.slot(-1, LANE) is slot
    assert pool.open(slot, 0.0)
    assert not pool.open(slot, 0.0)  # one connection per slot
    [action] = out.take_actions()
    assert isinstance(action, OpenConnection) and (action.host, action.port) == ("h1", 1)
    [event] = out.take_events()
    assert isinstance(event, ConnectionStateChanged)
    assert event.state is ConnectionState.CONNECTING and event.node_id == -1
    assert traces[0][0] == "connect" and traces[0][1]["peer"] == "bootstrap server h1:1"
    assert out.counters.connections_opened == 1 and out.counters.reconnects == 0
    assert not pool.changed(slot.conn)  # type: ignore[arg-type]
    assert not pool.open(pool.slot(99, LANE), 0.0)  # not in the metadata


def test_ready_is_reported_and_versions_remembered() -> None:
    pool, _, out, _ = make(1)
    _, fakes = make_cluster(1)
    conn = make_ready(pool, 0, fakes[("127.0.0.1", 9092)])
    assert out.counters.connections_ready == 1
    versions = pool.api_versions(0)
    assert versions is not None and versions == pool.api_versions(None)
    assert pool.features(0) == {} and pool.features(5) is None
    assert pool.connection_delay(0, LANE, 0.0) == math.inf
    assert pool.any_ready() and not pool.bootstrap_connected()
    assert pool.in_flight_count(None) == 0 and not pool.dirty()
    assert pool.slots[(0, LANE)].ever_connected
    states = [e.state for e in out.take_events() if isinstance(e, ConnectionStateChanged)]
    assert states == [ConnectionState.CONNECTING, ConnectionState.READY]
    assert pool.conn(0, LANE) is conn


def test_forget_counts_failures_and_asks_to_close() -> None:
    pool, _, out, traces = make()
    slot = pool.slot(-1, LANE)
    pool.open(slot, 0.0)
    conn = slot.conn
    assert conn is not None
    out.take_actions()
    conn.close(KafkaConnectionError("boom"))
    assert pool.forget(conn, 0.0, reported=False, by_user=False)
    assert not pool.forget(conn, 0.0, reported=False, by_user=False)  # once
    assert out.take_actions() == [CloseConnection(conn_id=conn.conn_id)]
    assert slot.conn is None and conn.conn_id not in pool.conns
    assert out.counters.connection_failures == 1 and out.counters.connections_closed == 1
    assert pool.health.blackout_until(-1) > 0.0
    assert pool.connection_delay(-1, LANE, 0.0) > 0.0
    assert [name for name, _ in traces][-2:] == ["connection_state", "reconnect_backoff"]
    assert not pool.open(slot, 0.0)  # backing off


def test_a_close_by_the_user_is_no_failure() -> None:
    pool, _, out, _ = make()
    slot = pool.slot(-1, LANE)
    pool.open(slot, 0.0)
    conn = slot.conn
    assert conn is not None
    conn.close(None)
    pool.note_closed(conn)
    assert pool.forget(conn, 0.0, reported=True, by_user=True)
    assert out.counters.connection_failures == 0
    assert not any(isinstance(a, CloseConnection) for a in out.take_actions())
    assert pool.open(slot, 0.0)  # no backoff
    assert out.counters.reconnects == 0  # it never was READY


def test_least_loaded_prefers_idle_ready_then_connecting_then_new() -> None:
    pool, _, _, _ = make(3)
    _, fakes = make_cluster(3)
    assert pool.least_loaded(0.0, LANE) in {0, 1, 2}  # all can connect
    pool.open(pool.slot(1, LANE), 0.0)
    assert pool.least_loaded(0.0, LANE) == 1  # connecting beats not connected
    make_ready(pool, 2, fakes[("127.0.0.1", 9094)])
    assert pool.least_loaded(0.0, LANE) == 2  # ready and idle first


def test_least_loaded_falls_back_to_bootstrap_when_every_broker_backs_off() -> None:
    pool, _, _, _ = make(1)
    pool.health.failed(0, KafkaConnectionError("x"), now=0.0, ready_since=None)
    assert pool.least_loaded(0.0, LANE) in {-1, -2}
    for node in (-1, -2):
        pool.health.failed(node, KafkaConnectionError("x"), now=0.0, ready_since=None)
    assert pool.least_loaded(0.0, LANE) is None


def test_unavailable_names_every_failed_candidate() -> None:
    pool, _, _, _ = make()
    assert pool.unavailable(bootstrapping=True) is None  # never tried
    pool.health.failed(-1, KafkaConnectionError("refused 1"), now=1.0, ready_since=None)
    assert pool.unavailable(bootstrapping=True) is None  # -2 may still work
    pool.health.failed(-2, KafkaConnectionError("refused 2"), now=2.0, ready_since=None)
    error = pool.unavailable(bootstrapping=True)
    assert isinstance(error, NoBrokersAvailable)
    assert "bootstrap server h1:1: refused 1" in str(error)
    assert "bootstrap server [::1]:2: refused 2" in str(error)
    assert str(error.__cause__) == "refused 2"  # the most recent


def test_unavailable_lists_three_and_counts_the_rest() -> None:
    pool, _, _, _ = make(5)
    for node in range(5):
        pool.health.failed(node, KafkaConnectionError(f"e{node}"), now=0.0, ready_since=None)
    error = pool.unavailable(bootstrapping=False)
    assert error is not None and "; and 2 more" in str(error)


def test_strays_are_nodes_that_left_the_cluster() -> None:
    pool, cluster, _, _ = make(2)
    pool.slot(0, LANE)
    pool.slot(1, LANE)
    pool.health.failed(1, KafkaConnectionError("x"), now=0.0, ready_since=None)
    cluster.update_metadata(
        m.MetadataResponse(brokers=[MetadataResponseBroker(node_id=0, host="h", port=1)]),
        now=1.0,
    )
    assert [s.node_id for s in pool.strays()] == [1]
    pool.drop_strays()
    assert (1, LANE) not in pool.slots and pool.health.get(1) is None
    assert pool.is_disconnected(0, LANE) and not pool.is_disconnected(1, LANE)


def test_naming() -> None:
    pool, _, _, _ = make(1)
    assert pool.describe_node(0) == "broker 0 at 127.0.0.1:9092"
    assert pool.describe_node(-2) == "bootstrap server [::1]:2"
    assert pool.describe_node(7) == "node 7"
    answer = m.MetadataResponse(brokers=[MetadataResponseBroker(node_id=4, host="h1", port=1)])
    assert pool.describe_source(-1, answer) == "broker 4 at h1:1"
    assert pool.describe_source(None, answer) is None
    assert pool.describe_source(0, answer) == "broker 0 at 127.0.0.1:9092"
    assert broker_address(pool._cluster.bootstrap_brokers()[1]) == "[::1]:2"
    assert Slot(node_id=1, lane="x").conn is None

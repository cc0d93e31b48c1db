"""KafkaClientCore: bootstrap, routing, backoff, metadata refresh, lanes and the
seed 004 (KafkaClient) and 000 (kiel Cluster) query surface."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from kafkacore.client import (
    AnyNode,
    BootstrapFailed,
    ClientConfig,
    Controller,
    GroupCoordinator,
    KafkaClientCore,
    MetadataUpdated,
    MetadataUpdateFailed,
    Node,
    PartitionLeader,
    RequestCompleted,
    TopicPartition,
    TransactionCoordinator,
)
from kafkacore.client.backoff import ExponentialBackoff
from kafkacore.errors import (
    KafkaTimeoutError,
    LocalProtocolError,
    NoBrokersAvailable,
    NoCommonVersionError,
    RequestCancelled,
)
from kafkacore.protocol import messages as m
from tests.client.fakebroker import FakeBroker, Pump, Topic, boot, make_cluster


def meta() -> m.MetadataRequest:
    return m.MetadataRequest(topics=[])


def test_bootstrap_tries_each_address() -> None:
    _cluster, fakes = make_cluster(1)
    config = ClientConfig(bootstrap_servers=["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:9092"])
    core = KafkaClientCore(config, now=0.0, rng=random.Random(0))
    pump = Pump(core, fakes)
    pump.run(until=lambda: core.cluster.update_count > 0)
    tried = [(o.host, o.port) for o in pump.opened]
    assert ("127.0.0.1", 9092) in tried
    assert len({p for _, p in tried[:3]}) == len(tried[:3])  # no address tried twice first
    assert not any(isinstance(e, BootstrapFailed) for e in pump.events)


def test_no_brokers_available_when_all_fail() -> None:
    config = ClientConfig(bootstrap_servers="127.0.0.1:1,127.0.0.1:2", request_timeout_ms=3000)
    core = KafkaClientCore(config, now=0.0, rng=random.Random(0))
    pump = Pump(core, {})
    h = core.send(meta(), now=0.0)
    pump.run(until=lambda: h.done)
    assert isinstance(h.error, NoBrokersAvailable)
    assert "127.0.0.1:1" in str(h.error) and "127.0.0.1:2" in str(h.error)
    failed = [e for e in pump.events if isinstance(e, BootstrapFailed)]
    assert failed and isinstance(failed[0].error, NoBrokersAvailable)
    assert any(isinstance(e, MetadataUpdateFailed) for e in pump.events)
    # Reported when the request's own timeout passed (issue 26), not when the
    # first round of refusals ended (a broker may be a moment late).
    assert pump.now == pytest.approx(3.0)


def test_reconnect_backoff_is_exponential_with_jitter() -> None:
    config = ClientConfig(
        bootstrap_servers="127.0.0.1:1", reconnect_backoff_ms=50, reconnect_backoff_max_ms=1000
    )
    core = KafkaClientCore(config, now=0.0, rng=random.Random(0))
    pump = Pump(core, {})
    backoff = ExponentialBackoff(50, 1000)
    delays: list[float] = []
    for failures in range(1, 10):
        pump.run(until=lambda f=failures: len(pump.opened) >= f)  # type: ignore[misc]
        pump.step()  # the refusal
        delay = core.connection_delay(-1, now=pump.now)
        low, high = backoff.bounds_ms(failures)
        assert low - 1e-6 <= delay <= high + 1e-6, (failures, delay)
        delays.append(delay)
    assert delays[0] < 60.1 and delays[-1] > 800  # grew from ~50 ms to the ~1 s cap
    assert len(set(delays[-3:])) == 3  # jittered, not constant
    assert core.metrics().connection_failures == 9


def test_request_waits_for_connection_until_deadline() -> None:
    _cluster, fakes = make_cluster(1)
    core = KafkaClientCore(
        ClientConfig(bootstrap_servers="127.0.0.1:9092", request_timeout_ms=3000),
        now=0.0,
        rng=random.Random(0),
    )
    pump = Pump(core, fakes)
    pump.stall.add(("127.0.0.1", 9092))
    h = core.send(meta(), now=0.0, timeout_ms=1500)
    pump.run(until=lambda: h.done)
    assert isinstance(h.error, KafkaTimeoutError)
    assert pump.now == pytest.approx(1.5)
    assert "not connected" in str(h.error) or "connecting" in str(h.error)


def test_routing_targets() -> None:
    topics = [Topic("t", 2, {0: 1, 1: 2})]
    core, pump, cluster = boot(3, topics)
    cluster.coordinators[(0, "g")] = 2
    cluster.coordinators[(1, "tx")] = 1
    cluster.controller_id = 1
    core.request_metadata_update(now=pump.now)
    pump.run(until=lambda: core.cluster.controller_id == 1)
    targets: list[tuple[Any, int]] = [
        (Node(0), 0),
        (PartitionLeader("t", 0), 1),
        (PartitionLeader("t", 1), 2),
        (GroupCoordinator("g"), 2),
        (TransactionCoordinator("tx"), 1),
        (Controller(), 1),
    ]
    handles = [(core.send(meta(), target=t, now=pump.now), want) for t, want in targets]
    any_handle = core.send(meta(), target=AnyNode(), now=pump.now)
    pump.run(until=lambda: all(h.done for h, _ in handles) and any_handle.done)
    for h, want in handles:
        assert h.error is None, h.error
        assert h.node_id == want, (h.target, h.node_id)
    assert any_handle.node_id in (0, 1, 2)
    # FindCoordinator was batched (v4+, KIP-699)
    finds = [b for f in pump.brokers.values() for k, v, b in f.received if k == 10]
    assert finds and all(v_keys for v_keys in (b.coordinator_keys for b in finds))


def test_unknown_leader_triggers_metadata_and_tracks_topic() -> None:
    core, pump, cluster = boot(2)
    h = core.send(meta(), target=PartitionLeader("late", 0), now=pump.now)
    pump.run(rounds=20, jump=False)
    assert not h.done and "late" in core.topics
    cluster.topics["late"] = Topic("late", 1, {0: 1})
    pump.run(until=lambda: h.done)
    assert h.error is None and h.node_id == 1


def test_invalidating_error_triggers_refresh_with_backoff() -> None:
    core, pump, _ = boot(2, [Topic("t", 1, {0: 0})], retry_backoff_ms=100)
    w = core.add_topic("t", now=pump.now)
    pump.run(until=lambda: w.done)

    def not_leader(b: FakeBroker, body: Any, version: int, s: dict[str, Any]) -> Any:
        from kafkacore.protocol.messages.produce_response import (
            PartitionProduceResponse,
            TopicProduceResponse,
        )

        return m.ProduceResponse(
            responses=[
                TopicProduceResponse(
                    name="t",
                    partition_responses=[PartitionProduceResponse(index=0, error_code=6)],
                )
            ]
        )

    for broker in pump.brokers.values():
        broker.handlers[0] = not_leader
    updates = core.cluster.update_count
    last_update_at = pump.now
    h = core.send(m.ProduceRequest(acks=1), target=PartitionLeader("t", 0), now=pump.now)
    pump.run(until=lambda: h.done, jump=False)
    assert h.error is None  # error codes inside responses are for the caller
    assert core.cluster.need_update
    pump.run(until=lambda: core.cluster.update_count > updates)
    # the refresh waited retry_backoff_ms after the previous one, not metadata_max_age_ms
    assert pump.now == pytest.approx(last_update_at + 0.1)


def test_missing_coordinator_is_looked_up_only_while_needed() -> None:
    core, pump, _ = boot(1, retry_backoff_ms=100)

    def unavailable(b: FakeBroker, body: Any, version: int, s: dict[str, Any]) -> Any:
        from kafkacore.protocol.messages.find_coordinator_response import Coordinator

        return m.FindCoordinatorResponse(
            coordinators=[
                Coordinator(key=k, node_id=-1, host="", port=-1, error_code=15)
                for k in body.coordinator_keys
            ]
        )

    broker = next(iter(pump.brokers.values()))
    broker.handlers[10] = unavailable
    h = core.send(meta(), target=GroupCoordinator("g"), timeout_ms=1000, now=pump.now)
    pump.run(until=lambda: h.done)
    assert isinstance(h.error, KafkaTimeoutError)
    assert "no known coordinator" in str(h.error)
    lookups = sum(1 for k, _, _ in broker.received if k == 10)
    # Exponential (KIP-580): at 0, ~0.1, ~0.3, ~0.7 s within the 1 s, not one per 100 ms.
    assert 3 <= lookups <= 5
    pump.run(rounds=50, max_time=pump.now + 10)
    assert sum(1 for k, _, _ in broker.received if k == 10) <= lookups + 1


def test_metadata_refresh_on_age() -> None:
    core, pump, _ = boot(1, metadata_max_age_ms=5000)
    first = core.cluster.update_count
    t0 = pump.now
    pump.run(until=lambda: core.cluster.update_count > first)
    assert pump.now == pytest.approx(t0 + 5.0)


def test_add_topic_and_set_topics_resolve_on_update() -> None:
    core, pump, _cluster = boot(1, [Topic("a"), Topic("b")])
    w = core.add_topic("a", now=pump.now)
    pump.run(until=lambda: w.done)
    assert w.error is None and core.cluster.topics() == {"a"}
    w2 = core.set_topics(["b"], now=pump.now)
    pump.run(until=lambda: w2.done)
    assert core.cluster.topics() == {"b"} and core.topics == {"b"}
    events = [e for e in pump.events if isinstance(e, MetadataUpdated) and w2 in e.waiters]
    assert len(events) == 1
    with pytest.raises(LocalProtocolError):
        core.add_topic("", now=pump.now)


def test_topic_added_while_metadata_is_in_flight_gets_its_own_refresh() -> None:
    """add_topic() while a Metadata request is on its way: that older answer
    cannot know the topic, so the core asks again instead of waiting for the
    next age-based refresh (metadata_max_age_ms, minutes)."""
    from tests.client.fakebroker import parse_request

    core, pump, _cluster = boot(1, [Topic("a"), Topic("b")])
    (broker,) = pump.brokers.values()
    broker.hold = True
    first = core.add_topic("a", now=pump.now)
    pump.run(until=lambda: bool(pump.held))
    second = core.add_topic("b", now=pump.now)  # the request for "a" is in flight
    broker.hold = False
    pump.release()
    pump.run(until=lambda: first.done and second.done)
    assert first.error is None and second.error is None
    assert core.cluster.topics() == {"a", "b"}
    from kafkacore.protocol import framing

    asked = []
    readers: dict[int, framing.FrameReader] = {}
    for conn, data in pump.writes:
        reader = readers.setdefault(conn, framing.FrameReader(max_frame_size=1 << 30))
        for frame in reader.feed(data):
            api_key, _v, _corr, _cid, body = parse_request(frame)
            if api_key == 3 and body.topics:
                asked.append(sorted(t.name for t in body.topics))
    assert asked[-2:] == [["a"], ["a", "b"]]


def test_lanes_do_not_queue_behind_each_other() -> None:
    core, pump, _ = boot(1, max_in_flight_requests_per_connection=1)
    slow = core.send(meta(), target=Node(0), lane="fetch", now=pump.now)
    pump.run(until=lambda: slow.done)
    broker = next(iter(pump.brokers.values()))
    broker.hold = True
    blocked = core.send(meta(), target=Node(0), lane="fetch", now=pump.now)
    queued = core.send(meta(), target=Node(0), lane="fetch", now=pump.now)
    pump.run(rounds=5, jump=False)
    broker.hold = False
    fast = core.send(meta(), target=Node(0), lane="group", now=pump.now)
    pump.run(until=lambda: fast.done, jump=False)
    assert fast.error is None
    assert not blocked.done and not queued.done
    assert core.connected(0, lane="group") and core.connected(0, lane="fetch")
    pump.release()
    pump.run(until=lambda: blocked.done and queued.done)


def test_cancel_waiting_and_in_flight() -> None:
    core, pump, _ = boot(1)
    h0 = core.send(meta(), target=Node(0), now=pump.now)
    pump.run(until=lambda: h0.done)
    broker = next(iter(pump.brokers.values()))
    broker.hold = True
    in_flight = core.send(meta(), target=Node(0), now=pump.now)
    pump.run(rounds=5, jump=False)
    assert core.in_flight_request_count(0) == 1
    pump.stall.add(("127.0.0.1", 9999))
    waiting = core.send(meta(), target=PartitionLeader("nowhere", 0), now=pump.now)
    assert core.cancel(waiting, now=pump.now)
    assert core.cancel(in_flight, now=pump.now)
    assert not core.cancel(in_flight, now=pump.now)
    pump.release()
    pump.run(rounds=10, jump=False)
    done = [e for e in pump.completed() if e.handle in (waiting, in_flight)]
    assert len(done) == 2 and all(isinstance(e.error, RequestCancelled) for e in done)
    other = KafkaClientCore(ClientConfig(), now=0.0, rng=random.Random(0))
    stranger = other.send(meta(), now=0.0)
    with pytest.raises(LocalProtocolError):
        core.cancel(stranger, now=pump.now)


def test_close_node_cancels_in_flight_and_reconnects_later() -> None:
    core, pump, _ = boot(1)
    h0 = core.send(meta(), target=Node(0), now=pump.now)
    pump.run(until=lambda: h0.done)
    next(iter(pump.brokers.values())).hold = True
    h = core.send(meta(), target=Node(0), now=pump.now)
    pump.run(rounds=5, jump=False)
    core.close(0, now=pump.now)
    assert isinstance(h.error, RequestCancelled)
    assert core.is_disconnected(0)
    assert core.connection_delay(0, now=pump.now) == 0  # user close: no backoff
    assert core.maybe_connect(0, now=pump.now)
    assert not core.maybe_connect(0, now=pump.now)  # already connecting


def test_shutdown_cancels_everything() -> None:
    core, pump, _ = boot(1)
    h = core.send(meta(), target=PartitionLeader("nowhere", 0), now=pump.now)
    w = core.request_metadata_update(now=pump.now)
    core.shutdown(now=pump.now)
    pump.drain()
    assert isinstance(h.error, RequestCancelled)
    assert w.done and w.error is not None
    with pytest.raises(LocalProtocolError, match="shut down"):
        core.send(meta(), now=pump.now)
    deadline = core.next_deadline()
    assert deadline is None or deadline >= pump.now


def test_seed_004_queries() -> None:
    core, pump, _ = boot(2)
    assert core.client_id == "kafkacore"
    assert not core.bootstrap_connected()  # healed away after the first metadata
    assert core.least_loaded_node(now=pump.now) in (0, 1)
    assert core.is_disconnected(1)
    assert core.connection_delay(1, now=pump.now) == 0
    assert not core.ready(1, now=pump.now)  # starts connecting
    assert core.connection_delay(1, now=pump.now) == 0  # connecting
    pump.run(until=lambda: core.connected(1))
    assert core.is_ready(1, now=pump.now)
    assert core.ready(1, now=pump.now)
    assert core.connection_delay(1, now=pump.now) == math.inf
    assert core.least_loaded_node(now=pump.now) == 1  # connected and idle first
    assert core.in_flight_request_count() == 0
    versions = core.get_api_versions(1)
    assert versions is not None and versions[3][1] >= 12
    assert core.check_version() is not None
    pump.now += 1.0  # past retry_backoff_ms since the last refresh
    core.request_metadata_update(now=pump.now)
    assert not core.is_ready(1, now=pump.now)  # metadata refresh has priority
    assert core.is_ready(1, now=pump.now, metadata_priority=False)
    with pytest.raises(LocalProtocolError):
        core.maybe_connect(42, now=pump.now)


def test_least_loaded_prefers_fewest_in_flight() -> None:
    core, pump, _ = boot(2)
    for node in (0, 1):
        h = core.send(meta(), target=Node(node), now=pump.now)
        pump.run(until=lambda h=h: h.done)  # type: ignore[misc]
    for broker in pump.brokers.values():
        broker.hold = True
    core.send(meta(), target=Node(0), now=pump.now)
    core.send(meta(), target=Node(0), now=pump.now)
    core.send(meta(), target=Node(1), now=pump.now)
    pump.run(rounds=5, jump=False)
    assert core.least_loaded_node(now=pump.now) == 1


def test_metrics_and_trace() -> None:
    seen: list[str] = []
    _cluster, fakes = make_cluster(1)
    core = KafkaClientCore(
        ClientConfig(bootstrap_servers="127.0.0.1:9092", metric_group_prefix="p"),
        now=0.0,
        rng=random.Random(0),
        trace=lambda name, fields: seen.append(name),
    )
    pump = Pump(core, fakes)
    h = core.send(meta(), now=0.0)
    pump.run(until=lambda: h.done)
    snap = core.metrics()
    assert snap.prefix == "p"
    assert snap.requests_sent >= 2 and snap.responses_received >= 2
    assert snap.bytes_sent > 0 and snap.bytes_received > 0
    assert snap.requests_by_api[3] >= 2
    assert snap.connections_opened >= 1 and snap.metadata_updates >= 1
    assert snap.latency.count >= 2
    with pytest.raises(TypeError):
        snap.requests_by_api[3] = 0  # type: ignore[index]
    assert {"connect", "send", "complete", "metadata_request"} <= set(seen)


def test_send_validation() -> None:
    core = KafkaClientCore(ClientConfig(), now=0.0, rng=random.Random(0))
    with pytest.raises(LocalProtocolError, match="not a request"):
        core.send(object(), now=0.0)
    with pytest.raises(LocalProtocolError, match="routing target"):
        core.send(meta(), target="leader", now=0.0)  # type: ignore[arg-type]
    with pytest.raises(LocalProtocolError, match="lane"):
        core.send(meta(), lane="", now=0.0)
    with pytest.raises(LocalProtocolError, match="timeout_ms"):
        core.send(meta(), timeout_ms=0, now=0.0)
    with pytest.raises(LocalProtocolError, match=r"random\.Random"):
        KafkaClientCore(ClientConfig(), now=0.0, rng=None)  # type: ignore[arg-type]


def test_queue_is_bounded() -> None:
    core = KafkaClientCore(ClientConfig(max_queued_requests=3), now=0.0, rng=random.Random(0))
    handles = [core.send(meta(), target=Node(0), now=0.0) for _ in range(3)]
    with pytest.raises(LocalProtocolError, match="max_queued_requests"):
        core.send(meta(), now=0.0)
    assert all(not h.done for h in handles)


def test_heal_drops_connections_to_brokers_that_left() -> None:
    core, pump, cluster = boot(2)
    h = core.send(meta(), target=Node(1), now=pump.now)
    pump.run(until=lambda: h.done)
    assert core.connected(1)
    del cluster.brokers[1]
    w = core.request_metadata_update(now=pump.now)
    pump.run(until=lambda: w.done)
    assert not core.connected(1) and 1 not in core.cluster
    assert core.cluster.leader_for_partition(TopicPartition("x", 0)) is None


def test_request_completed_event_carries_response() -> None:
    core, pump, _ = boot(1)
    h = core.send(meta(), now=pump.now)
    pump.run(until=lambda: h.done)
    events = [e for e in pump.events if isinstance(e, RequestCompleted) and e.handle is h]
    assert len(events) == 1 and events[0].response is h.response is h.result()


def test_max_version_caps_the_negotiated_version() -> None:
    core, pump, cluster = boot(1)
    cluster.api_ranges[3] = (4, 13)
    core.close(now=pump.now)
    capped = core.send(meta(), target=Node(0), max_version=9, now=pump.now)
    too_low = core.send(meta(), target=Node(0), max_version=2, now=pump.now)
    pump.run(until=lambda: capped.done and too_low.done)
    assert capped.error is None and capped.api_version == 9
    assert isinstance(too_low.error, NoCommonVersionError)
    assert "v2" in str(too_low.error) and "v4" in str(too_low.error)
    with pytest.raises(LocalProtocolError, match="max_version"):
        core.send(meta(), max_version=-1, now=pump.now)


def test_requests_to_one_node_keep_their_order_across_targets() -> None:
    core, pump, _ = boot(1, [Topic("t", 2, {0: 0, 1: 0})], max_in_flight_requests_per_connection=1)
    w = core.add_topic("t", now=pump.now)
    pump.run(until=lambda: w.done)
    warm = core.send(meta(), target=Node(0), now=pump.now)
    pump.run(until=lambda: warm.done)
    broker = next(iter(pump.brokers.values()))
    broker.hold = True
    targets: list[Any] = [
        Node(0),
        PartitionLeader("t", 1),
        Node(0),
        PartitionLeader("t", 0),
        AnyNode(),
        PartitionLeader("t", 1),
        Node(0),
    ]
    handles = []
    for i, target in enumerate(targets):
        request = m.MetadataRequest(topics=[], allow_auto_topic_creation=bool(i % 2))
        handles.append(core.send(request, target=target, now=pump.now))
    mark = len(broker.received)
    for _ in range(30):
        pump.release()
        pump.run(rounds=3, jump=False)
    assert all(h.done and h.error is None for h in handles)
    sent = [
        b.allow_auto_topic_creation
        for k, _, b in broker.received[mark:]
        if k == 3 and b.topics == []  # the core's own refreshes name topic "t"
    ]
    assert sent == [bool(i % 2) for i in range(len(targets))]

"""Issue 10, client faults: frames before garbage, backoff everywhere, causes kept,
unknown metadata error codes, authentication stops the client, rebootstrap.

Every test drives the sans-IO core with bytes and jumps time; none sleeps.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping

import pytest

from kafkacore.client import (
    ClientConfig,
    ConnectionState,
    ConnectionStateChanged,
    KafkaClientCore,
    MetadataUpdateFailed,
    Node,
    PartitionLeader,
    RequestCompleted,
)
from kafkacore.client.backoff import ExponentialBackoff
from kafkacore.client.connection import BrokerConnection
from kafkacore.client.events import AuthenticationFailed
from kafkacore.client.handles import RequestHandle
from kafkacore.errors import (
    AuthenticationError,
    BrokerError,
    DecodeError,
    KafkaConnectionError,
    KafkaTimeoutError,
    NoBrokersAvailable,
    RemoteProtocolError,
)
from kafkacore.protocol import framing
from kafkacore.protocol import messages as m
from kafkacore.protocol.api import APIS
from kafkacore.protocol.messages.api_versions_response import ApiVersion
from kafkacore.protocol.messages.produce_response import (
    PartitionProduceResponse,
    TopicProduceResponse,
)
from tests.client.fakebroker import Pump, Topic, boot, make_cluster

#: A size prefix of -1 and a few bytes: what a broken peer might send.
GARBAGE = b"\xff\xff\xff\xffjunk"
#: A size prefix far above max_response_bytes.
HUGE = b"\x7f\xff\xff\xf0"


# -- fault 1: every complete frame before a bad size prefix is delivered ---------------


def _ready_connection() -> BrokerConnection:
    conn = BrokerConnection(
        conn_id=7,
        node_id=1,
        lane="default",
        host="127.0.0.1",
        port=9092,
        config=ClientConfig(),
        rng=random.Random(0),
        now=0.0,
    )
    conn.connection_made(now=0.0)
    (frame,) = conn.pull_writes()
    header, _ = framing.decode_request(frame[4:])
    versions = m.ApiVersionsResponse(
        api_keys=[
            ApiVersion(api_key=k, min_version=i.min_version, max_version=i.max_version)
            for k, i in sorted(APIS.items())
        ]
    )
    conn.data_received(
        framing.encode_response(
            versions, version=header.request_api_version, correlation_id=header.correlation_id
        ),
        now=0.0,
    )
    assert conn.ready
    return conn


def _produce(conn: BrokerConnection, handle_id: int) -> tuple[RequestHandle, bytes]:
    """Send one Produce on ``conn``; return its handle and the broker's acknowledgement."""
    request = m.ProduceRequest(acks=-1)
    handle = RequestHandle(id=handle_id, request=request, api_key=0, target=Node(1), lane="default")
    version = conn.version_for(0)
    conn.send(handle, request, version=version, now=0.0)
    (frame,) = conn.pull_writes()
    header, _ = framing.decode_request(frame[4:])
    ack = m.ProduceResponse(
        responses=[
            TopicProduceResponse(
                name="t", partition_responses=[PartitionProduceResponse(index=0, base_offset=41)]
            )
        ]
    )
    return handle, framing.encode_response(
        ack, version=version, correlation_id=header.correlation_id
    )


def _check_ack_then_failure(conn: BrokerConnection, first: RequestHandle) -> None:
    completions = {c.handle.id: c for c in conn.pull_completions()}
    acked = completions[first.id]
    assert acked.error is None
    assert acked.response.responses[0].partition_responses[0].base_offset == 41
    # The request still in flight fails, naming the broker and the fault.
    (lost,) = [c for c in completions.values() if c.handle is not first]
    assert isinstance(lost.error, KafkaConnectionError)
    assert "broker 1 at 127.0.0.1:9092" in str(lost.error)
    assert "frame size" in str(lost.error)
    assert conn.closed
    assert isinstance(conn.close_error, DecodeError)
    assert lost.error.__cause__ is conn.close_error
    assert str(conn.close_error).startswith("broker 1 at 127.0.0.1:9092: frame")


@pytest.mark.parametrize("garbage", [GARBAGE, HUGE], ids=["negative", "oversized"])
def test_acknowledgement_before_garbage_in_one_read_is_delivered(garbage: bytes) -> None:
    conn = _ready_connection()
    first, ack = _produce(conn, 1)
    _second, _ = _produce(conn, 2)
    conn.data_received(ack + garbage, now=0.5)
    _check_ack_then_failure(conn, first)


def test_acknowledgement_before_garbage_split_at_every_byte() -> None:
    _, sample = _produce(_ready_connection(), 1)
    stream_len = len(sample + GARBAGE)
    for cut in range(stream_len + 1):
        conn = _ready_connection()
        first, ack = _produce(conn, 1)
        _produce(conn, 2)
        stream = ack + GARBAGE
        conn.data_received(stream[:cut], now=0.5)
        conn.data_received(stream[cut:], now=0.5)
        _check_ack_then_failure(conn, first)


def test_acknowledgement_before_garbage_byte_by_byte() -> None:
    conn = _ready_connection()
    first, ack = _produce(conn, 1)
    _produce(conn, 2)
    for byte in ack + GARBAGE:
        conn.data_received(bytes([byte]), now=0.5)
    _check_ack_then_failure(conn, first)


def test_frame_reader_returns_frames_then_fails() -> None:
    reader = framing.FrameReader(max_frame_size=100)
    frame = b"\0\0\0\x03abc"
    assert reader.feed(frame + b"\0\0\0\x65") == [b"abc"]  # 101 > 100
    assert reader.state is framing.FrameReader.State.FAILED
    assert isinstance(reader.error, DecodeError) and "101" in str(reader.error)
    with pytest.raises(DecodeError):
        reader.feed(frame)  # the stream cannot be resynchronised
    assert reader.buffered == 0  # nothing kept after the fault


# -- fault 5 (and 3, reconnects): protocol errors after READY back off ------------------


def _connect_times(core: KafkaClientCore, pump: Pump, node_id: int) -> list[float]:
    times: list[float] = []

    def hook(name: str, fields: Mapping[str, object]) -> None:
        if name == "connect" and fields["node_id"] == node_id:
            times.append(pump.now)

    core.add_trace(hook)
    return times


def _max_attempts_within(backoff: ExponentialBackoff, seconds: float) -> int:
    """The most attempts the backoff allows in ``seconds`` (every wait at its minimum)."""
    total, n = 0.0, 0
    while total <= seconds * 1000:
        n += 1
        total += backoff.bounds_ms(n)[0]
    return n


def test_protocol_errors_after_ready_back_off_exponentially() -> None:
    core, pump, _ = boot(
        1, reconnect_backoff_ms=50, reconnect_backoff_max_ms=1000, metadata_max_age_ms=3_600_000
    )
    broker = next(iter(pump.brokers.values()))
    broker.after_reply[0] = GARBAGE  # every acknowledgement is followed by garbage
    times = _connect_times(core, pump, 0)
    start = pump.now
    handles = []
    # A caller that sends again as soon as the previous answer arrived, for 10 s.
    while pump.now < start + 10:
        h = core.send(m.ProduceRequest(acks=1), target=Node(0), now=pump.now, timeout_ms=60_000)
        handles.append(h)
        pump.run(until=lambda h=h: h.done, rounds=1000)  # type: ignore[misc]
    assert all(h.error is None for h in handles)  # every acknowledgement arrived
    backoff = ExponentialBackoff(50, 1000)
    # Without backoff after READY this was one connection per ~50 ms (about 200).
    assert 8 <= len(times) <= _max_attempts_within(backoff, 10)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    for n, gap in enumerate(gaps, start=1):
        assert gap >= backoff.bounds_ms(n)[0] / 1000 - 1e-9, (n, gap)
    assert gaps[-1] >= 0.8 - 1e-9  # reached the cap
    error = core.node_error(0)
    assert isinstance(error, DecodeError) and "broker 0 at 127.0.0.1:9092" in str(error)


def _fail_node_0(kind: str, core: KafkaClientCore, pump: Pump) -> BaseException:
    """Make node 0's connection fail in the way ``kind`` names; return the close error."""
    address = ("127.0.0.1", 9092)
    broker = pump.brokers[address]
    closes: list[BaseException] = []

    def record() -> bool:
        for e in pump.events:
            if (
                isinstance(e, ConnectionStateChanged)
                and e.node_id == 0
                and e.state is ConnectionState.CLOSED
                and e.error is not None
                and e.error not in closes
            ):
                closes.append(e.error)
        return bool(closes)

    pump.events.clear()
    if kind == "refused":
        pump.refuse.add(address)
    elif kind == "setup timeout":
        pump.stall.add(address)
    elif kind == "api versions timeout":
        broker.handlers[18] = lambda b, body, v, s: None
    elif kind in ("lost", "request timeout", "protocol error"):
        h = core.send(m.MetadataRequest(topics=[]), target=Node(0), now=pump.now)
        pump.run(until=lambda: h.done)
        assert core.connected(0)
        if kind == "lost":
            conn = core._pool.slots[(0, "default")].conn
            assert conn is not None
            core.connection_lost(conn.conn_id, ConnectionResetError("reset by peer"), now=pump.now)
            pump.drain()
        elif kind == "request timeout":
            broker.hold = True
        else:
            broker.after_reply[3] = GARBAGE
    if not record():
        h = core.send(m.MetadataRequest(topics=[]), target=Node(0), now=pump.now, timeout_ms=500)
        pump.run(until=record, rounds=500)
    pump.refuse.discard(address)
    pump.stall.discard(address)
    broker.handlers.pop(18, None)
    broker.hold = False
    pump.held.clear()
    broker.after_reply.clear()
    return closes[0]


FAILURE_KINDS = [
    "refused",
    "setup timeout",
    "api versions timeout",
    "lost",
    "request timeout",
    "protocol error",
]


@pytest.mark.parametrize("kind", FAILURE_KINDS)
def test_every_failure_kind_backs_off_per_node_and_escalates(kind: str) -> None:
    # A long cap, so that no connection here counts as "stable" (READY for the cap).
    core, pump, _ = boot(
        1, reconnect_backoff_ms=50, reconnect_backoff_max_ms=60_000, metadata_max_age_ms=3_600_000
    )
    backoff = ExponentialBackoff(50, 60_000)
    for failures in (1, 2, 3):
        error = _fail_node_0(kind, core, pump)
        assert "broker 0 at 127.0.0.1:9092" in str(error), error
        assert core.node_error(0) is error
        for lane in ("default", "group"):  # per node: every lane waits
            delay = core.connection_delay(0, now=pump.now, lane=lane)
            low, high = backoff.bounds_ms(failures)
            assert low - 1e-6 <= delay <= high + 1e-6, (kind, failures, lane, delay)
        pump.now += core.connection_delay(0, now=pump.now) / 1000


def test_a_stable_connection_restarts_the_count() -> None:
    core, pump, _ = boot(
        1, reconnect_backoff_ms=50, reconnect_backoff_max_ms=1000, metadata_max_age_ms=3_600_000
    )
    for _ in range(3):
        _fail_node_0("protocol error", core, pump)
        pump.now += core.connection_delay(0, now=pump.now) / 1000
    health = core._pool.health.get(0)
    assert health is not None and health.failures == 3
    h = core.send(m.MetadataRequest(topics=[]), target=Node(0), now=pump.now)
    pump.run(until=lambda: h.done)
    pump.now += 1.5  # READY longer than reconnect_backoff_max_ms
    _fail_node_0("lost", core, pump)
    health = core._pool.health.get(0)
    assert health is not None and health.failures == 1
    assert core.connection_delay(0, now=pump.now) <= 60 + 1e-6


# -- fault 3: metadata refreshes back off exponentially; an idle client does not poll ---


def _metadata_times(core: KafkaClientCore, pump: Pump) -> list[float]:
    times: list[float] = []

    def hook(name: str, fields: Mapping[str, object]) -> None:
        if name == "metadata_request":
            times.append(pump.now)

    core.add_trace(hook)
    return times


def test_leaderless_partition_refresh_backs_off_exponentially() -> None:
    core, pump, _ = boot(
        2,
        [Topic("t", 1, {0: -1})],
        retry_backoff_ms=100,
        retry_backoff_max_ms=1000,
        metadata_max_age_ms=3_600_000,
    )
    times = _metadata_times(core, pump)
    start = pump.now
    # This request waits for a leader for the whole run.
    core.send(m.MetadataRequest(topics=[]), target=PartitionLeader("t", 0), now=start)
    pump.run(until=lambda: pump.now >= start + 10, rounds=5000)
    backoff = ExponentialBackoff(100, 1000)
    # Flat retry_backoff_ms was 100 refreshes in 10 s.
    assert 8 <= len(times) <= _max_attempts_within(backoff, 10)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    for n, gap in enumerate(gaps, start=1):
        assert backoff.bounds_ms(n)[0] / 1000 - 1e-9 <= gap <= backoff.bounds_ms(n)[1] / 1000 + 1e-9
    assert core.cluster.refresh_attempts >= len(times) - 1


def test_idle_client_does_not_poll_for_a_leaderless_topic() -> None:
    core, pump, _ = boot(
        2, [Topic("t", 1, {0: -1})], retry_backoff_ms=100, metadata_max_age_ms=60_000
    )
    w = core.add_topic("t", now=pump.now)
    pump.run(until=lambda: w.done)
    assert core.cluster.incomplete and core.cluster.leader_for_partition(("t", 0)) == -1
    times = _metadata_times(core, pump)
    start = pump.now
    pump.run(until=lambda: bool(times), rounds=500)
    # Nobody waits: the only refresh is the metadata_max_age_ms one (it was
    # one per retry_backoff_ms, 600 in that minute).
    assert len(times) == 1 and times[0] >= start + 60 - 1e-9


def test_a_new_topic_is_asked_about_without_the_accumulated_backoff() -> None:
    core, pump, cluster = boot(
        2,
        [Topic("t", 1, {0: -1})],
        retry_backoff_ms=100,
        retry_backoff_max_ms=1000,
        metadata_max_age_ms=3_600_000,
    )
    times = _metadata_times(core, pump)
    start = pump.now
    core.send(m.MetadataRequest(topics=[]), target=PartitionLeader("t", 0), now=start)
    pump.run(until=lambda: pump.now >= start + 5, rounds=5000)
    assert core.cluster.retry_delay_ms >= 800
    cluster.topics["u"] = Topic("u", 1, {0: 1})
    asked = pump.now
    w = core.add_topic("u", now=asked)
    pump.run(until=lambda: w.done)
    assert times[-1] - max(t for t in times if t <= asked) <= 0.12 + 1e-9


def test_retry_backoff_max_ms_is_validated() -> None:
    assert ClientConfig().retry_backoff_max_ms == 1000
    with pytest.raises(Exception, match="retry_backoff_max_ms"):
        ClientConfig(retry_backoff_ms=500, retry_backoff_max_ms=100)


# -- fault 4: causes are kept ------------------------------------------------------------


def test_request_expiring_for_an_unreachable_node_carries_the_cause() -> None:
    core, pump, _ = boot(1, metadata_max_age_ms=3_600_000)
    pump.refuse.add(("127.0.0.1", 9092))
    h = core.send(m.MetadataRequest(topics=[]), target=Node(0), now=pump.now, timeout_ms=3000)
    pump.run(until=lambda: h.done, rounds=1000)
    assert isinstance(h.error, KafkaTimeoutError)
    cause = h.error.__cause__
    assert isinstance(cause, KafkaConnectionError)
    assert "broker 0 at 127.0.0.1:9092" in str(cause) and "refused" in str(cause)
    assert "last error" in str(h.error) and "refused" in str(h.error)


def test_connection_lost_names_the_broker() -> None:
    core, pump, _ = boot(1, metadata_max_age_ms=3_600_000)
    broker = next(iter(pump.brokers.values()))
    h = core.send(m.MetadataRequest(topics=[]), target=Node(0), now=pump.now)
    pump.run(until=lambda: h.done)
    broker.hold = True
    h = core.send(m.MetadataRequest(topics=[]), target=Node(0), now=pump.now)
    pump.run(until=lambda: bool(pump.held))
    conn = core._pool.slots[(0, "default")].conn
    assert conn is not None
    core.connection_lost(conn.conn_id, None, now=pump.now)
    assert isinstance(h.error, KafkaConnectionError)
    assert "broker 0 at 127.0.0.1:9092 lost (closed by the broker)" in str(h.error)


# -- fault 6: unknown error codes in Metadata surface promptly, as such -----------------


def test_unknown_topic_error_code_fails_waiting_requests_promptly() -> None:
    core, pump, _cluster = boot(1, [Topic("t", 1, error_code=32767)])
    start = pump.now
    h = core.send(m.ProduceRequest(acks=1), target=PartitionLeader("t", 0), now=start)
    pump.run(until=lambda: h.done)
    assert pump.now - start < 0.5  # not after the request timeout
    assert isinstance(h.error, BrokerError)
    assert h.error.code == 32767
    assert "unknown error code 32767 from broker 0 at 127.0.0.1:9092 for topic 't'" in str(h.error)
    assert "create" not in str(h.error)
    failure = core.cluster.topic_failure("t")
    assert failure is not None and failure.code == 32767
    assert core.cluster.topic_error("t") == 32767


def test_unknown_top_level_metadata_error_fails_the_waiters() -> None:
    core, pump, cluster = boot(1)
    cluster.error_code = 32767
    w = core.request_metadata_update(now=pump.now)
    pump.run(until=lambda: w.done)
    assert isinstance(w.error, BrokerError) and w.error.code == 32767
    assert "broker 0 at 127.0.0.1:9092" in str(w.error)
    assert any(isinstance(e, MetadataUpdateFailed) and e.error is w.error for e in pump.events)


# -- fault 8 and authentication ------------------------------------------------------------


def test_unavailable_cause_before_and_after_metadata() -> None:
    config = ClientConfig(bootstrap_servers="127.0.0.1:1,127.0.0.1:2")
    core = KafkaClientCore(config, now=0.0, rng=random.Random(0))
    assert core.unavailable_cause() is None  # nothing tried yet
    pump = Pump(core, {})
    pump.run(until=lambda: core.unavailable_cause() is not None)
    cause = core.unavailable_cause()
    assert isinstance(cause, NoBrokersAvailable)
    assert "bootstrap server 127.0.0.1:1" in str(cause) and "127.0.0.1:2" in str(cause)
    assert isinstance(cause.__cause__, KafkaConnectionError)

    core, pump, _ = boot(2, metadata_max_age_ms=3_600_000)
    assert core.unavailable_cause() is None
    core.close(now=pump.now)  # drop the connections cleanly
    pump.drain()
    for fake in pump.brokers.values():
        pump.refuse.add(("127.0.0.1", 9092 + fake.node_id))
    hs = [
        core.send(m.MetadataRequest(topics=[]), target=Node(n), now=pump.now, timeout_ms=2000)
        for n in (0, 1)
    ]
    pump.run(until=lambda: all(h.done for h in hs), rounds=1000)
    cause = core.unavailable_cause()
    assert isinstance(cause, NoBrokersAvailable)
    assert "broker 0 at 127.0.0.1:9092" in str(cause)
    assert "broker 1 at 127.0.0.1:9093" in str(cause)


def _sasl_core(password: str) -> tuple[KafkaClientCore, Pump]:
    _cluster, fakes = make_cluster(1)
    next(iter(fakes.values())).require_auth = True
    config = ClientConfig(
        bootstrap_servers="127.0.0.1:9092",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="alice",
        sasl_plain_password=password,
        reconnect_backoff_ms=1,
        reconnect_backoff_max_ms=1,
    )
    core = KafkaClientCore(config, now=0.0, rng=random.Random(0))
    return core, Pump(core, fakes)


def test_wrong_password_stops_the_client_without_a_retry_loop() -> None:
    core, pump = _sasl_core("wrong")
    w = core.request_metadata_update(now=0.0)
    pump.run(until=lambda: w.done)
    assert isinstance(w.error, AuthenticationError)
    failed = [e for e in pump.events if isinstance(e, AuthenticationFailed)]
    assert len(failed) == 1 and failed[0].error is core.authentication_error
    assert core.unavailable_cause() is core.authentication_error
    # Ten simulated seconds later: still the one connection, no retry loop.
    pump.run(rounds=200, max_time=10.0)
    pump.now = max(pump.now, 10.0)
    core.handle_timeout(now=pump.now)
    pump.drain()
    assert len(pump.opened) == 1
    assert core.metrics().authentication_failures == 1
    # Later calls fail at once with the same error; nothing is opened for them.
    h = core.send(m.MetadataRequest(topics=[]), now=pump.now)
    assert h.done and h.error is core.authentication_error
    w2 = core.request_metadata_update(now=pump.now)
    assert w2.done and w2.error is core.authentication_error
    assert len(pump.opened) == 1
    assert "wrong" not in str(core.authentication_error)
    pump.drain()
    events = [e for e in pump.events if isinstance(e, RequestCompleted)]
    assert events and events[-1].error is core.authentication_error


# -- KIP-899 / KIP-1102 rebootstrap ------------------------------------------------------------


def _metadata_nodes(core: KafkaClientCore) -> list[object]:
    nodes: list[object] = []

    def hook(name: str, fields: Mapping[str, object]) -> None:
        if name == "send" and fields["api_key"] == 3:
            nodes.append(fields["node_id"])

    core.add_trace(hook)
    return nodes


def test_rebootstrap_required_in_metadata_goes_back_to_the_bootstrap_servers() -> None:
    core, pump, cluster = boot(2, metadata_max_age_ms=3_600_000)
    assert set(core.cluster) == {0, 1}
    nodes = _metadata_nodes(core)
    cluster.error_code = 129  # REBOOTSTRAP_REQUIRED (KIP-1102)
    w = core.request_metadata_update(now=pump.now)
    pump.run(until=lambda: w.done)
    assert isinstance(w.error, BrokerError) and w.error.code == 129
    assert core.metrics().rebootstraps == 1
    assert {b.node_id for b in core.cluster.brokers()} == {-1}  # only the bootstrap address
    cluster.error_code = 0
    w = core.request_metadata_update(now=pump.now)
    pump.run(until=lambda: w.done)
    assert w.error is None and set(core.cluster) == {0, 1}
    assert nodes[0] >= 0 and nodes[-1] == -1  # asked a broker, then the bootstrap address


def test_rebootstrap_required_in_any_response_rebootstraps() -> None:
    core, pump, _ = boot(2, metadata_max_age_ms=3_600_000)
    broker = next(iter(pump.brokers.values()))
    broker.handlers[60] = lambda b, body, v, s: m.DescribeClusterResponse(error_code=129)
    h = core.send(m.DescribeClusterRequest(), target=Node(0), now=pump.now)
    pump.run(until=lambda: h.done)
    assert h.error is None and h.response.error_code == 129  # the caller sees the answer
    assert core.metrics().rebootstraps == 1
    assert {b.node_id for b in core.cluster.brokers()} == {-1}


def _moved_cluster(strategy: str) -> tuple[KafkaClientCore, Pump]:
    """A client that knows brokers 0 and 1, which now answer Metadata with no
    brokers (not ready) for ever; its bootstrap address now reaches a new
    cluster (broker 5)."""
    _old, old_fakes = make_cluster(2)
    new, new_fakes = make_cluster(1, port0=9205)
    new.brokers = {5: ("127.0.0.1", 9205)}
    new.controller_id = 5
    new_broker = next(iter(new_fakes.values()))
    new_broker.node_id = 5
    bootstrap = ("127.0.0.1", 9300)
    brokers = dict(old_fakes)
    brokers[bootstrap] = old_fakes[("127.0.0.1", 9092)]
    config = ClientConfig(
        bootstrap_servers="127.0.0.1:9300",
        metadata_max_age_ms=3_600_000,
        metadata_recovery_strategy=strategy,
        metadata_recovery_rebootstrap_trigger_ms=5000,
    )
    core = KafkaClientCore(config, now=0.0, rng=random.Random(0))
    pump = Pump(core, brokers)
    pump.run(until=lambda: core.cluster.update_count > 0)
    for fake in old_fakes.values():
        fake.handlers[3] = lambda b, body, v, s: m.MetadataResponse(brokers=[])
    brokers[bootstrap] = new_broker
    brokers[("127.0.0.1", 9205)] = new_broker
    return core, pump


def test_rebootstrap_when_no_known_broker_gives_metadata_for_the_trigger_time() -> None:
    core, pump = _moved_cluster("rebootstrap")
    start = pump.now
    w = core.request_metadata_update(now=start)
    pump.run(until=lambda: w.done)
    assert isinstance(w.error, KafkaConnectionError) and "no brokers" in str(w.error)
    pump.run(until=lambda: 5 in core.cluster, rounds=5000)
    assert core.metrics().rebootstraps == 1
    # Not before the trigger time, and soon after it (the metadata backoff is <= 1.2 s).
    assert start + 5 <= pump.now <= start + 5 + 1.3
    assert set(core.cluster) == {5}


def test_no_rebootstrap_with_strategy_none() -> None:
    core, pump = _moved_cluster("none")
    start = pump.now
    w = core.request_metadata_update(now=start)
    pump.run(until=lambda: w.done)
    for _ in range(60):  # a minute of refreshes that keep failing
        w = core.request_metadata_update(now=pump.now)
        pump.run(until=lambda w=w: w.done, rounds=500)  # type: ignore[misc]
    assert pump.now >= start + 30
    assert core.metrics().rebootstraps == 0 and 5 not in core.cluster


# -- api_version_auto_timeout_ms, secrets in repr ------------------------------------------------


def test_api_version_auto_timeout_bounds_the_api_versions_exchange() -> None:
    _cluster, fakes = make_cluster(1)
    broker = next(iter(fakes.values()))
    broker.handlers[18] = lambda b, body, v, s: None  # accepts TCP, never answers
    core = KafkaClientCore(
        ClientConfig(bootstrap_servers="127.0.0.1:9092", api_version_auto_timeout_ms=1500),
        now=0.0,
        rng=random.Random(0),
    )
    pump = Pump(core, fakes)
    pump.run(
        until=lambda: any(
            isinstance(e, ConnectionStateChanged) and e.state is ConnectionState.CLOSED
            for e in pump.events
        )
    )
    assert pump.now == pytest.approx(1.5)  # not request_timeout_ms (30 s)
    closed = [e for e in pump.events if isinstance(e, ConnectionStateChanged) and e.error]
    assert isinstance(closed[0].error, KafkaTimeoutError)
    assert "bootstrap server 127.0.0.1:9092" in str(closed[0].error)


def test_config_repr_masks_secrets() -> None:
    config = ClientConfig(
        security_protocol="SASL_SSL",
        sasl_mechanism="PLAIN",
        sasl_plain_username="alice",
        sasl_plain_password="s3cret-pw",
        ssl_password="key-pass",
    )
    text = repr(config)
    assert "s3cret-pw" not in text and "key-pass" not in text
    assert "sasl_plain_password='***'" in text and "sasl_plain_username='alice'" in text
    assert config.secrets == ("s3cret-pw", "key-pass")


def test_remote_protocol_errors_name_the_broker() -> None:
    core, pump, _ = boot(1)
    broker = next(iter(pump.brokers.values()))
    h = core.send(m.MetadataRequest(topics=[]), target=Node(0), now=pump.now)
    pump.run(until=lambda: h.done)
    broker.hold = True
    h = core.send(m.MetadataRequest(topics=[]), target=Node(0), now=pump.now)
    pump.run(until=lambda: bool(pump.held))
    conn_id, reply = pump.held.pop()
    pump.inject(conn_id, reply[:4] + (999).to_bytes(4, "big") + reply[8:])
    pump.run(until=lambda: h.done)
    assert isinstance(h.error, KafkaConnectionError)
    assert isinstance(h.error.__cause__, RemoteProtocolError)
    assert str(h.error.__cause__).startswith("broker 0 at 127.0.0.1:9092: response correlation")

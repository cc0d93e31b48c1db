"""Producer faults of issue 10, in the sans-IO core against the scripted log.

Time is jumped, never slept. Covered: the delivery timeout bounds a batch
in flight (fault 2); undelivered records carry their last cause (fault 4);
an unreachable cluster or refused credentials surface as such, and "not
present" only when a broker said so (fault 8); a resend after a lost
connection is deduplicated by sequence with idempotence (fault 1) and
retries back off exponentially (KIP-580).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from kafkacore.errors import (
    AuthenticationError,
    KafkaConnectionError,
    KafkaTimeoutError,
    NoBrokersAvailable,
    RemoteProtocolError,
)
from kafkacore.producer import BatchCompleted, IdState, ProducerCore
from kafkacore.protocol.error_codes import NotEnoughReplicasError
from tests.client.fakebroker import Pump, Topic
from tests.producer.scripted import ScriptedLog, boot_producer, drive, drop_connections

SASL_WRONG = {
    "security_protocol": "SASL_PLAINTEXT",
    "sasl_mechanism": "PLAIN",
    "sasl_plain_username": "alice",
    "sasl_plain_password": "not-alices-password",
}


def _ready(**options: Any) -> tuple[ProducerCore, Pump, ScriptedLog]:
    """A producer whose metadata for "t" and producer id are in place."""
    core, pump, log = boot_producer(partitions=1, linger_ms=0, **options)
    core.append("t", b"warm-up", timestamp=1, token="warm-up", now=pump.now)
    drive(pump, log, until=lambda: bool(log.reported))
    assert log.reported[0][1].error is None
    log.reported.clear()
    return core, pump, log


def _reported(log: ScriptedLog, token: object) -> tuple[float, BatchCompleted]:
    (hit,) = [(t, e) for t, e in log.reported if token in e.tokens]
    return hit


def _chain(error: BaseException | None) -> list[BaseException]:
    out = []
    while error is not None:
        out.append(error)
        error = error.__cause__
    return out


# ----------------------------------------------------------- fault 2: in flight
@pytest.mark.parametrize(
    ("delivery_ms", "request_ms"),
    [(3000, 10000), (12000, 10000), (3000, 30000), (3000, 1000)],
)
def test_a_stalled_broker_cannot_hold_records_past_delivery_timeout(
    delivery_ms: int, request_ms: int
) -> None:
    # Issue 10: 3 s failed at 4.2 s, 12 s (10 s request timeout) at 20.2 s.
    core, pump, log = _ready(
        delivery_timeout_ms=delivery_ms, client={"request_timeout_ms": request_ms}
    )
    log.fault = lambda: ("stall", 10_000.0)  # the broker never answers again
    start = pump.now
    core.append("t", b"v", timestamp=1, token="r", now=pump.now)
    drive(pump, log, until=lambda: bool(log.reported))
    when, event = _reported(log, "r")
    assert when - start <= delivery_ms / 1000 + 0.002
    assert isinstance(event.error, KafkaTimeoutError)
    assert f"delivery_timeout_ms={delivery_ms}" in str(event.error)
    assert "broker 0" in str(event.error)  # which broker kept it
    assert "may or may not be in the log" in str(event.error)
    assert event.error.__cause__ is not None and "broker 0" in str(event.error.__cause__)


@pytest.mark.parametrize("idempotent", [True, False])
def test_every_record_is_reported_within_delivery_timeout_under_stalls_and_retries(
    idempotent: bool,
) -> None:
    # Records keep coming while the broker stalls, answers late, refuses
    # with retriable errors and stalls again; the request timeout is
    # larger than the delivery timeout, so batches expire in flight.
    core, pump, log = _ready(
        delivery_timeout_ms=1500,
        enable_idempotence=idempotent,
        acks="all" if idempotent else 1,
        batch_size=64,
        client={"request_timeout_ms": 4000, "max_in_flight_requests_per_connection": 5},
    )
    faults: list[Any] = [None, ("stall", 2.5), None, ("error", 19), ("error", 6), None]
    faults += [("stall", 0.5), None, ("error", 7), ("stall", 3.0)]
    log.fault = lambda: faults.pop(0) if faults else None
    appended: dict[int, float] = {}
    for i in range(60):
        appended[i] = pump.now
        core.append("t", b"%d" % i, timestamp=1, token=i, now=pump.now)
        drive(pump, log, until=lambda: True)
        for _ in range(3):
            pump.step()
        # Let a little time pass between records (the core's next deadline or 0.2 s).
        deadline = core.next_deadline()
        pump.now = min(pump.now + 0.2, deadline if deadline is not None else pump.now + 0.2)
        pump.now = max(pump.now, appended[i])
        core.handle_timeout(now=pump.now)
        pump.drain()
    drive(pump, log, until=lambda: len({t for _, e in log.reported for t in e.tokens}) >= 60)
    tokens = [t for _, e in log.reported for t in e.tokens]
    assert sorted(tokens) == list(range(60)), "each record reported exactly once"  # type: ignore[type-var]
    late = [
        (t, when - appended[t])  # type: ignore[index]
        for when, e in log.reported
        for t in e.tokens
        if when - appended[t] > 1.5 + 0.002  # type: ignore[index]
    ]
    assert not late, f"reported after delivery_timeout_ms: {late[:5]}"
    failed = [e for _, e in log.reported if e.error is not None]
    assert failed, "the stalls were long enough to expire something"
    assert all(isinstance(e.error, KafkaTimeoutError) for e in failed)
    values = [int(v or b"-1") for _, v in log.logs[("t", 0)] if v != b"warm-up"]
    delivered = {t for _, e in log.reported if e.error is None for t in e.tokens}
    assert delivered <= set(values), "an acknowledged record is missing from the log"
    if idempotent:
        assert len(values) == len(set(values)), "a record was written twice"
        assert values == sorted(values), "records were reordered"


def test_late_answer_for_a_batch_expired_in_flight_is_ignored_and_the_epoch_moves_on() -> None:
    core, pump, log = _ready(delivery_timeout_ms=2000, client={"request_timeout_ms": 5000})
    faults: list[Any] = [("stall", 3.0)]
    log.fault = lambda: faults.pop(0) if faults else None
    epoch = core.producer_id[1]
    start = pump.now
    core.append("t", b"late", timestamp=1, token="late", now=pump.now)
    drive(pump, log, until=lambda: bool(log.reported))
    when, event = _reported(log, "late")
    assert isinstance(event.error, KafkaTimeoutError) and when - start <= 2.0 + 0.002
    # The broker wrote it and answers at 3 s; the answer changes nothing.
    drive(pump, log, until=lambda: log.stalled_until is None and core.id_state is IdState.READY)
    core.append("t", b"after", timestamp=1, token="after", now=pump.now)
    drive(pump, log, until=lambda: len(log.reported) == 2)
    assert [t for _, e in log.reported for t in e.tokens] == ["late", "after"]
    _, after = _reported(log, "after")
    assert after.error is None
    assert [v for _, v in log.logs[("t", 0)]] == [b"warm-up", b"late", b"after"]
    # The expired batch's sequence state was unknown: the epoch was bumped
    # before the partition went on (KIP-360), and "after" starts it at 0.
    assert core.producer_id[1] == epoch + 1


def test_a_request_not_yet_written_is_withdrawn_when_all_its_batches_expired() -> None:
    core, pump, log = _ready(delivery_timeout_ms=1000, client={"request_timeout_ms": 30000})
    drop_connections(pump)
    pump.refuse.add(("127.0.0.1", 9092))  # the leader cannot be reached any more
    core.append("t", b"v", timestamp=1, token="r", now=pump.now)
    drive(pump, log, until=lambda: bool(log.reported))
    when, event = _reported(log, "r")
    assert when <= pump.now and isinstance(event.error, KafkaTimeoutError)
    assert "may or may not" not in str(event.error)  # never written
    causes = _chain(event.error)
    assert any(isinstance(c, KafkaConnectionError) and "broker 0" in str(c) for c in causes)
    assert core._sender.flights == {}  # withdrawn from the client, not left to its timeout
    assert not core.client._in_flight  # nothing left for the client to time out


# ------------------------------------------------------------ fault 4: causes
def _undelivered(
    log: ScriptedLog, pump: Pump, core: ProducerCore, between: Callable[[], None] | None = None
) -> BaseException:
    core.append("t", b"v", timestamp=1, token="r", now=pump.now)
    drive(pump, log, until=lambda: bool(log.reported), between=between)
    _, event = _reported(log, "r")
    assert event.error is not None
    return event.error


def test_a_retriable_error_code_is_the_cause_of_the_timeout() -> None:
    core, pump, log = _ready(delivery_timeout_ms=3000)
    log.fault = lambda: ("error", 19)
    error = _undelivered(log, pump, core)
    assert isinstance(error, KafkaTimeoutError)
    assert isinstance(error.__cause__, NotEnoughReplicasError)
    assert "NOT_ENOUGH_REPLICAS" in str(error) and "broker 0" in str(error)
    assert "expired: not delivered" not in str(error)


def test_a_lost_connection_is_the_cause_of_the_timeout() -> None:
    core, pump, log = _ready(delivery_timeout_ms=3000)
    drops: list[int] = []

    def fault() -> Any:
        drops.append(1)
        return ("lose",)

    def between() -> None:
        if drops:
            drops.clear()
            drop_connections(pump)

    log.fault = fault
    error = _undelivered(log, pump, core, between)
    assert isinstance(error, KafkaTimeoutError)
    causes = _chain(error)
    assert any(isinstance(c, KafkaConnectionError) and "broker 0" in str(c) for c in causes)
    assert "connection reset by peer" in str(error)


def test_a_protocol_error_is_the_cause_of_the_timeout() -> None:
    core, pump, log = _ready(delivery_timeout_ms=3000)
    garbage: list[int] = []

    def fault() -> Any:
        garbage.append(1)
        return ("lose",)

    log.fault = fault

    def inject() -> None:
        if garbage:
            garbage.clear()
            for conn_id in list(pump.conns):  # a response nobody asked for
                pump.inject(conn_id, b"\x00\x00\x00\x04\x7f\xff\xff\x00")

    error = _undelivered(log, pump, core, inject)
    assert isinstance(error, KafkaTimeoutError)
    causes = _chain(error)
    assert any(isinstance(c, RemoteProtocolError) for c in causes), causes
    assert "correlation" in str(error).lower()


def test_an_unreachable_leader_is_the_cause_of_the_timeout() -> None:
    core, pump, log = _ready(delivery_timeout_ms=3000)
    pump.refuse.add(("127.0.0.1", 9092))
    drop_connections(pump)
    error = _undelivered(log, pump, core)
    assert isinstance(error, KafkaTimeoutError)
    assert "refused" in str(error) and "broker 0" in str(error)


# ------------------------------------------------- fault 8: the right failure
def test_a_dead_bootstrap_address_is_reported_at_max_block_ms() -> None:
    """A cluster never reached (wrong address, down at start) fails the
    waiting records when max_block_ms runs out, as itself: NoBrokersAvailable
    naming the address, the refusal as its cause (issue 26: not after a few
    refused connects, since a broker started late comes up inside the bound)."""
    core, pump, log = boot_producer(partitions=1, max_block_ms=5000)
    pump.refuse.add(("127.0.0.1", 9092))
    core.append("t", b"v", timestamp=1, token="r", now=pump.now)
    drive(pump, log, until=lambda: bool(log.reported))
    when, event = _reported(log, "r")
    assert when == pytest.approx(5.0, abs=0.05)
    assert isinstance(event.error, NoBrokersAvailable)
    assert isinstance(event.error.__cause__, KafkaConnectionError)
    assert "not present" not in str(event.error)
    assert "127.0.0.1:9092" in str(event.error) and "refused" in str(event.error)
    assert "max_block_ms=5000" in str(event.error)


def test_a_broker_that_comes_up_inside_max_block_ms_is_used() -> None:
    core, pump, log = boot_producer(partitions=1, max_block_ms=5000)
    pump.refuse.add(("127.0.0.1", 9092))
    core.append("t", b"v", timestamp=1, token="r", now=pump.now)
    drive(pump, log, until=lambda: pump.now >= 3.0)
    assert not log.reported and core.client.metrics().connection_failures >= 3
    pump.refuse.clear()
    drive(pump, log, until=lambda: bool(log.reported))
    when, event = _reported(log, "r")
    assert event.error is None and when < 5.0


def test_a_cluster_lost_after_contact_is_the_cause_after_max_block_ms() -> None:
    """Once the cluster answered, an outage may be short: records wait for
    max_block_ms, then fail naming what went wrong."""
    core, pump, log = boot_producer(partitions=1, max_block_ms=5000)
    core.append("t", b"v", timestamp=1, token="first", now=pump.now)
    drive(pump, log, until=lambda: bool(log.reported))
    assert _reported(log, "first")[1].error is None
    pump.lose_cluster()
    start = pump.now
    core.append("u", b"v", timestamp=1, token="r", now=pump.now)
    drive(pump, log, until=lambda: len(log.reported) == 2)
    when, event = _reported(log, "r")
    assert when - start == pytest.approx(5.0, abs=0.05)
    assert isinstance(event.error, KafkaTimeoutError)
    assert isinstance(event.error.__cause__, NoBrokersAvailable)
    assert "not present" not in str(event.error)
    assert "max_block_ms=5000" in str(event.error) and "127.0.0.1:9092" in str(event.error)


@pytest.mark.parametrize("idempotent", [True, False])
def test_a_wrong_password_fails_the_records_at_once(idempotent: bool) -> None:
    core, pump, log = boot_producer(
        partitions=1,
        max_block_ms=60000,
        enable_idempotence=idempotent,
        acks="all" if idempotent else 1,
        client=SASL_WRONG,
    )
    for broker in log.brokers:
        broker.require_auth = True
    core.append("t", b"v", timestamp=1, token="r", now=pump.now)
    drive(pump, log, until=lambda: bool(log.reported))
    when, event = _reported(log, "r")
    assert when < 1.0  # at once, not after max_block_ms
    assert isinstance(event.error, AuthenticationError)
    assert "authentication failed" in str(event.error).lower() and "node -1" in str(event.error)
    # Later records too, without waiting for max_block_ms.
    core.append("t", b"w", timestamp=1, token="s", now=pump.now)
    drive(pump, log, until=lambda: len(log.reported) == 2)
    later, again = _reported(log, "s")
    assert later - when < 1.0 and isinstance(again.error, AuthenticationError)


def test_topic_not_present_only_when_a_broker_said_so() -> None:
    core, pump, log = boot_producer(topics=[Topic("t", 1)], max_block_ms=2000)
    core.append("nope", b"v", timestamp=1, token="r", now=pump.now)
    drive(pump, log, until=lambda: bool(log.reported))
    _, event = _reported(log, "r")
    assert isinstance(event.error, KafkaTimeoutError)
    assert "topic 'nope' not present in metadata after max_block_ms=2000" in str(event.error)
    assert "UNKNOWN_TOPIC_OR_PARTITION" in str(event.error.__cause__)


def test_a_stalled_cluster_is_not_called_an_absent_topic() -> None:
    core, pump, log = boot_producer(partitions=1, max_block_ms=2000)
    for broker in log.brokers:
        broker.hold = True  # connects, never answers
    core.append("t", b"v", timestamp=1, token="r", now=pump.now)
    drive(pump, log, until=lambda: bool(log.reported))
    _, event = _reported(log, "r")
    # No broker ever answered (ApiVersions timed out): a cluster never reached.
    assert isinstance(event.error, NoBrokersAvailable)
    assert "not present" not in str(event.error)
    assert "no metadata for topic 't' within max_block_ms=2000" in str(event.error)


def test_an_unknown_error_code_for_the_topic_fails_at_once_and_says_so() -> None:
    core, pump, log = boot_producer(partitions=1, max_block_ms=60000)
    cluster = log.brokers[0].cluster
    original = cluster.metadata

    def metadata(request: Any) -> Any:
        response = original(request)
        for topic in response.topics:
            topic.error_code = 32767
            topic.partitions = []
        return response

    cluster.metadata = metadata  # type: ignore[method-assign]
    core.append("t", b"v", timestamp=1, token="r", now=pump.now)
    drive(pump, log, until=lambda: bool(log.reported))
    when, event = _reported(log, "r")
    assert when < 1.0
    assert "32767" in str(event.error) and "'t'" in str(event.error)
    assert "not present" not in str(event.error)


# ------------------------------------------- fault 1 (producer side), backoff
def test_resends_after_lost_connections_are_deduplicated_with_idempotence() -> None:
    # The run: an acknowledgement lost with the connection, again
    # and again; the broker appended one send 30 times. With idempotence
    # every resend carries the same sequence and the log keeps one copy.
    core, pump, log = _ready()
    lost: list[int] = []
    answers = [("lose",)] * 30

    def fault() -> Any:
        if answers:
            lost.append(1)
            return answers.pop()
        return None

    log.fault = fault

    def between() -> None:
        if lost:
            lost.clear()
            drop_connections(pump)

    core.append("t", b"once", timestamp=1, token="r", now=pump.now)
    drive(pump, log, until=lambda: bool(log.reported), between=between)
    _, event = _reported(log, "r")
    assert event.error is None and event.base_offset == 1
    assert log.produce_requests >= 31
    assert [v for _, v in log.logs[("t", 0)]] == [b"warm-up", b"once"]


def test_without_idempotence_a_resend_after_a_lost_answer_is_a_duplicate() -> None:
    # Documented, inherent: nothing tells the broker the resend is a copy.
    core, pump, log = _ready(enable_idempotence=False, acks=1)
    answers: list[Any] = [("lose",)]
    lost: list[Any] = []

    def fault() -> Any:
        lost.extend(answers)
        return answers.pop() if answers else None

    def between() -> None:
        if lost:
            lost.clear()
            drop_connections(pump)

    log.fault = fault
    core.append("t", b"twice", timestamp=1, token="r", now=pump.now)
    drive(pump, log, until=lambda: bool(log.reported), between=between)
    assert [v for _, v in log.logs[("t", 0)]] == [b"warm-up", b"twice", b"twice"]


def test_produce_retries_back_off_exponentially_with_jitter() -> None:
    core, pump, log = _ready(delivery_timeout_ms=120000, client={"retry_backoff_ms": 100})
    answers: list[Any] = [("error", 19)] * 8
    log.fault = lambda: answers.pop() if answers else None
    log.produce_times.clear()
    core.append("t", b"v", timestamp=1, token="r", now=pump.now)
    drive(pump, log, until=lambda: bool(log.reported))
    assert log.reported[0][1].error is None
    times = log.produce_times
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert len(gaps) == 8
    for n, gap in enumerate(gaps, start=1):
        expected = min(0.1 * 2 ** (n - 1), 1.0)  # up to retry_backoff_max_ms (1 s)
        assert expected * 0.8 - 1e-9 <= gap <= expected * 1.2 + 1e-9, (n, gap)
    assert len({round(g / min(0.1 * 2 ** (n - 1), 1.0), 6) for n, g in enumerate(gaps, 1)}) > 1


def test_waiting_for_a_leader_asks_for_metadata_less_and_less_often() -> None:
    # The producer's own asks (the client's refresh cadence is the client's).
    core, pump, log = _ready(delivery_timeout_ms=30000)
    cluster = log.brokers[0].cluster
    cluster.topics["t"].leaders[0] = -1  # no leader for a while
    log.fault = lambda: ("error", 6) if cluster.topics["t"].leaders[0] < 0 else None
    asks: list[float] = []
    ask = core.client.request_metadata_update

    def counted(*, now: float) -> Any:
        asks.append(now)
        return ask(now=now)

    core.client.request_metadata_update = counted  # type: ignore[method-assign]
    core.append("t", b"v", timestamp=1, token="r", now=pump.now)
    drive(pump, log, until=lambda: pump.now >= 10.0)
    gaps = [b - a for a, b in itertools.pairwise(asks)]
    # A flat retry_backoff_ms would be ~100 asks in 10 s; growing to 1 s, ~15.
    assert 5 <= len(asks) <= 20, asks
    assert max(gaps) >= 0.8 and gaps[0] <= 0.12 * 2, gaps
    cluster.topics["t"].leaders[0] = 0
    drive(pump, log, until=lambda: bool(log.reported))
    assert log.reported[0][1].error is None


@pytest.mark.parametrize("tv2", [True, False])
def test_a_transaction_whose_batch_expired_in_flight_must_abort_then_goes_on(tv2: bool) -> None:
    core, pump, log = boot_producer(
        partitions=1,
        transactional_id="tx",
        tv2=tv2,
        linger_ms=0,
        delivery_timeout_ms=1500,
        client={"request_timeout_ms": 4000},
    )
    core.client.add_topic("t", now=pump.now)  # metadata first: the clock starts at the append
    init = core.init_transactions(now=pump.now)
    drive(
        pump, log, until=lambda: init.done and bool(core.client.cluster.partitions_for_topic("t"))
    )
    assert init.error is None
    faults: list[Any] = [("stall", 2.5)]
    log.fault = lambda: faults.pop(0) if faults else None
    core.begin_transaction(now=pump.now)
    start = pump.now
    core.append("t", b"lost", timestamp=1, token="lost", now=pump.now)
    commit = core.commit_transaction(now=pump.now)
    drive(pump, log, until=lambda: commit.done and bool(log.reported))
    when, event = _reported(log, "lost")
    assert isinstance(event.error, KafkaTimeoutError) and when - start <= 1.5 + 0.002
    assert commit.error is not None  # the transaction cannot commit a lost record
    abort = core.abort_transaction(now=pump.now)
    drive(pump, log, until=lambda: abort.done)
    assert abort.error is None
    core.begin_transaction(now=pump.now)
    core.append("t", b"next", timestamp=1, token="next", now=pump.now)
    commit = core.commit_transaction(now=pump.now)
    drive(pump, log, until=lambda: commit.done)
    assert commit.error is None
    assert _reported(log, "next")[1].error is None


def test_producer_config_repr_never_shows_client_secrets() -> None:
    from kafkacore.producer import ProducerConfig

    config = ProducerConfig(
        client={"sasl_plain_username": "alice", "sasl_plain_password": "hunter2-secret"}
    )
    assert "hunter2-secret" not in repr(config)

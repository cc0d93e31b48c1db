"""The waiting-for-metadata queue: its verdict table, bounds, expiry and early failures."""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.errors import AuthenticationError, KafkaTimeoutError, NoBrokersAvailable
from kafkacore.producer import BatchCompleted, ProducerConfig
from kafkacore.producer.accumulator import RecordAccumulator
from kafkacore.producer.causes import FailureLog
from kafkacore.producer.ledger import DeliveryLedger
from kafkacore.producer.waiting import (
    MetadataAsks,
    MetadataWait,
    TopicVerdict,
    WaitingRecords,
    verdict,
)
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.error_codes import TopicAuthorizationFailedError
from tests.producer.fakes import StubClient


class _Setup:
    def __init__(self) -> None:
        self.client = StubClient()
        client = self.client.core
        self.acc = RecordAccumulator(ProducerConfig())
        self.events: list[object] = []
        self.ledger = DeliveryLedger(self.acc, self.events.append, lambda b, e: None)
        self.asks = MetadataAsks(client, lambda n: 0.1 * n)
        self.failures = FailureLog()
        self.wait = MetadataWait(client, self.acc, self.ledger, self.asks, self.failures, 3000)
        self.placed: list[tuple[int, int, float]] = []

    def add(self, topic: str = "t", *, id: int = 1, deadline: float = 3.0, **kw: Any) -> None:
        self.wait.add(WaitingRecords(id, topic, None, 40, deadline, f"tok{id}", 5, **kw), 0.0)

    def placer(self, w: WaitingRecords, count: int, now: float) -> None:
        self.placed.append((w.id, count, now))

    @property
    def reports(self) -> list[BatchCompleted]:
        return [e for e in self.events if isinstance(e, BatchCompleted)]


# ------------------------------------------------------------- the verdict table
@pytest.mark.parametrize(
    ("code", "partitions", "expected"),
    [
        (ErrorCode.NONE, 0, TopicVerdict.ASK),
        (ErrorCode.NONE, 3, TopicVerdict.PLACE),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0, TopicVerdict.ASK),  # retriable
        (ErrorCode.LEADER_NOT_AVAILABLE, 2, TopicVerdict.PLACE),
        (ErrorCode.TOPIC_AUTHORIZATION_FAILED, 0, TopicVerdict.FAIL),
        (ErrorCode.INVALID_TOPIC_EXCEPTION, 3, TopicVerdict.FAIL),
        (9999, 0, TopicVerdict.FAIL),  # a code this client does not know: waiting will not help
    ],
)
def test_verdict_table(code: int, partitions: int, expected: TopicVerdict) -> None:
    assert verdict(code, partitions) is expected


# ------------------------------------------------------------- asks
def test_metadata_asks_back_off_while_they_bring_nothing() -> None:
    s = _Setup()
    s.asks.ask(0.0)
    s.asks.ask(0.05)  # too soon
    assert s.client.asked == [0.0] and s.asks.wake(0.05) == pytest.approx(0.1)
    s.asks.ask(0.1)
    assert s.client.asked == [0.0, 0.1] and s.asks.next_at == pytest.approx(0.3)
    assert s.asks.wake(0.31) is None
    s.asks.reset()
    assert s.asks.streak == 0


# ------------------------------------------------------------- the queue
def test_add_charges_memory_tracks_and_asks_for_the_topic() -> None:
    s = _Setup()
    s.add(id=1)
    s.add(id=2, many=([b"a", b"b", None], None, [22, 22, 21]))
    assert s.acc.used == 80 and s.ledger.incomplete == {1: 1, 2: 2}
    assert s.client.topics == {"t"} and "t" in s.wait and bool(s.wait)
    assert s.wait.record_count == 4 and s.wait.wake() == 3.0


def test_place_places_every_waiting_append_in_order_once_partitions_are_known() -> None:
    s = _Setup()
    s.add(id=1)
    s.add(id=2)
    s.wait.place(0.5, s.placer)
    assert s.placed == [] and s.client.asked == [0.5]  # no partitions yet: ask
    s.client.cluster.partitions["t"] = {0, 1}
    s.wait.place(0.7, s.placer)
    assert s.placed == [(1, 2, 0.7), (2, 2, 0.7)]
    assert s.acc.used == 0 and s.ledger.incomplete == {}  # placing charges them again
    assert not s.wait and s.wait.wake() is None


def test_place_fails_a_topic_the_brokers_refuse() -> None:
    s = _Setup()
    s.add("secret", id=1)
    s.add("bad", id=2)
    s.client.cluster.errors.update(
        secret=ErrorCode.TOPIC_AUTHORIZATION_FAILED, bad=ErrorCode.INVALID_TOPIC_EXCEPTION
    )
    named = TopicAuthorizationFailedError("broker 0 refused topic 'secret'")
    s.client.cluster.failures["secret"] = named
    s.wait.place(0.0, s.placer)
    secret, bad = s.reports
    assert secret.error is named and secret.tokens == ["tok1"] and secret.partition == -1
    assert "carried error code 17" in str(bad.error)
    assert s.acc.used == 0 and not s.wait and s.placed == []


def test_expire_fails_appends_past_max_block_ms_and_forgets_idle_topics() -> None:
    s = _Setup()
    s.add(id=1, deadline=1.0)
    s.add(id=2, deadline=2.0)
    s.wait.expire(1.0)
    (first,) = s.reports
    assert isinstance(first.error, KafkaTimeoutError) and first.tokens == ["tok1"]
    assert "no broker answered a Metadata request in time" in str(first.error)
    assert s.wait.record_count == 1 and s.acc.used == 40
    s.client.unavailable = ConnectionRefusedError("all brokers refused")
    s.wait.expire(2.5)
    assert "ConnectionRefusedError: all brokers refused" in str(s.reports[1].error)
    assert not s.wait and s.acc.used == 0


def test_a_named_partition_is_reported_as_named() -> None:
    s = _Setup()
    s.wait.add(WaitingRecords(1, "t", 4, 30, 1.0, "x", 5), 0.0)
    s.wait.fail_all(RuntimeError("aborted"))
    assert s.reports[0].partition == 4 and not s.wait


def test_refused_credentials_fail_every_waiting_append() -> None:
    s = _Setup()
    s.add("a", id=1)
    s.add("b", id=2, many=([b"x", b"y"], None, [21, 21]))
    refused = AuthenticationError("SASL PLAIN refused")
    s.wait.fail_auth(refused)
    a, b = s.reports
    assert isinstance(a.error, AuthenticationError) and a.error.__cause__ is refused
    assert "records for topic 'a' not sent" in str(a.error) and b.tokens == ["tok2", "tok2"]
    assert not s.wait and s.acc.used == 0


def test_a_cluster_never_reached_fails_the_waiting_appends_at_max_block_ms() -> None:
    s = _Setup()
    s.add(id=1, deadline=1.0)
    cause = ConnectionRefusedError("refused")
    unreachable = NoBrokersAvailable("no bootstrap server is reachable (127.0.0.1:1: refused)")
    unreachable.__cause__ = cause
    s.client.unreachable = unreachable
    s.wait.expire(0.5)
    assert s.reports == []  # before the bound: wait on (issue 26)
    s.wait.expire(1.0)
    (report,) = s.reports
    assert isinstance(report.error, NoBrokersAvailable) and report.error.__cause__ is cause
    text = str(report.error)
    assert "no metadata for topic 't' within max_block_ms=" in text and "127.0.0.1:1" in text

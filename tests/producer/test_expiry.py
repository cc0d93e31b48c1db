"""Expiry: batches past delivery_timeout_ms fail, queued or in flight, saying why."""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.errors import KafkaConnectionError, KafkaTimeoutError
from kafkacore.producer.expiry import NOTHING, Expiry, ExpiryDecision
from kafkacore.producer.transaction import TxnState
from tests.producer.fakes import T0, T2, SenderRig


class _Expiry(SenderRig):
    def __init__(self, **options: Any) -> None:
        options.setdefault("delivery_timeout_ms", 1000)
        super().__init__(**options)
        self.expiry = Expiry(self.cfg, self.client.core, self.identity, self.txn, self.failures)

    def decide(self, now: float) -> ExpiryDecision:
        return self.expiry.decide(now, self.acc.queues.values(), self.sender.flights.values())

    def expire(self, now: float) -> bool:
        """One pass as the core runs it: the policy decides, the sender applies."""
        decision = self.decide(now)
        return decision is not NOTHING and self.sender.apply_expiry(decision, now)


def test_nothing_expires_before_its_deadline() -> None:
    e = _Expiry(acks=1)
    e.append(T0)
    assert e.expire(0.999) is False and e.reports == []


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        ("never-sent", "it was never sent (linger_ms or the in-flight limit held it)"),
        ("no-id", "the producer has no producer id yet (InitProducerId did not succeed)"),
        ("no-id-failed", "InitProducerId did not succeed: cluster said no)"),
        ("no-leader", "no leader known for t-0"),
        ("no-leader-metadata", "no leader known for t-0 (metadata failed: timed out)"),
        ("unreachable", "its leader, broker 0, is unreachable: refused"),
        ("not-added", "the partition was not added to the transaction"),
        ("failed-attempt", "attempt 1 failed: lost"),
    ],
)
def test_a_queued_batch_expires_with_the_reason_it_still_waits(setup: str, reason: str) -> None:
    # Idempotence (acks=all) only where the producer id matters.
    idempotent = setup.startswith("no-id") or setup == "not-added"
    e = _Expiry(acks="all" if idempotent else 1, transactional=setup == "not-added")
    if setup not in ("no-id", "no-id-failed"):
        e.ready()
    if setup == "no-id-failed":
        e.failures.producer_id = RuntimeError("cluster said no")
    if setup.startswith("no-leader"):
        e.client.cluster.leaders[T0] = -1
        if setup == "no-leader-metadata":
            e.failures.metadata = TimeoutError("timed out")
    if setup == "unreachable":
        e.failures.nodes[0] = ConnectionRefusedError("refused")
    batch = e.append(T0)
    if setup == "failed-attempt":
        batch.attempts = 1
        batch.last_error = KafkaConnectionError("lost")
    assert e.expire(1.0) is False
    (report,) = e.reports
    assert isinstance(report.error, KafkaTimeoutError)
    assert "1 record for t-0 not delivered within delivery_timeout_ms=1000" in str(report.error)
    assert reason in str(report.error)
    assert not e.acc.has_queued()


def test_a_not_added_partition_names_the_transaction_error() -> None:
    e = _Expiry(transactional=True)
    e.ready()
    assert e.txn is not None
    e.txn.state = TxnState.IN_TRANSACTION
    e.txn.abortable(RuntimeError("add refused"))
    e.append(T0)
    e.expire(1.0)
    assert e.reports[0].error is not None and e.reports[0].error.__cause__ is e.txn.error


def test_a_written_request_without_an_answer_expires_its_batches() -> None:
    e = _Expiry(acks=1)
    early = e.append(T0, token="early")
    e.sender.drain(0.0, force=True)
    e.send.handles[0].node_id = 0  # written to broker 0
    early.last_error = KafkaConnectionError("lost before")
    assert e.expire(1.5) is False  # written bytes cannot be unsent: no cancel
    (report,) = e.reports
    error = report.error
    assert isinstance(error, KafkaTimeoutError) and early.unknown
    assert "Produce request #1 to broker 0 had no answer after 1.500 s (attempt 1)" in str(error)
    assert "may or may not be in the log" in str(error)
    assert error.__cause__ is not None and error.__cause__.__cause__ is early.last_error
    assert e.client.cancelled == [] and e.sender.flights  # the answer is still awaited


def test_an_unwritten_request_is_cancelled_once_all_its_batches_expired() -> None:
    e = _Expiry(acks=1)
    e.append(T0, token="a")
    e.sender.drain(0.0, force=True)
    e.failures.nodes[0] = ConnectionRefusedError("refused")
    assert e.expire(1.0) is True
    (report,) = e.reports
    assert "still waits for a connection to broker 0 (attempt 1)" in str(report.error)
    assert report.error is not None
    assert isinstance(report.error.__cause__, KafkaTimeoutError)
    assert isinstance(report.error.__cause__.__cause__, ConnectionRefusedError)
    assert e.client.cancelled == [e.send.handles[0]]


def test_a_flight_lives_on_while_one_of_its_batches_has_time() -> None:
    e = _Expiry(acks=1)
    e.append(T0, token="old")
    e.acc.append(T2, b"v", None, None, 1, "young", 30, 0.5)  # appended later: later deadline
    e.sender.drain(0.5, force=True)
    (flight,) = e.sender.flights.values()
    assert flight.deadline == 1.0
    assert e.expire(1.0) is False
    assert [r.tokens for r in e.reports] == [["old"]] and flight.deadline == 1.5
    assert e.expire(1.2) is False  # the flight's deadline has not come
    e.send.handles[0]._complete(None, RuntimeError("done"))  # answered meanwhile
    assert e.expire(1.5) is False and e.client.cancelled == []
    assert e.expire(2.0) is False and len(e.reports) == 2


def test_deciding_changes_nothing_and_names_each_batch_and_why() -> None:
    e = _Expiry(acks=1)
    assert e.decide(5.0) is NOTHING
    flying = e.append(T0, token="flying")
    e.sender.drain(0.0, force=True)
    e.send.handles[0].node_id = 0  # written
    queued = e.append(T2, token="queued")
    assert e.decide(0.5) is NOTHING
    decision = e.decide(1.0)
    # A pure decision: nothing reported, removed, marked or withdrawn yet.
    (flight,) = e.sender.flights.values()
    assert e.reports == [] and not flying.unknown and e.client.cancelled == []
    assert flight.deadline == 1.0 and list(e.acc.queues[T2].batches) == [queued]
    assert [(x.batch, x.written) for x in decision.queued] == [(queued, False)]
    assert "it was never sent" in str(decision.queued[0].error)
    (verdict,) = decision.flights
    assert verdict.flight_id == flight.handle.id and verdict.withdraw is False
    assert verdict.deadline == float("inf")
    assert [(x.batch, x.written) for x in verdict.expired] == [(flying, True)]
    assert "had no answer" in str(verdict.expired[0].error.__cause__)
    assert e.sender.apply_expiry(decision, 1.0) is False
    assert flying.unknown and flight.deadline == float("inf") and not e.acc.has_queued()
    assert [r.tokens for r in e.reports] == [["queued"], ["flying"]]

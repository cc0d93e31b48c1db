"""ProducerIds: InitProducerId for the first id, KIP-360 bumps, backoff after failures."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import pytest

from kafkacore.client import AnyNode, TopicPartition, TransactionCoordinator
from kafkacore.errors import AuthenticationError, KafkaTimeoutError
from kafkacore.producer import BatchCompleted, IdState, ProducerConfig
from kafkacore.producer.accumulator import RecordAccumulator
from kafkacore.producer.batch import ProducerBatch
from kafkacore.producer.causes import FailureLog
from kafkacore.producer.coordinator import CoordinatorRequests
from kafkacore.producer.idempotence import ProducerIdentity
from kafkacore.producer.ledger import DeliveryLedger
from kafkacore.producer.producer_id import INIT_PRODUCER_ID_MAX, ProducerIds, unresolved
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from kafkacore.timers import Deadlines
from tests.producer.fakes import RecordingSend

TP = TopicPartition("t", 0)


class _Listener:
    def __init__(self) -> None:
        self.assigned: list[float] = []
        self.failed: list[BaseException] = []

    def id_assigned(self, now: float) -> None:
        self.assigned.append(now)

    def id_failed(self, error: BaseException, now: float) -> None:
        self.failed.append(error)


class _Ids:
    def __init__(self, **options: Any) -> None:
        self.cfg = ProducerConfig(**options)
        self.identity = ProducerIdentity()
        self.acc = RecordAccumulator(self.cfg)
        self.events: list[object] = []
        self.ledger = DeliveryLedger(self.acc, self.events.append, lambda b, e: None)
        self.send = RecordingSend()
        self.deadlines: Deadlines[Hashable] = Deadlines()
        self.coordinator = CoordinatorRequests(
            self.send, self.deadlines, lambda n: 0.5 * n, transactional=False
        )
        self.failures = FailureLog()
        self.ids = ProducerIds(
            self.cfg,
            self.identity,
            self.acc,
            self.ledger,
            self.coordinator,
            self.failures,
            lambda n: 0.5 * n,
        )

    def ready(self, pid: int = 1000, epoch: int = 0) -> None:
        self.ids.request(0.0)
        self.send.answer(m.InitProducerIdResponse(producer_id=pid, producer_epoch=epoch))

    def queue(self, n: int) -> list[ProducerBatch]:
        batches = []
        for i in range(n):
            batch = self.acc.append(TP, b"v", None, None, 1, i, 30, 0.0)
            batch.build()  # sealed: the next record opens a batch
            batches.append(batch)
        return batches

    def id_state(self) -> IdState:
        return self.identity.state

    @property
    def reports(self) -> list[BatchCompleted]:
        return [e for e in self.events if isinstance(e, BatchCompleted)]


def test_an_idempotent_producer_asks_for_an_id_at_once() -> None:
    f = _Ids()
    assert f.ids.wants(0.0, produce_in_flight=0)
    f.ids.request(0.0)
    assert f.identity.state is IdState.REQUESTING and not f.ids.wants(0.0, 0)
    (request,) = f.send.requests
    assert isinstance(request, m.InitProducerIdRequest)
    assert (request.transactional_id, request.producer_id, request.producer_epoch) == (
        None,
        -1,
        -1,
    )
    kw = f.send.sent[0][2]
    assert kw["target"] == AnyNode() and kw["max_version"] == INIT_PRODUCER_ID_MAX
    assert not f.coordinator.busy  # not a transaction step
    f.send.answer(m.InitProducerIdResponse(producer_id=7, producer_epoch=3))
    assert f.identity.ready and (f.identity.producer_id, f.identity.epoch) == (7, 3)
    assert not f.ids.wants(0.0, 0) and f.ids.wake(0.0) is None


def test_a_producer_without_idempotence_never_asks() -> None:
    f = _Ids(acks=1)
    assert not f.ids.wants(0.0, 0)
    f.ids.need_bump()
    assert f.identity.state is IdState.NONE


def test_a_failed_request_fails_what_waits_and_retries_after_a_backoff() -> None:
    f = _Ids()
    f.queue(2)
    f.ids.request(0.0)
    refused = m.InitProducerIdResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    f.send.answer(refused, now=1.0)
    assert f.identity.state is IdState.NONE and f.ids.failed_in_row == 1
    assert f.ids.retry_at == 1.5 and f.ids.wake(1.0) == 1.5 and f.ids.wake(1.5) is None
    assert not f.ids.wants(1.2, 0) and f.ids.wants(1.5, 0)
    assert [r.tokens for r in f.reports] == [[0], [1]]
    assert f.failures.producer_id is f.reports[0].error
    f.ids.request(1.5)
    f.send.answer(refused, now=2.0)
    assert f.ids.retry_at == 3.0  # the backoff grows while it keeps failing
    f.ids.request(3.0)
    f.send.answer(m.InitProducerIdResponse(producer_id=1, producer_epoch=0))
    assert f.ids.failed_in_row == 0 and f.failures.producer_id is None


def test_refused_credentials_say_which_records_they_stopped() -> None:
    f = _Ids()
    f.queue(1)
    f.ids.request(0.0)
    refused = AuthenticationError("SASL refused")
    f.send.answer(error=refused)
    (report,) = f.reports
    assert isinstance(report.error, AuthenticationError) and report.error.__cause__ is refused
    assert "1 records for t-0 not sent" in str(report.error)


def test_a_bump_waits_for_the_in_flight_requests_then_asks_for_the_next_epoch() -> None:
    f = _Ids()
    f.ready(pid=1000, epoch=4)
    f.ids.need_bump()
    f.ids.need_bump()  # asked twice: one bump
    assert f.id_state() is IdState.BUMP_PENDING
    assert not f.ids.wants(0.0, produce_in_flight=1) and f.ids.wants(0.0, produce_in_flight=0)
    f.ids.request(0.0)
    f.ids.need_bump()  # while bumping: still one bump
    request = f.send.requests[-1]
    assert (request.producer_id, request.producer_epoch) == (1000, 4)
    assert f.id_state() is IdState.BUMPING


def test_after_a_bump_sequences_restart_and_batches_of_unknown_fate_fail() -> None:
    f = _Ids()
    f.ready()
    kept, unknown = f.queue(2)
    q = f.acc.queues[TP]
    q.next_sequence = 7
    kept.base_sequence, unknown.base_sequence = 3, 5
    unknown.unknown = True
    unknown.last_error = TimeoutError("no answer")
    f.ids.need_bump()
    f.ids.request(0.0)
    f.send.answer(m.InitProducerIdResponse(producer_id=1000, producer_epoch=1))
    assert f.identity.ready and f.identity.epoch == 1
    assert list(q.batches) == [kept] and kept.base_sequence == -1 and q.next_sequence == 0
    (report,) = f.reports
    assert isinstance(report.error, KafkaTimeoutError) and report.tokens == [1]
    assert unknown.base_sequence == -1  # its gap is closed by the bump itself


def test_a_failed_bump_is_retried_after_its_backoff() -> None:
    f = _Ids()
    f.ready()
    f.ids.need_bump()
    f.ids.request(0.0)
    f.send.answer(m.InitProducerIdResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
    assert f.identity.state is IdState.BUMP_PENDING and f.ids.wake(0.0) == 0.5


def test_the_first_id_keeps_the_sequences_of_queued_batches() -> None:
    f = _Ids()
    f.queue(1)
    f.acc.queues[TP].next_sequence = 3
    f.ready()
    assert f.acc.queues[TP].next_sequence == 3


def test_a_transactional_producer_asks_its_coordinator_and_tells_the_listener() -> None:
    f = _Ids(transactional_id="tx", transaction_timeout_ms=5000)
    listener = _Listener()
    f.ids.listener = listener
    assert not f.ids.wants(0.0, 0) and f.ids.wake(0.0) is None  # init_transactions asks
    f.queue(1)
    f.acc.queues[TP].next_sequence = 3
    f.ids.request(0.0)
    request = f.send.requests[0]
    assert request.transactional_id == "tx" and request.transaction_timeout_ms == 5000
    assert f.send.sent[0][2]["target"] == TransactionCoordinator("tx")
    f.send.answer(m.InitProducerIdResponse(producer_id=9, producer_epoch=0), now=2.0)
    assert listener.assigned == [2.0] and f.acc.queues[TP].next_sequence == 0
    f.identity.fire("request")
    f.ids.need_bump()  # transactions abort instead of bumping
    assert f.identity.state is IdState.REQUESTING


def test_a_transactional_failure_goes_to_the_listener() -> None:
    f = _Ids(transactional_id="tx")
    listener = _Listener()
    f.ids.listener = listener
    f.queue(1)
    f.ids.request(0.0)
    f.send.answer(
        m.InitProducerIdResponse(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    )
    assert f.identity.state is IdState.NONE and len(listener.failed) == 1
    assert f.reports == [] and f.ids.failed_in_row == 0  # the caller of init hears of it


@pytest.mark.parametrize("last", [None, ConnectionResetError("reset")])
def test_unresolved_names_the_last_error(last: BaseException | None) -> None:
    f = _Ids()
    (batch,) = f.queue(1)
    batch.last_error = last
    error = unresolved(batch)
    assert "1 records for t-0: an earlier attempt got no answer" in str(error)
    assert ("ConnectionResetError: reset" in str(error)) == (last is not None)
    assert error.__cause__ is last

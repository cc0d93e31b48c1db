"""The sender on its own: draining per leader, in-flight limits, answers, retries, splits."""

from __future__ import annotations

import pytest

from kafkacore.client import Node
from kafkacore.errors import (
    AuthenticationError,
    KafkaConnectionError,
    KafkaTimeoutError,
    RemoteProtocolError,
)
from kafkacore.producer import (
    IdState,
    ProducerFencedError,
    RecordTooLargeError,
    TransactionAbortedError,
)
from kafkacore.producer.accumulator import SEQUENCE_WRAP
from kafkacore.producer.batch import BatchState
from kafkacore.producer.transaction import PRODUCE_MAX, TxnState
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.error_codes import (
    NotLeaderOrFollowerError,
    TopicAuthorizationFailedError,
)
from kafkacore.records import RecordBatch
from tests.producer.fakes import T0, T1, T2, SenderRig


# ------------------------------------------------------------------ drain
def test_nothing_queued_sends_nothing() -> None:
    s = SenderRig()
    assert s.sender.drain(0.0, force=True) is False and s.send.sent == []


def test_ready_batches_go_one_request_per_leader() -> None:
    s = SenderRig(acks=1)
    for tp in (T0, T1, T2):
        s.append(tp)
    assert s.sender.drain(0.001, force=False) is False  # still lingering
    assert s.sender.drain(0.005, force=False) is True
    assert [kw["target"] for _, _, kw in s.send.sent] == [Node(0), Node(1)]
    first = s.send.requests[0]
    assert isinstance(first, m.ProduceRequest)
    assert first.acks == 1 and first.timeout_ms == 30000 and first.transactional_id is None
    assert [(t.name, [p.index for p in t.partition_data]) for t in first.topic_data] == [
        ("t", [0, 2])
    ]
    assert s.send.sent[0][2]["max_version"] == PRODUCE_MAX
    assert s.sender.produce_in_flight == 2 and s.sender.node_in_flight == {0: 1, 1: 1}
    assert s.sender.in_flight_records() == 3 and s.acc.queues[T0].in_flight == 1


def test_the_in_flight_limit_holds_per_broker_and_per_partition() -> None:
    s = SenderRig(acks=1, in_flight=1)
    s.append(T0)
    s.sender.drain(0.0, force=True)
    s.append(T0)
    s.append(T2)
    assert s.sender.drain(0.0, force=True) is False  # broker 0 has its one request
    s.answer({T0: ErrorCode.NONE})
    assert s.sender.drain(0.0, force=True) is True
    assert [p.index for p in s.send.requests[-1].topic_data[0].partition_data] == [0, 2]


def test_a_retried_batch_goes_alone() -> None:
    s = SenderRig(acks=1)
    s.append(T0)
    s.sender.drain(0.0, force=True)
    s.append(T0)
    s.sender.drain(0.0, force=True)  # pipelined: two in flight for t-0
    s.send.handles[0].node_id = 0
    s.send.answer(error=KafkaConnectionError("lost"), index=0)
    retried = s.acc.queues[T0].batches[0]
    assert retried.attempts == 1 and retried.unknown
    assert s.sender.drain(10.0, force=True) is False  # the other one is still in flight
    s.answer({T0: ErrorCode.NONE})
    assert s.sender.drain(10.0, force=True) is True


def test_a_partition_without_a_leader_asks_for_metadata() -> None:
    s = SenderRig()
    s.ready()
    s.client.cluster.leaders[T0] = -1
    s.append(T0)
    assert s.sender.drain(0.0, force=True) is False
    assert s.sender.missing_leader and s.client.asked == [0.0]
    del s.client.cluster.leaders[T0]  # unknown partition: the same
    s.sender.drain(1.0, force=True)
    assert s.client.asked == [0.0, 1.0]


def test_batches_over_max_request_size_wait_for_the_next_request() -> None:
    s = SenderRig(acks=1, max_request_size=400, batch_size=300)
    s.append(T0, n=8)
    s.append(T2, n=8)
    s.sender.drain(0.0, force=True)
    (request,) = s.send.requests
    assert [p.index for p in request.topic_data[0].partition_data] == [0]
    assert len(s.acc.queues[T2].batches) == 1


def test_idempotent_batches_get_consecutive_sequences() -> None:
    s = SenderRig()
    s.ready(77, 3)
    s.acc.queue(T0).next_sequence = SEQUENCE_WRAP - 1
    first = s.append(T0, n=2)
    first.build()  # sealed: the next append opens a batch
    second = s.append(T0, n=1)
    s.sender.drain(0.0, force=True)
    s.answer({T0: ErrorCode.NONE})
    s.sender.drain(0.0, force=True)
    seqs = [RecordBatch(b.build()).base_sequence for b in (first, second)]
    assert seqs == [SEQUENCE_WRAP - 1, 1] and s.acc.queues[T0].next_sequence == 2
    assert RecordBatch(first.build()).producer_epoch == 3


def test_a_transaction_sends_only_added_partitions() -> None:
    s = SenderRig(transactional=True)
    s.ready()
    assert s.txn is not None
    s.append(T0)
    s.append(T1)
    s.txn.added.add(T1)
    s.sender.drain(0.0, force=True)
    (request,) = s.send.requests
    assert request.transactional_id == "tx" and s.send.sent[0][2]["max_version"] == 11
    assert RecordBatch(request.topic_data[0].partition_data[0].records).is_transactional
    assert not s.txn.started  # v1: AddPartitionsToTxn started it
    s.txn.v2 = True
    s.txn.added.add(T0)
    s.sender.drain(0.0, force=True)
    assert s.txn.started and s.send.sent[1][2]["max_version"] == 12


# ------------------------------------------------------------------ answers
def test_success_reports_offsets_and_log_append_time() -> None:
    s = SenderRig(acks=1)
    s.append(T0, n=2)
    s.sender.drain(0.0, force=True)
    s.answer({T0: ErrorCode.NONE}, log_append_time_ms=55)
    (report,) = s.reports
    assert (report.base_offset, report.log_append_time, report.error) == (100, 55, None)
    assert s.sender.flights == {} and s.sender.produce_in_flight == 0
    s.answer({T0: ErrorCode.NONE})  # a second answer for the same request: ignored
    assert len(s.reports) == 1


def test_acks_zero_reports_without_an_answer() -> None:
    s = SenderRig(acks=0)
    s.append(T0)
    s.sender.drain(0.0, force=True)
    s.send.answer(None)
    assert [r.base_offset for r in s.reports] == [-1] and s.reports[0].error is None


def test_an_answer_lacking_a_partition_is_retried_as_a_protocol_error() -> None:
    s = SenderRig(acks=1)
    s.append(T0)
    s.append(T2)
    s.sender.drain(0.0, force=True)
    s.answer({T0: ErrorCode.NONE})
    retried = s.acc.queues[T2].batches[0]
    assert isinstance(retried.last_error, RemoteProtocolError)
    assert "lacks t-2" in str(retried.last_error) and s.client.asked == []


def test_an_unwritten_request_that_failed_is_not_of_unknown_fate() -> None:
    s = SenderRig(acks=1)
    s.append(T0)
    s.sender.drain(0.0, force=True)
    s.send.answer(error=KafkaConnectionError("no connection"))
    batch = s.acc.queues[T0].batches[0]
    assert not batch.unknown and s.client.asked == [0.0]


def test_duplicates_are_success_without_an_offset() -> None:
    s = SenderRig()
    s.ready()
    s.append(T0)
    s.sender.drain(0.0, force=True)
    s.answer({T0: ErrorCode.DUPLICATE_SEQUENCE_NUMBER})
    assert [(r.base_offset, r.error) for r in s.reports] == [(-1, None)]


def test_a_batch_too_large_is_split_in_halves_keeping_sequences() -> None:
    s = SenderRig()
    s.ready()
    s.acc.queue(T0).next_sequence = 10
    for i in range(5):
        s.acc.append(T0, b"v%d" % i, None, None, 1 + i, i, 30, 0.0)
    (parent,) = s.acc.queues[T0].batches
    s.sender.drain(0.0, force=True)
    s.answer({T0: ErrorCode.MESSAGE_TOO_LARGE})
    halves = list(s.acc.queues[T0].batches)
    assert [h.tokens for h in halves] == [[0, 1], [2, 3, 4]]
    assert [h.timestamps for h in halves] == [[1, 2], [3, 4, 5]]
    assert [RecordBatch(h.build()).base_sequence for h in halves] == [10, 12]
    assert sum(h.accounted for h in halves) == 150 and s.acc.used == 150
    assert all(h.attempts == 1 and h.retry_at == 0.0 for h in halves)
    assert s.reports == [] and parent.state is BatchState.DONE and parent.accounted == 0
    assert s.ledger.incomplete == {h.id: parent.id for h in halves}  # as old as the parent


def test_a_split_batch_without_sequences_stays_unstamped() -> None:
    s = SenderRig(acks=1)
    s.append(T0, n=3)
    s.sender.drain(0.0, force=True)
    s.answer({T0: ErrorCode.RECORD_LIST_TOO_LARGE})
    assert [RecordBatch(h.build()).base_sequence for h in s.acc.queues[T0].batches] == [-1, -1]


def test_a_single_record_too_large_fails() -> None:
    s = SenderRig(acks=1)
    s.append(T0)
    s.sender.drain(0.0, force=True)
    s.answer({T0: ErrorCode.MESSAGE_TOO_LARGE})
    (report,) = s.reports
    assert isinstance(report.error, RecordTooLargeError) and "too large" in str(report.error)


def test_fencing_makes_a_transaction_fatal() -> None:
    s = SenderRig(transactional=True)
    s.ready()
    assert s.txn is not None
    s.txn.state = TxnState.IN_TRANSACTION
    s.txn.added.add(T0)
    s.append(T0)
    s.sender.drain(0.0, force=True)
    s.answer({T0: ErrorCode.PRODUCER_FENCED})
    assert s.txn.state is TxnState.FATAL_ERROR
    assert isinstance(s.reports[0].error, ProducerFencedError)


def test_sequence_trouble_of_a_transaction_makes_it_abortable() -> None:
    s = SenderRig(transactional=True)
    s.ready()
    assert s.txn is not None
    s.txn.state = TxnState.IN_TRANSACTION
    s.txn.added.add(T0)
    s.append(T0)
    s.sender.drain(0.0, force=True)
    s.answer({T0: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER}, error_message="gap")
    assert s.txn.state is TxnState.ABORTABLE_ERROR
    assert "broker 0 refused t-0 (error code 45): gap" in str(s.reports[0].error)


def test_sequence_trouble_without_an_earlier_batch_bumps_the_epoch() -> None:
    s = SenderRig()
    s.ready()
    batch = s.append(T0)
    s.append(T2)
    s.sender.drain(0.0, force=True)  # t-0 and t-2 in one request
    s.append(T1)
    s.sender.drain(0.0, force=True)  # t-1 in flight to broker 1
    later = s.append(T0)  # queued behind: later, not earlier
    s.answer({T0: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, T2: ErrorCode.NONE}, index=0)
    assert s.id_state() is IdState.BUMP_PENDING
    assert list(s.acc.queues[T0].batches) == [batch, later]  # resent after the bump


def test_out_of_order_behind_a_queued_earlier_batch_is_a_plain_retry() -> None:
    s = SenderRig()
    s.ready()
    first = s.append(T0)
    first.build()
    second = s.append(T0)
    s.sender.drain(0.0, force=True)  # first (sequence 0) in flight
    s.sender.drain(0.0, force=True)  # second (sequence 1) pipelined behind it
    s.send.handles[0].node_id = 0
    s.send.answer(error=KafkaConnectionError("lost"), index=0)  # first back in its queue
    s.answer({T0: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER}, index=1)
    assert s.id_state() is IdState.READY
    assert list(s.acc.queues[T0].batches) == [first, second]


def test_an_earlier_batch_in_flight_makes_out_of_order_a_plain_retry() -> None:
    s = SenderRig()
    s.ready()
    first = s.append(T0)
    first.build()
    s.append(T0)
    s.sender.drain(0.0, force=True)  # first in flight
    s.sender.drain(0.0, force=True)  # second pipelined behind it
    s.answer({T0: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER}, index=1)
    assert s.id_state() is IdState.READY
    s.answer({T0: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER}, index=0)
    assert s.id_state() is IdState.BUMP_PENDING  # nothing earlier: bump


def test_retriable_errors_that_invalidate_metadata_ask_for_it() -> None:
    s = SenderRig(acks=1)
    s.append(T0)
    s.sender.drain(0.0, force=True)
    s.answer({T0: ErrorCode.NOT_LEADER_OR_FOLLOWER})
    assert isinstance(s.acc.queues[T0].batches[0].last_error, NotLeaderOrFollowerError)
    assert s.client.asked == [0.0]
    s.sender.drain(1.0, force=True)
    s.answer({T0: ErrorCode.NOT_ENOUGH_REPLICAS}, now=1.0)
    assert s.client.asked == [0.0]  # this one keeps the metadata


def test_other_errors_fail_the_batch() -> None:
    s = SenderRig(acks=1)
    s.append(T0)
    s.sender.drain(0.0, force=True)
    s.answer({T0: ErrorCode.TOPIC_AUTHORIZATION_FAILED})
    assert isinstance(s.reports[0].error, TopicAuthorizationFailedError)


def test_a_batch_expired_in_flight_ignores_the_answer() -> None:
    s = SenderRig(acks=1)
    batch = s.append(T0)
    s.sender.drain(0.0, force=True)
    s.ledger.complete(batch, -1, -1, KafkaTimeoutError("expired"))
    s.answer({T0: ErrorCode.NONE})
    assert len(s.reports) == 1 and s.sender.in_flight_records() == 0


# ------------------------------------------------------------------ retries
def test_retry_or_fail_rules() -> None:
    s = SenderRig(acks=1, retries=2, delivery_timeout_ms=10_000)
    batch = s.append(T0)
    batch.build()
    batch.attempts = 1
    s.sender.retry_or_fail(batch, KafkaConnectionError("lost"), 0.0, refresh=False)
    assert batch.retry_at == pytest.approx(0.1) and s.client.asked == [0.0]
    assert batch.state is BatchState.SEALED
    batch.attempts = 2
    s.sender.retry_or_fail(batch, NotLeaderOrFollowerError("x"), 0.0, refresh=False)
    assert batch.retry_at == pytest.approx(0.2) and s.client.asked == [0.0]
    batch.attempts = 3
    s.acc.queues[T0].batches.clear()
    s.sender.retry_or_fail(batch, NotLeaderOrFollowerError("x"), 0.0, refresh=False)
    assert isinstance(s.reports[-1].error, NotLeaderOrFollowerError)  # out of retries
    s.sender.retry_or_fail(batch, NotLeaderOrFollowerError("x"), 0.0, refresh=True)
    assert len(s.reports) == 1  # reported already


def test_no_retry_past_the_delivery_timeout_or_after_refused_credentials() -> None:
    s = SenderRig(acks=1, delivery_timeout_ms=1000)
    late = s.append(T0)
    late.unknown = True
    s.sender.retry_or_fail(late, KafkaConnectionError("lost"), 1.0, refresh=True)
    error = s.reports[0].error
    assert isinstance(error, KafkaTimeoutError) and "may or may not be in the log" in str(error)
    refused = s.append(T2)
    s.sender.retry_or_fail(refused, AuthenticationError("refused"), 0.0, refresh=True)
    assert isinstance(s.reports[1].error, AuthenticationError)


def test_batch_failed_marks_the_producer() -> None:
    s = SenderRig()
    s.ready()
    batch = s.append(T0)
    s.sender.batch_failed(batch, RuntimeError("x"))  # no sequence: no gap
    assert s.id_state() is IdState.READY
    batch.base_sequence = 0
    s.sender.batch_failed(batch, RuntimeError("x"))
    assert s.id_state() is IdState.BUMP_PENDING
    t = SenderRig(transactional=True)
    assert t.txn is not None
    t.txn.state = TxnState.IN_TRANSACTION
    txn = t.txn
    states = []
    t.sender.batch_failed(batch, TransactionAbortedError("aborted"))
    states.append(txn.state)
    t.sender.batch_failed(batch, RuntimeError("x"))
    states.append(txn.state)
    txn.fence("x")
    t.sender.batch_failed(batch, RuntimeError("y"))
    states.append(txn.state)
    assert states == [TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR, TxnState.FATAL_ERROR]
    c = SenderRig()
    c.sender.close(RuntimeError("closed"))
    c.ready()
    batch.base_sequence = 0
    c.sender.batch_failed(batch, RuntimeError("x"))
    assert c.id_state() is IdState.READY  # closed: nothing more to decide


# ------------------------------------------------------------------ failing
def test_refused_credentials_fail_batches_for_that_broker_or_no_leader() -> None:
    s = SenderRig()
    s.ready()
    s.client.cluster.leaders[T2] = -1
    for tp in (T0, T1, T2):
        s.append(tp, token=str(tp.partition))
    refused = AuthenticationError("refused by broker 1")
    s.sender.fail_for_auth(refused, node=1)
    assert sorted(r.tokens[0] for r in s.reports) == ["1", "2"]  # type: ignore[type-var]
    assert "1 records for t-1 not sent" in str(s.reports[0].error)
    n = SenderRig()  # no producer id: nothing can be sent anywhere
    n.append(T0)
    n.sender.fail_for_auth(refused, node=None)
    assert len(n.reports) == 1


def test_close_fails_queued_and_in_flight_batches() -> None:
    s = SenderRig(acks=1)
    s.append(T0, token="flying")
    s.sender.drain(0.0, force=True)
    s.append(T2, token="queued")
    error = RuntimeError("closed")
    s.sender.close(error)
    assert [r.tokens for r in s.reports] == [["queued"], ["flying"]]
    assert all(r.error is error for r in s.reports) and s.sender.flights == {}


# ------------------------------------------------------------------ wake
def test_wake_is_the_earliest_need_of_a_queue_or_a_flight() -> None:
    s = SenderRig(acks=1, linger_ms=5, delivery_timeout_ms=120_000)
    assert s.sender.wake(0.0, can_send=True) == float("inf")
    s.append(T0)
    assert s.sender.wake(0.0, can_send=True) == pytest.approx(0.005)  # linger
    assert s.sender.wake(0.0, can_send=False) == pytest.approx(120.0)  # only its deadline
    s.sender.drain(0.005, force=False)
    assert s.sender.wake(0.005, can_send=True) == pytest.approx(120.0)  # the flight's deadline
    s.send.answer(error=KafkaConnectionError("lost"), now=0.005)
    retry_at = s.acc.queues[T0].batches[0].retry_at
    assert s.sender.wake(0.005, can_send=True) == pytest.approx(retry_at)


def test_wake_skips_what_waits_for_an_answer() -> None:
    s = SenderRig(transactional=True, in_flight=1, delivery_timeout_ms=120_000)
    s.ready()
    assert s.txn is not None
    s.append(T0)
    assert s.sender.wake(0.0, can_send=True) == pytest.approx(120.0)  # not added yet
    s.txn.added |= {T0, T2}
    s.sender.drain(0.0, force=True)
    s.append(T0)
    s.append(T2)
    # t-0 has a request in flight at the limit; t-2 shares its broker: both wait.
    assert s.sender.wake(0.0, can_send=True) == pytest.approx(120.0)


def test_wake_for_a_missing_leader_is_the_next_metadata_ask() -> None:
    s = SenderRig(acks=1, delivery_timeout_ms=120_000)
    s.client.cluster.leaders[T0] = -1
    s.append(T0)
    assert s.sender.wake(0.0, can_send=True) == pytest.approx(0.005)  # ask when ready
    s.sender.drain(0.005, force=False)
    assert s.sender.wake(0.005, can_send=True) == pytest.approx(0.505)  # the next ask

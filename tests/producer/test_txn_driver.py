"""TransactionDriver: its step table and each transaction request, on a recording send."""

from __future__ import annotations

from collections.abc import Hashable

import pytest

from kafkacore.client import GroupCoordinator, TopicPartition, TransactionCoordinator
from kafkacore.consumer.group_metadata import ConsumerGroupMetadata
from kafkacore.errors import KafkaConnectionError
from kafkacore.producer import (
    BatchCompleted,
    IdState,
    ProducerConfig,
    ProducerFencedError,
    TransactionAbortedError,
    TransactionStateError,
)
from kafkacore.producer.accumulator import RecordAccumulator
from kafkacore.producer.causes import FailureLog
from kafkacore.producer.coordinator import CoordinatorRequests
from kafkacore.producer.idempotence import ProducerIdentity
from kafkacore.producer.ledger import DeliveryLedger
from kafkacore.producer.producer_id import ProducerIds
from kafkacore.producer.transaction import TransactionManager, TxnState
from kafkacore.producer.txn_driver import TransactionDriver, TxnFacts, TxnStep, next_step
from kafkacore.producer.waiting import MetadataAsks, MetadataWait, WaitingRecords
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ApiKey, ErrorCode
from kafkacore.protocol.error_codes import (
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
)
from kafkacore.protocol.messages.add_partitions_to_txn_response import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnTopicResult,
)
from kafkacore.protocol.messages.txn_offset_commit_response import (
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)
from kafkacore.timers import Deadlines
from tests.producer.fakes import RecordingSend, StubClient

S = TxnState
T0, T1, U0 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)


def _facts(state: TxnState, **kw: bool) -> TxnFacts:
    base = dict(
        busy=False,
        pending=False,
        unsettled=False,
        error=False,
        queued=False,
        waiting=False,
        started=True,
        committing=False,
    )
    base.update(kw)
    return TxnFacts(state=state, **base)


@pytest.mark.parametrize(
    ("state", "facts", "step"),
    [
        (S.COMMITTING, {"busy": True}, TxnStep.WAIT),
        (S.FATAL_ERROR, {}, TxnStep.FATAL),
        (S.IN_TRANSACTION, {"pending": True}, TxnStep.ADD_PARTITIONS),
        (S.COMMITTING, {"pending": True}, TxnStep.ADD_PARTITIONS),
        (S.ABORTING, {"pending": True}, TxnStep.END_TXN),  # abort adds nothing more
        (S.IN_TRANSACTION, {}, TxnStep.WAIT),
        (S.COMMITTING, {"unsettled": True}, TxnStep.WAIT),
        (S.ABORTING, {"unsettled": True}, TxnStep.WAIT),
        (S.COMMITTING, {"error": True}, TxnStep.WAIT),
        (S.COMMITTING, {"queued": True}, TxnStep.WAIT),
        (S.COMMITTING, {"waiting": True}, TxnStep.WAIT),
        (S.ABORTING, {"queued": True}, TxnStep.WAIT),  # sequenced batches go first
        (S.ABORTING, {"waiting": True}, TxnStep.END_TXN),
        (S.COMMITTING, {"started": False}, TxnStep.END_LOCALLY),
        (S.ABORTING, {"started": False}, TxnStep.END_LOCALLY),
        (S.COMMITTING, {}, TxnStep.END_TXN),
        (S.ABORTING, {}, TxnStep.END_TXN),
        (S.ABORTABLE_ERROR, {"committing": True}, TxnStep.FAIL_COMMIT),
        (S.ABORTABLE_ERROR, {}, TxnStep.WAIT),
        (S.READY, {}, TxnStep.WAIT),
    ],
)
def test_step_table(state: TxnState, facts: dict[str, bool], step: TxnStep) -> None:
    assert next_step(_facts(state, **facts)) is step


class _Driver:
    def __init__(self) -> None:
        self.cfg = ProducerConfig(transactional_id="tx")
        self.client = StubClient()
        self.identity = ProducerIdentity()
        self.txn = TransactionManager("tx")
        self.acc = RecordAccumulator(self.cfg, self.identity)
        self.events: list[object] = []
        self.ledger = DeliveryLedger(self.acc, self.events.append, lambda b, e: None)
        self.send = RecordingSend()
        self.deadlines: Deadlines[Hashable] = Deadlines()
        self.coordinator = CoordinatorRequests(
            self.send, self.deadlines, lambda n: 0.1, transactional=True
        )
        failures = FailureLog()
        self.ids = ProducerIds(
            self.cfg, self.identity, self.acc, self.ledger, self.coordinator, failures, lambda n: 0
        )
        asks = MetadataAsks(self.client.core, lambda n: 0.1)
        self.wait = MetadataWait(self.client.core, self.acc, self.ledger, asks, failures, 1000)
        self.driver = TransactionDriver(
            self.txn,
            self.identity,
            self.ids,
            self.coordinator,
            self.ledger,
            self.acc,
            self.wait,
            self.client.core,
        )

    def initialized(self) -> None:
        self.driver.init(0.0)
        self.send.answer(m.InitProducerIdResponse(producer_id=50, producer_epoch=2))

    def begun(self, *, v2: bool = False) -> None:
        self.initialized()
        if v2:
            self.client.features = {"transaction.version": 2}
            self.client.versions = {
                ApiKey.PRODUCE: (0, 12),
                ApiKey.END_TXN: (0, 5),
                ApiKey.TXN_OFFSET_COMMIT: (0, 5),
            }
        self.driver.begin()
        assert self.txn.v2 is v2

    def records(self, tp: TopicPartition, token: object = "r") -> None:
        self.txn.need(tp)
        self.acc.append(tp, b"v", None, None, 1, token, 30, 0.0)

    def drive(self, in_flight: int = 0) -> bool:
        return self.driver.drive(0.0, in_flight)

    @property
    def reports(self) -> list[BatchCompleted]:
        return [e for e in self.events if isinstance(e, BatchCompleted)]


# ------------------------------------------------------------ init and begin
def test_init_transactions_gets_the_producer_id_from_the_coordinator() -> None:
    d = _Driver()
    op = d.driver.init(0.0)
    assert d.txn.state is S.INITIALIZING and op.kind == "init_transactions" and not op.done
    with pytest.raises(TransactionStateError, match="init_transactions is still running"):
        d.driver.check_idle("begin_transaction")
    (request,) = d.send.requests
    assert isinstance(request, m.InitProducerIdRequest) and request.transactional_id == "tx"
    d.send.answer(m.InitProducerIdResponse(producer_id=50, producer_epoch=2))
    assert op.done and op.error is None and d.txn.state is S.READY and d.identity.ready
    d.driver.check_idle("begin_transaction")


def test_a_failed_init_can_be_tried_again() -> None:
    d = _Driver()
    op = d.driver.init(0.0)
    d.send.answer(
        m.InitProducerIdResponse(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    )
    assert op.error is not None and d.txn.state is S.UNINITIALIZED
    assert d.identity.state is IdState.NONE
    again = d.driver.init(0.0)
    d.send.answer(m.InitProducerIdResponse(producer_id=50, producer_epoch=0))
    assert again.done and again.error is None


@pytest.mark.parametrize(
    ("features", "versions", "v2"),
    [
        (None, None, False),
        ({"transaction.version": 1}, {ApiKey.PRODUCE: (0, 12)}, False),
        ({"transaction.version": 2}, None, False),
        ({"transaction.version": 2}, {ApiKey.PRODUCE: (0, 12), ApiKey.END_TXN: (0, 5)}, False),
        (
            {"transaction.version": 2},
            {ApiKey.PRODUCE: (0, 12), ApiKey.END_TXN: (0, 5), ApiKey.TXN_OFFSET_COMMIT: (0, 5)},
            True,
        ),
    ],
)
def test_begin_chooses_transactions_v2_only_when_the_cluster_can(
    features: dict[str, int] | None, versions: dict[int, tuple[int, int]] | None, v2: bool
) -> None:
    d = _Driver()
    d.initialized()
    d.client.features, d.client.versions = features, versions
    d.driver.begin()
    assert d.txn.state is S.IN_TRANSACTION and d.txn.v2 is v2


# ------------------------------------------------------------ partitions
def test_new_partitions_are_added_in_one_request_before_their_records_go() -> None:
    d = _Driver()
    d.begun()
    d.records(T1)
    d.records(U0)
    d.records(T0)
    assert d.drive() is True
    request = d.send.requests[-1]
    assert isinstance(request, m.AddPartitionsToTxnRequest)
    assert [(t.name, t.partitions) for t in request.v3_and_below_topics] == [
        ("t", [0, 1]),
        ("u", [0]),
    ]
    assert request.v3_and_below_producer_id == 50 and d.send.sent[-1][2]["max_version"] == 3
    assert d.txn.adding == {T0, T1, U0} and not d.txn.pending
    assert d.drive() is False  # busy
    d.send.answer(m.AddPartitionsToTxnResponse())
    assert d.txn.added == {T0, T1, U0} and d.txn.started and not d.txn.adding


def test_a_refused_partition_makes_the_transaction_abortable_and_fails_unadded_batches() -> None:
    d = _Driver()
    d.begun()
    d.records(T0, "added-later")
    d.drive()
    d.records(U0, "second")
    d.send.answer(
        m.AddPartitionsToTxnResponse(
            results_by_topic_v3_and_below=[
                AddPartitionsToTxnTopicResult(
                    name="t",
                    results_by_partition=[
                        AddPartitionsToTxnPartitionResult(
                            partition_index=0,
                            partition_error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                        ),
                        AddPartitionsToTxnPartitionResult(
                            partition_index=1,
                            partition_error_code=ErrorCode.OPERATION_NOT_ATTEMPTED,
                        ),
                    ],
                )
            ]
        )
    )
    assert d.txn.state is S.ABORTABLE_ERROR
    assert isinstance(d.txn.error, TopicAuthorizationFailedError)
    assert sorted(t for r in d.reports for t in r.tokens) == ["added-later", "second"]  # type: ignore[type-var]
    assert not d.acc.has_queued()


def test_only_operation_not_attempted_is_not_an_error_of_its_own() -> None:
    d = _Driver()
    d.begun()
    d.records(T0)
    d.drive()
    d.send.answer(m.AddPartitionsToTxnResponse(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
    assert ("coordinator", 2) in d.deadlines  # retried
    d.coordinator.resend(2, 1.0)
    ok = AddPartitionsToTxnPartitionResult(
        partition_index=0, partition_error_code=ErrorCode.OPERATION_NOT_ATTEMPTED
    )
    d.send.answer(
        m.AddPartitionsToTxnResponse(
            results_by_topic_v3_and_below=[
                AddPartitionsToTxnTopicResult(name="t", results_by_partition=[ok])
            ]
        )
    )
    assert d.txn.added == {T0}


# ------------------------------------------------------------ commit and abort
def test_an_empty_transaction_ends_without_end_txn() -> None:
    d = _Driver()
    d.begun()
    op = d.driver.commit()
    sent = len(d.send.sent)
    assert d.drive() is False
    assert op.done and op.error is None and d.txn.state is S.READY and len(d.send.sent) == sent


def test_commit_waits_for_records_then_ends_with_end_txn() -> None:
    d = _Driver()
    d.begun()
    d.records(T0)
    d.drive()
    d.send.answer(m.AddPartitionsToTxnResponse())
    op = d.driver.commit()
    assert d.drive() is False  # a batch is still queued
    d.acc.take_all()
    assert d.drive(in_flight=1) is False  # and then in flight
    d.wait.add(WaitingRecords(99, "new", None, 10, 5.0, "w", 1), 0.0)
    assert d.drive() is False  # records wait for metadata
    d.wait.fail_all(RuntimeError("gone"))
    assert d.drive() is True
    request = d.send.requests[-1]
    assert isinstance(request, m.EndTxnRequest) and request.committed
    assert d.send.sent[-1][2]["max_version"] == 4
    assert d.send.sent[-1][2]["target"] == TransactionCoordinator("tx")
    d.send.answer(m.EndTxnResponse())
    assert op.done and op.error is None and d.txn.state is S.READY


def test_commit_of_a_failed_transaction_is_refused_or_fails() -> None:
    d = _Driver()
    d.begun()
    d.txn.started = True
    op = d.driver.commit()
    d.txn.abortable(RuntimeError("a batch failed"))
    d.drive()
    assert op.error is d.txn.error
    with pytest.raises(TransactionStateError, match="call abort_transaction"):
        d.driver.commit()


def test_abort_drops_unsequenced_batches_and_waiting_records_but_sends_sequenced_ones() -> None:
    d = _Driver()
    d.begun()
    d.records(T0, "sent-once")
    d.acc.queues[T0].batches[0].base_sequence = 0
    d.acc.queues[T0].batches[0].build()
    d.records(T0, "never-sent")
    d.wait.add(WaitingRecords(99, "new", None, 10, 5.0, "waiting", 1), 0.0)
    d.txn.pending.add(U0)
    op = d.driver.abort()
    assert op.kind == "abort_transaction" and d.txn.state is S.ABORTING
    assert [r.tokens for r in d.reports] == [["never-sent"], ["waiting"]]
    assert all(isinstance(r.error, TransactionAbortedError) for r in d.reports)
    assert not d.txn.pending and not d.wait
    assert d.drive() is False  # the sequenced batch goes first
    d.acc.take_all()
    d.txn.started = True
    assert d.drive() is True
    assert d.send.requests[-1].committed is False


def test_transactions_v2_end_renews_the_epoch_and_restarts_sequences() -> None:
    d = _Driver()
    d.begun(v2=True)
    d.txn.started = True
    d.acc.queue(T0).next_sequence = 9
    op = d.driver.commit()
    d.drive()
    assert d.send.sent[-1][2]["max_version"] == 5
    d.send.answer(m.EndTxnResponse(producer_id=50, producer_epoch=3))
    assert op.done and d.identity.epoch == 3 and d.acc.queues[T0].next_sequence == 0
    d.driver.begin()
    d.txn.started = True
    d.driver.commit()
    d.drive()
    d.send.answer(m.EndTxnResponse(producer_id=-1, producer_epoch=-1))  # nothing to renew
    assert d.identity.epoch == 3 and d.txn.state is S.READY


def test_an_end_txn_failure_fails_the_operation_and_keeps_the_first_error() -> None:
    d = _Driver()
    d.begun()
    d.txn.started = True
    op = d.driver.commit()
    d.drive()
    d.send.answer(m.EndTxnResponse(error_code=ErrorCode.INVALID_TXN_STATE))
    assert op.error is not None and d.txn.state is S.ABORTABLE_ERROR
    first = d.txn.error
    d.driver._failed(None, type(first)("again"), 0.0)  # type: ignore[arg-type, misc]
    assert d.txn.error is first


def test_a_fenced_producer_fails_its_operation_for_good() -> None:
    d = _Driver()
    d.begun()
    d.txn.started = True
    op = d.driver.commit()
    d.drive()
    d.send.answer(m.EndTxnResponse(error_code=ErrorCode.PRODUCER_FENCED))
    assert d.txn.state is S.FATAL_ERROR and d.identity.state is IdState.FATAL
    assert isinstance(op.error, ProducerFencedError)
    assert d.drive() is False  # FATAL: nothing more is sent


def test_fatal_state_fails_a_running_operation() -> None:
    d = _Driver()
    d.begun()
    op = d.driver.commit()
    d.txn.fence("test")
    d.drive()
    assert isinstance(op.error, ProducerFencedError)


def test_close_fails_the_running_operation() -> None:
    d = _Driver()
    op = d.driver.init(0.0)
    error = RuntimeError("closed")
    d.driver.close(error)
    assert op.error is error
    d2 = _Driver()
    d2.driver.close(error)  # no operation yet: nothing to do


# ------------------------------------------------------------ offsets
def _offsets_ok() -> m.TxnOffsetCommitResponse:
    return m.TxnOffsetCommitResponse(
        topics=[
            TxnOffsetCommitResponseTopic(
                name="in", partitions=[TxnOffsetCommitResponsePartition(partition_index=0)]
            )
        ]
    )


def test_send_offsets_v1_adds_the_group_then_commits_with_its_metadata() -> None:
    d = _Driver()
    d.begun()
    meta = ConsumerGroupMetadata("g", generation_id=4, member_id="m-1", group_instance_id="i")
    op = d.driver.send_offsets(
        {("in", 0): 10, TopicPartition("in", 1): 11},
        meta,
        0.0,
        generation_id=-1,
        member_id="",
        group_instance_id=None,
    )
    add = d.send.requests[-1]
    assert isinstance(add, m.AddOffsetsToTxnRequest) and add.group_id == "g"
    d.send.answer(m.AddOffsetsToTxnResponse())
    commit = d.send.requests[-1]
    assert isinstance(commit, m.TxnOffsetCommitRequest) and d.txn.started
    assert (commit.generation_id, commit.member_id, commit.group_instance_id) == (4, "m-1", "i")
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in commit.topics] == [
        ("in", [0, 1])
    ]
    assert d.send.sent[-1][2]["target"] == GroupCoordinator("g")
    assert d.send.sent[-1][2]["max_version"] == 4
    d.send.answer(_offsets_ok())
    assert op.done and op.error is None


def test_send_offsets_v2_commits_at_once() -> None:
    d = _Driver()
    d.begun(v2=True)
    op = d.driver.send_offsets(
        {("in", 0): 10}, "g", 0.0, generation_id=-1, member_id="", group_instance_id=None
    )
    (commit,) = [r for r in d.send.requests if isinstance(r, m.TxnOffsetCommitRequest)]
    assert not any(isinstance(r, m.AddOffsetsToTxnRequest) for r in d.send.requests)
    assert d.send.sent[-1][2]["max_version"] == 5 and d.txn.started
    failed = TxnOffsetCommitResponsePartition(
        partition_index=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED
    )
    d.send.answer(
        m.TxnOffsetCommitResponse(
            topics=[TxnOffsetCommitResponseTopic(name="in", partitions=[failed])]
        )
    )
    assert isinstance(op.error, GroupAuthorizationFailedError)
    assert d.txn.state is S.ABORTABLE_ERROR
    assert commit.group_id == "g"


def test_send_offsets_retries_a_busy_coordinator() -> None:
    d = _Driver()
    d.begun()
    d.driver.send_offsets(
        {("in", 0): 1}, "g", 0.0, generation_id=-1, member_id="", group_instance_id=None
    )
    d.send.answer(error=KafkaConnectionError("lost"))
    d.coordinator.resend(2, 1.0)
    d.send.answer(m.AddOffsetsToTxnResponse(error_code=ErrorCode.CONCURRENT_TRANSACTIONS))
    assert d.deadlines.get(("coordinator", 2)) is not None  # retried again
    assert d.txn.state is S.IN_TRANSACTION and d.txn.error is None
    d.coordinator.resend(2, 2.0)
    d.send.answer(m.AddOffsetsToTxnResponse())
    assert isinstance(d.send.requests[-1], m.TxnOffsetCommitRequest)


@pytest.mark.parametrize("state", [S.READY, S.COMMITTING])
def test_send_offsets_outside_a_transaction_says_what_to_do(state: TxnState) -> None:
    d = _Driver()
    d.initialized()
    if state is S.COMMITTING:
        d.driver.begin()
        d.driver.commit()
    with pytest.raises(TransactionStateError, match="call begin_transaction"):
        d.driver.send_offsets({}, "g", 0.0, generation_id=-1, member_id="", group_instance_id=None)


def test_send_offsets_when_fenced_or_without_a_group_is_refused() -> None:
    d = _Driver()
    d.begun()
    with pytest.raises(ValueError, match="group_id must be a non-empty str"):
        d.driver.send_offsets({}, "", 0.0, generation_id=-1, member_id="", group_instance_id=None)
    d.txn.fence("test")
    with pytest.raises(ProducerFencedError):
        d.driver.send_offsets({}, "g", 0.0, generation_id=-1, member_id="", group_instance_id=None)


def test_outcomes_without_a_running_operation_change_only_the_state() -> None:
    d = _Driver()
    d.txn.fence("an older instance")
    assert d.drive() is False  # FATAL, and no operation to fail
    e = _Driver()
    e.initialized()
    e.driver.id_failed(RuntimeError("late"), 0.0)  # not initializing: the state stays
    assert e.txn.state is S.READY

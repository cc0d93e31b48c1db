"""The transaction driver: the requests that move a transaction (KIP-98, KIP-447, KIP-890).

Theory of operation
-------------------
:class:`~kafkacore.producer.transaction.TransactionManager` keeps the
transaction's state and refuses wrong moves; :class:`TransactionDriver`
beside it issues the requests, through
:class:`~kafkacore.producer.coordinator.CoordinatorRequests`:

* ``init_transactions``: InitProducerId to the transaction coordinator
  (:class:`~kafkacore.producer.producer_id.ProducerIds`), fencing older
  instances with the same ``transactional_id``;
* ``begin_transaction``: local; it picks the protocol for this transaction
  (v2 when the cluster finalized ``transaction.version`` >= 2 and the
  broker speaks the versions that carry it, KIP-890 part 2);
* records: v1 adds each new partition with AddPartitionsToTxn before its
  records are sent; v2 lets the Produce add it;
* ``send_offsets_to_transaction``: v1 AddOffsetsToTxn then TxnOffsetCommit
  to the group coordinator, v2 TxnOffsetCommit alone; with the consumer's
  group metadata the commit carries its generation and member id, so the
  coordinator fences a consumer that left the group (KIP-447);
* commit and abort: EndTxn once the transaction's records are settled
  (v2: its answer carries the next epoch, and sequences restart).

Each step of the producer asks :func:`next_step` what to do; the rules are
data (:data:`RULES`, first match wins) over :class:`TxnFacts`. Every
command returns an :class:`~kafkacore.operation.Operation`; one runs at a
time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from kafkacore.client import GroupCoordinator, KafkaClientCore, TopicPartition
from kafkacore.client.routing import TransactionCoordinator
from kafkacore.client.stack import R
from kafkacore.operation import Operation
from kafkacore.producer.accumulator import RecordAccumulator
from kafkacore.producer.coordinator import CoordinatorCall, CoordinatorRequests, error_code
from kafkacore.producer.errors import TransactionAbortedError, TransactionStateError
from kafkacore.producer.idempotence import ProducerIdentity

if TYPE_CHECKING:
    # Imported where used: importing it runs the consumer package, which a
    # producer that sends no consumer offsets never needs.
    from kafkacore.consumer.group_metadata import ConsumerGroupMetadata
from kafkacore.producer.ledger import DeliveryLedger
from kafkacore.producer.producer_id import ProducerIds
from kafkacore.producer.transaction import (
    ADD_PARTITIONS_MAX,
    TV2_APIS,
    TransactionManager,
    TxnState,
)
from kafkacore.producer.waiting import MetadataWait
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from kafkacore.protocol.messages.add_partitions_to_txn_request import AddPartitionsToTxnTopic
from kafkacore.protocol.messages.txn_offset_commit_request import (
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)

__all__ = ["RULES", "TransactionDriver", "TxnFacts", "TxnStep", "next_step"]

S = TxnState
_ENDING = (S.COMMITTING, S.ABORTING)


class TxnStep(Enum):
    WAIT = "wait"  # nothing to do until an answer or a record settles
    FATAL = "fatal"  # fenced: the running operation fails
    ADD_PARTITIONS = "add_partitions"  # AddPartitionsToTxn for the pending ones (v1)
    END_LOCALLY = "end_locally"  # nothing reached the coordinator: no EndTxn
    END_TXN = "end_txn"  # EndTxn(commit or abort)
    FAIL_COMMIT = "fail_commit"  # the commit cannot happen: abort_transaction() next


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnFacts:
    state: TxnState
    busy: bool  # a transaction request is in flight or waits for its retry
    pending: bool  # partitions with records still to add
    unsettled: bool  # a Produce or an AddPartitionsToTxn is in flight
    error: bool  # the transaction failed (abortable)
    queued: bool  # batches wait to be sent
    waiting: bool  # records wait for their topic's metadata
    started: bool  # the coordinator knows of the transaction
    committing: bool  # the running operation is commit_transaction


#: (condition, step): the first condition that holds decides.
RULES: tuple[tuple[Callable[[TxnFacts], bool], TxnStep], ...] = (
    (lambda f: f.busy, TxnStep.WAIT),
    (lambda f: f.state is S.FATAL_ERROR, TxnStep.FATAL),
    (lambda f: f.pending and f.state in (S.IN_TRANSACTION, S.COMMITTING), TxnStep.ADD_PARTITIONS),
    (lambda f: f.state in _ENDING and f.unsettled, TxnStep.WAIT),
    (lambda f: f.state is S.COMMITTING and (f.error or f.queued or f.waiting), TxnStep.WAIT),
    # Batches with sequences must still be sent before the abort.
    (lambda f: f.state is S.ABORTING and f.queued, TxnStep.WAIT),
    (lambda f: f.state in _ENDING and not f.started, TxnStep.END_LOCALLY),
    (lambda f: f.state in _ENDING, TxnStep.END_TXN),
    (lambda f: f.state is S.ABORTABLE_ERROR and f.committing, TxnStep.FAIL_COMMIT),
)


def next_step(facts: TxnFacts) -> TxnStep:
    for condition, step in RULES:
        if condition(facts):
            return step
    return TxnStep.WAIT


#: Offsets for send_offsets_to_transaction, keyed by TopicPartition or (topic, partition):
#: an int, an OffsetAndMetadata or (offset, metadata), as a consumer's commit takes.
Offsets = Mapping[TopicPartition, Any] | Mapping[tuple[str, int], Any]


class TransactionDriver:
    """See the module docstring."""

    def __init__(
        self,
        txn: TransactionManager,
        identity: ProducerIdentity,
        ids: ProducerIds,
        coordinator: CoordinatorRequests,
        ledger: DeliveryLedger,
        acc: RecordAccumulator,
        wait: MetadataWait,
        client: KafkaClientCore,
    ) -> None:
        self.txn = txn
        self._identity = identity
        self._ids = ids
        self._coordinator = coordinator
        self._ledger = ledger
        self._acc = acc
        self._wait = wait
        self._client = client
        self._target = TransactionCoordinator(txn.transactional_id)
        #: The running (or last) transaction operation.
        self.op: Operation[None] | None = None
        ids.listener = self
        coordinator.on_fence = self._fenced

    # ------------------------------------------------------------ commands
    def check_idle(self, what: str) -> None:
        if self.op is not None and not self.op.done:
            raise TransactionStateError(
                f"{what}: {self.op.kind} is still running; wait for it first"
            )

    def _start(self, kind: str) -> Operation[None]:
        self.op = self._ledger.op(kind)
        return self.op

    def init(self, now: float) -> Operation[None]:
        self.txn.to(S.INITIALIZING, "init_transactions")
        op = self._start("init_transactions")
        self._ids.request(now)
        return op

    def begin(self) -> None:
        self.txn.to(S.IN_TRANSACTION, "begin_transaction")
        # Chosen per transaction: a transaction never mixes the two protocols.
        self.txn.v2 = self._tv2_available()

    def _tv2_available(self) -> bool:
        """True if the cluster finalized transaction.version >= 2 (KIP-890 part 2)
        and the broker speaks the versions that carry it."""
        features = self._client.finalized_features() or {}
        if features.get("transaction.version", 0) < 2:
            return False
        versions = self._client.get_api_versions() or {}
        return all(versions.get(key, (0, -1))[1] >= v for key, v in TV2_APIS)

    def commit(self) -> Operation[None]:
        txn = self.txn
        if txn.state is S.ABORTABLE_ERROR:
            raise TransactionStateError(
                f"commit_transaction: the transaction failed ({txn.error}); call "
                "abort_transaction()"
            )
        txn.to(S.COMMITTING, "commit_transaction")
        return self._start("commit_transaction")

    def abort(self) -> Operation[None]:
        """Drop unsent records of the transaction; EndTxn(abort) follows."""
        txn = self.txn
        txn.to(S.ABORTING, "abort_transaction")
        op = self._start("abort_transaction")
        aborted = TransactionAbortedError(
            f"transaction of {txn.transactional_id!r} was aborted before the record was sent"
        )
        # A batch with a sequence must still be sent (the broker expects it).
        self._ledger.fail_all(self._acc.take(lambda b: b.base_sequence < 0), aborted)
        self._wait.fail_all(aborted)
        txn.pending.clear()
        return op

    def send_offsets(
        self,
        offsets: Offsets,
        group: str | ConsumerGroupMetadata,
        now: float,
        *,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
    ) -> Operation[None]:
        """Commit consumer ``offsets`` for ``group`` within the transaction (KIP-447)."""
        from kafkacore.consumer.group_metadata import ConsumerGroupMetadata

        if isinstance(group, ConsumerGroupMetadata):
            generation_id, member_id = group.generation_id, group.member_id
            group_instance_id = group.group_instance_id
            group = group.group_id
        txn = self.txn
        if txn.state is not S.IN_TRANSACTION:
            if txn.state is S.FATAL_ERROR:
                raise txn.fatal_error()
            raise TransactionStateError(
                f"send_offsets_to_transaction: transaction is {txn.state.value}; "
                "call begin_transaction() first"
            )
        if not isinstance(group, str) or not group:
            raise ValueError("send_offsets_to_transaction: group_id must be a non-empty str")
        ident = self._identity
        commit = TxnOffsetCommitRequest(
            transactional_id=txn.transactional_id,
            group_id=group,
            producer_id=ident.producer_id,
            producer_epoch=ident.epoch,
            generation_id=generation_id,
            member_id=member_id,
            group_instance_id=group_instance_id,
            topics=_offset_topics(offsets),
        )
        op = self._start("send_offsets_to_transaction")
        if txn.v2:
            # KIP-890: TxnOffsetCommit v5 adds the offsets partition itself;
            # no AddOffsetsToTxn. The coordinator may hear of the transaction
            # through it, so EndTxn must follow even if it fails.
            self._commit_offsets(commit, now)
            return op
        add = AddOffsetsToTxnRequest(
            transactional_id=txn.transactional_id,
            producer_id=ident.producer_id,
            producer_epoch=ident.epoch,
            group_id=group,
        )
        call = CoordinatorCall(
            add, self._target, self._offsets_added, self._failed, codes=error_code, data=commit
        )
        self._coordinator.call(call, now)
        return op

    def _offsets_added(
        self,
        call: CoordinatorCall[AddOffsetsToTxnResponse],
        _response: AddOffsetsToTxnResponse,
        now: float,
    ) -> None:
        self._commit_offsets(call.data, now)

    def _commit_offsets(self, commit: TxnOffsetCommitRequest, now: float) -> None:
        self.txn.started = True
        call = CoordinatorCall(
            commit,
            GroupCoordinator(commit.group_id),
            self._done,
            self._failed,
            max_version=self.txn.txn_offset_commit_max,
            codes=_txn_offset_codes,
        )
        self._coordinator.call(call, now)

    def close(self, error: BaseException) -> None:
        if self.op is not None:
            self._ledger.finish(self.op, error)

    # ------------------------------------------------------------ each step
    def drive(self, now: float, produce_in_flight: int) -> bool:
        """Take the next step of the transaction; True if a request went out."""
        txn = self.txn
        ending = txn.state in _ENDING
        op = self.op
        step = next_step(
            TxnFacts(
                state=txn.state,
                busy=self._coordinator.busy,
                pending=bool(txn.pending),
                unsettled=bool(produce_in_flight or txn.adding),
                error=txn.error is not None,
                queued=ending and self._acc.has_queued(),
                waiting=ending and bool(self._wait),
                started=txn.started,
                committing=op is not None and op.kind == "commit_transaction",
            )
        )
        if step is TxnStep.ADD_PARTITIONS:
            self._add_partitions(now)
            return True
        if step is TxnStep.END_TXN:
            self._end(now)
            return True
        if step is TxnStep.FATAL:
            self._op_done(txn.fatal_error())
        elif step is TxnStep.END_LOCALLY:
            txn.to(S.READY, "end transaction")
            self._op_done(None)
        elif step is TxnStep.FAIL_COMMIT:
            self._op_done(txn.error)
        return False

    def _add_partitions(self, now: float) -> None:
        txn = self.txn
        adding = set(txn.pending)
        txn.pending.clear()
        txn.adding |= adding
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(adding):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        ident = self._identity
        request = AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=txn.transactional_id,
            v3_and_below_producer_id=ident.producer_id,
            v3_and_below_producer_epoch=ident.epoch,
            v3_and_below_topics=[
                AddPartitionsToTxnTopic(name=t, partitions=ps) for t, ps in by_topic.items()
            ],
        )
        call = CoordinatorCall(
            request,
            self._target,
            self._added,
            self._add_failed,
            max_version=ADD_PARTITIONS_MAX,
            codes=_add_partitions_codes,
            data=adding,
        )
        self._coordinator.call(call, now)

    def _added(
        self,
        call: CoordinatorCall[AddPartitionsToTxnResponse],
        _response: AddPartitionsToTxnResponse,
        _now: float,
    ) -> None:
        txn = self.txn
        txn.adding -= call.data
        txn.added |= call.data
        txn.started = True

    def _add_failed(
        self, call: CoordinatorCall[AddPartitionsToTxnResponse], error: BaseException, _now: float
    ) -> None:
        txn = self.txn
        txn.adding -= call.data
        txn.abortable(error)
        self._ledger.fail_all(self._acc.take(lambda b: b.tp not in txn.added), error)

    def _end(self, now: float) -> None:
        txn = self.txn
        ident = self._identity
        request = EndTxnRequest(
            transactional_id=txn.transactional_id,
            producer_id=ident.producer_id,
            producer_epoch=ident.epoch,
            committed=txn.state is S.COMMITTING,
        )
        call = CoordinatorCall(
            request,
            self._target,
            self._ended,
            self._failed,
            max_version=txn.end_txn_max,
            codes=error_code,
        )
        self._coordinator.call(call, now)

    def _ended(
        self, _call: CoordinatorCall[EndTxnResponse], response: EndTxnResponse, _now: float
    ) -> None:
        txn = self.txn
        if txn.v2 and response.producer_id >= 0:
            # KIP-890: every transaction end bumps the epoch (or, when it is
            # exhausted, hands out a new id); sequences restart.
            self._identity.renew(response.producer_id, response.producer_epoch)
            self._acc.reset_sequences()
        txn.to(S.READY, "end transaction")
        self._op_done(None)

    # ------------------------------------------------------------ outcomes
    def _done(
        self,
        _call: CoordinatorCall[TxnOffsetCommitResponse],
        _response: TxnOffsetCommitResponse,
        _now: float,
    ) -> None:
        self._op_done(None)

    def _failed(self, _call: CoordinatorCall[R], error: BaseException, _now: float) -> None:
        txn = self.txn
        if not isinstance(error, type(txn.error)):
            txn.abortable(error)
        self._op_done(error)

    def _fenced(self, error: BaseException, _now: float) -> None:
        self.txn.fence(error.__class__.__name__)
        self._identity.fire("fatal")
        self._op_done(self.txn.fatal_error())

    def id_assigned(self, _now: float) -> None:
        self.txn.to(S.READY, "init_transactions")
        self._op_done(None)

    def id_failed(self, error: BaseException, _now: float) -> None:
        if self.txn.state is S.INITIALIZING:
            self.txn.state = S.UNINITIALIZED
        self._op_done(error)

    def _op_done(self, error: BaseException | None) -> None:
        if self.op is not None:
            self._ledger.finish(self.op, error)


def _offset_topics(offsets: Offsets) -> list[TxnOffsetCommitRequestTopic]:
    from kafkacore.consumer.offset_args import commit_offsets

    by_topic: dict[str, list[TxnOffsetCommitRequestPartition]] = {}
    for tp, oam in commit_offsets("send_offsets_to_transaction", offsets).items():
        by_topic.setdefault(tp.topic, []).append(
            TxnOffsetCommitRequestPartition(
                partition_index=tp.partition,
                committed_offset=oam.offset,
                committed_leader_epoch=-1 if oam.leader_epoch is None else oam.leader_epoch,
                committed_metadata=oam.metadata,
            )
        )
    return [TxnOffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()]


def _add_partitions_codes(response: AddPartitionsToTxnResponse) -> int:
    if response.error_code:
        return int(response.error_code)
    worst: int = ErrorCode.NONE
    for topic in response.results_by_topic_v3_and_below:
        for part in topic.results_by_partition:
            code = part.partition_error_code
            # OPERATION_NOT_ATTEMPTED only says another partition failed.
            if code and code != ErrorCode.OPERATION_NOT_ATTEMPTED and worst == ErrorCode.NONE:
                worst = code
    return worst


def _txn_offset_codes(response: TxnOffsetCommitResponse) -> int:
    for topic in response.topics:
        for part in topic.partitions:
            if part.error_code:
                return int(part.error_code)
    return ErrorCode.NONE

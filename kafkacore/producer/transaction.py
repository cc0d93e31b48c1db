"""The transaction machine of a transactional producer (KIP-98).

Theory of operation
-------------------
States (:class:`TxnState`) and the allowed moves (:data:`TRANSITIONS`)::

    UNINITIALIZED --init_transactions--> INITIALIZING --ok--> READY
    READY --begin_transaction--> IN_TRANSACTION
    IN_TRANSACTION --commit--> COMMITTING --EndTxn ok--> READY
    IN_TRANSACTION | ABORTABLE_ERROR --abort--> ABORTING --EndTxn ok--> READY
    IN_TRANSACTION | COMMITTING --error--> ABORTABLE_ERROR
    any --fenced/fatal--> FATAL_ERROR

The machine keeps what the coordinator must hear about: partitions that
received records in this transaction but were not yet added
(AddPartitionsToTxn), those already added, and whether anything was added
at all (an empty transaction ends locally, without EndTxn). Requests are
issued by :class:`~kafkacore.producer.txn_driver.TransactionDriver`; this
module only keeps the state honest, names it in errors, and says which
wire versions each protocol may use.

Two protocols are spoken, chosen per transaction at begin (:attr:`v2`):

* v1 (KIP-98): partitions are added with AddPartitionsToTxn before their
  records are sent (Produce <= v11, EndTxn <= v4, TxnOffsetCommit <= v4
  after AddOffsetsToTxn).
* v2 (KIP-890 part 2), when the cluster finalized ``transaction.version``
  >= 2: Produce v12 and TxnOffsetCommit v5 add their partitions
  implicitly, so nothing is pending; a partition counts as added as soon as
  it gets records. EndTxn v5 bumps the epoch at every transaction end and
  returns the producer id/epoch for the next one (sequences restart).
"""

from __future__ import annotations

from enum import Enum

from kafkacore.client.metadata import TopicPartition
from kafkacore.producer.errors import ProducerFencedError, TransactionStateError
from kafkacore.protocol.enums import ApiKey

__all__ = [
    "ADD_PARTITIONS_MAX",
    "PRODUCE_MAX",
    "TRANSITIONS",
    "TV2_APIS",
    "TransactionManager",
    "TxnState",
]

#: Produce v13 names topics by id only (KIP-516); not needed here.
PRODUCE_MAX = 12
# Transactions v1 (KIP-98) stay below the versions that mean transactions v2
# (KIP-890 part 2): Produce v12, AddPartitionsToTxn v4, EndTxn v5 and
# TxnOffsetCommit v5.
PRODUCE_MAX_TXN_V1 = 11
ADD_PARTITIONS_MAX = 3
END_TXN_MAX_V1 = 4
TXN_OFFSET_COMMIT_MAX_V1 = 4
# Transactions v2: only with the finalized feature transaction.version >= 2;
# these versions are what tells the broker so.
PRODUCE_TXN_V2 = 12
END_TXN_V2 = 5
TXN_OFFSET_COMMIT_V2 = 5
#: The APIs (and versions) a broker must speak for transactions v2.
TV2_APIS = (
    (ApiKey.PRODUCE, PRODUCE_TXN_V2),
    (ApiKey.END_TXN, END_TXN_V2),
    (ApiKey.TXN_OFFSET_COMMIT, TXN_OFFSET_COMMIT_V2),
)


class TxnState(Enum):
    UNINITIALIZED = "uninitialized"
    INITIALIZING = "initializing"
    READY = "ready"
    IN_TRANSACTION = "in_transaction"
    COMMITTING = "committing"
    ABORTING = "aborting"
    ABORTABLE_ERROR = "abortable_error"
    FATAL_ERROR = "fatal_error"


S = TxnState
TRANSITIONS: dict[TxnState, frozenset[TxnState]] = {
    S.UNINITIALIZED: frozenset({S.INITIALIZING}),
    S.INITIALIZING: frozenset({S.READY, S.UNINITIALIZED}),
    S.READY: frozenset({S.IN_TRANSACTION, S.INITIALIZING}),
    S.IN_TRANSACTION: frozenset({S.COMMITTING, S.ABORTING, S.ABORTABLE_ERROR}),
    S.COMMITTING: frozenset({S.READY, S.ABORTABLE_ERROR}),
    S.ABORTING: frozenset({S.READY}),
    S.ABORTABLE_ERROR: frozenset({S.ABORTING}),
    S.FATAL_ERROR: frozenset(),
}


class TransactionManager:
    """State of the current transaction; see the module docstring."""

    __slots__ = (
        "added",
        "adding",
        "error",
        "pending",
        "started",
        "state",
        "transactional_id",
        "v2",
    )

    def __init__(self, transactional_id: str) -> None:
        self.transactional_id = transactional_id
        self.state = TxnState.UNINITIALIZED
        self.pending: set[TopicPartition] = set()  # to add
        self.adding: set[TopicPartition] = set()  # AddPartitionsToTxn in flight
        self.added: set[TopicPartition] = set()
        self.started = False  # the coordinator knows of this transaction
        self.error: BaseException | None = None
        self.v2 = False  # KIP-890 part 2 for the current transaction

    def to(self, state: TxnState, what: str) -> None:
        """Move to ``state`` or raise naming ``what`` was attempted in which state."""
        if self.state is TxnState.FATAL_ERROR:
            raise self.fatal_error()
        if state not in TRANSITIONS[self.state]:
            raise TransactionStateError(
                f"{what}: transaction of {self.transactional_id!r} is "
                f"{self.state.value}; {_hint(self.state)}"
            )
        self.state = state
        if state is TxnState.READY:
            self.pending.clear()
            self.adding.clear()
            self.added.clear()
            self.started = False
            self.error = None

    def fence(self, reason: str) -> None:
        self.state = TxnState.FATAL_ERROR
        self.error = ProducerFencedError(
            f"producer {self.transactional_id!r} was fenced ({reason}): a newer producer "
            "with the same transactional_id took over; close this producer"
        )

    def fatal_error(self) -> BaseException:
        assert self.error is not None
        return self.error

    def abortable(self, error: BaseException) -> None:
        if self.state in (TxnState.IN_TRANSACTION, TxnState.COMMITTING):
            self.state = TxnState.ABORTABLE_ERROR
            self.error = error

    @property
    def produce_max(self) -> int:
        """Highest Produce version this transaction may use."""
        return PRODUCE_TXN_V2 if self.v2 else PRODUCE_MAX_TXN_V1

    @property
    def end_txn_max(self) -> int:
        return END_TXN_V2 if self.v2 else END_TXN_MAX_V1

    @property
    def txn_offset_commit_max(self) -> int:
        return TXN_OFFSET_COMMIT_V2 if self.v2 else TXN_OFFSET_COMMIT_MAX_V1

    def need(self, tp: TopicPartition) -> bool:
        """Note that ``tp`` gets records; True if it still must be added."""
        if tp in self.added:
            return False
        if self.v2:
            # KIP-890: the partition leader adds it when the Produce arrives.
            self.added.add(tp)
            return False
        if tp not in self.adding:
            self.pending.add(tp)
        return True


def _hint(state: TxnState) -> str:
    return {
        TxnState.UNINITIALIZED: "call init_transactions() first",
        TxnState.INITIALIZING: "wait for init_transactions() to finish",
        TxnState.READY: "call begin_transaction() first",
        TxnState.IN_TRANSACTION: "commit or abort it first",
        TxnState.COMMITTING: "wait for the commit to finish",
        TxnState.ABORTING: "wait for the abort to finish",
        TxnState.ABORTABLE_ERROR: "an earlier error requires abort_transaction()",
        TxnState.FATAL_ERROR: "close this producer",
    }[state]

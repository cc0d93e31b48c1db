"""Records, handles and events the consumer core hands to the user layer.

Events are frozen, slotted, keyword-only dataclasses named in the past
tense. Group assignment events (``PartitionsAssigned``/``Revoked``/``Lost``,
``GroupFailed``) come from :mod:`kafkacore.group` and pass through as they are.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import NamedTuple, TypeAlias

from kafkacore.client.events import CLIENT_EVENTS, ClientEvent
from kafkacore.client.metadata import TopicPartition
from kafkacore.errors import KafkaError, LocalProtocolError
from kafkacore.group.base import GROUP_EVENTS, GroupEvent
from kafkacore.operation import OperationCompleted
from kafkacore.protocol.error_codes import OffsetOutOfRangeError, RebalanceInProgressError
from kafkacore.records.model import Header

__all__ = [
    "CONSUMER_EVENTS",
    "BrokersUnreachable",
    "CommitFailedError",
    "ConsumerClosedError",
    "ConsumerEvent",
    "ConsumerRecord",
    "LogTruncationError",
    "NoOffsetForPartitionError",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "OutOfRangeError",
    "PartitionBatch",
    "PartitionsRevoking",
    "PositionsKnown",
    "RebalanceInProgressCommitError",
    "RecordsAvailable",
    "TopicsNotFound",
    "TruncationDetected",
]


class ConsumerRecord(NamedTuple):
    """One record as ``poll()`` returns it."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    leader_epoch: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionBatch:
    """Consecutive records of one partition as columns (the bulk path, e.g. for Spark).

    ``offsets``/``timestamps`` are ``array('q')``; ``keys``/``values``/``headers``
    are lists with one entry per record. Control records and aborted
    transactions are already left out.
    """

    topic: str
    partition: int
    offsets: array[int]
    timestamps: array[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[tuple[Header, ...]]
    timestamp_type: int
    leader_epoch: int | None

    def __len__(self) -> int:
        return len(self.offsets)


class OffsetAndMetadata(NamedTuple):
    """A committed (or to-be-committed) position with its metadata and epoch (KIP-320)."""

    offset: int
    metadata: str = ""
    leader_epoch: int | None = None


class OffsetAndTimestamp(NamedTuple):
    """``offsets_for_times``' answer for one partition: the earliest offset whose
    timestamp is at or after the one asked for, that record's timestamp, and
    the leader epoch the broker answered with (None if it gave none), as
    Java's and kafka-python's ``OffsetAndTimestamp``."""

    offset: int
    timestamp: int
    leader_epoch: int | None = None


class NoOffsetForPartitionError(KafkaError):
    """``auto_offset_reset="none"`` and the partition has no committed offset (or it is
    out of range): seek() to a position or choose "earliest"/"latest"."""


class OutOfRangeError(NoOffsetForPartitionError, OffsetOutOfRangeError):
    """A position the broker has no record at, and ``auto_offset_reset="none"``
    (Java's ``OffsetOutOfRangeException``): a NoOffsetForPartitionError (seek()
    to go on) and the broker's OFFSET_OUT_OF_RANGE class, so aiokafka's and
    kafka-python's ``except OffsetOutOfRangeError`` catches it too."""


class ConsumerClosedError(LocalProtocolError):
    """A call on a consumer that is closed (or closing): make a new consumer.
    Also what a ``poll``/``getone`` waiting when the consumer closes raises
    (aiokafka's ``ConsumerStoppedError``)."""


class LogTruncationError(KafkaError):
    """The log was truncated below our position (KIP-320) and ``auto_offset_reset="none"``."""

    def __init__(self, message: str, divergent: dict[TopicPartition, int]) -> None:
        super().__init__(message)
        self.divergent = divergent


class CommitFailedError(KafkaError):
    """The commit was fenced: the group rebalanced (generation or member epoch is stale)."""


class RebalanceInProgressCommitError(CommitFailedError, RebalanceInProgressError):
    """The commit was not made because the group is rebalancing (Java's
    RebalanceInProgressException): refused before sending while the member's
    JoinGroup/SyncGroup is in flight, or answered REBALANCE_IN_PROGRESS, or
    fenced for a generation the member has already left. Retriable: poll()
    to finish the rebalance, then commit what you then own.
    """

    retriable = True


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordsAvailable:
    """Fetched records are buffered and ``poll`` would return some."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionsRevoking:
    """The group takes ``partitions`` away; the core waits for
    :meth:`ConsumerCore.revocation_done` with ``token`` before letting go.

    Emitted only with ``await_revocation_ack`` set (a transport with a
    rebalance listener), so the listener runs - and may commit - while the
    partitions are still ours, as Java's ``onPartitionsRevoked`` does.
    Bounded by ``max_poll_interval_ms``.
    """

    partitions: frozenset[TopicPartition]
    token: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TruncationDetected:
    """KIP-320: ``partition``'s log diverged; the position moved back to ``offset``."""

    partition: TopicPartition
    old_position: int
    offset: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PositionsKnown:
    """The positions of ``partitions`` became known (a committed offset found,
    a reset answered). A caller waiting in ``position()`` looks again: at a
    log's end no ``RecordsAvailable`` follows to wake it."""

    partitions: frozenset[TopicPartition]


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokersUnreachable:
    """No broker has answered this consumer for ``default_api_timeout_ms``
    while it had partitions to follow, or a poll that waited ended empty
    while the cluster was never reached. ``error`` (a NoBrokersAvailable
    naming the last failure, also raised by the next poll, or by that poll)
    says why; the consumer keeps trying and reports again after each
    further period."""

    error: BaseException


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicsNotFound:
    """Metadata says these followed topics do not exist (UNKNOWN_TOPIC_OR_PARTITION).

    Emitted when the set changes. Like Java's consumer, this one keeps
    waiting for them (they may be created); the transports log a warning.
    """

    topics: frozenset[str]


#: Everything :meth:`ConsumerCore.pull_events` can return: a closed union of
#: the consumer's own events, the group member's, the client's (passed
#: through) and the completion of its operations.
ConsumerEvent: TypeAlias = (
    RecordsAvailable
    | PartitionsRevoking
    | TruncationDetected
    | PositionsKnown
    | BrokersUnreachable
    | TopicsNotFound
    | OperationCompleted
    | GroupEvent
    | ClientEvent
)

#: The classes of :data:`ConsumerEvent`, for ``isinstance`` checks.
CONSUMER_EVENTS: tuple[type, ...] = (
    RecordsAvailable,
    PartitionsRevoking,
    TruncationDetected,
    PositionsKnown,
    BrokersUnreachable,
    TopicsNotFound,
    OperationCompleted,
    *GROUP_EVENTS,
    *CLIENT_EVENTS,
)

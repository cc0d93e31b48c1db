"""The sans-IO consumer: fetch sessions, positions, offsets, commits, groups.

Entry point: :class:`ConsumerCore` (a :class:`~kafkacore.client.driver.Driven`
stacked on the client core), a facade over small machines, one per module:
positions, fetcher and buffer, offset_fetch, list_offsets, validation,
committer, membership, topics, operations, causes. See ``docs/consumer.md``.
"""

from kafkacore.consumer.config import ConsumerConfig
from kafkacore.consumer.core import ConsumerCore
from kafkacore.consumer.events import (
    BrokersUnreachable,
    CommitFailedError,
    ConsumerClosedError,
    ConsumerEvent,
    ConsumerRecord,
    LogTruncationError,
    NoOffsetForPartitionError,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    OutOfRangeError,
    PartitionBatch,
    PartitionsRevoking,
    PositionsKnown,
    RebalanceInProgressCommitError,
    RecordsAvailable,
    TopicsNotFound,
    TruncationDetected,
)
from kafkacore.consumer.fetcher import FETCH_LANE
from kafkacore.consumer.group_metadata import ConsumerGroupMetadata
from kafkacore.consumer.positions import FetchState, PartitionState
from kafkacore.group import (
    GroupFailed,
    GroupFatalError,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from kafkacore.operation import Operation, OperationCompleted

__all__ = [
    "FETCH_LANE",
    "BrokersUnreachable",
    "CommitFailedError",
    "ConsumerClosedError",
    "ConsumerConfig",
    "ConsumerCore",
    "ConsumerEvent",
    "ConsumerGroupMetadata",
    "ConsumerRecord",
    "FetchState",
    "GroupFailed",
    "GroupFatalError",
    "LogTruncationError",
    "NoOffsetForPartitionError",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "Operation",
    "OperationCompleted",
    "OutOfRangeError",
    "PartitionBatch",
    "PartitionState",
    "PartitionsAssigned",
    "PartitionsLost",
    "PartitionsRevoked",
    "PartitionsRevoking",
    "PositionsKnown",
    "RebalanceInProgressCommitError",
    "RecordsAvailable",
    "TopicsNotFound",
    "TruncationDetected",
]

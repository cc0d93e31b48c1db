"""The sans-IO consumer: fetch sessions, positions, offsets, commits, groups.

Entry point: :class:`ConsumerCore` (a :class:`~kafkacore.client.driver.Driven`
stacked on the client core). See ``docs/consumer.md``.
"""

from kafkacore.consumer.config import ConsumerConfig
from kafkacore.consumer.core import FETCH_LANE, ConsumerCore, FetchState, PartitionState
from kafkacore.consumer.events import (
    BrokersUnreachable,
    CommitFailedError,
    ConsumerRecord,
    LogTruncationError,
    NoOffsetForPartitionError,
    OffsetAndMetadata,
    PartitionBatch,
    PartitionsRevoking,
    RebalanceInProgressCommitError,
    RecordsAvailable,
    TopicsNotFound,
    TruncationDetected,
)
from kafkacore.consumer.group_metadata import ConsumerGroupMetadata
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
    "ConsumerConfig",
    "ConsumerCore",
    "ConsumerGroupMetadata",
    "ConsumerRecord",
    "FetchState",
    "GroupFailed",
    "GroupFatalError",
    "LogTruncationError",
    "NoOffsetForPartitionError",
    "OffsetAndMetadata",
    "Operation",
    "OperationCompleted",
    "PartitionBatch",
    "PartitionState",
    "PartitionsAssigned",
    "PartitionsLost",
    "PartitionsRevoked",
    "PartitionsRevoking",
    "RebalanceInProgressCommitError",
    "RecordsAvailable",
    "TopicsNotFound",
    "TruncationDetected",
]

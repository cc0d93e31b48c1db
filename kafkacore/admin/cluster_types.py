"""Arguments and results of the KRaft-era cluster commands: the metadata quorum
(KIP-595, KIP-853), topic descriptions page by page (DescribeTopicPartitions,
KIP-966), replicas moved between log directories, and the offset struct
kafka-python's admin answers with.

``TopicPartitionReplica`` and ``OffsetAndTimestamp`` are named tuples, as
kafka-python's structs of those names are (so a tuple of the same fields
unpacks, compares and hashes alike); the rest are frozen dataclasses.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from kafkacore.admin.results import ItemResults
from kafkacore.admin.types import TopicDescription
from kafkacore.consumer.events import OffsetAndTimestamp  # one type for both (kafka-python's)

__all__ = [
    "OffsetAndTimestamp",
    "QuorumEndpoint",
    "QuorumInfo",
    "QuorumReplica",
    "TopicPartitionReplica",
    "TopicPartitionsCursor",
    "TopicPartitionsPage",
]


class TopicPartitionReplica(NamedTuple):
    """One partition's replica on one broker (``alter_replica_log_dirs`` moves it)."""

    topic: str
    partition: int
    broker_id: int


# ------------------------------------------------------------- the quorum
@dataclass(frozen=True, slots=True, kw_only=True)
class QuorumReplica:
    """A voter or an observer of the metadata log (Java's ``QuorumInfo.ReplicaState``).

    Timestamps are ms; None where the leader has not heard from the replica.
    ``directory_id`` (KIP-853, DescribeQuorum v2+) is None before that.
    """

    replica_id: int
    directory_id: uuid.UUID | None
    log_end_offset: int
    last_fetch_timestamp: int | None
    last_caught_up_timestamp: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class QuorumEndpoint:
    """One listener of a controller (DescribeQuorum v2+, KIP-853)."""

    listener: str
    host: str
    port: int


@dataclass(frozen=True, slots=True, kw_only=True)
class QuorumInfo:
    """The KRaft metadata quorum: its leader, the log's high watermark, the voters
    and observers, and (v2+) each controller's endpoints by node id."""

    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[QuorumReplica, ...]
    observers: tuple[QuorumReplica, ...]
    nodes: Mapping[int, tuple[QuorumEndpoint, ...]]


# --------------------------------------------------- topics page by page
@dataclass(frozen=True, slots=True)
class TopicPartitionsCursor:
    """Where a page of ``describe_topic_partitions`` starts: a topic and a partition."""

    topic: str
    partition: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.topic, str) or not self.topic:
            raise TypeError(
                f"TopicPartitionsCursor.topic: expected a topic name, got {self.topic!r}"
            )
        if isinstance(self.partition, bool) or not isinstance(self.partition, int):
            raise TypeError(
                f"TopicPartitionsCursor.partition: expected an int, got {self.partition!r}"
            )
        if self.partition < 0:
            raise ValueError(f"TopicPartitionsCursor.partition: {self.partition} must be >= 0")


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitionsPage:
    """One page of DescribeTopicPartitions: the topics it covers, in the broker's
    order (each its description or its own error; a topic split across pages
    is on each with the partitions of that page), and where the next page
    starts (None: this was the last)."""

    topics: ItemResults[str, TopicDescription]
    next_cursor: TopicPartitionsCursor | None

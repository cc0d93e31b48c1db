"""kafka-python 3's ``kafka.structs``, as kafkacore's own types."""

from __future__ import annotations

from kafkacore.admin import TopicPartitionReplica
from kafkacore.client import TopicPartition
from kafkacore.consumer import ConsumerGroupMetadata, OffsetAndMetadata, OffsetAndTimestamp

__all__ = [
    "ConsumerGroupMetadata",
    "MemberState",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "TopicPartition",
    "TopicPartitionReplica",
]


class MemberState:
    """The values of ``consumer.group_metadata().state``."""

    UNJOINED = "unjoined"
    REBALANCING = "rebalancing"
    STABLE = "stable"

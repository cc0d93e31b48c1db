"""aiokafka's ``aiokafka.structs``, as kafkacore's own types."""

from __future__ import annotations

from kafkacore.client import TopicPartition
from kafkacore.consumer import ConsumerRecord, OffsetAndMetadata, OffsetAndTimestamp
from kafkacore.producer import RecordMetadata

__all__ = [
    "ConsumerRecord",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "RecordMetadata",
    "TopicPartition",
]

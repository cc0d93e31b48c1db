"""aiokafka's ``aiokafka.structs``, as kafkacore's own types (but one).

``OffsetAndTimestamp`` is aiokafka's two-field tuple ``(offset, timestamp)``:
:class:`~kafkacore.compat.aiokafka.AIOKafkaConsumer.offsets_for_times`
answers with it, so results compare and unpack as aiokafka's do (kafkacore's
own carries the leader epoch third, as Java's and kafka-python's).
"""

from __future__ import annotations

from typing import NamedTuple

from kafkacore.client import TopicPartition
from kafkacore.consumer import ConsumerRecord, OffsetAndMetadata
from kafkacore.producer import RecordMetadata

__all__ = [
    "ConsumerRecord",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "RecordMetadata",
    "TopicPartition",
]


class OffsetAndTimestamp(NamedTuple):
    """An offset found by time and that record's timestamp (aiokafka's shape)."""

    offset: int
    timestamp: int | None

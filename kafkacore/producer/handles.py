"""Where a produced record landed."""

from __future__ import annotations

from kafkacore.client.metadata import TopicPartition

__all__ = ["RecordMetadata"]


class RecordMetadata:
    """Where one record landed: topic, partition, offset (-1 if unknown) and timestamp."""

    __slots__ = ("offset", "partition", "timestamp", "topic")

    def __init__(self, topic: str, partition: int, offset: int, timestamp: int) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestamp = timestamp

    @property
    def topic_partition(self) -> TopicPartition:
        """(topic, partition), as aiokafka's ``RecordMetadata`` has it."""
        return TopicPartition(self.topic, self.partition)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RecordMetadata) and (
            self.topic,
            self.partition,
            self.offset,
            self.timestamp,
        ) == (other.topic, other.partition, other.offset, other.timestamp)

    def __hash__(self) -> int:
        return hash((self.topic, self.partition, self.offset, self.timestamp))

    def __repr__(self) -> str:
        return (
            f"RecordMetadata(topic={self.topic!r}, partition={self.partition}, "
            f"offset={self.offset}, timestamp={self.timestamp})"
        )

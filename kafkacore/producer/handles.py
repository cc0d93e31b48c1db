"""Plain handles of producer operations (flush, transaction steps)."""

from __future__ import annotations

__all__ = ["OperationHandle", "RecordMetadata"]


class OperationHandle:
    """One flush / transaction operation; completed once by the core.

    A record, not a future: the core sets ``done``/``error`` and in the
    same step emits :class:`~kafkacore.producer.events.OperationCompleted`.
    """

    __slots__ = ("done", "error", "id", "kind")

    def __init__(self, id: int, kind: str) -> None:
        self.id = id
        self.kind = kind
        self.done = False
        self.error: BaseException | None = None

    def _complete(self, error: BaseException | None) -> None:
        if self.done:
            raise AssertionError(f"{self!r} completed twice")
        self.done = True
        self.error = error

    def __repr__(self) -> str:
        state = "pending" if not self.done else ("failed" if self.error else "done")
        return f"<OperationHandle #{self.id} {self.kind} {state}>"


class RecordMetadata:
    """Where one record landed: topic, partition, offset (-1 if unknown) and timestamp."""

    __slots__ = ("offset", "partition", "timestamp", "topic")

    def __init__(self, topic: str, partition: int, offset: int, timestamp: int) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestamp = timestamp

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

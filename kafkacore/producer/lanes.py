"""Fast lanes: the per-record append path for unkeyed records, without the partitioner.

Theory of operation
-------------------
Most records a producer gets are unkeyed, without headers or an explicit
partition. For them the uniform sticky partitioner (KIP-480/794) names the
same partition record after record until ``batch_size`` bytes went there,
and the accumulator appends to the same open batch until it is full. So
once the slow path has appended such a record, the core opens a
:class:`Lane` for its topic: the batch, its partition queue, and how many
more bytes (``room``) may join before the slow path would do anything but
"append to this batch" (open a new batch, switch partition, reject a
record too large). :meth:`ProducerCore.append` then appends directly to
the batch's builder while the record fits ``room``, the buffer has room
and the batch is still the open tail of its queue.

The partitioner is not told of each fast append: the lane adds the bytes
up in ``pending`` and :meth:`Lanes.settle` hands the sum to
``record_appended`` once, before the slow path (or anything else that asks
the partitioner: ``append_many``, new metadata, close) runs for the topic.
Since a lane never lets the sum reach ``batch_size``, one call with the sum
leaves the partitioner exactly where one call per record would have.

A lane is the one exception to the accumulator's ownership of batch state:
it binds the open batch's mutators (builder, tokens, timestamps) once and
:meth:`ProducerCore.try_append` charges the batch directly, because a
method call per record is what the lane exists to avoid. It only ever
appends to the batch that is still the OPEN tail of its queue.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkacore.partitioner import DefaultPartitioner
from kafkacore.producer.batch import ProducerBatch

__all__ = ["Lane", "Lanes"]


class Lane:
    """One topic's fast lane into the open batch of its sticky partition."""

    __slots__ = (
        "add_stamp",
        "add_token",
        "append",
        "batch",
        "limit",
        "partition",
        "pending",
        "queue",
        "topic",
    )

    def __init__(
        self, topic: str, partition: int, queue: Any, batch: ProducerBatch, room: int
    ) -> None:
        builder = batch.builder
        if builder is None:  # pragma: no cover - an OPEN batch always has a builder
            raise ValueError(f"Lane: batch {batch.id} of {topic!r} has no builder")
        self.topic = topic
        self.partition = partition
        #: The PartitionQueue the batch is the tail of (checked on each append).
        self.queue = queue
        self.batch = batch
        # Bound once: they run per record.
        #: The builder's ``append(value, key, *, timestamp)``.
        self.append: Callable[..., int] = builder.append
        self.add_token: Callable[[object], None] = batch.tokens.append
        self.add_stamp: Callable[[int], None] = batch.timestamps.append
        #: The most ``batch.accounted`` may reach through the lane.
        self.limit = batch.accounted + room
        #: Bytes appended through the lane, not yet told to the partitioner.
        self.pending = 0


class Lanes:
    """The open lanes by topic, and the partitioner they owe bytes to."""

    __slots__ = ("_partitioner", "by_topic", "get")

    def __init__(self, partitioner: DefaultPartitioner) -> None:
        self._partitioner = partitioner
        self.by_topic: dict[str, Lane] = {}
        #: ``get(topic)``: the topic's lane or None (bound once: it runs per record).
        self.get = self.by_topic.get

    def __len__(self) -> int:
        return len(self.by_topic)

    def open(self, lane: Lane) -> None:
        """Make ``lane`` its topic's lane (settling the one it replaces)."""
        self.settle(lane.topic)
        self.by_topic[lane.topic] = lane

    def settle(self, topic: str) -> None:
        """Close ``topic``'s lane, telling the partitioner what went through it."""
        lane = self.by_topic.pop(topic, None)
        if lane is not None:
            pending = lane.pending
            if pending:
                self._partitioner.record_appended(topic, lane.partition, pending)

    def settle_all(self) -> None:
        for topic in list(self.by_topic):
            self.settle(topic)

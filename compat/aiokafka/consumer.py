"""aiokafka's ``aiokafka.consumer``: ``AIOKafkaConsumer``.

kafkacore's asyncio consumer under aiokafka's name (its messages and
warnings say ``AIOKafkaConsumer``), with aiokafka's rules where kafkacore's
own differ: ``await start()`` waits for the subscribed topics to be in
metadata and raises UnknownTopicOrPartitionError after
``request_timeout_ms`` (kafkacore's goes on and picks a topic up when it is
created), and ``offsets_for_times`` answers aiokafka's two-field
``OffsetAndTimestamp``. The rest (start joins the group, ``getone``/
``getmany``, ``seek_to_committed``, ``last_stable_offset``,
``last_poll_timestamp``, the rebalance listener from its own task with
coroutine methods awaited, ``loop=`` ignored) is kafkacore's own: see
:class:`kafkacore.transports.asyncio.AsyncKafkaConsumer`.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafkacore.client import TopicPartition
from kafkacore.compat.aiokafka.structs import OffsetAndTimestamp
from kafkacore.transports.asyncio import AsyncKafkaConsumer

__all__ = ["AIOKafkaConsumer"]


class AIOKafkaConsumer(AsyncKafkaConsumer):
    """aiokafka's consumer over kafkacore (see the module docstring)."""

    _NAME = "AIOKafkaConsumer"
    _START_TOPICS = "described"

    async def offsets_for_times(  # type: ignore[override]
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        found = await super().offsets_for_times(timestamps)
        return {
            tp: None if hit is None else OffsetAndTimestamp(hit.offset, hit.timestamp)
            for tp, hit in found.items()
        }

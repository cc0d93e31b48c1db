"""aiokafka's ``aiokafka.consumer``: ``AIOKafkaConsumer``.

kafkacore's asyncio consumer under aiokafka's name (so its messages and
warnings say ``AIOKafkaConsumer``): ``await start()`` joins the group,
``getone``/``getmany``, ``seek_to_committed``, ``last_stable_offset``, a
rebalance listener called from its own task with coroutine methods awaited,
``loop=`` accepted and ignored. See :class:`kafkacore.transports.asyncio.AsyncKafkaConsumer`.
"""

from __future__ import annotations

from kafkacore.transports.asyncio import AsyncKafkaConsumer

__all__ = ["AIOKafkaConsumer"]


class AIOKafkaConsumer(AsyncKafkaConsumer):
    """aiokafka's consumer over kafkacore (see the module docstring)."""

    _NAME = "AIOKafkaConsumer"

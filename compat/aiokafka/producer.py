"""aiokafka's ``aiokafka.producer``: ``AIOKafkaProducer``.

kafkacore's asyncio producer under aiokafka's name: ``await start()``,
``send``/``send_and_wait``, ``create_batch``/``send_batch``, transactions
(``async with producer.transaction()``), ``loop=`` accepted and ignored.
See :class:`kafkacore.transports.asyncio.AsyncKafkaProducer`.
"""

from __future__ import annotations

from kafkacore.transports.asyncio import AsyncKafkaProducer

__all__ = ["AIOKafkaProducer"]


class AIOKafkaProducer(AsyncKafkaProducer):
    """aiokafka's producer over kafkacore (see the module docstring)."""

    _NAME = "AIOKafkaProducer"

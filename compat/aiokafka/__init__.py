"""aiokafka 0.14's ``aiokafka`` package, over kafkacore (see :mod:`kafkacore.compat`).

``from aiokafka import AIOKafkaConsumer`` becomes ``from
kafkacore.compat.aiokafka import AIOKafkaConsumer``; the submodules follow
the same rule.
"""

from kafkacore.client import TopicPartition
from kafkacore.compat.errors import ConsumerStoppedError, IllegalOperation
from kafkacore.consumer import ConsumerRecord, OffsetAndMetadata
from kafkacore.transports.asyncio import AsyncKafkaConsumer as AIOKafkaConsumer
from kafkacore.transports.asyncio import AsyncKafkaProducer as AIOKafkaProducer

__all__ = [
    "AIOKafkaConsumer",
    "AIOKafkaProducer",
    "ConsumerRecord",
    "ConsumerStoppedError",
    "IllegalOperation",
    "OffsetAndMetadata",
    "TopicPartition",
]

"""aiokafka 0.14's ``aiokafka`` package, over kafkacore (see :mod:`kafkacore.compat`).

``from aiokafka import AIOKafkaConsumer`` becomes ``from
kafkacore.compat.aiokafka import AIOKafkaConsumer``; the submodules
(``errors``, ``structs``, ``abc``, ``helpers``, ``admin``, ``consumer``,
``producer``) follow the same rule.
"""

from kafkacore.client import TopicPartition
from kafkacore.compat._listener import ConsumerRebalanceListener
from kafkacore.compat.aiokafka.consumer import AIOKafkaConsumer
from kafkacore.compat.aiokafka.producer import AIOKafkaProducer
from kafkacore.compat.aiokafka.structs import OffsetAndTimestamp
from kafkacore.compat.errors import ConsumerStoppedError, IllegalOperation
from kafkacore.consumer import ConsumerRecord, OffsetAndMetadata

__all__ = [
    "AIOKafkaConsumer",
    "AIOKafkaProducer",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "ConsumerStoppedError",
    "IllegalOperation",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "TopicPartition",
]

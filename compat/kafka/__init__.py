"""kafka-python 3's ``kafka`` package, over kafkacore (see :mod:`kafkacore.compat`).

``from kafka import KafkaConsumer`` becomes ``from kafkacore.compat.kafka
import KafkaConsumer``; the submodules (``errors``, ``structs``,
``serializer``, ``admin``, ``consumer``, ``producer``) follow the same rule.
"""

from kafkacore.client import TopicPartition
from kafkacore.compat._listener import AsyncConsumerRebalanceListener
from kafkacore.compat._listener import KafkaPythonListener as ConsumerRebalanceListener
from kafkacore.compat.kafka.admin import KafkaAdminClient
from kafkacore.compat.kafka.consumer import KafkaConsumer
from kafkacore.compat.kafka.serializer import (
    DefaultSerializer,
    Deserializer,
    JsonSerializer,
    Serializer,
)
from kafkacore.compat.kafka.structs import ConsumerGroupMetadata, OffsetAndMetadata
from kafkacore.transports.selector import KafkaProducer

__all__ = [
    "AsyncConsumerRebalanceListener",
    "ConsumerGroupMetadata",
    "ConsumerRebalanceListener",
    "DefaultSerializer",
    "Deserializer",
    "JsonSerializer",
    "KafkaAdminClient",
    "KafkaConsumer",
    "KafkaProducer",
    "OffsetAndMetadata",
    "Serializer",
    "TopicPartition",
]

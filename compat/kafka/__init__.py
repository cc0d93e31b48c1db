"""kafka-python 3's ``kafka`` package, over kafkacore (see :mod:`kafkacore.compat`).

``from kafka import KafkaConsumer`` becomes ``from kafkacore.compat.kafka
import KafkaConsumer``; the submodules follow the same rule.
"""

from kafkacore.client import TopicPartition
from kafkacore.compat.kafka.admin import KafkaAdminClient
from kafkacore.consumer import ConsumerGroupMetadata, OffsetAndMetadata
from kafkacore.transports.selector import KafkaConsumer, KafkaProducer

__all__ = [
    "ConsumerGroupMetadata",
    "KafkaAdminClient",
    "KafkaConsumer",
    "KafkaProducer",
    "OffsetAndMetadata",
    "TopicPartition",
]

"""Helpers of the real-broker share tests: topics, group configs, records."""

from __future__ import annotations

from kafkacore.admin import AlterConfigOp, ConfigResource, ConfigResourceType, NewTopic
from kafkacore.testing.cluster import LocalKafka
from kafkacore.transports.selector import KafkaAdminClient, KafkaProducer


def prepare_group(kafka: LocalKafka, topic: str, partitions: int, group: str, lock_ms: int) -> None:
    """Create ``topic`` and make ``group`` start at the earliest offset with ``lock_ms`` locks."""
    with KafkaAdminClient(bootstrap_servers=kafka.bootstrap) as admin:
        admin.create_topics([NewTopic(topic, partitions, 1)])
        resource = ConfigResource(ConfigResourceType.GROUP, group)
        admin.incremental_alter_configs(
            {
                resource: [
                    AlterConfigOp("share.auto.offset.reset", "earliest"),
                    AlterConfigOp("share.record.lock.duration.ms", str(lock_ms)),
                ]
            }
        )


def produce(kafka: LocalKafka, topic: str, partitions: int, count: int, start: int = 0) -> None:
    with KafkaProducer(bootstrap_servers=kafka.bootstrap) as producer:
        for i in range(start, start + count):
            producer.send(topic, value=b"%d" % i, partition=i % partitions)
        producer.flush()

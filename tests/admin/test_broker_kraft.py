"""AdminCore's quorum, paged-topic, config-listing, log-dir-move and coordinator
commands against a real Kafka 4.3 broker (KRaft, combined broker and controller)."""

from __future__ import annotations

import time

import pytest

from kafkacore.admin import (
    ConfigResource,
    ConfigResourceType,
    NewTopic,
    TopicPartitionReplica,
    TopicPartitionsCursor,
)
from kafkacore.protocol.error_codes import LogDirNotFoundError, UnknownTopicOrPartitionError
from kafkacore.testing import LocalKafka
from tests.admin.conftest import Admin

pytestmark = pytest.mark.broker


def _topic(admin: Admin, kafka_broker: LocalKafka, name: str, partitions: int) -> None:
    made = admin.run(admin.core.create_topics([NewTopic(name, partitions, 1)], now=admin.now))
    assert made[name].ok
    kafka_broker.wait_for_topic(name, partitions, deadline=time.monotonic() + 60)


def test_the_metadata_quorum_of_a_single_node(admin: Admin, kafka_broker: LocalKafka) -> None:
    q = admin.run(admin.core.describe_metadata_quorum(now=admin.now))
    node = kafka_broker.nodes[0].node_id
    assert q.leader_id == node and q.leader_epoch >= 0 and q.high_watermark > 0
    assert [v.replica_id for v in q.voters] == [node]
    assert q.voters[0].log_end_offset > 0
    assert q.nodes.get(node)  # v2: the controller's listener


def test_topics_page_by_page(admin: Admin, kafka_broker: LocalKafka, unique: str) -> None:
    a, b = f"kraft-a-{unique}", f"kraft-b-{unique}"
    _topic(admin, kafka_broker, a, 3)
    _topic(admin, kafka_broker, b, 1)
    page = admin.run(
        admin.core.describe_topic_partitions(
            [a, b, f"none-{unique}"], partition_limit=2, now=admin.now
        )
    )
    assert [p.partition for p in page.topics[a].result().partitions] == [0, 1]
    assert page.next_cursor == TopicPartitionsCursor(a, 2)
    rest = admin.run(
        admin.core.describe_topic_partitions(
            [a, b, f"none-{unique}"], cursor=page.next_cursor, now=admin.now
        )
    )
    assert [p.partition for p in rest.topics[a].result().partitions] == [2]
    described = rest.topics[b].result()
    assert described.topic_id is not None and described.partitions[0].leader is not None
    assert isinstance(rest.topics[f"none-{unique}"].error, UnknownTopicOrPartitionError)


def test_config_resources_the_cluster_knows(
    admin: Admin, kafka_broker: LocalKafka, unique: str
) -> None:
    name = f"kraft-cr-{unique}"
    _topic(admin, kafka_broker, name, 1)
    listed = admin.run(admin.core.list_config_resources(now=admin.now))
    assert ConfigResource(ConfigResourceType.TOPIC, name) in listed
    node = str(kafka_broker.nodes[0].node_id)
    brokers = admin.run(
        admin.core.list_config_resources([ConfigResourceType.BROKER], now=admin.now)
    )
    assert brokers == (ConfigResource(ConfigResourceType.BROKER, node),)


def test_a_replica_moved_to_its_own_log_dir_and_to_none(
    admin: Admin, kafka_broker: LocalKafka, unique: str
) -> None:
    name = f"kraft-ld-{unique}"
    _topic(admin, kafka_broker, name, 1)
    node = kafka_broker.nodes[0].node_id
    dirs = admin.run(admin.core.describe_log_dirs([node], now=admin.now))[node].result()
    here = TopicPartitionReplica(name, 0, node)
    moved = admin.run(admin.core.alter_replica_log_dirs({here: next(iter(dirs))}, now=admin.now))
    assert moved[here].ok
    nowhere = admin.run(
        admin.core.alter_replica_log_dirs({here: f"/no/such/dir-{unique}"}, now=admin.now)
    )
    assert isinstance(nowhere[here].error, LogDirNotFoundError)


def test_the_coordinator_of_a_group(admin: Admin, kafka_broker: LocalKafka, unique: str) -> None:
    found = admin.run(admin.core.find_coordinator(f"kraft-g-{unique}", now=admin.now))
    assert found == kafka_broker.nodes[0].node_id

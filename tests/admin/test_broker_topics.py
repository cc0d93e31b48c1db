"""AdminCore against a real broker: topics, the cluster, configs, offsets and records."""

from __future__ import annotations

import time

import pytest

from kafkacore.admin import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    ElectionType,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)
from kafkacore.client.metadata import TopicPartition as TP
from kafkacore.protocol.error_codes import (
    ElectionNotNeededError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    NoReassignmentInProgressError,
    OffsetOutOfRangeError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from kafkacore.testing import LocalKafka
from kafkacore.transports.selector import KafkaProducer
from tests.admin.conftest import Admin

pytestmark = pytest.mark.broker


def wait_described(admin: Admin, topic: str, partitions: int) -> None:
    """Until the broker's metadata shows every partition with a leader."""
    end = time.monotonic() + 30
    while True:
        result = admin.run(admin.core.describe_topics([topic], now=admin.now))[topic]
        parts = result.result().partitions if result.ok else ()
        if len(parts) == partitions and all(p.leader is not None for p in parts):
            return
        assert time.monotonic() < end, f"{topic}: {result}"
        time.sleep(0.1)


def test_create_describe_grow_and_delete_topics(admin: Admin, unique: str) -> None:
    a, b = f"adm-a-{unique}", f"adm-b-{unique}"
    created = admin.run(
        admin.core.create_topics(
            [
                NewTopic(a, 2, 1, configs={"retention.ms": "3600000"}),
                NewTopic(b, replica_assignments={0: [1], 1: [1], 2: [1]}),
            ],
            now=admin.now,
        )
    )
    made = created[a].result()
    assert (made.num_partitions, made.replication_factor) == (2, 1)
    assert made.topic_id is not None and made.configs is not None
    assert made.configs["retention.ms"].value == "3600000"
    assert made.configs["retention.ms"].source is ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert created[b].result().num_partitions == 3
    again = admin.run(admin.core.create_topics([NewTopic(a)], now=admin.now))
    assert isinstance(again[a].error, TopicAlreadyExistsError)

    wait_described(admin, a, 2)
    listing = admin.run(admin.core.list_topics(now=admin.now))
    assert a in listing and listing[a].topic_id == made.topic_id
    assert not any(name.startswith("__") for name in listing)

    described = admin.run(admin.core.describe_topics([a, f"nope-{unique}"], now=admin.now))
    desc = described[a].result()
    assert [p.partition for p in desc.partitions] == [0, 1]
    assert all(p.leader == 1 and p.replicas == (1,) and p.isr == (1,) for p in desc.partitions)
    assert isinstance(described[f"nope-{unique}"].error, UnknownTopicOrPartitionError)

    grown = admin.run(
        admin.core.create_partitions({a: NewPartitions(4), b: NewPartitions(1)}, now=admin.now)
    )
    assert grown[a].ok and isinstance(grown[b].error, InvalidPartitionsError)
    wait_described(admin, a, 4)

    b_id = created[b].result().topic_id
    assert b_id is not None
    deleted = admin.run(admin.core.delete_topics([a, b_id], now=admin.now))
    assert deleted[a].ok and deleted[b_id].ok, deleted
    # The broker's metadata drops the topic a moment after the controller
    # answered (as after create_topics): wait for it, bounded.
    end = time.monotonic() + 30
    while True:
        gone = admin.run(admin.core.describe_topics([a], now=admin.now))
        if not gone[a].ok:
            break
        assert time.monotonic() < end, f"{a} still described after its deletion"
        time.sleep(0.1)
    assert isinstance(gone[a].error, UnknownTopicOrPartitionError)


def test_validate_only_creates_nothing_and_reports_bad_settings(admin: Admin, unique: str) -> None:
    name = f"adm-v-{unique}"
    checked = admin.run(
        admin.core.create_topics(
            [NewTopic(name, 3, 1), NewTopic(f"{name}-rf", 1, 3)], validate_only=True, now=admin.now
        )
    )
    assert checked[name].result().num_partitions == 3
    assert isinstance(checked[f"{name}-rf"].error, InvalidReplicationFactorError)
    assert name not in admin.run(admin.core.list_topics(now=admin.now))


def test_describe_cluster(admin: Admin, kafka_broker: LocalKafka) -> None:
    desc = admin.run(admin.core.describe_cluster(include_authorized_operations=True, now=admin.now))
    assert desc.cluster_id == kafka_broker.cluster_id
    assert [b.node_id for b in desc.brokers] == [1] and desc.controller_id == 1
    fenced = admin.run(admin.core.describe_cluster(include_fenced_brokers=True, now=admin.now))
    assert not any(b.is_fenced for b in fenced.brokers)


def test_describe_and_alter_configs(admin: Admin, unique: str) -> None:
    topic = f"adm-c-{unique}"
    admin.run(admin.core.create_topics([NewTopic(topic, 1, 1)], now=admin.now))
    resource = ConfigResource(ConfigResourceType.TOPIC, topic)
    broker = ConfigResource(ConfigResourceType.BROKER, "1")
    changed = admin.run(
        admin.core.incremental_alter_configs(
            {
                resource: [
                    AlterConfigOp("retention.ms", "7200000"),
                    AlterConfigOp("cleanup.policy", "compact", AlterConfigOpType.APPEND),
                ]
            },
            now=admin.now,
        )
    )
    assert changed[resource].ok
    found = admin.run(
        admin.core.describe_configs(
            [resource, broker], include_synonyms=True, include_documentation=True, now=admin.now
        )
    )
    configs = found[resource].result()
    assert configs["retention.ms"].value == "7200000"
    assert configs["retention.ms"].source is ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert set(configs["cleanup.policy"].value.split(",")) == {"delete", "compact"}
    assert configs["segment.bytes"].is_default and configs["segment.bytes"].documentation
    assert configs["retention.ms"].synonyms[0].source is ConfigSource.DYNAMIC_TOPIC_CONFIG
    broker_configs = found[broker].result()
    assert broker_configs["auto.create.topics.enable"].value == "false"
    reset = admin.run(
        admin.core.incremental_alter_configs(
            {resource: [AlterConfigOp("retention.ms", op=AlterConfigOpType.DELETE)]}, now=admin.now
        )
    )
    assert reset[resource].ok
    again = admin.run(admin.core.describe_configs([resource], now=admin.now))[resource].result()
    assert again["retention.ms"].is_default
    bad = admin.run(
        admin.core.incremental_alter_configs(
            {resource: [AlterConfigOp("no.such.config", "1")]}, now=admin.now
        )
    )
    assert bad[resource].error is not None


def test_list_offsets_and_delete_records(
    admin: Admin, kafka_broker: LocalKafka, unique: str
) -> None:
    topic = f"adm-r-{unique}"
    admin.run(admin.core.create_topics([NewTopic(topic, 2, 1)], now=admin.now))
    wait_described(admin, topic, 2)
    with KafkaProducer(kafka_broker.bootstrap) as producer:
        for i in range(10):
            producer.send(topic, f"v{i}".encode(), partition=0, timestamp=1_000_000 + i * 1000)
        producer.flush(30)
    tp0, tp1 = TP(topic, 0), TP(topic, 1)
    specs = {tp0: OffsetSpec.latest(), tp1: OffsetSpec.earliest()}
    found = admin.run(admin.core.list_offsets(specs, now=admin.now))
    assert found[tp0].result().offset == 10 and found[tp1].result().offset == 0
    at = admin.run(
        admin.core.list_offsets({tp0: OffsetSpec.for_timestamp(1_004_500)}, now=admin.now)
    )
    assert (at[tp0].result().offset, at[tp0].result().timestamp) == (5, 1_005_000)
    newest = admin.run(admin.core.list_offsets({tp0: OffsetSpec.max_timestamp()}, now=admin.now))
    assert newest[tp0].result().offset == 9
    committed = admin.run(
        admin.core.list_offsets(
            {tp0: OffsetSpec.latest()}, isolation_level="read_committed", now=admin.now
        )
    )
    assert committed[tp0].result().offset == 10

    deleted = admin.run(admin.core.delete_records({tp0: 4, tp1: 5}, now=admin.now))
    assert deleted[tp0].result().low_watermark == 4
    assert isinstance(deleted[tp1].error, OffsetOutOfRangeError)
    earliest = admin.run(admin.core.list_offsets({tp0: OffsetSpec.earliest()}, now=admin.now))
    assert earliest[tp0].result().offset == 4
    everything = admin.run(admin.core.delete_records({tp0: -1}, now=admin.now))
    assert everything[tp0].result().low_watermark == 10
    missing = admin.run(
        admin.core.list_offsets({TP(f"nope-{unique}", 0): OffsetSpec.latest()}, now=admin.now)
    )
    assert isinstance(missing[TP(f"nope-{unique}", 0)].error, UnknownTopicOrPartitionError)


def test_replica_commands(admin: Admin, kafka_broker: LocalKafka, unique: str) -> None:
    topic = f"adm-rep-{unique}"
    admin.run(admin.core.create_topics([NewTopic(topic, 2, 1)], now=admin.now))
    wait_described(admin, topic, 2)
    end = time.monotonic() + 30
    while True:  # the log dirs list a new topic's replicas a moment after its leaders
        dirs = admin.run(admin.core.describe_log_dirs(now=admin.now))
        assert list(dirs) == [1]
        logs = dirs[1].result()
        held = {tp for d in logs.values() for tp in d.replicas}
        if {TP(topic, 0), TP(topic, 1)} <= held:
            break
        assert time.monotonic() < end, f"{topic} not in the log dirs: {sorted(held)[:5]}"
        time.sleep(0.2)
    one = next(iter(logs.values()))
    assert one.error is None and one.total_bytes is not None and one.usable_bytes is not None
    assert admin.run(admin.core.describe_log_dirs([1], now=admin.now))[1].ok

    elected = admin.run(
        admin.core.elect_leaders(ElectionType.PREFERRED, [TP(topic, 0)], now=admin.now)
    )
    assert isinstance(elected[TP(topic, 0)].error, ElectionNotNeededError)
    assert len(admin.run(admin.core.elect_leaders(now=admin.now))) == 0  # nothing to elect

    assert admin.run(admin.core.list_partition_reassignments([TP(topic, 0)], now=admin.now)) == {}
    moved = admin.run(
        admin.core.alter_partition_reassignments(
            {TP(topic, 0): [1], TP(topic, 1): None}, now=admin.now
        )
    )
    assert moved[TP(topic, 0)].ok
    assert isinstance(moved[TP(topic, 1)].error, NoReassignmentInProgressError)


def test_alter_configs_replaces_every_dynamic_config(admin: Admin, unique: str) -> None:
    topic = f"adm-ac-{unique}"
    admin.run(
        admin.core.create_topics(
            [NewTopic(topic, 1, 1, configs={"retention.ms": "1000"})], now=admin.now
        )
    )
    resource = ConfigResource(ConfigResourceType.TOPIC, topic)
    assert admin.run(admin.core.alter_configs({resource: {"segment.ms": "600000"}}, now=admin.now))[
        resource
    ].ok
    configs = admin.run(admin.core.describe_configs([resource], now=admin.now))[resource].result()
    assert configs["segment.ms"].value == "600000"
    assert configs["retention.ms"].is_default  # not named: back to the default

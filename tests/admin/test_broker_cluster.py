"""AdminCore on the real 3-node cluster: requests reach the broker each kind
needs (the controller, a broker's own configs, every broker for listings,
partition leaders, group coordinators), and follow a leader and a
coordinator to another broker when a node is killed."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kafkacore.admin import ConfigResource, ConfigResourceType, NewTopic, OffsetSpec
from kafkacore.client.metadata import TopicPartition as TP
from kafkacore.testing import LocalKafka
from tests.admin.conftest import Admin, open_admin

pytestmark = [pytest.mark.broker, pytest.mark.cluster]


@pytest.fixture
def cluster_admin(kafka_cluster: LocalKafka) -> Iterator[Admin]:
    bootstrap = ",".join(
        "{}:{}".format(*kafka_cluster.listener("PLAINTEXT", n.node_id)) for n in kafka_cluster.nodes
    )
    a = open_admin(
        bootstrap, api_timeout_ms=90000, request_timeout_ms=10000, metadata_max_age_ms=2000
    )
    yield a
    a.core.close(now=time.monotonic())
    a.driver.close()


def test_routing_and_failover_on_three_brokers(
    cluster_admin: Admin, kafka_cluster: LocalKafka, unique: str
) -> None:
    admin = cluster_admin
    ids = sorted(n.node_id for n in kafka_cluster.nodes)
    desc = admin.run(admin.core.describe_cluster(now=admin.now))
    assert [b.node_id for b in desc.brokers] == ids and desc.controller_id in ids

    topic = f"adm-cl-{unique}"
    made = admin.run(
        admin.core.create_topics(
            [NewTopic(topic, 3, 3, configs={"min.insync.replicas": "2"})], now=admin.now
        )
    )
    assert made[topic].ok
    kafka_cluster.wait_for_topic(topic, 3, deadline=time.monotonic() + 60)

    # Each broker's own config answers only from that broker.
    brokers = [ConfigResource(ConfigResourceType.BROKER, str(i)) for i in ids]
    configs = admin.run(admin.core.describe_configs(brokers, now=admin.now))
    for resource in brokers:
        assert configs[resource].result()["node.id"].value == resource.name

    # Offsets-only groups land on several coordinators; listing asks every broker.
    groups = [f"adm-cl-{unique}-{i}" for i in range(6)]
    for g in groups:
        assert admin.run(
            admin.core.alter_consumer_group_offsets(g, {TP(topic, 0): 0}, now=admin.now)
        )[TP(topic, 0)].ok
    listing = admin.run(admin.core.list_consumer_groups(now=admin.now))
    assert listing.errors == {}
    where = {g.group_id: g.coordinator for g in listing.groups if g.group_id in groups}
    assert set(where) == set(groups)
    described = admin.run(admin.core.describe_consumer_groups(groups, now=admin.now))
    assert {g: described[g].result().coordinator for g in groups} == where

    leaders = {
        p.partition: p.leader
        for p in admin.run(admin.core.describe_topics([topic], now=admin.now))[topic]
        .result()
        .partitions
    }
    found = admin.run(
        admin.core.list_offsets(
            {TP(topic, p): OffsetSpec.latest() for p in range(3)}, now=admin.now
        )
    )
    assert all(found[TP(topic, p)].result().offset == 0 for p in range(3))

    # Kill the leader of partition 0: the lookup follows the new leader, and
    # a group that the killed broker coordinated moves with it.
    victim = leaders[0]
    assert victim is not None
    moved_group = next((g for g, node in where.items() if node == victim), None)
    for i in range(6, 40):  # a group the victim coordinates (offsets partitions spread)
        if moved_group is not None:
            break
        g = f"adm-cl-{unique}-{i}"
        admin.run(admin.core.alter_consumer_group_offsets(g, {TP(topic, 0): 0}, now=admin.now))
        if (
            admin.run(admin.core.describe_consumer_groups([g], now=admin.now))[g]
            .result()
            .coordinator
            == victim
        ):
            moved_group = g
    assert moved_group is not None, "no group coordinated by the victim"
    kafka_cluster.kill(victim)
    started = time.monotonic()
    again = admin.run(
        admin.core.list_offsets({TP(topic, 0): OffsetSpec.latest()}, now=admin.now), timeout=100
    )
    assert again[TP(topic, 0)].result().offset == 0
    after = admin.run(admin.core.describe_topics([topic], now=admin.now))[topic].result()
    assert after.partitions[0].leader not in (None, victim)
    desc_moved = admin.run(
        admin.core.describe_consumer_groups([moved_group], now=admin.now), timeout=100
    )
    assert desc_moved[moved_group].result().coordinator not in (None, victim)
    deleted = admin.run(admin.core.delete_records({TP(topic, 1): 0}, now=admin.now), timeout=100)
    assert deleted[TP(topic, 1)].result().low_watermark == 0
    # Failover took the broker's session timeout and a few retries, not the 90 s budget.
    assert time.monotonic() - started < 60

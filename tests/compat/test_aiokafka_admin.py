"""aiokafka 0.14's ``AIOKafkaAdminClient``, imported from ``kafkacore.compat.aiokafka``,
answers in aiokafka's shapes against a real broker (issue 21).

Each test follows aiokafka's docstrings (``create_topics``: "Appropriate version
of CreateTopicResponse class"; ``list_consumer_groups``: "List of tuples of
Consumer Groups"; ``describe_configs``: "List of appropriate version of
DescribeConfigsResponse class"; ``delete_records`` takes "A map of
RecordsToDelete for each TopicPartition"; ...), in our own words, with the
imports the documented rule gives: ``aiokafka`` becomes
``kafkacore.compat.aiokafka``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from kafkacore.compat.aiokafka import TopicPartition
from kafkacore.compat.aiokafka.admin import (
    AIOKafkaAdminClient,
    NewPartitions,
    NewTopic,
    RecordsToDelete,
)
from kafkacore.compat.aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from kafkacore.compat.aiokafka.errors import (
    IllegalArgumentError,
    InvalidPartitionsError,
    OffsetOutOfRangeError,
    TopicAlreadyExistsError,
)
from kafkacore.protocol.consumer_protocol import decode_assignment, decode_subscription
from kafkacore.testing import LocalKafka
from kafkacore.transports.selector import KafkaProducer
from tests.transports.test_admin_flow import consume_and_commit

pytestmark = pytest.mark.broker


def run(kafka_broker: LocalKafka, body: Callable[[AIOKafkaAdminClient], Awaitable[None]]) -> None:
    """``body(admin)`` on a started client, closed after."""

    async def main() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap)
        await admin.start()
        try:
            await body(admin)
        finally:
            await admin.close()

    asyncio.run(main())


async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    end = time.monotonic() + 30
    while not await check():
        assert time.monotonic() < end, f"not reached in 30 s: {what}"
        await asyncio.sleep(0.1)


def name(prefix: str) -> str:
    return f"aio-{prefix}-{uuid.uuid4().hex[:8]}"


def produce(bootstrap: str, topic: str, count: int) -> None:
    with KafkaProducer(bootstrap) as producer:
        for i in range(count):
            producer.send(topic, b"v%d" % i, partition=0)
        producer.flush(30)


async def _ready(admin: AIOKafkaAdminClient, topic: str, partitions: int = 1) -> None:
    async def described() -> bool:
        [t] = await admin.describe_topics([topic])
        return t["error_code"] == 0 and len(t["partitions"]) == partitions

    await eventually(described, f"{topic} in the metadata")


# -- topics -------------------------------------------------------------------------
def test_topic_calls_answer_aiokafkas_responses(kafka_broker: LocalKafka) -> None:
    topic = name("t")

    async def body(admin: AIOKafkaAdminClient) -> None:
        resp = await admin.create_topics([NewTopic(topic, 1, 1)])
        [(created, error_code, error)] = resp.topic_errors
        assert (created, error_code, error) == (topic, 0, None)
        again = await admin.create_topics([NewTopic(topic, 1, 1)])  # answered, not raised
        assert again.topic_errors[0].error_code == TopicAlreadyExistsError.errno
        assert again.to_object()["topic_errors"][0]["topic"] == topic
        with pytest.raises(IllegalArgumentError):
            NewTopic(topic, 1, 1, replica_assignments={0: [1]})

        await _ready(admin, topic)
        assert topic in await admin.list_topics()
        [described] = await admin.describe_topics([topic])
        assert described["topic"] == topic and not described["is_internal"]
        assert [p["partition"] for p in described["partitions"]] == [0]
        assert described["partitions"][0]["leader"] >= 0
        cluster = await admin.describe_cluster()
        node = kafka_broker.nodes[0].node_id
        assert [b["node_id"] for b in cluster["brokers"]] == [node]
        assert cluster["controller_id"] == node and cluster["cluster_id"]

        await admin.create_partitions({topic: NewPartitions(total_count=3)})
        await _ready(admin, topic, 3)
        with pytest.raises(InvalidPartitionsError):  # a topic's error raises here
            await admin.create_partitions({topic: NewPartitions(total_count=2)})

        deleted = await admin.delete_topics([topic])
        [(gone, code)] = deleted.topic_error_codes
        assert (gone, code) == (topic, 0)

    run(kafka_broker, body)


# -- configs ------------------------------------------------------------------------
def test_configs_answer_describe_and_alter_responses(kafka_broker: LocalKafka) -> None:
    topic = name("cfg")
    node = kafka_broker.nodes[0].node_id

    async def body(admin: AIOKafkaAdminClient) -> None:
        await admin.create_topics([NewTopic(topic, 1, 1)])
        await _ready(admin, topic)
        topic_resource = ConfigResource(ConfigResourceType.TOPIC, topic)
        broker_resource = ConfigResource(ConfigResourceType.BROKER, node)
        by_broker, by_topic = await admin.describe_configs([topic_resource, broker_resource])
        [row] = by_broker.resources
        code, message, kind, resource_name, entries = row
        assert (code, message, kind, resource_name) == (
            0,
            None,
            ConfigResourceType.BROKER,
            str(node),
        )
        assert any(e.config_names == "advertised.listeners" for e in entries)
        [row] = by_topic.resources
        assert (row.error_code, row.resource_type, row.resource_name) == (0, 2, topic)
        names = {e[0] for e in row.config_entries}
        assert "cleanup.policy" in names and "retention.ms" in names

        cr = ConfigResource(ConfigResourceType.TOPIC, topic, {"cleanup.policy": "compact"})
        [altered] = await admin.alter_configs([cr])
        assert [tuple(r) for r in altered.resources] == [(0, None, 2, topic)]

        async def compacted() -> bool:
            [resp] = await admin.describe_configs([cr])
            entries = resp.resources[0][4]
            return [(e[0], e[1]) for e in entries] == [("cleanup.policy", "compact")]

        await eventually(compacted, "cleanup.policy altered")
        [missing] = await admin.describe_configs([ConfigResource("topic", name("none"))])
        assert missing.resources[0].error_code != 0 and missing.resources[0].config_entries == []

    run(kafka_broker, body)


# -- groups -------------------------------------------------------------------------
def test_group_calls_answer_aiokafkas_shapes(kafka_broker: LocalKafka) -> None:
    topic, group = name("g"), name("group")
    produce_count = 3

    async def body(admin: AIOKafkaAdminClient) -> None:
        await admin.create_topics([NewTopic(topic, 1, 1)])
        await _ready(admin, topic)
        await asyncio.to_thread(produce, kafka_broker.bootstrap, topic, produce_count)
        consumer = await asyncio.to_thread(
            consume_and_commit, kafka_broker.bootstrap, topic, group, produce_count
        )
        try:
            listed = await admin.list_consumer_groups()
            assert (group, "consumer") in listed
            assert all(isinstance(g, tuple) and len(g) == 2 for g in listed)
            assert await admin.list_consumer_groups(broker_ids=[9999]) == []

            [resp] = await admin.describe_consumer_groups([group])
            [row] = resp.groups
            error_code, group_id, state, protocol_type, _protocol, members, _ops = row
            assert (error_code, group_id, state, protocol_type) == (0, group, "Stable", "consumer")
            [member] = members
            _, subscription = decode_subscription(member.member_metadata)
            _, assignment = decode_assignment(member.member_assignment)
            assert subscription.topics == [topic]
            assert [(t.topic, t.partitions) for t in assignment.assigned_partitions] == [
                (topic, [0])
            ]

            coordinator = await admin.find_coordinator(group)
            assert coordinator == kafka_broker.nodes[0].node_id
            tp = TopicPartition(topic, 0)
            assert (await admin.list_consumer_group_offsets(group))[tp].offset == produce_count
            named = await admin.list_consumer_group_offsets(group, partitions=[tp])
            assert named[tp].offset == produce_count
            other = TopicPartition(topic, 5)
            unknown = await admin.list_consumer_group_offsets(group, partitions=[other])
            assert unknown[other].offset == -1
        finally:
            await asyncio.to_thread(consumer.close)

    run(kafka_broker, body)


# -- records ------------------------------------------------------------------------
def test_delete_records_takes_records_to_delete(kafka_broker: LocalKafka) -> None:
    topic = name("dr")

    async def body(admin: AIOKafkaAdminClient) -> None:
        await admin.create_topics([NewTopic(topic, 1, 1)])
        await _ready(admin, topic)
        await asyncio.to_thread(produce, kafka_broker.bootstrap, topic, 4)
        tp = TopicPartition(topic, 0)
        assert await admin.delete_records({tp: RecordsToDelete(before_offset=3)}) == {tp: 3}
        with pytest.raises(OffsetOutOfRangeError):
            await admin.delete_records({tp: RecordsToDelete(before_offset=100)})

    run(kafka_broker, body)


def test_start_reaches_the_cluster_and_async_with_closes(kafka_broker: LocalKafka) -> None:
    async def main() -> Any:
        async with AIOKafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap) as admin:
            topics = await admin.list_topics()
        with pytest.raises(TypeError, match="loop"):
            AIOKafkaAdminClient(loop=asyncio.get_running_loop())  # type: ignore[arg-type]
        with pytest.deprecated_call():
            AIOKafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap, api_version="auto")  # type: ignore[arg-type]
        return topics

    assert isinstance(asyncio.run(main()), list)

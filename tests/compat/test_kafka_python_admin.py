"""kafka-python 3's ``KafkaAdminClient``, imported from ``kafkacore.compat.kafka``,
answers in kafka-python's shapes against a real broker (issue 21).

Each test follows what kafka-python 3's docstrings promise a call returns
(``create_topics``: "dict of CreateTopicsResponse key/vals"; ``describe_topics``:
"a list of dicts"; ``list_groups``: "list of group data dicts";
``delete_records``: "dict {topicPartition -> metadata}", raising on errors;
``describe_configs``: ``{resource_type: {resource_name: {config_key: {...}}}}``
filtered by ``config_filter``; ...), written in our own words. The imports are
the documented rule: ``kafka`` becomes ``kafkacore.compat.kafka``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kafkacore.admin import OffsetAndTimestamp, TopicPartitionReplica
from kafkacore.compat.kafka import KafkaAdminClient, OffsetAndMetadata, TopicPartition
from kafkacore.compat.kafka.admin import (
    ConfigResource,
    ConfigResourceType,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafkacore.compat.kafka.errors import (
    BrokerResponseError,
    ElectionNotNeededError,
    NoError,
    OffsetOutOfRangeError,
    UnknownTopicOrPartitionError,
)
from kafkacore.testing import LocalKafka
from kafkacore.transports.selector import KafkaConsumer, KafkaProducer

pytestmark = pytest.mark.broker


def eventually(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, f"not reached in {timeout} s: {what}"
        time.sleep(0.1)


@pytest.fixture
def admin(kafka_broker: LocalKafka) -> Iterator[KafkaAdminClient]:
    with KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap, client_id="kp-compat") as a:
        yield a


def name(prefix: str) -> str:
    return f"kp-{prefix}-{uuid.uuid4().hex[:8]}"


def made(admin: KafkaAdminClient, topic: str, partitions: int = 1) -> str:
    admin.create_topics({topic: {"num_partitions": partitions, "replication_factor": 1}})
    admin.wait_for_topics([topic], timeout_ms=30000)
    return topic


def produce(bootstrap: str, topic: str, partition: int, count: int) -> None:
    with KafkaProducer(bootstrap) as producer:
        for i in range(count):
            producer.send(topic, b"v%d" % i, partition=partition)
        producer.flush(30)


# -- results are dicts and lists ----------------------------------------------------
def test_topic_results_are_kafka_pythons_dicts(admin: KafkaAdminClient) -> None:
    first, second, third = name("t1"), name("t2"), name("t3")
    created = admin.create_topics([NewTopic(first, 2, 1)])
    assert [(t["name"], t["error_code"]) for t in created["topics"]] == [(first, 0)]
    assert created["topics"][0]["num_partitions"] == 2
    by_dict = admin.create_topics(
        {
            second: {
                "num_partitions": 1,
                "replication_factor": 1,
                "configs": {"retention.ms": "60000"},
            }
        }
    )
    assert by_dict["topics"][0]["name"] == second
    assert by_dict["topics"][0]["configs"]["retention.ms"]["value"] == "60000"
    by_name = admin.create_topics([third], wait_for_metadata=True)
    assert by_name["topics"][0]["error_code"] == 0

    admin.wait_for_topics([first, second])
    described = admin.describe_topics([first])
    assert len(described) == 1 and described[0]["name"] == first
    assert [p["partition_index"] for p in described[0]["partitions"]] == [0, 1]
    assert all(p["leader_id"] >= 0 and p["error_code"] == 0 for p in described[0]["partitions"])
    assert first in admin.list_topics()
    missing = admin.describe_topics([name("nope")])
    assert missing[0]["error_code"] == UnknownTopicOrPartitionError.errno

    grown = admin.create_partitions({first: NewPartitions(3), second: 2})
    assert sorted(tuple(r) for r in grown.results) == [(first, 0, None), (second, 0, None)]
    eventually(lambda: len(admin.describe_topics([first])[0]["partitions"]) == 3, "3 partitions")

    with pytest.raises(BrokerResponseError):  # raise_errors: the topic exists
        admin.create_topics([first])
    again = admin.create_topics([first], raise_errors=False)
    assert again["topics"][0]["error_code"] != 0

    deleted = admin.delete_topics([first, second, third])
    assert sorted(t["name"] for t in deleted["topics"]) == sorted([first, second, third])
    assert {t["error_code"] for t in deleted["topics"]} == {0}


def _consumer_in(bootstrap: str, topic: str, group: str) -> KafkaConsumer:
    consumer = KafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest"
    )
    end = time.monotonic() + 60
    while not consumer.assignment():
        assert time.monotonic() < end, "the consumer was never assigned a partition"
        consumer.poll_records(timeout=0.2)
    return consumer


def test_group_results_are_kafka_pythons_dicts(
    admin: KafkaAdminClient, kafka_broker: LocalKafka
) -> None:
    topic = made(admin, name("g"))
    active, idle, never = name("active"), name("idle"), name("never")
    tp = TopicPartition(topic, 0)
    produce(kafka_broker.bootstrap, topic, 0, 3)
    assert admin.alter_group_offsets(idle, {tp: OffsetAndMetadata(2, "", None)}) == {tp: NoError}
    consumer = _consumer_in(kafka_broker.bootstrap, topic, active)
    try:
        listed = admin.list_groups()
        ids = {g["group_id"] for g in listed}  # iterating: a list of dicts
        assert {active, idle} <= ids
        assert {"group_id", "protocol_type", "group_state"} <= set(listed[0])

        described = admin.describe_groups([active])
        group = described[active]
        assert group["group_id"] == active and group["error"] is None
        assert len(group["members"]) == 1
        member = group["members"][0]
        assert member["member_metadata"]["topics"] == [topic]
        assert member["member_assignment"]["assigned_partitions"][0]["topic"] == topic

        offsets = admin.list_group_offsets(idle)
        assert offsets[idle][tp].offset == 2
        deleted = admin.delete_groups([idle, active, never])
        assert deleted[idle] == "OK"
        assert deleted[active] == "NonEmptyGroupError"
        assert deleted[never] == "GroupIdNotFoundError"
    finally:
        consumer.close()
    assert idle not in {g["group_id"] for g in admin.list_groups()}


# -- delete_records raises as kafka-python does --------------------------------------
def test_delete_records_returns_low_watermarks_and_raises_errors(
    admin: KafkaAdminClient, kafka_broker: LocalKafka
) -> None:
    topic = made(admin, name("dr"), 2)
    p0, p1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    produce(kafka_broker.bootstrap, topic, 0, 10)
    produce(kafka_broker.bootstrap, topic, 1, 10)

    result = admin.delete_records({p0: 4, p1: -1}, timeout_ms=30000)
    assert result == {
        p0: {"low_watermark": 4, "error_code": 0, "partition_index": 0},
        p1: {"low_watermark": 10, "error_code": 0, "partition_index": 1},
    }
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.delete_records({TopicPartition(topic, 99): -1})
    with pytest.raises(UnknownTopicOrPartitionError):
        # Nothing is deleted when a partition is unknown, as in kafka-python.
        admin.delete_records({p0: 6, TopicPartition(name("none"), 0): -1})
    assert admin.list_partition_offsets({p0: OffsetSpec.EARLIEST})[p0].offset == 4
    with pytest.raises(OffsetOutOfRangeError):
        admin.delete_records({p0: 1000})
    with pytest.raises(BrokerResponseError) as several:
        admin.delete_records({p0: 1000, p1: 1000})
    assert not isinstance(several.value, OffsetOutOfRangeError)
    assert set(several.value.errors) == {p0, p1}  # type: ignore[attr-defined]


# -- the calls kafkacore's own admin did not have ------------------------------------
def test_describe_metadata_quorum(admin: KafkaAdminClient, kafka_broker: LocalKafka) -> None:
    quorum = admin.describe_metadata_quorum()
    assert "error_code" not in quorum
    [metadata] = quorum["topics"]
    assert metadata["topic_name"] == "__cluster_metadata"
    [partition] = metadata["partitions"]
    assert partition["partition_index"] == 0 and partition["error"] is None
    assert partition["leader_id"] == kafka_broker.nodes[0].node_id
    assert partition["high_watermark"] > 0 and partition["leader_epoch"] >= 0
    assert [v["replica_id"] for v in partition["current_voters"]] == [partition["leader_id"]]


def test_describe_topic_partitions_pages_with_its_cursor(admin: KafkaAdminClient) -> None:
    topic = made(admin, name("dtp"), 3)
    first = admin.describe_topic_partitions([topic], response_partition_limit=2)
    assert set(first) == {"topics", "next_cursor"}
    [described] = first["topics"]
    assert described["name"] == topic and described["error_code"] == 0
    assert [p["partition_index"] for p in described["partitions"]] == [0, 1]
    assert all(p["leader_id"] >= 0 and p["replica_nodes"] for p in described["partitions"])
    assert first["next_cursor"] == {"topic_name": topic, "partition_index": 2}
    rest = admin.describe_topic_partitions([topic], cursor=first["next_cursor"])
    assert [p["partition_index"] for p in rest["topics"][0]["partitions"]] == [2]
    assert rest["next_cursor"] is None


def test_list_config_resources(admin: KafkaAdminClient, kafka_broker: LocalKafka) -> None:
    topic = made(admin, name("lcr"))
    listed = admin.list_config_resources()
    assert topic in listed["topic"]
    assert listed["broker"] == [str(kafka_broker.nodes[0].node_id)]
    assert set(admin.list_config_resources(["BROKER"])) == {"broker"}


def test_describe_configs_filters_as_config_filter_asks(
    admin: KafkaAdminClient, kafka_broker: LocalKafka
) -> None:
    topic = made(admin, name("cfg"))
    resource = ConfigResource(ConfigResourceType.TOPIC, topic)
    assert admin.describe_configs([resource]) == {"topic": {topic: {}}}  # 'modified'
    every = admin.describe_configs([resource], config_filter="all")["topic"][topic]
    retention = every["retention.bytes"]
    assert retention["config_source"] == "DEFAULT_CONFIG"
    assert retention["config_type"] == "LONG"
    assert retention["value"] == "-1" and retention["synonyms"] == []
    assert retention["read_only"] is False and retention["is_sensitive"] is False

    altered = admin.alter_configs([ConfigResource("TOPIC", topic, {"retention.ms": "120000"})])
    assert altered == {"topic": {topic: "OK"}}
    with pytest.raises(ValueError, match="Unrecognized"):
        admin.alter_configs([ConfigResource("TOPIC", topic, {"no.such.config": "1"})])

    def modified() -> dict[str, Any]:
        return admin.describe_configs([resource])["topic"][topic]

    eventually(lambda: "retention.ms" in modified(), "retention.ms modified")
    assert modified()["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    only = admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, topic, ["retention.ms"])], config_filter="all"
    )
    assert list(only["topic"][topic]) == ["retention.ms"]
    assert admin.reset_configs([ConfigResource("TOPIC", topic, ["retention.ms"])]) == {
        "topic": {topic: "OK"}
    }
    eventually(lambda: "retention.ms" not in modified(), "retention.ms reset")

    broker = kafka_broker.nodes[0].node_id
    static = admin.describe_configs(
        [ConfigResource(ConfigResourceType.BROKER, broker)], config_filter="static"
    )
    listeners = static["broker"][str(broker)]["advertised.listeners"]
    assert listeners["config_source"] == "STATIC_BROKER_CONFIG" and listeners["read_only"]
    with pytest.raises(ValueError):
        admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "str")])


def test_list_partition_offsets_answers_offset_and_timestamp(
    admin: KafkaAdminClient, kafka_broker: LocalKafka
) -> None:
    topic = made(admin, name("lpo"))
    tp = TopicPartition(topic, 0)
    before = int(time.time() * 1000) - 1000
    produce(kafka_broker.bootstrap, topic, 0, 5)
    latest = admin.list_partition_offsets({tp: OffsetSpec.LATEST})
    assert isinstance(latest[tp], OffsetAndTimestamp) and latest[tp].offset == 5
    assert admin.list_partition_offsets({tp: OffsetSpec.EARLIEST})[tp].offset == 0
    by_time = admin.list_partition_offsets({tp: before}, isolation_level="READ_COMMITTED")
    assert by_time[tp].offset == 0 and by_time[tp].timestamp >= before
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.list_partition_offsets({TopicPartition(topic, 7): OffsetSpec.LATEST})


def test_leaders_reassignments_and_log_dirs(
    admin: KafkaAdminClient, kafka_broker: LocalKafka
) -> None:
    topic = made(admin, name("rep"), 2)
    node = kafka_broker.nodes[0].node_id
    response = admin.elect_leaders(0, {topic: [0, 1]})
    [result] = response.replica_election_results
    assert result[0] == topic
    assert sorted((p[0], p[1]) for p in result[1]) == [
        (0, ElectionNotNeededError.errno),
        (1, ElectionNotNeededError.errno),
    ]
    by_topics = admin.elect_leaders(0, [topic])  # every partition of the topics named
    assert len(by_topics.replica_election_results[0].partition_result) == 2

    tp = TopicPartition(topic, 0)
    assert admin.alter_partition_reassignments({tp: [node]}) == {tp: None}
    listed = admin.list_partition_reassignments([tp])
    assert all(
        set(v) == {"replicas", "adding_replicas", "removing_replicas"} for v in listed.values()
    )
    assert isinstance(admin.list_partition_reassignments(), dict)

    log_dirs = admin.describe_log_dirs()
    assert [b["broker"] for b in log_dirs] == [node]
    path = log_dirs[0]["log_dirs"][0]["log_dir"]
    assert log_dirs[0]["log_dirs"][0]["error_code"] == 0
    here = TopicPartitionReplica(topic, 0, node)
    assert admin.alter_replica_log_dirs({here: path}) == {here: NoError}
    as_tuple = admin.alter_replica_log_dirs({(topic, 1, node): "/no/such/dir"})
    assert as_tuple[TopicPartitionReplica(topic, 1, node)] is not NoError


# -- the rest of kafka-python 3's calls ------------------------------------------------
def test_group_offsets_reset_and_deleted(admin: KafkaAdminClient, kafka_broker: LocalKafka) -> None:
    topic, group = made(admin, name("ro"), 2), name("reset")
    p0, p1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    produce(kafka_broker.bootstrap, topic, 0, 5)
    admin.delete_records({p0: 2})
    reset = admin.reset_group_offsets(
        group,
        {p0: OffsetSpec.EARLIEST, p1: 7},  # 7 is past the end of p1 (empty): clamped
    )
    assert reset == {p0: {"error": NoError, "offset": 2}, p1: {"error": NoError, "offset": 0}}
    again = admin.reset_group_offsets(group, {p0: OffsetSpec.LATEST, p1: -1})
    assert again[p0]["offset"] == 5 and again[p1]["offset"] == 0
    assert admin.list_group_offsets({group: [p0]})[group][p0].offset == 5
    with pytest.raises(TypeError, match="Unsupported reset target"):
        admin.reset_group_offsets(group, {p0: "earliest"})
    assert admin.delete_group_offsets(group, [p0]) == {p0: NoError}
    left = admin.list_group_offsets(group)[group]
    assert list(left) == [p1]


def test_features_scram_and_transactions(admin: KafkaAdminClient, kafka_broker: LocalKafka) -> None:
    features = admin.describe_features()
    version = features["metadata.version"]
    assert version["finalized"][1] >= 1 and version["supported"][1] >= version["finalized"][1]
    level = version["finalized"][1]
    assert admin.update_features({"metadata.version": level}, validate_only=True) == {
        "metadata.version": "OK"
    }
    with pytest.raises(ValueError, match="send_request_to_controller"):
        admin.describe_features(send_request_to_controller=True)

    user = name("user")
    assert admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion(user, "SCRAM-SHA-256", "secret", iterations=8192)]
    ) == {user: None}

    def described() -> bool:
        return user in admin.describe_user_scram_credentials()

    eventually(described, "the SCRAM user")
    [info] = admin.describe_user_scram_credentials([user])[user]["credential_infos"]
    assert info == {"mechanism": ScramMechanism.SCRAM_SHA_256, "iterations": 8192}
    done = admin.alter_user_scram_credentials(
        [UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256)]
    )
    assert done == {user: None}

    topic = made(admin, name("tx"))
    tp = TopicPartition(topic, 0)
    with KafkaProducer(kafka_broker.bootstrap, enable_idempotence=True) as producer:
        producer.send(topic, b"x", partition=0)
        producer.flush(30)
    [state] = admin.describe_producers([tp])[tp].active_producers
    assert state.producer_id >= 0 and state.last_sequence == 0
    listed = admin.list_transactions()
    assert set(listed) == {kafka_broker.nodes[0].node_id}
    assert admin.describe_transactions([]) == {}

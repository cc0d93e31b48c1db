"""Topic and cluster commands against the scripted cluster."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kafkacore.admin import ConfigSource, NewPartitions, NewTopic
from kafkacore.admin._meta import metadata_builder
from kafkacore.admin.acl import AclOperation
from kafkacore.errors import KafkaTimeoutError, NoCommonVersionError
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ApiKey, ErrorCode
from kafkacore.protocol.error_codes import (
    InvalidPartitionsError,
    LeaderNotAvailableError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from kafkacore.protocol.messages import create_partitions_response as cp
from kafkacore.protocol.messages import create_topics_response as ct
from kafkacore.protocol.messages import delete_topics_response as dt
from tests.admin.fakeadmin import Harness
from tests.client.fakebroker import FakeBroker

# ------------------------------------------------------------------ create


def test_create_topics_reports_each_topic_on_its_own() -> None:
    h = Harness(2)
    h.world.add_topic("old")
    op = h.core.create_topics(
        [
            NewTopic("new", 3, 2, configs={"retention.ms": "1000"}),
            NewTopic("placed", replica_assignments={0: [0, 1], 1: [1, 0]}),
            NewTopic("old"),
        ],
        now=h.now,
    )
    results = h.result(op)
    new = results["new"].result()
    assert (new.num_partitions, new.replication_factor) == (3, 2)
    assert new.topic_id == h.world.ids["new"]
    assert new.configs is not None
    assert new.configs["retention.ms"].value == "1000"
    assert new.configs["retention.ms"].source is ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert results["placed"].result().num_partitions == 2
    error = results["old"].error
    assert isinstance(error, TopicAlreadyExistsError)
    assert str(error) == "TOPIC_ALREADY_EXISTS: topic 'old' (broker 0): Topic 'old' already exists."
    request = h.world.requests(ApiKey.CREATE_TOPICS)[0]
    placed = request.topics[1]
    assert [(a.partition_index, a.broker_ids) for a in placed.assignments] == [
        (0, [0, 1]),
        (1, [1, 0]),
    ]
    assert (placed.num_partitions, placed.replication_factor) == (-1, -1)
    assert request.topics[0].configs[0].name == "retention.ms"
    assert 0 < request.timeout_ms <= 30000 and not request.validate_only


def test_create_topics_goes_to_the_controller() -> None:
    h = Harness(3)
    h.world.cluster.controller_id = 2
    h.core.client.request_metadata_update(now=h.now)
    h.pump.run()
    h.result(h.core.create_topics([NewTopic("t")], now=h.now))
    node = next(s[0] for s in h.world.seen if s[1] == ApiKey.CREATE_TOPICS)
    assert node == 2


def test_create_topics_validate_only_creates_nothing() -> None:
    h = Harness()
    results = h.result(h.core.create_topics([NewTopic("t", 2)], validate_only=True, now=h.now))
    assert results["t"].ok
    assert "t" not in h.world.cluster.topics
    assert h.world.requests(ApiKey.CREATE_TOPICS)[0].validate_only


def test_create_topics_retries_a_throttled_topic_and_keeps_the_others() -> None:
    h = Harness()

    def throttle_b(b: FakeBroker, body: Any, v: int) -> Any:
        return m.CreateTopicsResponse(
            topics=[
                ct.CreatableTopicResult(name="a", num_partitions=1, replication_factor=1),
                ct.CreatableTopicResult(name="b", error_code=ErrorCode.THROTTLING_QUOTA_EXCEEDED),
            ]
        )

    h.world.script(ApiKey.CREATE_TOPICS, throttle_b)
    results = h.result(h.core.create_topics([NewTopic("a"), NewTopic("b")], now=h.now))
    assert results["a"].ok and results["b"].ok
    second = h.world.requests(ApiKey.CREATE_TOPICS)[1]
    assert [t.name for t in second.topics] == ["b"]


def test_created_topic_without_configs_or_counts() -> None:
    h = Harness()

    def no_details(b: FakeBroker, body: Any, v: int) -> Any:
        return m.CreateTopicsResponse(
            topics=[
                ct.CreatableTopicResult(
                    name="a",
                    topic_config_error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    num_partitions=1,
                    replication_factor=1,
                ),
                ct.CreatableTopicResult(name="b"),  # what a v4 broker says
            ]
        )

    h.world.script(ApiKey.CREATE_TOPICS, no_details)
    results = h.result(h.core.create_topics([NewTopic("a"), NewTopic("b")], now=h.now))
    assert results["a"].result().configs is None
    b = results["b"].result()
    assert (b.num_partitions, b.replication_factor, b.configs, b.topic_id) == (
        None,
        None,
        None,
        None,
    )


@pytest.mark.parametrize(
    ("arg", "error", "text"),
    [
        (NewTopic("t"), TypeError, "collection of NewTopic"),
        ("t", TypeError, "collection of NewTopic"),
        (["t"], TypeError, "expected NewTopic items, got 't'"),
        ([NewTopic("t"), NewTopic("t")], ValueError, "topic 't' is listed twice"),
        ([], ValueError, "name at least one NewTopic"),
    ],
)
def test_create_topics_refuses_bad_arguments(arg: Any, error: type, text: str) -> None:
    h = Harness()
    with pytest.raises(error, match=text):
        h.core.create_topics(arg, now=h.now)
    with pytest.raises(TypeError, match="validate_only: expected True or False"):
        h.core.create_topics([NewTopic("t")], validate_only="yes", now=h.now)  # type: ignore[arg-type]
    assert h.core.pending_operations == 0


# ------------------------------------------------------------------ delete


def test_delete_topics_by_name_and_by_id() -> None:
    h = Harness()
    for name in ("a", "b"):
        h.world.add_topic(name)
    b_id = h.world.ids["b"]
    results = h.result(h.core.delete_topics(["a", b_id, "nope"], now=h.now))
    assert results["a"].ok and results[b_id].ok
    assert isinstance(results["nope"].error, UnknownTopicOrPartitionError)
    assert set(h.world.cluster.topics) == set()
    states = h.world.requests(ApiKey.DELETE_TOPICS)[0].topics
    assert [(s.name, s.topic_id) for s in states] == [
        ("a", uuid.UUID(int=0)),
        (None, b_id),
        ("nope", uuid.UUID(int=0)),
    ]


def test_delete_topics_by_name_before_v6() -> None:
    h = Harness(versions={ApiKey.DELETE_TOPICS: (1, 5)})
    h.world.add_topic("a")
    assert h.result(h.core.delete_topics(["a"], now=h.now))["a"].ok
    assert h.world.requests(ApiKey.DELETE_TOPICS)[0].topic_names == ["a"]


def test_delete_topics_retries_not_controller() -> None:
    h = Harness()
    h.world.add_topic("a")

    def not_controller(b: FakeBroker, body: Any, v: int) -> Any:
        return m.DeleteTopicsResponse(
            responses=[dt.DeletableTopicResult(name="a", error_code=ErrorCode.NOT_CONTROLLER)]
        )

    h.world.script(ApiKey.DELETE_TOPICS, not_controller)
    assert h.result(h.core.delete_topics(["a"], now=h.now))["a"].ok
    assert len(h.world.requests(ApiKey.DELETE_TOPICS)) == 2


@pytest.mark.parametrize(
    ("arg", "error", "text"),
    [
        ("a", TypeError, "collection of topic names or ids"),
        (uuid.UUID(int=3), TypeError, "collection of topic names or ids"),
        (["a", "a"], ValueError, "'a' is listed twice"),
        ([], ValueError, "name at least one topic"),
        ([""], ValueError, "must not be empty"),
        ([uuid.UUID(int=0)], ValueError, "zero UUID"),
    ],
)
def test_delete_topics_refuses_bad_arguments(arg: Any, error: type, text: str) -> None:
    h = Harness()
    with pytest.raises(error, match=text):
        h.core.delete_topics(arg, now=h.now)


# -------------------------------------------------------------- partitions


def test_create_partitions_per_topic() -> None:
    h = Harness(2)
    h.world.add_topic("a", 1)
    h.world.add_topic("b", 3)
    op = h.core.create_partitions(
        {"a": NewPartitions(3, [[0], [1]]), "b": NewPartitions(2), "zz": NewPartitions(2)},
        now=h.now,
    )
    results = h.result(op)
    assert results["a"].ok and h.world.cluster.topics["a"].partitions == 3
    assert isinstance(results["b"].error, InvalidPartitionsError)
    assert "Topic already has 3 partitions." in str(results["b"].error)
    assert isinstance(results["zz"].error, UnknownTopicOrPartitionError)
    topics = h.world.requests(ApiKey.CREATE_PARTITIONS)[0].topics
    assert [a.broker_ids for a in topics[0].assignments] == [[0], [1]]
    assert topics[1].assignments is None


def test_create_partitions_validate_only_and_retry() -> None:
    h = Harness()
    h.world.add_topic("a", 1)

    def not_controller(b: FakeBroker, body: Any, v: int) -> Any:
        return m.CreatePartitionsResponse(
            results=[cp.CreatePartitionsTopicResult(name="a", error_code=ErrorCode.NOT_CONTROLLER)]
        )

    h.world.script(ApiKey.CREATE_PARTITIONS, not_controller)
    op = h.core.create_partitions({"a": NewPartitions(2)}, validate_only=True, now=h.now)
    assert h.result(op)["a"].ok
    assert h.world.cluster.topics["a"].partitions == 1
    assert len(h.world.requests(ApiKey.CREATE_PARTITIONS)) == 2


@pytest.mark.parametrize(
    ("arg", "error", "text"),
    [
        ([("a", NewPartitions(2))], TypeError, "expected a mapping"),
        ({}, ValueError, "name at least one topic"),
        ({"a": 2}, TypeError, r"create_partitions\['a'\]: expected a NewPartitions"),
        ({"": NewPartitions(2)}, ValueError, "topic: must not be empty"),
    ],
)
def test_create_partitions_refuses_bad_arguments(arg: Any, error: type, text: str) -> None:
    h = Harness()
    with pytest.raises(error, match=text):
        h.core.create_partitions(arg, now=h.now)


# ------------------------------------------------------------ list/describe


def test_list_topics_hides_internal_topics_unless_asked() -> None:
    h = Harness()
    h.world.add_topic("a")
    h.world.add_topic("__consumer_offsets", 3)
    assert list(h.result(h.core.list_topics(now=h.now))) == ["a"]
    listing = h.result(h.core.list_topics(include_internal=True, now=h.now))
    assert list(listing) == ["__consumer_offsets", "a"]
    assert listing["__consumer_offsets"].is_internal
    assert listing["a"].topic_id == h.world.ids["a"]


def test_metadata_requests_fit_the_negotiated_version() -> None:
    every = metadata_builder(None, authorized=True)
    assert every(0).topics == [] and every(0).allow_auto_topic_creation  # v0: [] meant all
    assert every(1).topics is None and every(1).allow_auto_topic_creation
    assert every(4).allow_auto_topic_creation is False
    assert not every(7).include_topic_authorized_operations
    assert every(8).include_topic_authorized_operations
    assert [t.name for t in metadata_builder(["a"])(12).topics or ()] == ["a"]


def test_describe_topics_partitions_leaders_and_operations() -> None:
    h = Harness(2)
    h.world.add_topic("a", 2, {0: 0, 1: 1})
    op = h.core.describe_topics(["a", "zz"], include_authorized_operations=True, now=h.now)
    results = h.result(op)
    a = results["a"].result()
    assert [(p.partition, p.leader, p.replicas, p.isr) for p in a.partitions] == [
        (0, 0, (0,), (0,)),
        (1, 1, (1,), (1,)),
    ]
    assert a.partitions[0].leader_epoch == 0 and a.partitions[0].offline_replicas == ()
    assert a.authorized_operations == {AclOperation.READ, AclOperation.DESCRIBE}
    assert isinstance(results["zz"].error, UnknownTopicOrPartitionError)
    body = h.world.requests(ApiKey.METADATA)[-1]
    assert body.include_topic_authorized_operations and not body.allow_auto_topic_creation


def test_describe_topics_waits_for_leaders_of_a_new_topic() -> None:
    h = Harness(api_timeout_ms=1000)
    h.world.add_topic("a")
    h.world.cluster.topics["a"].error_code = ErrorCode.LEADER_NOT_AVAILABLE
    op = h.core.describe_topics(["a"], now=h.now)
    h.pump.run(until=lambda: len(h.world.requests(ApiKey.METADATA)) >= 3)
    h.world.cluster.topics["a"].error_code = 0
    assert h.result(op)["a"].ok
    h.world.cluster.topics["a"].error_code = ErrorCode.LEADER_NOT_AVAILABLE
    op = h.core.describe_topics(["a"], now=h.now)
    h.run(op)  # the only topic timed out: the whole operation did
    assert isinstance(op.error, KafkaTimeoutError)
    assert "describe_topics: not done within 1000 ms" in str(op.error)
    assert isinstance(op.error.__cause__, LeaderNotAvailableError)


def test_describe_topics_refuses_bad_arguments() -> None:
    h = Harness()
    with pytest.raises(TypeError, match="describe_topics: topics: expected a collection of names"):
        h.core.describe_topics("a", now=h.now)
    with pytest.raises(TypeError, match="include_authorized_operations: expected True or False"):
        h.core.describe_topics(["a"], include_authorized_operations=1, now=h.now)  # type: ignore[arg-type]


# ------------------------------------------------------------------ cluster


def test_describe_cluster_with_operations_and_racks() -> None:
    h = Harness(2)
    desc = h.result(h.core.describe_cluster(include_authorized_operations=True, now=h.now))
    assert desc.cluster_id == "fake-cluster" and desc.controller_id == 0
    assert [(b.node_id, b.port, b.rack) for b in desc.brokers] == [(0, 9092, "r1"), (1, 9093, None)]
    assert desc.authorized_operations == {AclOperation.ALTER, AclOperation.DESCRIBE}


def test_describe_cluster_fenced_brokers_need_v2() -> None:
    h = Harness()
    assert h.result(h.core.describe_cluster(include_fenced_brokers=True, now=h.now)).brokers
    assert h.world.requests(ApiKey.DESCRIBE_CLUSTER)[0].include_fenced_brokers
    h = Harness(versions={ApiKey.DESCRIBE_CLUSTER: (0, 1)})
    op = h.core.describe_cluster(include_fenced_brokers=True, now=h.now)
    h.run(op)
    assert isinstance(op.error, NoCommonVersionError)
    assert "include_fenced_brokers needs DescribeCluster v2+; the broker offers v1" in str(op.error)


def test_describe_cluster_falls_back_to_metadata_on_old_brokers() -> None:
    h = Harness(2, versions={ApiKey.DESCRIBE_CLUSTER: None})
    desc = h.result(h.core.describe_cluster(now=h.now))
    assert desc.cluster_id == "fake-cluster" and desc.controller_id == 0
    assert [b.node_id for b in desc.brokers] == [0, 1]
    assert desc.authorized_operations is None
    assert h.world.requests(ApiKey.DESCRIBE_CLUSTER) == []


def test_describe_cluster_error_code_is_retried_or_reported() -> None:
    h = Harness()

    def refuse(code: int) -> Any:
        return lambda b, body, v: m.DescribeClusterResponse(error_code=code, error_message="no")

    h.world.script(ApiKey.DESCRIBE_CLUSTER, refuse(ErrorCode.REQUEST_TIMED_OUT))
    assert h.result(h.core.describe_cluster(now=h.now)).brokers
    h.world.script(ApiKey.DESCRIBE_CLUSTER, refuse(ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
    op = h.core.describe_cluster(now=h.now)
    h.run(op)
    assert str(op.error) == "CLUSTER_AUTHORIZATION_FAILED: DescribeCluster (broker 0): no"


def test_describe_cluster_without_a_controller() -> None:
    for versions in ({}, {ApiKey.DESCRIBE_CLUSTER: None}):
        h = Harness(versions=versions)  # type: ignore[arg-type]
        h.world.cluster.controller_id = -1
        assert h.result(h.core.describe_cluster(now=h.now)).controller_id is None

"""The metadata quorum, topics page by page, config-resource listings, replica
log-dir moves and coordinator lookups, against the scripted cluster (issue 21:
kafka-python's ``describe_metadata_quorum``, ``describe_topic_partitions``,
``list_config_resources``, ``alter_replica_log_dirs``, aiokafka's
``find_coordinator`` need these in kafkacore's own admin first)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kafkacore.admin import (
    ConfigResource,
    ConfigResourceType,
    QuorumEndpoint,
    TopicPartitionReplica,
    TopicPartitionsCursor,
)
from kafkacore.errors import NoCommonVersionError, RemoteProtocolError
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ApiKey, CoordinatorType, ErrorCode
from kafkacore.protocol.error_codes import (
    ClusterAuthorizationFailedError,
    CoordinatorNotAvailableError,
    LogDirNotFoundError,
    UnknownTopicOrPartitionError,
)
from kafkacore.protocol.messages import describe_quorum_response as dq
from kafkacore.protocol.messages import find_coordinator_response as fc
from tests.admin.fakeadmin import Harness
from tests.client.fakebroker import DEFAULT_HANDLERS, FakeBroker


# ------------------------------------------------------------------ quorum
def test_describe_metadata_quorum_reads_the_leader_voters_and_endpoints() -> None:
    h = Harness(3)
    q = h.result(h.core.describe_metadata_quorum(now=h.now))
    assert (q.leader_id, q.leader_epoch, q.high_watermark) == (0, 7, 500)
    assert [v.replica_id for v in q.voters] == [0]
    assert [o.replica_id for o in q.observers] == [1, 2]
    leader = q.voters[0]
    assert leader.last_fetch_timestamp is None  # -1 on the wire: never fetched
    assert leader.directory_id == uuid.UUID(int=100)
    assert q.observers[0].last_fetch_timestamp == h.world.clock_ms
    assert q.nodes == {0: (QuorumEndpoint(listener="CONTROLLER", host="ctl", port=9093),)}
    body = h.world.requests(ApiKey.DESCRIBE_QUORUM)[0]
    assert [(t.topic_name, [p.partition_index for p in t.partitions]) for t in body.topics] == [
        ("__cluster_metadata", [0])
    ]


def test_describe_metadata_quorum_before_v2_has_no_directory_ids() -> None:
    h = Harness(1, versions={ApiKey.DESCRIBE_QUORUM: (0, 1)})
    q = h.result(h.core.describe_metadata_quorum(now=h.now))
    assert q.voters[0].directory_id is None and q.nodes == {}
    assert q.leader_id == 0


def test_describe_metadata_quorum_retries_a_retriable_error_then_fails_a_final_one() -> None:
    h = Harness(1)

    def moved(b: FakeBroker, body: Any, v: int) -> Any:
        part = dq.PartitionData(error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return m.DescribeQuorumResponse(
            topics=[dq.TopicData(topic_name="__cluster_metadata", partitions=[part])]
        )

    h.world.script(ApiKey.DESCRIBE_QUORUM, moved)
    assert h.result(h.core.describe_metadata_quorum(now=h.now)).leader_id == 0
    assert len(h.world.requests(ApiKey.DESCRIBE_QUORUM)) == 2

    refused = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    h.world.script(
        ApiKey.DESCRIBE_QUORUM, lambda b, body, v: m.DescribeQuorumResponse(error_code=refused)
    )
    op = h.run(h.core.describe_metadata_quorum(now=h.now))
    assert isinstance(op.error, ClusterAuthorizationFailedError)
    assert len(h.world.requests(ApiKey.DESCRIBE_QUORUM)) == 3


def test_describe_metadata_quorum_without_the_partition_is_a_protocol_error() -> None:
    h = Harness(1)
    h.world.script(ApiKey.DESCRIBE_QUORUM, lambda b, body, v: m.DescribeQuorumResponse())
    op = h.run(h.core.describe_metadata_quorum(now=h.now))
    assert isinstance(op.error, RemoteProtocolError)
    assert "__cluster_metadata-0" in str(op.error)


def test_describe_metadata_quorum_on_a_broker_without_the_api() -> None:
    h = Harness(1, versions={ApiKey.DESCRIBE_QUORUM: None})
    op = h.run(h.core.describe_metadata_quorum(now=h.now))
    assert isinstance(op.error, NoCommonVersionError)


# ------------------------------------------------------- topics page by page
def test_describe_topic_partitions_pages_through_with_the_cursor() -> None:
    h = Harness(2)
    h.world.add_topic("a", 3, {1: 1})
    h.world.add_topic("b", 1)
    page = h.result(h.core.describe_topic_partitions(["a", "b"], partition_limit=2, now=h.now))
    assert list(page.topics) == ["a"]
    a = page.topics["a"].result()
    assert [p.partition for p in a.partitions] == [0, 1]
    assert a.partitions[1].leader == 1 and a.topic_id == h.world.ids["a"]
    assert a.partitions[0].eligible_leader_replicas == (0,)
    assert a.partitions[1].eligible_leader_replicas is None
    assert page.next_cursor == TopicPartitionsCursor("a", 2)

    rest = h.result(
        h.core.describe_topic_partitions(["a", "b"], cursor=page.next_cursor, now=h.now)
    )
    assert list(rest.topics) == ["a", "b"]
    assert [p.partition for p in rest.topics["a"].result().partitions] == [2]
    assert rest.next_cursor is None
    body = h.world.requests(ApiKey.DESCRIBE_TOPIC_PARTITIONS)[1]
    assert (body.cursor.topic_name, body.cursor.partition_index) == ("a", 2)
    assert body.response_partition_limit == 2000


def test_describe_topic_partitions_reports_an_unknown_topic_on_its_own() -> None:
    h = Harness(1)
    h.world.add_topic("a", 1)
    page = h.result(h.core.describe_topic_partitions(["nope", "a"], now=h.now))
    assert isinstance(page.topics["nope"].error, UnknownTopicOrPartitionError)
    assert page.topics["a"].ok


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"topics": ["a"], "partition_limit": 0}, ValueError),
        ({"topics": ["a"], "cursor": ("a", 1)}, TypeError),
        ({"topics": []}, ValueError),
    ],
)
def test_describe_topic_partitions_checks_its_arguments(
    kwargs: dict[str, Any], error: type[Exception]
) -> None:
    h = Harness(1)
    with pytest.raises(error):
        h.core.describe_topic_partitions(now=h.now, **kwargs)
    with pytest.raises(ValueError, match="partition"):
        TopicPartitionsCursor("a", -1)


# ------------------------------------------------------ config resources
def test_list_config_resources_every_type_or_some() -> None:
    h = Harness(2)
    h.world.add_topic("a", 1)
    h.world.client_metrics.append("sub-1")
    everything = h.result(h.core.list_config_resources(now=h.now))
    assert everything == (
        ConfigResource(ConfigResourceType.TOPIC, "a"),
        ConfigResource(ConfigResourceType.BROKER, "0"),
        ConfigResource(ConfigResourceType.BROKER, "1"),
        ConfigResource(ConfigResourceType.CLIENT_METRICS, "sub-1"),
    )
    assert h.world.requests(ApiKey.LIST_CONFIG_RESOURCES)[0].resource_types == []
    brokers = h.result(h.core.list_config_resources([ConfigResourceType.BROKER], now=h.now))
    assert [r.name for r in brokers] == ["0", "1"]
    assert h.world.requests(ApiKey.LIST_CONFIG_RESOURCES)[1].resource_types == [4]


def test_list_config_resources_on_a_v0_broker_lists_client_metrics_only() -> None:
    h = Harness(1, versions={ApiKey.LIST_CONFIG_RESOURCES: (0, 0)})
    h.world.client_metrics.append("sub-1")
    listed = h.result(h.core.list_config_resources(now=h.now))
    assert listed == (ConfigResource(ConfigResourceType.CLIENT_METRICS, "sub-1"),)
    op = h.run(h.core.list_config_resources([ConfigResourceType.TOPIC], now=h.now))
    assert isinstance(op.error, NoCommonVersionError)
    assert "v1" in str(op.error)


def test_list_config_resources_checks_its_types() -> None:
    h = Harness(1)
    with pytest.raises(TypeError):
        h.core.list_config_resources(["TOPIC"], now=h.now)
    with pytest.raises(TypeError):
        h.core.list_config_resources(ConfigResourceType.TOPIC, now=h.now)


# ------------------------------------------------------ replica log dirs
def test_alter_replica_log_dirs_goes_to_each_replicas_broker() -> None:
    h = Harness(2)
    h.world.add_topic("a", 2)
    moves = {
        TopicPartitionReplica("a", 0, 0): "/data/0",
        TopicPartitionReplica("a", 1, 1): "/data/1",
        TopicPartitionReplica("a", 0, 1): "/elsewhere",
        TopicPartitionReplica("zz", 0, 0): "/data/0",
    }
    results = h.result(h.core.alter_replica_log_dirs(moves, now=h.now))
    assert list(results) == list(moves)
    assert results[TopicPartitionReplica("a", 0, 0)].ok
    assert results[TopicPartitionReplica("a", 1, 1)].ok
    assert isinstance(results[TopicPartitionReplica("a", 0, 1)].error, LogDirNotFoundError)
    assert isinstance(
        results[TopicPartitionReplica("zz", 0, 0)].error, UnknownTopicOrPartitionError
    )
    assert sorted(h.world.moved) == [
        (0, "a", 0, "/data/0"),
        (0, "zz", 0, "/data/0"),
        (1, "a", 0, "/elsewhere"),
        (1, "a", 1, "/data/1"),
    ]


def test_alter_replica_log_dirs_takes_plain_tuples_and_checks_them() -> None:
    h = Harness(1)
    h.world.add_topic("a", 1)
    results = h.result(h.core.alter_replica_log_dirs({("a", 0, 0): "/data/0"}, now=h.now))  # type: ignore[dict-item]
    assert list(results) == [TopicPartitionReplica("a", 0, 0)]
    with pytest.raises(TypeError):
        h.core.alter_replica_log_dirs({("a", 0): "/data/0"}, now=h.now)  # type: ignore[dict-item]
    with pytest.raises(ValueError):
        h.core.alter_replica_log_dirs({}, now=h.now)
    with pytest.raises(ValueError):
        h.core.alter_replica_log_dirs({TopicPartitionReplica("a", 0, 0): ""}, now=h.now)


# ------------------------------------------------------------ coordinators
def test_find_coordinator_of_a_group_and_a_transactional_id() -> None:
    h = Harness(3)
    h.world.coordinator("g", 2)
    h.world.cluster.coordinators[(1, "txn")] = 1
    assert h.result(h.core.find_coordinator("g", now=h.now)) == 2
    found = h.core.find_coordinator("txn", coordinator_type=CoordinatorType.TRANSACTION, now=h.now)
    assert h.result(found) == 1


@pytest.mark.parametrize("version", [3, 4])
def test_find_coordinator_waits_out_a_coordinator_not_available(version: int) -> None:
    h = Harness(2, versions={ApiKey.FIND_COORDINATOR: (0, version)})
    h.world.coordinator("g", 1)
    asked: list[int] = []
    busy = ErrorCode.COORDINATOR_NOT_AVAILABLE
    for fake in h.world.brokers.values():
        real = DEFAULT_HANDLERS[ApiKey.FIND_COORDINATOR]

        def answer(
            broker: FakeBroker, body: Any, v: int, session: dict[str, Any], real: Any = real
        ) -> Any:
            asked.append(v)
            if len(asked) > 1:
                return real(broker, body, v, session)
            if v >= 4:
                return m.FindCoordinatorResponse(
                    coordinators=[fc.Coordinator(key="g", error_code=busy)]
                )
            return m.FindCoordinatorResponse(error_code=busy)

        fake.handlers[ApiKey.FIND_COORDINATOR] = answer
    assert h.result(h.core.find_coordinator("g", now=h.now)) == 1
    assert asked == [version, version]


def test_find_coordinator_fails_a_final_error() -> None:
    h = Harness(1, api_timeout_ms=2000)
    for fake in h.world.brokers.values():
        fake.handlers[ApiKey.FIND_COORDINATOR] = lambda b, body, v, s: m.FindCoordinatorResponse(
            coordinators=[fc.Coordinator(key="g", error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)]
        )
    op = h.run(h.core.find_coordinator("g", now=h.now))
    assert getattr(op.error, "code", None) == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert not isinstance(op.error, CoordinatorNotAvailableError)
    with pytest.raises(TypeError):
        h.core.find_coordinator("g", coordinator_type=1, now=h.now)  # type: ignore[arg-type]

"""Replica commands (leader elections, reassignments, log dirs) and the legacy
alter_configs, against the scripted cluster."""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.admin import (
    ConfigResource,
    ConfigResourceType,
    ElectionType,
    LogDirDescription,
    PartitionReassignment,
    ReplicaInfo,
)
from kafkacore.client.metadata import TopicPartition as TP
from kafkacore.errors import NoCommonVersionError
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ApiKey, ErrorCode
from kafkacore.protocol.error_codes import (
    ClusterAuthorizationFailedError,
    ElectionNotNeededError,
    KafkaStorageError,
    NoReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)
from kafkacore.protocol.messages import alter_partition_reassignments_response as apr
from tests.admin.fakeadmin import Harness
from tests.client.fakebroker import FakeBroker


def two_topics(n: int = 2, **kwargs: Any) -> Harness:
    h = Harness(n, **kwargs)
    h.world.add_topic("a", 2, {0: 0, 1: min(1, n - 1)})
    h.world.add_topic("b", 1)
    return h


# ---------------------------------------------------------------- elections


def test_elect_leaders_of_chosen_partitions() -> None:
    h = two_topics()
    h.world.unbalanced = {("a", 1)}
    op = h.core.elect_leaders(
        ElectionType.PREFERRED, [TP("a", 0), TP("a", 1), TP("zz", 0)], now=h.now
    )
    results = h.result(op)
    assert results[TP("a", 1)].ok
    assert isinstance(results[TP("a", 0)].error, ElectionNotNeededError)
    assert isinstance(results[TP("zz", 0)].error, UnknownTopicOrPartitionError)
    body = h.world.requests(ApiKey.ELECT_LEADERS)[0]
    assert body.election_type == ElectionType.PREFERRED and 0 < body.timeout_ms <= 30000


def test_elect_leaders_everywhere_reports_what_the_controller_elected() -> None:
    h = two_topics()
    h.world.unbalanced = {("a", 1), ("b", 0)}
    results = h.result(h.core.elect_leaders(ElectionType.UNCLEAN, now=h.now))
    assert list(results) == [TP("a", 1), TP("b", 0)] and all(r.ok for r in results.values())
    body = h.world.requests(ApiKey.ELECT_LEADERS)[0]
    assert body.topic_partitions is None and body.election_type == ElectionType.UNCLEAN


def test_elect_leaders_errors_and_versions() -> None:
    h = two_topics()

    def refuse(code: int) -> Any:
        return lambda b, body, v: m.ElectLeadersResponse(error_code=code)

    h.world.script(
        ApiKey.ELECT_LEADERS,
        refuse(ErrorCode.NOT_CONTROLLER),
        refuse(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    )
    op = h.core.elect_leaders(now=h.now)
    h.run(op)  # NOT_CONTROLLER is retried; the refusal then fails it
    assert isinstance(op.error, ClusterAuthorizationFailedError)
    assert len(h.world.requests(ApiKey.ELECT_LEADERS)) == 2
    old = two_topics(versions={ApiKey.ELECT_LEADERS: (0, 0)})
    op = old.core.elect_leaders(ElectionType.UNCLEAN, [TP("a", 0)], now=old.now)
    old.run(op)
    assert isinstance(
        op.error, NoCommonVersionError
    ) and "unclean elections need ElectLeaders v1+" in str(op.error)
    old.world.unbalanced = {("a", 0)}
    assert old.result(old.core.elect_leaders(ElectionType.PREFERRED, [TP("a", 0)], now=old.now))[
        TP("a", 0)
    ].ok
    with pytest.raises(TypeError, match="expected an ElectionType, got 0"):
        h.core.elect_leaders(0, now=h.now)  # type: ignore[arg-type]


# ------------------------------------------------------------ reassignments


def test_reassign_list_and_cancel_partitions() -> None:
    h = two_topics(3)
    op = h.core.alter_partition_reassignments({TP("a", 0): [1, 2], TP("zz", 0): [1]}, now=h.now)
    results = h.result(op)
    assert results[TP("a", 0)].ok
    assert isinstance(results[TP("zz", 0)].error, UnknownTopicOrPartitionError)
    body = h.world.requests(ApiKey.ALTER_PARTITION_REASSIGNMENTS)[0]
    assert [p.replicas for t in body.topics for p in t.partitions] == [[1, 2], [1]]
    listed = h.result(h.core.list_partition_reassignments(now=h.now))
    assert listed == {
        TP("a", 0): PartitionReassignment(
            replicas=(0, 1, 2), adding_replicas=(1, 2), removing_replicas=(0,)
        )
    }
    assert h.result(h.core.list_partition_reassignments([TP("b", 0)], now=h.now)) == {}
    cancelled = h.result(
        h.core.alter_partition_reassignments({TP("a", 0): None, TP("b", 0): None}, now=h.now)
    )
    assert cancelled[TP("a", 0)].ok
    assert isinstance(cancelled[TP("b", 0)].error, NoReassignmentInProgressError)


def test_reassignment_errors() -> None:
    h = two_topics()

    def moved(b: FakeBroker, body: Any, v: int) -> Any:
        parts = [
            apr.ReassignablePartitionResponse(
                partition_index=0, error_code=ErrorCode.NOT_CONTROLLER
            )
        ]
        return m.AlterPartitionReassignmentsResponse(
            responses=[
                apr.ReassignableTopicResponse(name="a", partitions=parts),
                apr.ReassignableTopicResponse(name="x", partitions=parts),
            ]
        )

    h.world.script(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        moved,
        lambda b, body, v: m.AlterPartitionReassignmentsResponse(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message="no"
        ),
    )
    op = h.core.alter_partition_reassignments({TP("a", 0): [1]}, now=h.now)
    h.run(op)
    assert str(op.error) == (
        "CLUSTER_AUTHORIZATION_FAILED: AlterPartitionReassignments (broker 0): no"
    )
    h.world.script(
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        lambda b, body, v: m.ListPartitionReassignmentsResponse(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        ),
    )
    listing = h.core.list_partition_reassignments(now=h.now)
    h.run(listing)
    assert isinstance(listing.error, ClusterAuthorizationFailedError)


@pytest.mark.parametrize(
    ("arg", "error", "text"),
    [
        ([TP("a", 0)], TypeError, "reassignments: expected a mapping"),
        ({}, ValueError, "name at least one partition"),
        ({TP("a", 0): []}, TypeError, "non-empty sequence of broker ids or None"),
        ({TP("a", 0): [1, 1]}, ValueError, "listed twice"),
        ({("a",): [1]}, TypeError, "TopicPartition or"),
    ],
)
def test_reassignments_refuse_bad_arguments(arg: Any, error: type, text: str) -> None:
    h = Harness()
    with pytest.raises(error, match=text):
        h.core.alter_partition_reassignments(arg, now=h.now)


# ----------------------------------------------------------------- log dirs


def test_describe_log_dirs_of_every_broker() -> None:
    h = two_topics()
    results = h.result(h.core.describe_log_dirs(now=h.now))
    assert list(results) == [0, 1]
    dirs = results[0].result()
    good = dirs["/data/0"]
    assert isinstance(good, LogDirDescription) and good.error is None
    assert good.replicas == {
        TP("a", 0): ReplicaInfo(size=100, offset_lag=0, is_future=False),
        TP("b", 0): ReplicaInfo(size=100, offset_lag=0, is_future=False),
    }
    assert (good.total_bytes, good.usable_bytes) == (1000, 400)
    assert isinstance(dirs["/broken/0"].error, KafkaStorageError)
    assert results[1].result()["/data/1"].replicas == {
        TP("a", 1): ReplicaInfo(size=200, offset_lag=0, is_future=False)
    }


def test_describe_log_dirs_of_chosen_brokers_and_errors() -> None:
    h = two_topics(2, versions={ApiKey.DESCRIBE_LOG_DIRS: (1, 3)})

    def refuse_on_1(b: FakeBroker, body: Any, v: int) -> Any:
        if b.node_id == 1:
            return m.DescribeLogDirsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return None

    h.world.script(ApiKey.DESCRIBE_LOG_DIRS, refuse_on_1, refuse_on_1)
    results = h.result(h.core.describe_log_dirs([0, 1], now=h.now))
    assert results[0].result()["/data/0"].total_bytes is None  # before v4
    assert str(results[1].error) == "CLUSTER_AUTHORIZATION_FAILED: DescribeLogDirs (broker 1)"
    with pytest.raises(TypeError, match="broker_ids: expected a collection of broker ids"):
        h.core.describe_log_dirs(1, now=h.now)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="name at least one broker"):
        h.core.describe_log_dirs([], now=h.now)
    with pytest.raises(ValueError, match="listed twice"):
        h.core.describe_log_dirs([1, 1], now=h.now)


def test_describe_log_dirs_without_metadata_fails() -> None:
    h = two_topics(1, api_timeout_ms=500)
    next(iter(h.pump.brokers.values())).hold = True
    op = h.core.describe_log_dirs(now=h.now)
    h.run(op)
    assert op.error is not None and "not done within 500 ms" in str(op.error)


# ------------------------------------------------------------ alter_configs


def test_alter_configs_replaces_the_whole_set() -> None:
    h = two_topics()
    h.world.configs[(2, "a")] = {"retention.ms": "5", "cleanup.policy": "compact"}
    topic, missing = (
        ConfigResource(ConfigResourceType.TOPIC, "a"),
        ConfigResource(ConfigResourceType.TOPIC, "zz"),
    )
    results = h.result(h.core.alter_configs({topic: {"retention.ms": "9"}, missing: {}}, now=h.now))
    assert results[topic].ok and isinstance(results[missing].error, UnknownTopicOrPartitionError)
    assert h.world.configs[(2, "a")] == {"retention.ms": "9"}
    checked = h.result(
        h.core.alter_configs({topic: {"retention.ms": "1"}}, validate_only=True, now=h.now)
    )
    assert checked[topic].ok and h.world.configs[(2, "a")] == {"retention.ms": "9"}


@pytest.mark.parametrize(
    ("arg", "error", "text"),
    [
        ([], TypeError, "configs: expected a mapping"),
        ({}, ValueError, "name at least one ConfigResource"),
        ({"a": {}}, TypeError, "expected ConfigResource keys"),
        ({ConfigResource(ConfigResourceType.TOPIC, "a"): {"x": 1}}, TypeError, "expected a str"),
        ({ConfigResource(ConfigResourceType.TOPIC, "a"): ["x"]}, TypeError, "expected a mapping"),
    ],
)
def test_alter_configs_refuses_bad_arguments(arg: Any, error: type, text: str) -> None:
    h = Harness()
    with pytest.raises(error, match=text):
        h.core.alter_configs(arg, now=h.now)

"""Group commands (consumer and share groups) against the scripted cluster."""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.admin import GroupState, GroupType
from kafkacore.admin.acl import AclOperation
from kafkacore.client.metadata import TopicPartition as TP
from kafkacore.errors import KafkaTimeoutError, NoCommonVersionError
from kafkacore.protocol import messages as m
from kafkacore.protocol.consumer_protocol import encode_assignment, encode_subscription
from kafkacore.protocol.enums import ApiKey, ErrorCode
from kafkacore.protocol.error_codes import (
    CoordinatorLoadInProgressError,
    GroupAuthorizationFailedError,
    GroupIdNotFoundError,
    NonEmptyGroupError,
)
from kafkacore.protocol.messages import consumer_group_describe_response as cgd
from kafkacore.protocol.messages import describe_groups_response as dgr
from kafkacore.protocol.messages import share_group_describe_response as sgd
from kafkacore.protocol.messages.consumer_protocol_assignment import (
    ConsumerProtocolAssignment,
)
from kafkacore.protocol.messages.consumer_protocol_assignment import (
    TopicPartition as AssignedTopic,
)
from kafkacore.protocol.messages.consumer_protocol_subscription import (
    ConsumerProtocolSubscription,
)
from tests.admin.fakeadmin import Group, Harness
from tests.client.fakebroker import FakeBroker


def world_with_groups(n: int = 3, **kwargs: Any) -> Harness:
    h = Harness(n, **kwargs)
    w = h.world
    w.groups["classic-a"] = Group("classic-a", state="Stable")
    w.groups["simple"] = Group("simple", state="Empty", protocol_type="")
    w.groups["kip848"] = Group("kip848", type="consumer", state="Reconciling")
    w.groups["shared"] = Group("shared", type="share", protocol_type="share", state="Stable")
    w.groups["connect"] = Group("connect", protocol_type="connect", state="Stable")
    w.coordinator("kip848", min(1, n - 1))
    w.coordinator("shared", n - 1)
    return h


# ------------------------------------------------------------------ listing


def test_list_groups_asks_every_broker() -> None:
    h = world_with_groups()
    listing = h.result(h.core.list_groups(now=h.now))
    assert [(g.group_id, g.coordinator) for g in listing.groups] == [
        ("classic-a", 0),
        ("connect", 0),
        ("kip848", 1),
        ("shared", 2),
        ("simple", 0),
    ]
    assert listing.errors == {}
    kip848 = next(g for g in listing.groups if g.group_id == "kip848")
    assert (kip848.state, kip848.type) == (GroupState.RECONCILING, GroupType.CONSUMER)
    asked = sorted(node for node, api, _, _ in h.world.seen if api == ApiKey.LIST_GROUPS)
    assert asked == [0, 1, 2]


def test_list_consumer_groups_keeps_classic_and_kip848_consumers() -> None:
    h = world_with_groups()
    listing = h.result(h.core.list_consumer_groups(now=h.now))
    assert [g.group_id for g in listing.groups] == ["classic-a", "kip848", "simple"]
    only = h.result(
        h.core.list_consumer_groups(types=["CONSUMER"], states=["reconciling"], now=h.now)
    )
    assert [g.group_id for g in only.groups] == ["kip848"]
    body = h.world.requests(ApiKey.LIST_GROUPS)[-1]
    assert (body.types_filter, body.states_filter) == (["consumer"], ["Reconciling"])


def test_list_consumer_groups_before_listgroups_v5_filters_by_protocol_type() -> None:
    h = world_with_groups(1, versions={ApiKey.LIST_GROUPS: (0, 3)})
    listing = h.result(h.core.list_consumer_groups(now=h.now))
    assert [(g.group_id, g.state, g.type) for g in listing.groups] == [
        ("classic-a", None, None),
        ("kip848", None, None),
        ("simple", None, None),
    ]
    op = h.core.list_consumer_groups(states=[GroupState.STABLE], now=h.now)
    listing = h.result(op)
    assert listing.groups == ()
    error = listing.errors[0]
    assert isinstance(error, NoCommonVersionError)
    assert (
        "list_consumer_groups: filtering by states needs ListGroups v4+; broker 0 offers v3"
        in str(error)
    )
    with pytest.raises(NoCommonVersionError):
        listing.all()


def test_list_share_groups() -> None:
    h = world_with_groups()
    listing = h.result(h.core.list_share_groups(states=["Stable"], now=h.now))
    assert [g.group_id for g in listing.groups] == ["shared"]
    assert h.world.requests(ApiKey.LIST_GROUPS)[-1].types_filter == ["share"]


def test_list_groups_retries_a_loading_broker_and_reports_a_failing_one() -> None:
    h = world_with_groups(2)

    def loading(b: FakeBroker, body: Any, v: int) -> Any:
        return (
            m.ListGroupsResponse(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
            if b.node_id == 0
            else None
        )

    h.world.script(ApiKey.LIST_GROUPS, loading, loading)
    listing = h.result(h.core.list_groups(now=h.now))
    assert {g.group_id for g in listing.groups} >= {"classic-a", "kip848"}
    assert len(h.world.requests(ApiKey.LIST_GROUPS)) == 3

    def refuse(b: FakeBroker, body: Any, v: int) -> Any:
        return (
            m.ListGroupsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
            if b.node_id == 1
            else None
        )

    h.world.script(ApiKey.LIST_GROUPS, refuse, refuse)
    listing = h.result(h.core.list_groups(now=h.now))
    assert list(listing.errors) == [1]
    assert str(listing.errors[1]) == "CLUSTER_AUTHORIZATION_FAILED: ListGroups (broker 1)"
    assert [g.group_id for g in listing.groups if g.coordinator == 1] == []


def test_list_groups_fails_when_no_broker_list_comes() -> None:
    h = world_with_groups(1, api_timeout_ms=1000)
    h.world.brokers[("127.0.0.1", 9092)].hold = True
    op = h.core.list_groups(now=h.now)
    h.run(op)
    assert isinstance(op.error, KafkaTimeoutError)


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"states": "Stable"}, TypeError, "states must be a collection of GroupState"),
        ({"states": ["Bogus"]}, ValueError, "unknown group state"),
        ({"types": "share"}, TypeError, "types must be a collection of GroupType"),
        ({"types": ["bogus"]}, ValueError, "unknown group type"),
    ],
)
def test_list_groups_refuses_bad_filters(kwargs: dict[str, Any], error: type, text: str) -> None:
    h = Harness()
    with pytest.raises(error, match=text):
        h.core.list_groups(now=h.now, **kwargs)


def test_list_consumer_groups_refuses_other_types() -> None:
    h = Harness()
    with pytest.raises(ValueError, match="types must be CLASSIC or CONSUMER"):
        h.core.list_consumer_groups(types=["share"], now=h.now)


# --------------------------------------------------------------- describing


def _classic_member(member_id: str, topics: list[str], assigned: dict[str, list[int]]) -> Any:
    return dgr.DescribedGroupMember(
        member_id=member_id,
        group_instance_id="static-1",
        client_id="client-1",
        client_host="/10.0.0.1",
        member_metadata=encode_subscription(ConsumerProtocolSubscription(topics=topics)),
        member_assignment=encode_assignment(
            ConsumerProtocolAssignment(
                assigned_partitions=[
                    AssignedTopic(topic=t, partitions=ps) for t, ps in assigned.items()
                ]
            )
        ),
    )


def _kip848_member() -> Any:
    assignment = cgd.Assignment(
        topic_partitions=[cgd.TopicPartitions(topic_name="t", partitions=[0, 1])]
    )
    target = cgd.Assignment(topic_partitions=[cgd.TopicPartitions(topic_name="t", partitions=[0])])
    return cgd.Member(
        member_id="m-848",
        instance_id=None,
        rack_id="rack-a",
        member_epoch=7,
        client_id="c",
        client_host="/h",
        subscribed_topic_names=["t"],
        subscribed_topic_regex=None,
        assignment=assignment,
        target_assignment=target,
    )


def test_describe_consumer_groups_classic_and_kip848() -> None:
    h = world_with_groups()
    h.world.groups["classic-a"].members = [_classic_member("m-1", ["t"], {"t": [0, 1]})]
    h.world.groups["kip848"].members = [_kip848_member()]
    op = h.core.describe_consumer_groups(["classic-a", "kip848", "simple", "nope"], now=h.now)
    results = h.result(op)
    classic = results["classic-a"].result()
    assert (classic.type, classic.state, classic.partition_assignor, classic.coordinator) == (
        GroupType.CLASSIC,
        GroupState.STABLE,
        "range",
        0,
    )
    member = classic.members[0]
    assert member.assignment == {TP("t", 0), TP("t", 1)}
    assert (member.subscribed_topics, member.group_instance_id, member.host) == (
        ("t",),
        "static-1",
        "/10.0.0.1",
    )
    assert (
        not classic.is_simple_consumer_group and results["simple"].result().is_simple_consumer_group
    )
    kip = results["kip848"].result()
    assert (kip.type, kip.state, kip.coordinator, kip.group_epoch, kip.target_assignment_epoch) == (
        GroupType.CONSUMER,
        GroupState.RECONCILING,
        1,
        5,
        5,
    )
    assert kip.partition_assignor == "uniform"
    m848 = kip.members[0]
    assert m848.assignment == {TP("t", 0), TP("t", 1)} and m848.target_assignment == {TP("t", 0)}
    assert (m848.member_epoch, m848.rack_id, m848.subscribed_topics) == (7, "rack-a", ("t",))
    error = results["nope"].error
    assert isinstance(error, GroupIdNotFoundError)
    assert str(error) == "GROUP_ID_NOT_FOUND: group 'nope' (broker 0): Group nope not found."


def test_describe_consumer_groups_with_authorized_operations() -> None:
    h = world_with_groups()
    op = h.core.describe_consumer_groups(["kip848"], include_authorized_operations=True, now=h.now)
    assert h.result(op)["kip848"].result().authorized_operations == frozenset(
        {AclOperation.DESCRIBE}
    )
    assert h.world.requests(ApiKey.CONSUMER_GROUP_DESCRIBE)[0].include_authorized_operations


def test_describe_consumer_groups_on_a_broker_before_kip848() -> None:
    h = world_with_groups(
        1, versions={ApiKey.CONSUMER_GROUP_DESCRIBE: None, ApiKey.DESCRIBE_GROUPS: (0, 5)}
    )
    results = h.result(h.core.describe_consumer_groups(["classic-a", "nope"], now=h.now))
    assert results["classic-a"].result().state is GroupState.STABLE
    # Before v6 a missing group comes back "Dead"; it is reported as not found.
    assert isinstance(results["nope"].error, GroupIdNotFoundError)
    assert h.world.requests(ApiKey.CONSUMER_GROUP_DESCRIBE) == []


def test_describe_consumer_groups_follows_a_moved_coordinator() -> None:
    h = world_with_groups(2)
    h.world.coordinator("classic-a", 0)
    assert h.result(h.core.describe_consumer_groups(["classic-a"], now=h.now))["classic-a"].ok
    h.world.coordinator("classic-a", 1)  # the group moved to broker 1
    results = h.result(h.core.describe_consumer_groups(["classic-a"], now=h.now))
    assert results["classic-a"].result().coordinator == 1


def test_a_member_whose_metadata_does_not_decode_is_listed_without_partitions() -> None:
    h = world_with_groups()
    h.world.groups["classic-a"].members = [
        dgr.DescribedGroupMember(
            member_id="m",
            client_id="c",
            client_host="h",
            member_metadata=b"\x00",
            member_assignment=b"\x00",
        )
    ]
    h.world.groups["connect"].members = [_classic_member("w", ["t"], {"t": [0]})]
    results = h.result(h.core.describe_consumer_groups(["classic-a", "connect"], now=h.now))
    member = results["classic-a"].result().members[0]
    assert (member.member_id, member.assignment, member.subscribed_topics) == (
        "m",
        frozenset(),
        None,
    )
    # Not a consumer group's protocol: its members' bytes are not read.
    assert results["connect"].result().members[0].assignment == frozenset()


def test_describe_errors_retry_or_settle() -> None:
    h = world_with_groups(1)

    def loading(b: FakeBroker, body: Any, v: int) -> Any:
        return m.ConsumerGroupDescribeResponse(
            groups=[
                cgd.DescribedGroup(
                    group_id="kip848", error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
                )
            ]
        )

    def denied(b: FakeBroker, body: Any, v: int) -> Any:
        return m.ConsumerGroupDescribeResponse(
            groups=[
                cgd.DescribedGroup(
                    group_id="kip848",
                    error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                    error_message="no",
                )
            ]
        )

    h.world.script(ApiKey.CONSUMER_GROUP_DESCRIBE, loading, denied)
    result = h.result(h.core.describe_consumer_groups(["kip848"], now=h.now))["kip848"]
    assert isinstance(result.error, GroupAuthorizationFailedError)
    assert len(h.world.requests(ApiKey.CONSUMER_GROUP_DESCRIBE)) == 2

    def classic_loading(b: FakeBroker, body: Any, v: int) -> Any:
        return m.DescribeGroupsResponse(
            groups=[
                dgr.DescribedGroup(
                    group_id="classic-a", error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
                ),
                dgr.DescribedGroup(group_id="other"),
            ]
        )

    h.world.script(ApiKey.DESCRIBE_GROUPS, classic_loading)
    assert h.result(h.core.describe_consumer_groups(["classic-a"], now=h.now))["classic-a"].ok


def test_a_coordinator_that_stays_busy_times_the_group_out() -> None:
    h = world_with_groups(1, api_timeout_ms=1500)

    def loading(b: FakeBroker, body: Any, v: int) -> Any:
        return m.ConsumerGroupDescribeResponse(
            groups=[
                cgd.DescribedGroup(group_id=g, error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
                for g in body.group_ids
            ]
        )

    h.world.script(ApiKey.CONSUMER_GROUP_DESCRIBE, *[loading] * 100)
    results = h.result(h.core.describe_consumer_groups(["kip848", "classic-a"], now=h.now))
    for item in results.values():
        assert isinstance(item.error, KafkaTimeoutError)
        assert isinstance(item.error.__cause__, CoordinatorLoadInProgressError)


def test_describe_share_groups() -> None:
    h = world_with_groups()
    assignment = sgd.Assignment(
        topic_partitions=[sgd.TopicPartitions(topic_name="q", partitions=[0, 2])]
    )
    h.world.groups["shared"].members = [
        sgd.Member(
            member_id="s-1",
            rack_id=None,
            member_epoch=4,
            client_id="c",
            client_host="/h",
            subscribed_topic_names=["q"],
            assignment=assignment,
        )
    ]
    results = h.result(h.core.describe_share_groups(["shared", "kip848"], now=h.now))
    shared = results["shared"].result()
    assert (shared.state, shared.group_epoch, shared.assignor, shared.coordinator) == (
        GroupState.STABLE,
        3,
        "simple",
        2,
    )
    assert shared.members[0].assignment == {TP("q", 0), TP("q", 2)}
    assert shared.members[0].subscribed_topics == ("q",) and shared.members[0].member_epoch == 4
    assert isinstance(results["kip848"].error, GroupIdNotFoundError)


# ----------------------------------------------------------------- deleting


def test_delete_consumer_and_share_groups() -> None:
    h = world_with_groups()
    h.world.groups["classic-a"].members = [_classic_member("m", ["t"], {})]
    results = h.result(h.core.delete_consumer_groups(["simple", "classic-a", "nope"], now=h.now))
    assert results["simple"].ok and "simple" not in h.world.groups
    assert isinstance(results["classic-a"].error, NonEmptyGroupError)
    assert isinstance(results["nope"].error, GroupIdNotFoundError)
    assert h.result(h.core.delete_share_groups(["shared"], now=h.now))["shared"].ok
    assert "shared" not in h.world.groups


@pytest.mark.parametrize(
    "command",
    [
        "describe_consumer_groups",
        "describe_share_groups",
        "delete_consumer_groups",
        "delete_share_groups",
    ],
)
def test_group_commands_refuse_bad_group_ids(command: str) -> None:
    h = Harness()
    with pytest.raises(TypeError, match=f"{command}: group_ids: expected a collection of names"):
        getattr(h.core, command)("g", now=h.now)
    with pytest.raises(ValueError, match="must not be empty"):
        getattr(h.core, command)([""], now=h.now)


def test_describe_retries_a_lost_request_and_ignores_other_groups() -> None:
    h = world_with_groups(1, request_timeout_ms=1000)
    h.result(h.core.describe_consumer_groups(["kip848"], now=h.now))  # connections up
    broker = next(iter(h.pump.brokers.values()))
    broker.hold = True
    op = h.core.describe_consumer_groups(["kip848"], now=h.now)
    h.pump.run(until=lambda: h.now >= 1.0 and h.core.client.in_flight_request_count() == 0)
    broker.hold = False
    h.pump.release()  # the reconnection's ApiVersions answer: the retry goes out
    assert h.result(op)["kip848"].result().state is GroupState.RECONCILING
    assert len(h.world.requests(ApiKey.CONSUMER_GROUP_DESCRIBE)) == 3

    def also_other(b: FakeBroker, body: Any, v: int) -> Any:
        return m.ConsumerGroupDescribeResponse(
            groups=[
                cgd.DescribedGroup(group_id="other"),
                cgd.DescribedGroup(group_id="kip848", group_state="Stable"),
            ]
        )

    h.world.script(ApiKey.CONSUMER_GROUP_DESCRIBE, also_other)
    result = h.result(h.core.describe_consumer_groups(["kip848"], now=h.now))
    assert list(result) == ["kip848"] and result["kip848"].result().state is GroupState.STABLE


def test_members_without_metadata_or_assignment() -> None:
    h = world_with_groups()
    h.world.groups["classic-a"].members = [
        dgr.DescribedGroupMember(member_id="m", client_id="c", client_host="h")
    ]
    member = (
        h.result(h.core.describe_consumer_groups(["classic-a"], now=h.now))["classic-a"]
        .result()
        .members[0]
    )
    assert (member.assignment, member.subscribed_topics) == (frozenset(), None)

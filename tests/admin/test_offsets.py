"""Group offset commands (consumer and share groups) against the scripted cluster."""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.admin import SharePartitionOffset
from kafkacore.admin._offsets import BY_NAME_MAX_VERSION, _fetch_builder
from kafkacore.client.metadata import TopicPartition as TP
from kafkacore.consumer import OffsetAndMetadata
from kafkacore.errors import NoCommonVersionError
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ApiKey, ErrorCode
from kafkacore.protocol.error_codes import (
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
    NonEmptyGroupError,
    UnknownMemberIdError,
    UnknownTopicOrPartitionError,
)
from kafkacore.protocol.messages import describe_share_group_offsets_response as dso
from kafkacore.protocol.messages import offset_commit_response as oc
from kafkacore.protocol.messages import offset_fetch_response as of
from tests.admin.fakeadmin import Group, Harness
from tests.client.fakebroker import FakeBroker


def with_offsets(n: int = 2, **kwargs: Any) -> Harness:
    h = Harness(n, **kwargs)
    h.world.add_topic("t", 3)
    h.world.groups["g"] = Group("g", offsets={TP("t", 0): 10, TP("t", 2): 30})
    h.world.coordinator("g", n - 1)
    return h


# ------------------------------------------------------------- consumer groups


def test_list_consumer_group_offsets_every_committed_partition() -> None:
    h = with_offsets()
    offsets = h.result(h.core.list_consumer_group_offsets("g", now=h.now))
    assert offsets == {
        TP("t", 0): OffsetAndMetadata(10, "m", 2),
        TP("t", 2): OffsetAndMetadata(30, "m", 2),
    }
    node, _, version, body = next(s for s in h.world.seen if s[1] == ApiKey.OFFSET_FETCH)
    assert (node, version) == (1, BY_NAME_MAX_VERSION)
    assert body.groups[0].group_id == "g" and body.groups[0].topics is None


def test_list_consumer_group_offsets_of_chosen_partitions() -> None:
    h = with_offsets()
    op = h.core.list_consumer_group_offsets(
        "g",
        [TP("t", 1), ("t", 2)],  # type: ignore[list-item]  # a plain pair is accepted too
        require_stable=True,
        now=h.now,
    )
    assert h.result(op) == {TP("t", 1): None, TP("t", 2): OffsetAndMetadata(30, "m", 2)}
    body = h.world.requests(ApiKey.OFFSET_FETCH)[0]
    assert body.require_stable
    assert [(t.name, t.partition_indexes) for t in body.groups[0].topics] == [("t", [1, 2])]


def test_list_consumer_group_offsets_before_v8() -> None:
    h = with_offsets(1, versions={ApiKey.OFFSET_FETCH: (1, 7)})
    offsets = h.result(h.core.list_consumer_group_offsets("g", [TP("t", 0)], now=h.now))
    assert offsets == {TP("t", 0): OffsetAndMetadata(10, "m", 2)}
    body = h.world.requests(ApiKey.OFFSET_FETCH)[0]
    assert body.group_id == "g" and body.topics[0].partition_indexes == [0]


def test_offset_fetch_requests_fit_the_version() -> None:
    every = _fetch_builder("k", "g", None, False)
    assert every(8).groups[0].topics is None
    assert every(2).topics is None and every(2).group_id == "g"
    with pytest.raises(
        NoCommonVersionError,
        match="k: all partitions needs OffsetFetch v2\\+; the coordinator offers v1",
    ):
        every(1)
    stable = _fetch_builder("k", "g", {"t": [0]}, True)
    assert stable(7).require_stable and stable(7).topics[0].name == "t"  # type: ignore[index]
    with pytest.raises(NoCommonVersionError, match="require_stable needs OffsetFetch v7\\+"):
        stable(6)


def test_list_consumer_group_offsets_waits_out_unstable_offsets_and_moves() -> None:
    h = with_offsets()

    def unstable(b: FakeBroker, body: Any, v: int) -> Any:
        part = of.OffsetFetchResponsePartitions(
            partition_index=0, committed_offset=-1, error_code=ErrorCode.UNSTABLE_OFFSET_COMMIT
        )
        group = of.OffsetFetchResponseGroup(
            group_id="g", topics=[of.OffsetFetchResponseTopics(name="t", partitions=[part])]
        )
        return m.OffsetFetchResponse(groups=[group])

    h.world.script(ApiKey.OFFSET_FETCH, unstable)
    assert h.result(h.core.list_consumer_group_offsets("g", now=h.now))[
        TP("t", 0)
    ] == OffsetAndMetadata(10, "m", 2)
    h.world.coordinator("g", 0)  # moved: broker 1 now answers NOT_COORDINATOR
    assert len(h.result(h.core.list_consumer_group_offsets("g", now=h.now))) == 2
    assert [n for n, api, _, _ in h.world.seen if api == ApiKey.OFFSET_FETCH][-2:] == [1, 0]


def test_list_consumer_group_offsets_errors_fail_the_operation() -> None:
    h = with_offsets()

    def denied(b: FakeBroker, body: Any, v: int) -> Any:
        part = of.OffsetFetchResponsePartitions(
            partition_index=0, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED
        )
        group = of.OffsetFetchResponseGroup(
            group_id="g", topics=[of.OffsetFetchResponseTopics(name="t", partitions=[part])]
        )
        return m.OffsetFetchResponse(groups=[group])

    h.world.script(ApiKey.OFFSET_FETCH, denied)
    op = h.core.list_consumer_group_offsets("g", now=h.now)
    h.run(op)
    assert str(op.error) == "TOPIC_AUTHORIZATION_FAILED: OffsetFetch of group 'g' (broker 1)"


def test_alter_consumer_group_offsets_per_partition() -> None:
    h = with_offsets()
    h.world.groups["g"].offsets.clear()
    offsets: dict[TP, OffsetAndMetadata | int] = {
        TP("t", 0): 5,
        TP("t", 1): OffsetAndMetadata(6, "note", 3),
        TP("zz", 0): 1,
    }
    results = h.result(h.core.alter_consumer_group_offsets("g", offsets, now=h.now))
    assert results[TP("t", 0)].ok and results[TP("t", 1)].ok
    assert isinstance(results[TP("zz", 0)].error, UnknownTopicOrPartitionError)
    assert h.world.groups["g"].offsets == {TP("t", 0): 5, TP("t", 1): 6}
    node, _, version, body = next(s for s in h.world.seen if s[1] == ApiKey.OFFSET_COMMIT)
    assert (node, version, body.generation_id_or_member_epoch, body.member_id) == (1, 9, -1, "")
    sent = {
        (t.name, p.partition_index): (
            p.committed_offset,
            p.committed_leader_epoch,
            p.committed_metadata,
        )
        for t in body.topics
        for p in t.partitions
    }
    assert sent[("t", 0)] == (5, -1, "") and sent[("t", 1)] == (6, 3, "note")


def test_alter_consumer_group_offsets_of_an_active_group_and_a_moved_coordinator() -> None:
    h = with_offsets()
    h.world.groups["g"].members = ["someone"]
    results = h.result(h.core.alter_consumer_group_offsets("g", {TP("t", 0): 1}, now=h.now))
    assert isinstance(results[TP("t", 0)].error, UnknownMemberIdError)
    h.world.groups["g"].members = []

    def moved(b: FakeBroker, body: Any, v: int) -> Any:
        parts = [
            oc.OffsetCommitResponsePartition(
                partition_index=0, error_code=ErrorCode.NOT_COORDINATOR
            )
        ]
        return m.OffsetCommitResponse(
            topics=[
                oc.OffsetCommitResponseTopic(name="t", partitions=parts),
                oc.OffsetCommitResponseTopic(name="x", partitions=parts),
            ]
        )

    h.world.script(ApiKey.OFFSET_COMMIT, moved)
    assert h.result(h.core.alter_consumer_group_offsets("g", {TP("t", 0): 2}, now=h.now))[
        TP("t", 0)
    ].ok
    assert h.world.groups["g"].offsets[TP("t", 0)] == 2


def test_delete_consumer_group_offsets() -> None:
    h = with_offsets()
    results = h.result(h.core.delete_consumer_group_offsets("g", [TP("t", 0)], now=h.now))
    assert results[TP("t", 0)].ok and TP("t", 0) not in h.world.groups["g"].offsets
    g = h.world.groups["g"]
    g.members, g.state = ["m"], "Stable"
    results = h.result(h.core.delete_consumer_group_offsets("g", [TP("t", 2)], now=h.now))
    assert isinstance(results[TP("t", 2)].error, GroupSubscribedToTopicError)
    op = h.core.delete_consumer_group_offsets("nope", [TP("t", 2)], now=h.now)
    h.run(op)  # a group-level error fails the whole request
    assert isinstance(op.error, GroupIdNotFoundError)
    h.world.coordinator("g", 0)
    g.members = []
    assert h.result(h.core.delete_consumer_group_offsets("g", [TP("t", 2)], now=h.now))[
        TP("t", 2)
    ].ok


@pytest.mark.parametrize(
    ("call", "error", "text"),
    [
        (
            lambda c: c.list_consumer_group_offsets("", now=0.0),
            ValueError,
            "group_id: must not be empty",
        ),
        (
            lambda c: c.list_consumer_group_offsets("g", ["t"], now=0.0),
            TypeError,
            "TopicPartition or",
        ),
        (
            lambda c: c.list_consumer_group_offsets("g", require_stable=1, now=0.0),
            TypeError,
            "require_stable",
        ),
        (
            lambda c: c.alter_consumer_group_offsets("g", [], now=0.0),
            TypeError,
            "expected a mapping",
        ),
        (
            lambda c: c.alter_consumer_group_offsets("g", {}, now=0.0),
            ValueError,
            "name at least one partition",
        ),
        (
            lambda c: c.alter_consumer_group_offsets("g", {TP("t", 0): -1}, now=0.0),
            ValueError,
            "-1 must be 0 or more",
        ),
        (
            lambda c: c.alter_consumer_group_offsets(
                "g", {TP("t", 0): OffsetAndMetadata(-5)}, now=0.0
            ),
            ValueError,
            "offset: -5",
        ),
        (
            lambda c: c.delete_consumer_group_offsets("g", [], now=0.0),
            ValueError,
            "at least one partition",
        ),
        (
            lambda c: c.list_share_group_offsets("g", [], now=0.0),
            ValueError,
            "at least one partition",
        ),
        (
            lambda c: c.alter_share_group_offsets("g", {}, now=0.0),
            ValueError,
            "name at least one partition",
        ),
        (
            lambda c: c.alter_share_group_offsets("g", {TP("t", 0): "1"}, now=0.0),
            TypeError,
            "expected an int",
        ),
        (
            lambda c: c.delete_share_group_offsets("g", "t", now=0.0),
            TypeError,
            "collection of names",
        ),
    ],
)
def test_offset_commands_refuse_bad_arguments(call: Any, error: type, text: str) -> None:
    h = Harness()
    with pytest.raises(error, match=text):
        call(h.core)
    assert h.core.pending_operations == 0


# ---------------------------------------------------------------- share groups


def share_world(n: int = 2) -> Harness:
    h = Harness(n)
    h.world.add_topic("q", 2)
    h.world.groups["s"] = Group("s", type="share", protocol_type="share")
    h.world.share_offsets["s"] = {TP("q", 0): 4}
    h.world.coordinator("s", n - 1)
    return h


def test_list_share_group_offsets() -> None:
    h = share_world()
    assert h.result(h.core.list_share_group_offsets("s", now=h.now)) == {
        TP("q", 0): SharePartitionOffset(start_offset=4, leader_epoch=0, lag=3)
    }
    chosen = h.result(h.core.list_share_group_offsets("s", [TP("q", 0), TP("q", 1)], now=h.now))
    assert chosen == {
        TP("q", 0): SharePartitionOffset(start_offset=4, leader_epoch=0, lag=3),
        TP("q", 1): None,
    }
    body = h.world.requests(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS)[-1]
    assert [(t.topic_name, t.partitions) for t in body.groups[0].topics] == [("q", [0, 1])]


def test_list_share_group_offsets_errors_and_moves() -> None:
    h = share_world()
    h.world.coordinator("s", 0)
    h.world.script(
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
        lambda b, body, v: m.DescribeShareGroupOffsetsResponse(groups=[]),
    )
    op = h.core.list_share_group_offsets("s", now=h.now)
    h.run(op)
    assert str(op.error) == "list_share_group_offsets: no result came"

    def bad_partition(b: FakeBroker, body: Any, v: int) -> Any:
        part = dso.DescribeShareGroupOffsetsResponsePartition(
            partition_index=0, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message="gone"
        )
        topic = dso.DescribeShareGroupOffsetsResponseTopic(topic_name="q", partitions=[part])
        return m.DescribeShareGroupOffsetsResponse(
            groups=[dso.DescribeShareGroupOffsetsResponseGroup(group_id="s", topics=[topic])]
        )

    h.world.script(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, bad_partition)
    op = h.core.list_share_group_offsets("s", [TP("q", 1)], now=h.now)
    h.run(op)  # a partition not asked about is skipped; a partition error fails the lookup
    assert h.result(op) == {TP("q", 1): None}
    h.world.script(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, bad_partition)
    op = h.core.list_share_group_offsets("s", now=h.now)
    h.run(op)
    assert str(op.error) == (
        "UNKNOWN_TOPIC_OR_PARTITION: partition q-0 of share group 's' (broker 0): gone"
    )
    h.world.coordinator("s", 1)  # moved: NOT_COORDINATOR, then found again
    assert TP("q", 0) in h.result(h.core.list_share_group_offsets("s", now=h.now))


def test_alter_and_delete_share_group_offsets() -> None:
    h = share_world()
    results = h.result(
        h.core.alter_share_group_offsets("s", {TP("q", 1): 9, TP("zz", 0): 1}, now=h.now)
    )
    assert results[TP("q", 1)].ok and h.world.share_offsets["s"][TP("q", 1)] == 9
    error = results[TP("zz", 0)].error
    assert isinstance(error, UnknownTopicOrPartitionError) and str(error).endswith(
        "partition zz-0 (broker 1): no such topic"
    )
    h.world.groups["s"].members = ["m"]
    op = h.core.alter_share_group_offsets("s", {TP("q", 1): 1}, now=h.now)
    h.run(op)
    assert isinstance(op.error, NonEmptyGroupError)
    assert "group 's' (broker 1): group has members" in str(op.error)
    deleted = h.result(h.core.delete_share_group_offsets("s", ["q", "zz"], now=h.now))
    assert deleted["q"].ok and isinstance(deleted["zz"].error, UnknownTopicOrPartitionError)
    assert h.world.share_offsets["s"] == {}
    gone = h.core.delete_share_group_offsets("nope", ["q"], now=h.now)
    h.run(gone)
    assert isinstance(gone.error, GroupIdNotFoundError)

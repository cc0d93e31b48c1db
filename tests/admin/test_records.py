"""Partition-leader commands (list_offsets, delete_records) against the scripted cluster."""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.admin import DeletedRecords, ListedOffset, OffsetSpec
from kafkacore.admin._records import _list_offsets_builder
from kafkacore.client.metadata import TopicPartition as TP
from kafkacore.errors import KafkaTimeoutError, NoCommonVersionError
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ApiKey, ErrorCode
from kafkacore.protocol.error_codes import (
    LeaderNotAvailableError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from tests.admin.fakeadmin import Harness, Log
from tests.client.fakebroker import FakeBroker


def with_logs(n: int = 3, **kwargs: Any) -> Harness:
    h = Harness(n, **kwargs)
    h.world.add_topic("t", 3, {0: 0, 1: 1, 2: min(2, n - 1)})
    h.world.logs[TP("t", 0)] = Log(start=2, end=10, times=[(100, 2), (200, 5), (300, 9)])
    h.world.logs[TP("t", 1)] = Log(start=0, end=4, times=[(150, 0), (250, 3)])
    return h


def test_list_offsets_asks_each_leader_for_its_partitions() -> None:
    h = with_logs()
    specs = {
        TP("t", 0): OffsetSpec.earliest(),
        TP("t", 1): OffsetSpec.latest(),
        TP("t", 2): OffsetSpec.for_timestamp(0),
    }
    results = h.result(h.core.list_offsets(specs, now=h.now))
    assert results[TP("t", 0)].result() == ListedOffset(offset=2, timestamp=None, leader_epoch=0)
    assert results[TP("t", 1)].result().offset == 4
    assert results[TP("t", 2)].result() == ListedOffset(offset=None, timestamp=None, leader_epoch=0)
    asked = {
        node: [(t.name, p.partition_index) for t in body.topics for p in t.partitions]
        for node, api, _, body in h.world.seen
        if api == ApiKey.LIST_OFFSETS
    }
    assert asked == {0: [("t", 0)], 1: [("t", 1)], 2: [("t", 2)]}
    body = h.world.requests(ApiKey.LIST_OFFSETS)[0]
    assert body.replica_id == -1 and body.isolation_level == 0
    assert body.topics[0].partitions[0].current_leader_epoch == 0


def test_list_offsets_by_timestamp_and_max_timestamp_read_committed() -> None:
    h = with_logs()
    specs = {TP("t", 0): OffsetSpec.for_timestamp(150), TP("t", 1): OffsetSpec.max_timestamp()}
    results = h.result(h.core.list_offsets(specs, isolation_level="read_committed", now=h.now))
    assert results[TP("t", 0)].result() == ListedOffset(offset=5, timestamp=200, leader_epoch=0)
    assert results[TP("t", 1)].result() == ListedOffset(offset=3, timestamp=250, leader_epoch=0)
    assert all(b.isolation_level == 1 for b in h.world.requests(ApiKey.LIST_OFFSETS))


def test_list_offsets_unknown_topics_and_partitions_fail_at_once() -> None:
    h = with_logs(1)
    specs = {
        TP("nope", 0): OffsetSpec.latest(),
        TP("t", 7): OffsetSpec.latest(),
        TP("t", 0): OffsetSpec.latest(),
    }
    results = h.result(h.core.list_offsets(specs, now=h.now))
    assert isinstance(results[TP("nope", 0)].error, UnknownTopicOrPartitionError)
    error = results[TP("t", 7)].error
    assert str(error) == (
        "UNKNOWN_TOPIC_OR_PARTITION: partition t-7 (broker 0): topic 't' has 3 partitions"
    )
    assert results[TP("t", 0)].result().offset == 10
    assert h.now == 0.0  # nothing was retried


def test_list_offsets_follows_a_moved_leader() -> None:
    h = with_logs()

    def move(b: FakeBroker, body: Any, v: int) -> None:
        h.world.cluster.topics["t"].leaders[1] = 2  # broker 1 is no longer the leader

    h.world.script(ApiKey.LIST_OFFSETS, move)
    result = h.result(h.core.list_offsets({TP("t", 1): OffsetSpec.latest()}, now=h.now))
    assert result[TP("t", 1)].result().offset == 4
    nodes = [node for node, api, _, _ in h.world.seen if api == ApiKey.LIST_OFFSETS]
    assert nodes == [1, 2]


def test_a_partition_without_a_leader_is_looked_up_again_until_the_deadline() -> None:
    h = with_logs(1, api_timeout_ms=2000)
    h.world.cluster.topics["t"].leaders[0] = -1
    h.world.cluster.topics["other"] = type(h.world.cluster.topics["t"])("other", 1)
    h.world.cluster.topics["other"].error_code = ErrorCode.LEADER_NOT_AVAILABLE
    op = h.core.list_offsets(
        {TP("t", 0): OffsetSpec.latest(), TP("other", 0): OffsetSpec.latest()}, now=h.now
    )
    h.run(op)
    assert isinstance(op.error, KafkaTimeoutError)
    assert isinstance(op.error.__cause__, LeaderNotAvailableError)
    assert "no leader in the metadata yet" in str(op.error)
    assert len(h.world.requests(ApiKey.LIST_OFFSETS)) == 0


def test_list_offsets_topic_errors_are_final() -> None:
    h = with_logs(1)
    h.world.cluster.topics["t"].error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    results = h.result(h.core.list_offsets({TP("t", 0): OffsetSpec.latest()}, now=h.now))
    assert isinstance(results[TP("t", 0)].error, TopicAuthorizationFailedError)


def test_list_offsets_metadata_that_leaves_a_topic_out_is_asked_again() -> None:
    h = with_logs(1)

    def forget(b: FakeBroker, body: Any, v: int) -> Any:
        return m.MetadataResponse(brokers=[], topics=[]) if body.topics else None

    h.world.script(ApiKey.METADATA, forget)
    result = h.result(h.core.list_offsets({TP("t", 0): OffsetSpec.latest()}, now=h.now))
    assert result[TP("t", 0)].result().offset == 10


def test_list_offsets_requests_fit_the_version() -> None:
    items = [(TP("t", 0), 5)]
    latest = _list_offsets_builder("list_offsets", 1, items, {TP("t", 0): OffsetSpec.latest()}, 0)
    assert latest(1).topics[0].partitions[0].current_leader_epoch == -1
    assert latest(4).topics[0].partitions[0].current_leader_epoch == 5
    committed = _list_offsets_builder(
        "list_offsets", 1, items, {TP("t", 0): OffsetSpec.latest()}, 1
    )
    assert committed(2).isolation_level == 1
    with pytest.raises(NoCommonVersionError, match="need ListOffsets v2\\+; broker 1 offers v1"):
        committed(1)
    tiered = _list_offsets_builder(
        "list_offsets", 3, items, {TP("t", 0): OffsetSpec.latest_tiered()}, 0
    )
    with pytest.raises(NoCommonVersionError, match="need ListOffsets v9\\+; broker 3 offers v8"):
        tiered(8)


def test_list_offsets_a_spec_the_leader_cannot_carry_fails_its_partitions() -> None:
    h = with_logs(1, versions={ApiKey.LIST_OFFSETS: (1, 6)})
    op = h.core.list_offsets({TP("t", 0): OffsetSpec.max_timestamp()}, now=h.now)
    h.run(op)
    assert isinstance(op.error, NoCommonVersionError)


@pytest.mark.parametrize(
    ("specs", "kwargs", "error", "text"),
    [
        ([], {}, TypeError, "specs: expected a mapping"),
        ({}, {}, ValueError, "name at least one partition"),
        ({TP("t", 0): -1}, {}, TypeError, "expected an OffsetSpec, got -1"),
        (
            {TP("t", 0): OffsetSpec.latest()},
            {"isolation_level": "dirty"},
            ValueError,
            "isolation_level 'dirty' is not one of",
        ),
    ],
)
def test_list_offsets_refuses_bad_arguments(
    specs: Any, kwargs: dict[str, Any], error: type, text: str
) -> None:
    h = Harness()
    with pytest.raises(error, match=text):
        h.core.list_offsets(specs, now=h.now, **kwargs)


def test_delete_records_per_partition_on_each_leader() -> None:
    h = with_logs()
    results = h.result(
        h.core.delete_records({TP("t", 0): 5, TP("t", 1): -1, TP("t", 2): 3}, now=h.now)
    )
    assert results[TP("t", 0)].result() == DeletedRecords(low_watermark=5)
    assert results[TP("t", 1)].result() == DeletedRecords(low_watermark=4)  # -1: the high watermark
    assert isinstance(results[TP("t", 2)].error, OffsetOutOfRangeError)
    assert "broker 2" in str(results[TP("t", 2)].error)
    body = h.world.requests(ApiKey.DELETE_RECORDS)[0]
    assert 0 < body.timeout_ms <= 30000


def test_delete_records_retries_a_partition_whose_leader_moved() -> None:
    h = with_logs()

    def move(b: FakeBroker, body: Any, v: int) -> None:
        h.world.cluster.topics["t"].leaders[0] = 1  # broker 0 answers NOT_LEADER_OR_FOLLOWER

    h.world.script(ApiKey.DELETE_RECORDS, move)
    result = h.result(h.core.delete_records({TP("t", 0): 4}, now=h.now))
    assert result[TP("t", 0)].result().low_watermark == 4
    assert [n for n, api, _, _ in h.world.seen if api == ApiKey.DELETE_RECORDS] == [0, 1]


def test_delete_records_a_leader_that_keeps_refusing_times_out() -> None:
    h = with_logs(1, api_timeout_ms=1000)

    def refuse(b: FakeBroker, body: Any, v: int) -> Any:
        from kafkacore.protocol.messages import delete_records_response as dr

        parts = [
            dr.DeleteRecordsPartitionResult(
                partition_index=0, low_watermark=-1, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER
            )
        ]
        return m.DeleteRecordsResponse(
            topics=[
                dr.DeleteRecordsTopicResult(name="t", partitions=parts),
                dr.DeleteRecordsTopicResult(name="x", partitions=parts),
            ]
        )

    h.world.script(ApiKey.DELETE_RECORDS, *[refuse] * 50)
    op = h.core.delete_records({TP("t", 0): 1}, now=h.now)
    h.run(op)
    assert isinstance(op.error, KafkaTimeoutError)
    assert isinstance(op.error.__cause__, NotLeaderOrFollowerError)


@pytest.mark.parametrize(
    ("before", "error", "text"),
    [
        ([], TypeError, "before: expected a mapping"),
        ({}, ValueError, "name at least one partition"),
        ({TP("t", 0): -2}, ValueError, "-2 must be -1 or more"),
        ({("t",): 1}, TypeError, "TopicPartition or"),
    ],
)
def test_delete_records_refuses_bad_arguments(before: Any, error: type, text: str) -> None:
    h = Harness()
    with pytest.raises(error, match=text):
        h.core.delete_records(before, now=h.now)

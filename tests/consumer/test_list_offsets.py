"""OffsetLookups alone: ListOffsets per leader, the user's lookups in
rounds until the deadline, and resets of AWAIT_RESET partitions."""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.client.routing import Node
from kafkacore.consumer import OffsetAndTimestamp
from kafkacore.consumer.events import OffsetAndMetadata
from kafkacore.consumer.list_offsets import OffsetLookups
from kafkacore.consumer.positions import EARLIEST, LATEST, FetchState, PartitionRetry
from kafkacore.errors import KafkaConnectionError, KafkaTimeoutError
from kafkacore.operation import OperationCompleted
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.messages.list_offsets_response import (
    ListOffsetsPartitionResponse,
    ListOffsetsTopicResponse,
)
from tests.consumer.units import T0, T1, U0, World, metadata, world


def setup(*, answer: Any = None, read_committed: bool = False) -> tuple[World, OffsetLookups]:
    w = world(answer=answer, api_timeout_ms=1000)
    lookups = OffsetLookups(
        read_committed=read_committed, subs=w.subs, topics=w.topics, ops=w.ops, send=w.send
    )
    return w, lookups


def offsets(
    req: Any, found: dict[Any, tuple[int, int, int]], codes: dict[Any, int] | None = None
) -> Any:
    codes = codes or {}
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            offset, ts, epoch = found.get(tp, (-1, -1, -1))
            parts.append(
                ListOffsetsPartitionResponse(
                    partition_index=p.partition_index,
                    error_code=codes.get(tp, 0),
                    offset=offset,
                    timestamp=ts,
                    leader_epoch=epoch,
                )
            )
        topics.append(ListOffsetsTopicResponse(name=t.name, partitions=parts))
    return m.ListOffsetsResponse(topics=topics)


def test_one_request_per_leader_with_epoch_and_isolation() -> None:
    answer = metadata({"t": 2, "u": 1}, leaders={T1: 1}, epochs={T0: 6})
    w, lookups = setup(answer=answer, read_committed=True)
    handle = lookups.lookup("end_offsets", {T0: LATEST, T1: LATEST, U0: LATEST}, 0.0, None)
    assert w.client.topics == frozenset({"t", "u"})
    by_node = {s.target: s for s in w.send.sent}
    assert set(by_node) == {Node(0), Node(1)}
    req0 = by_node[Node(0)].request
    assert req0.isolation_level == 1 and req0.replica_id == -1
    first = req0.topics[0].partitions[0]
    assert (first.partition_index, first.current_leader_epoch, first.timestamp) == (0, 6, LATEST)
    by_node[Node(0)].answer(offsets(req0, {("t", 0): (10, -1, 6), ("u", 0): (3, -1, 0)}))
    assert not handle.done
    req1 = by_node[Node(1)].request
    by_node[Node(1)].answer(offsets(req1, {("t", 1): (20, -1, 0)}))
    assert handle.result() == {T0: 10, T1: 20, U0: 3}
    assert w.events == [OperationCompleted(handle=handle)]


def test_offsets_for_times_keeps_the_timestamp_and_none_past_the_end() -> None:
    w, lookups = setup()
    handle = lookups.lookup("offsets_for_times", {T0: 1003, T1: 9999}, 0.0, None, keep_ts=True)
    sent = w.send.pop()
    sent.answer(offsets(sent.request, {("t", 0): (3, 1003, 0)}))
    found = handle.result()
    assert found == {T0: OffsetAndTimestamp(3, 1003, 0), T1: None}
    assert (found[T0].offset, found[T0].timestamp, found[T0].leader_epoch) == (3, 1003, 0)


def test_failed_partitions_go_into_the_next_round() -> None:
    w, lookups = setup()
    handle = lookups.lookup("beginning_offsets", {T0: EARLIEST, T1: EARLIEST}, 0.0, None)
    sent = w.send.pop()
    codes = {("t", 1): ErrorCode.NOT_LEADER_OR_FOLLOWER}
    sent.answer(offsets(sent.request, {("t", 0): (0, -1, 0)}, codes))
    assert w.client.refreshes == 1 and not handle.done
    w.run_due(0.1)
    again = w.send.pop()
    assert [p.partition_index for p in again.request.topics[0].partitions] == [1]
    again.answer(offsets(again.request, {("t", 1): (5, -1, 0)}))
    assert handle.result() == {T0: 0, T1: 5}


def test_a_partition_missing_from_the_answer_counts_as_failed() -> None:
    w, lookups = setup()
    handle = lookups.lookup("end_offsets", {T0: LATEST, T1: LATEST}, 0.0, None)
    sent = w.send.pop()
    resp = offsets(sent.request, {("t", 0): (4, -1, 0)})
    resp.topics[0].partitions = [p for p in resp.topics[0].partitions if p.partition_index == 0]
    resp.topics.append(
        ListOffsetsTopicResponse(
            name="other", partitions=[ListOffsetsPartitionResponse(partition_index=0)]
        )
    )
    sent.answer(resp)
    assert not handle.done
    w.run_due(0.1)
    again = w.send.pop()
    again.answer(offsets(again.request, {("t", 1): (9, -1, 0)}))
    assert handle.result() == {T0: 4, T1: 9}


def test_no_leader_until_the_deadline_names_the_topic_problem() -> None:
    answer = metadata({"t": 2}, leaders={T0: -1, T1: -1}, errors={"gone": 3})
    w, lookups = setup(answer=answer)
    gone = T0._replace(topic="gone")
    handle = lookups.lookup("end_offsets", {T0: LATEST, gone: LATEST}, 0.0, 150)
    assert not w.send.sent and w.client.refreshes == 1
    w.run_due(0.1)
    assert isinstance(handle.error, KafkaTimeoutError)
    text = str(handle.error)
    assert "end_offsets: no leader answered for" in text and "gone: " in text


def test_a_failed_request_is_retried_without_a_refresh() -> None:
    w, lookups = setup()
    handle = lookups.lookup("end_offsets", {T0: LATEST}, 0.0, None)
    w.send.pop().fail(KafkaConnectionError("lost"))
    assert w.client.refreshes == 0
    w.run_due(0.1)
    sent = w.send.pop()
    sent.answer(offsets(sent.request, {("t", 0): (1, -1, 0)}))
    assert handle.result() == {T0: 1}


def test_a_round_for_a_failed_operation_stops() -> None:
    w, lookups = setup(answer=metadata({"t": 2}, leaders={T1: 1}))
    handle = lookups.lookup("end_offsets", {T0: LATEST, T1: LATEST}, 0.0, None)
    first, second = w.send.pop(), w.send.pop()
    w.ops.fail_pending(KafkaConnectionError("auth went away"), 0.0)
    first.answer(offsets(first.request, {("t", 0): (1, -1, 0)}))
    second.fail(KafkaConnectionError("x"))
    w.run_due(1.0)
    assert not w.send.sent and isinstance(handle.error, KafkaConnectionError)


def test_resets_move_partitions_to_the_answer() -> None:
    answer = metadata({"t": 2, "u": 1}, leaders={U0: -1}, epochs={T0: 4})
    w, lookups = setup(answer=answer)
    w.subs.assign(frozenset({T0, T1, U0}))
    for tp in (T0, T1, U0):
        w.subs.committed_found(tp, None, None)
    lookups.reset({T0: EARLIEST, T1: EARLIEST, U0: EARLIEST}, 0.0)
    u0 = w.subs.parts[U0]
    assert u0.retry_at == pytest.approx(0.1) and PartitionRetry(U0) in w.deadlines
    assert w.client.refreshes == 1
    sent = w.send.pop()
    assert w.subs.parts[T0].busy and w.subs.parts[T1].busy
    codes = {("t", 1): ErrorCode.NOT_LEADER_OR_FOLLOWER}
    sent.answer(offsets(sent.request, {("t", 0): (7, -1, 2)}, codes), 0.5)
    st0, st1 = w.subs.parts[T0], w.subs.parts[T1]
    assert (st0.state, st0.position, st0.position_epoch, st0.leader_epoch) == (
        FetchState.FETCHING,
        7,
        2,
        4,
    )
    assert st1.state is FetchState.AWAIT_RESET and st1.retry_at == pytest.approx(0.6)


def test_a_reset_answer_for_a_moved_partition_is_ignored() -> None:
    w, lookups = setup()
    w.subs.assign(frozenset({T0, T1}))
    for tp in (T0, T1):
        w.subs.committed_found(tp, None, None)
    lookups.reset({T0: EARLIEST, T1: EARLIEST}, 0.0)
    sent = w.send.pop()
    w.subs.seek(T0, 3)  # the user chose a position meanwhile
    w.subs.seek_to(T1, LATEST, "seek_to_end")  # a different target now
    sent.answer(offsets(sent.request, {("t", 0): (0, -1, 0), ("t", 1): (0, -1, 0)}))
    assert w.subs.parts[T0].position == 3
    assert w.subs.parts[T1].state is FetchState.AWAIT_RESET


def test_a_committed_partition_is_not_reset() -> None:
    w, lookups = setup()
    w.subs.assign(frozenset({T0}))
    w.subs.committed_found(T0, None, None)
    lookups.reset({T0: EARLIEST}, 0.0)
    sent = w.send.pop()
    w.subs.remove(T0)
    w.subs.add(T0)
    w.subs.committed_found(T0, OffsetAndMetadata(2), None)
    sent.answer(offsets(sent.request, {("t", 0): (0, -1, 0)}))
    assert w.subs.parts[T0].position == 2

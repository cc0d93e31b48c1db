"""PositionValidator alone: OffsetForLeaderEpoch after a leader change
(KIP-320): the position stands, was truncated, or is out of range; error
answers back off."""

from __future__ import annotations

from typing import Any

from kafkacore.client.routing import Node
from kafkacore.consumer.events import OffsetAndMetadata, TruncationDetected
from kafkacore.consumer.positions import FetchState
from kafkacore.consumer.validation import PositionValidator
from kafkacore.errors import KafkaConnectionError
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.messages.offset_for_leader_epoch_response import (
    EpochEndOffset,
    OffsetForLeaderTopicResult,
)
from tests.consumer.units import T0, T1, U0, World, metadata, world


def setup(answer: Any = None) -> tuple[World, PositionValidator]:
    w = world(answer=answer or metadata({"t": 2, "u": 1}, leaders={U0: 1}, epochs={T0: 5}))
    return w, PositionValidator(subs=w.subs, topics=w.topics, send=w.send)


def awaiting(w: World, *tps: Any, position: int = 10) -> None:
    """``tps`` fetched up to ``position`` under epoch 1, then a new leader."""
    w.subs.assign(frozenset(tps))
    for tp in tps:
        w.subs.committed_found(tp, OffsetAndMetadata(position, "", 1), 0)
        w.subs.leader_epoch_seen(tp, 5)
        assert w.subs.parts[tp].state is FetchState.AWAIT_VALIDATION


def ends(req: Any, found: dict[Any, tuple[int, int]], codes: dict[Any, int] | None = None) -> Any:
    codes = codes or {}
    return m.OffsetForLeaderEpochResponse(
        topics=[
            OffsetForLeaderTopicResult(
                topic=t.topic,
                partitions=[
                    EpochEndOffset(
                        partition=p.partition,
                        error_code=codes.get((t.topic, p.partition), 0),
                        leader_epoch=found.get((t.topic, p.partition), (-1, -1))[0],
                        end_offset=found.get((t.topic, p.partition), (-1, -1))[1],
                    )
                    for p in t.partitions
                ],
            )
            for t in req.topics
        ]
    )


def test_one_request_per_leader_asks_about_the_last_consumed_epoch() -> None:
    w, validator = setup()
    awaiting(w, T0, T1, U0)
    validator.validate([T0, T1, U0], 0.0)
    by_node = {s.target: s.request for s in w.send.sent}
    assert set(by_node) == {Node(0), Node(1)}
    req = by_node[Node(0)]
    assert req.replica_id == -1
    part = req.topics[0].partitions[0]
    assert (part.partition, part.current_leader_epoch, part.leader_epoch) == (0, 5, 1)
    assert all(w.subs.parts[tp].busy for tp in (T0, T1, U0))


def test_the_three_outcomes() -> None:
    w, validator = setup(metadata({"t": 2, "u": 1}, epochs={T0: 5}))
    awaiting(w, T0, T1, U0)
    validator.validate([T0, T1, U0], 0.0)
    sent = w.send.pop()
    sent.answer(ends(sent.request, {("t", 0): (1, 12), ("t", 1): (1, 7), ("u", 0): (-1, -1)}))
    st0, st1, su = (w.subs.parts[tp] for tp in (T0, T1, U0))
    assert (st0.state, st0.position, st0.leader_epoch) == (FetchState.FETCHING, 10, 5)
    assert (st1.state, st1.position) == (FetchState.FETCHING, 7)
    assert TruncationDetected(partition=T1, old_position=10, offset=7) in w.events
    assert su.state is FetchState.AWAIT_RESET and not su.busy


def test_errors_back_off_and_a_moved_leader_refreshes_metadata() -> None:
    w, validator = setup(metadata({"t": 2}))
    awaiting(w, T0, T1)
    validator.validate([T0, T1], 0.0)
    sent = w.send.pop()
    codes = {("t", 0): ErrorCode.NOT_LEADER_OR_FOLLOWER, ("t", 1): ErrorCode.UNKNOWN_SERVER_ERROR}
    sent.answer(ends(sent.request, {}, codes), 1.0)
    for tp in (T0, T1):
        st = w.subs.parts[tp]
        assert st.state is FetchState.AWAIT_VALIDATION and not st.busy and st.retry_at == 1.1
    assert w.client.refreshes == 1


def test_a_failed_request_or_a_missing_answer_backs_off() -> None:
    w, validator = setup(metadata({"t": 2}))
    awaiting(w, T0, T1)
    validator.validate([T0], 0.0)
    w.send.pop().fail(KafkaConnectionError("lost"), 2.0)
    assert w.subs.parts[T0].retry_at == 2.1 and w.client.refreshes == 0
    validator.validate([T1], 0.0)
    sent = w.send.pop()
    sent.answer(m.OffsetForLeaderEpochResponse(topics=[]), 3.0)
    assert w.subs.parts[T1].retry_at == 3.1


def test_answers_for_moved_partitions_are_ignored() -> None:
    w, validator = setup(metadata({"t": 2}))
    awaiting(w, T0, T1)
    validator.validate([T0, T1], 0.0)
    sent = w.send.pop()
    w.subs.seek(T0, 3)
    w.subs.remove(T1)
    sent.answer(ends(sent.request, {("t", 0): (1, 1)}))
    assert w.subs.parts[T0].position == 3 and not w.events


def test_partitions_without_a_leader_ask_for_metadata() -> None:
    w, validator = setup(metadata({"t": 2}, leaders={T1: -1}))
    awaiting(w, T0, T1)
    validator.validate([T0, T1], 0.0)
    assert w.client.refreshes == 1 and len(w.send.sent) == 1
    assert not w.subs.parts[T1].busy

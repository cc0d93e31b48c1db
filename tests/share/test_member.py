"""The share-group member (kafkacore.share.member): transitions and heartbeats."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from kafkacore.client.metadata import TopicPartition
from kafkacore.group.base import GroupFatalError
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.messages import share_group_heartbeat_response as hr
from kafkacore.share.member import (
    HEARTBEAT,
    TRANSITIONS,
    Input,
    ShareMember,
    ShareMemberState,
    kafka_uuid,
)

S = ShareMemberState
TID = uuid.uuid4()


class Sent:
    def __init__(self) -> None:
        self.requests: list[tuple[Any, Any]] = []

    def __call__(self, request: Any, on_done: Any, *, target: Any, now: float, lane: str) -> None:
        self.requests.append((request, on_done))

    def answer(self, resp: Any = None, err: BaseException | None = None, now: float = 0.0) -> Any:
        request, on_done = self.requests.pop(0)
        on_done(err if err is not None else resp, now)
        return request


def make(names: dict[uuid.UUID, str] | None = None) -> tuple[ShareMember, Sent]:
    sent = Sent()
    known = {TID: "t"} if names is None else names
    member = ShareMember(sent, group_id="g", rng=random.Random(1), topic_names=known.get)
    return member, sent


def joined(epoch: int = 1, parts: list[int] | None = None) -> Any:
    assignment = None
    if parts is not None:
        assignment = hr.Assignment(
            topic_partitions=[hr.TopicPartitions(topic_id=TID, partitions=parts)]
        )
    return m.ShareGroupHeartbeatResponse(
        member_epoch=epoch, heartbeat_interval_ms=2000, assignment=assignment
    )


@pytest.mark.parametrize(
    ("state", "event", "after"),
    [
        (S.UNSUBSCRIBED, Input.SUBSCRIBE, S.JOINING),
        (S.UNSUBSCRIBED, Input.LEAVE, S.CLOSED),
        (S.JOINING, Input.JOINED, S.STABLE),
        (S.STABLE, Input.FENCED, S.JOINING),
        (S.STABLE, Input.FATAL, S.FAILED),
        (S.JOINING, Input.LEAVE, S.LEAVING),
        (S.LEAVING, Input.LEFT, S.CLOSED),
    ],
)
def test_transition_table(state: S, event: Input, after: S) -> None:
    assert TRANSITIONS[(state, event)] is after


def test_unlisted_pairs_are_refused() -> None:
    assert (S.CLOSED, Input.JOINED) not in TRANSITIONS
    assert (S.FAILED, Input.SUBSCRIBE) not in TRANSITIONS
    member = ShareMember(
        lambda *a, **k: None,
        group_id="g",
        rng=random.Random(0),
        topic_names=lambda tid: None,
    )
    member.leave(now=0.0, done=lambda now: None)
    assert member.state is S.CLOSED
    with pytest.raises(AssertionError, match="'heartbeat answered' is not a move from closed"):
        member._go(Input.JOINED)
    assert member.state is S.CLOSED


def test_every_state_but_unsubscribed_is_reached_and_every_state_can_leave() -> None:
    targets = set(TRANSITIONS.values())
    assert targets == set(S) - {S.UNSUBSCRIBED}
    assert all((state, Input.LEAVE) in TRANSITIONS for state in S)


def test_member_id_is_a_kafka_uuid() -> None:
    text = kafka_uuid(random.Random(7))
    assert len(text) == 22 and not text.startswith("-")


def test_join_assign_heartbeat_and_leave() -> None:
    member, sent = make()
    member.subscribe(frozenset({"t"}), now=0.0)
    assert member.state is S.JOINING and member.next_deadline() == 0.0
    member.handle_timeout(now=0.0)
    assert member.next_deadline() is None  # a heartbeat is in flight
    request = sent.answer(joined(1, [0, 1]))
    assert (request.member_epoch, request.subscribed_topic_names) == (0, ["t"])
    assert member.state is S.STABLE and member.member_epoch == 1
    assert member.pull_assignments() == [
        frozenset({TopicPartition("t", 0), TopicPartition("t", 1)})
    ]
    assert member.deadlines.get(HEARTBEAT) == 2.0
    member.handle_timeout(now=2.0)
    assert sent.answer(joined(1)).member_epoch == 1
    assert member.pull_assignments() == []  # no assignment: unchanged
    done: list[float] = []
    member.leave(now=3.0, done=done.append)
    assert member.state is S.LEAVING and member.assignment == frozenset()
    assert sent.answer(m.ShareGroupHeartbeatResponse(), now=3.5).member_epoch == -1
    assert member.state is S.CLOSED and done == [3.5]
    with pytest.raises(GroupFatalError, match="closed"):
        member.subscribe(frozenset({"t"}), now=4.0)


def test_fenced_member_rejoins_with_epoch_zero() -> None:
    member, sent = make()
    member.subscribe(frozenset({"t"}), now=0.0)
    member.handle_timeout(now=0.0)
    sent.answer(joined(3, [0]))
    member.handle_timeout(now=2.0)
    sent.answer(m.ShareGroupHeartbeatResponse(error_code=ErrorCode.FENCED_MEMBER_EPOCH), now=2.0)
    assert (member.state, member.member_epoch, member.assignment) == (S.JOINING, 0, frozenset())
    member.handle_timeout(now=2.0)
    assert sent.answer(joined(4, [0])).member_epoch == 0


@pytest.mark.parametrize(
    ("resp", "err", "state"),
    [
        (m.ShareGroupHeartbeatResponse(error_code=ErrorCode.NOT_COORDINATOR), None, S.JOINING),
        (None, ConnectionError("lost"), S.JOINING),
        (
            m.ShareGroupHeartbeatResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED),
            None,
            S.FAILED,
        ),
    ],
)
def test_errors_retry_after_a_backoff_or_fail(resp: Any, err: Any, state: S) -> None:
    member, sent = make()
    member.subscribe(frozenset({"t"}), now=0.0)
    member.handle_timeout(now=0.0)
    sent.answer(resp, err, now=1.0)
    assert member.state is state
    if state is S.FAILED:
        assert isinstance(member.error, GroupFatalError)
        assert member.next_deadline() is None
    else:
        assert member.next_deadline() == pytest.approx(1.1)


def test_an_assignment_with_an_unknown_topic_id_waits_for_metadata() -> None:
    names: dict[uuid.UUID, str] = {}
    member, sent = make(names)
    member.subscribe(frozenset({"t"}), now=0.0)
    member.handle_timeout(now=0.0)
    sent.answer(joined(1, [0]))
    assert member.pull_assignments() == []
    names[TID] = "t"
    member.on_metadata(now=1.0)
    assert member.pull_assignments() == [frozenset({TopicPartition("t", 0)})]


def test_leave_before_joining_closes_at_once() -> None:
    member, sent = make()
    done: list[float] = []
    member.leave(now=1.0, done=done.append)
    assert member.state is S.CLOSED and done == [1.0] and sent.requests == []

"""Membership alone: which member is made and when it is replaced, what its
events do to the assignment, the revoke hook (commit first, then the
user's listener, bounded by max_poll_interval_ms), and its timers."""

from __future__ import annotations

import random
from typing import Any

import pytest

from kafkacore.consumer.committer import Committer
from kafkacore.consumer.config import ConsumerConfig
from kafkacore.consumer.events import OffsetAndMetadata, PartitionsRevoking
from kafkacore.consumer.membership import Membership
from kafkacore.consumer.positions import SubscriptionMode
from kafkacore.group.base import (
    GroupFailed,
    GroupFatalError,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from kafkacore.group.classic import ClassicMember, ClassicState
from kafkacore.group.kip848 import Kip848Member
from kafkacore.protocol import messages as m
from tests.consumer.units import T0, T1, U0, RecordingSend, World, world


class Requester:
    def __init__(self, send: RecordingSend) -> None:
        self.send = send
        self.answered_by: int | None = None

    def request(
        self,
        request: Any,
        on_done: Any,
        *,
        target: Any,
        now: float,
        lane: str = "default",
        timeout_ms: int | None = None,
        max_version: int | None = None,
        build: Any = None,
    ) -> None:
        self.send(
            request, on_done, now=now, target=target, lane=lane, timeout_ms=timeout_ms, build=build
        )


def setup(**cfg: Any) -> tuple[World, Membership, ConsumerConfig]:
    cfg.setdefault("group_id", "g")
    config = ConsumerConfig(**cfg)
    w = world(answer=None)
    box: list[Membership] = []
    committer = Committer(
        config,
        subs=w.subs,
        topics=w.topics,
        ops=w.ops,
        send=w.send,
        deadlines=w.deadlines,
        member=lambda: box[0].member if box else None,
    )
    membership = Membership(
        config,
        requester=Requester(w.send),
        rng=random.Random(0),
        subs=w.subs,
        topics=w.topics,
        committer=committer,
        ops=w.ops,
        errors=w.errors,
        emit=w.events.append,
    )
    box.append(membership)
    return w, membership, config


def test_a_classic_member_by_default_and_kept_while_alive() -> None:
    w, membership, _ = setup(auto_commit_interval_ms=2000)
    member = membership.ensure(1.0)
    assert isinstance(member, ClassicMember) and member.group_id == "g"
    assert membership.ensure(2.0) is member
    assert w.deadlines.get("auto-commit") == 3.0
    member.state = ClassicState.CLOSED
    assert membership.ensure(3.0) is not member


def test_a_kip848_member_with_the_consumer_protocol() -> None:
    _, membership, _ = setup(group_protocol="consumer", group_remote_assignor="uniform")
    member = membership.ensure(0.0)
    assert isinstance(member, Kip848Member) and member._assignor == "uniform"


def test_member_events_change_the_assignment_and_go_on() -> None:
    w, membership, _ = setup()
    assert not membership.drain(0.0)  # no member yet
    w.subs.mode = SubscriptionMode.SUBSCRIBED  # as ConsumerCore.subscribe sets it
    member = membership.ensure(0.0)
    error = GroupFatalError("fenced for good")
    member._events.extend(
        [
            PartitionsAssigned(partitions=frozenset({T0, T1, U0}), generation=1),
            PartitionsRevoked(partitions=frozenset({T1}), generation=1),
            PartitionsLost(partitions=frozenset({U0}), generation=1),
            GroupFailed(error=error),
            "something else",  # passed on untouched
        ]
    )
    assert membership.drain(0.0)
    assert w.subs.assignment() == frozenset({T0})
    assert {"t", "u"} <= w.client.topics
    assert w.errors.pending is error and len(w.events) == 5
    assert not membership.drain(0.0)


def test_a_left_members_late_events_leave_a_manual_assignment_alone() -> None:
    # unsubscribe() then assign(): the leaving member's revocation comes after
    # the user's assignment and must not take its partitions away (aiokafka's
    # subscribe-then-assign usage hung on it, issue 21).
    w, membership, _ = setup()
    member = membership.ensure(0.0)
    w.subs.assign(frozenset({T0}))
    member._events.extend(
        [
            PartitionsRevoked(partitions=frozenset({T0}), generation=1),
            PartitionsAssigned(partitions=frozenset({T1}), generation=2),
        ]
    )
    membership.drain(0.0)
    assert w.subs.assignment() == frozenset({T0})


def test_leave_without_a_member_is_done_at_once() -> None:
    _, membership, _ = setup()
    done: list[float] = []
    membership.leave(5.0, done=done.append)
    membership.leave(6.0)
    assert done == [5.0]


def test_leave_asks_the_member() -> None:
    _, membership, _ = setup()
    member = membership.ensure(0.0)
    done: list[float] = []
    membership.leave(1.0, done=done.append)
    assert member.state is ClassicState.CLOSED and done == [1.0]  # never joined


def test_pattern_matches_go_to_the_member() -> None:
    w, membership, _ = setup()
    membership.pattern_matched(frozenset({"t"}), 0.0)  # no member: nothing to tell
    member = membership.ensure(0.0)
    membership.pattern_matched(frozenset({"t"}), 0.0)
    assert w.subs.topics == frozenset({"t"}) and member.subscription == frozenset({"t"})
    w2, m848, _ = setup(group_protocol="consumer")
    m848.ensure(0.0)
    m848.pattern_matched(frozenset({"t"}), 0.0)
    assert w2.subs.topics == frozenset()  # KIP-848: the broker resolves the pattern


def test_member_timers_run_when_due() -> None:
    w, membership, _ = setup()
    assert membership.next_deadline() is None
    membership.run_due(0.0)  # no member: nothing
    member = membership.ensure(0.0)
    member.subscribe(frozenset({"t"}), now=0.0)
    member.poll(now=0.0)
    joins = w.send.of(m.JoinGroupRequest)
    assert len(joins) == 1
    joins[0].answer(m.JoinGroupResponse(error_code=16), 0.0)  # NOT_COORDINATOR: retry later
    due = membership.next_deadline()
    assert due is not None and due > 0.0
    membership.run_due(due - 0.01)
    assert len(w.send.of(m.JoinGroupRequest)) == 1
    membership.run_due(due)
    assert len(w.send.of(m.JoinGroupRequest)) == 2


def owned(w: World, *positions: tuple[Any, int]) -> None:
    w.subs.assign(frozenset(tp for tp, _ in positions))
    for tp, offset in positions:
        w.subs.committed_found(tp, OffsetAndMetadata(offset), None)
        w.subs.advance(tp, offset + 2, None)


def test_revocation_commits_first_then_lets_go() -> None:
    w, membership, _ = setup(default_api_timeout_ms=1000)
    owned(w, (T0, 1), (T1, 1))
    done: list[float] = []
    membership._revoke_hook(frozenset({T0}), 1.0, done.append)
    commit = w.send.pop()
    parts = commit.request.topics[0].partitions
    assert [(p.partition_index, p.committed_offset) for p in parts] == [(0, 3)]
    assert done == []
    # The commit keeps failing: the partitions are let go once it gives up, in time.
    commit.fail(ConnectionError("lost"), 1.0)
    t = 1.0
    while not done and t < 3.0:
        t += 0.1
        w.run_due(t)
        while w.send.sent:
            w.send.pop().fail(ConnectionError("lost"), t)
    assert done and done[0] <= 2.0 + 1e-9


def test_revocation_after_a_successful_commit() -> None:
    w, membership, _ = setup()
    owned(w, (T0, 1))
    done: list[float] = []
    membership._revoke_hook(frozenset({T0}), 1.0, done.append)
    commit = w.send.pop()
    commit.answer(m.OffsetCommitResponse(topics=[]), 1.2)
    assert done == [1.2]


def test_without_auto_commit_revocation_goes_straight_to_the_user() -> None:
    w, membership, _ = setup(enable_auto_commit=False)
    done: list[float] = []
    membership._revoke_hook(frozenset({T0}), 1.0, done.append)
    assert done == [1.0] and not w.send.sent


def test_a_listener_holds_the_revocation_until_done_or_the_poll_interval() -> None:
    w, membership, _ = setup(enable_auto_commit=False, max_poll_interval_ms=10_000)
    membership.await_revocation_ack = True
    done: list[float] = []
    membership._revoke_hook(frozenset({T0}), 1.0, done.append)
    revoking = w.events[-1]
    assert isinstance(revoking, PartitionsRevoking) and revoking.partitions == frozenset({T0})
    assert done == []
    membership.revocation_done(revoking.token, 2.0)
    membership.revocation_done(revoking.token, 2.5)  # once only
    assert done == [2.0]
    membership._revoke_hook(frozenset({T1}), 3.0, done.append)
    w.run_due(12.9)
    assert done == [2.0]
    w.run_due(13.0)  # the user never answered: KIP-62 bound
    assert done == [2.0, 13.0]


def test_a_closed_consumer_does_not_wait_for_the_listener() -> None:
    w, membership, _ = setup(enable_auto_commit=False)
    membership.await_revocation_ack = True
    membership.closed = True
    done: list[float] = []
    membership._revoke_hook(frozenset({T0}), 1.0, done.append)
    assert done == [1.0] and not w.events


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_the_members_get_the_consumers_settings(protocol: str) -> None:
    _, membership, _ = setup(
        group_protocol=protocol, group_instance_id="static-1", client_rack="r1"
    )
    member = membership.ensure(0.0)
    assert member.group_instance_id == "static-1" and member._rack == "r1"

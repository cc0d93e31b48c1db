"""ClassicMember alone, answered request by request: the state table of its
docstring, its timers (all in ``deadlines``), the LeaveGroup built for the
negotiated version, and every kind of answer to JoinGroup, SyncGroup and
Heartbeat."""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.client.metadata import TopicPartition
from kafkacore.errors import KafkaConnectionError
from kafkacore.group.base import (
    GroupFailed,
    GroupFatalError,
    MemberTimer,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from kafkacore.group.classic import ClassicMember, ClassicState
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.error_codes import GroupAuthorizationFailedError
from tests.group.scripted import Script, joined, synced

T0, T1, U0 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)
COUNTS = {"t": 2, "u": 1}


def member(
    *,
    assignors: tuple[str, ...] = ("range",),
    counts: bool = True,
    **kw: Any,
) -> tuple[ClassicMember, Script]:
    script = Script()
    mem = ClassicMember(
        script,
        group_id="g",
        now=0.0,
        assignors=assignors,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=60_000,
        heartbeat_interval_ms=1000,
        retry_backoff_ms=100,
        partition_counts=(lambda topics, now: {t: COUNTS[t] for t in topics}) if counts else None,
        **kw,
    )
    return mem, script


def stable(
    *tps: TopicPartition, topics: frozenset[str] = frozenset({"t"}), **kw: Any
) -> tuple[ClassicMember, Script]:
    """A member that joined and owns ``tps``."""
    mem, script = member(**kw)
    mem.poll(now=0.0)
    mem.subscribe(topics, now=0.0)
    script.take(m.JoinGroupRequest).answer(joined())
    script.take(m.SyncGroupRequest).answer(synced(*tps))
    assert mem.state is ClassicState.STABLE
    mem.pull_events()
    return mem, script


def test_queries_before_and_after_joining() -> None:
    mem, _ = member(group_instance_id="static")
    assert not mem.stable and not mem.is_leader
    assert mem.commit_identity() == (-1, "", "static")
    assert mem.commit_refusal() is None  # nothing to join: a simple commit may go
    mem2, _ = stable(T0)
    assert mem2.stable and mem2.commit_identity() == (1, "m1", None)


def test_join_sync_heartbeat_and_the_timers() -> None:
    mem, script = member()
    mem.poll(now=0.0)
    assert mem.deadlines.get(MemberTimer.POLL) == 60.0
    mem.subscribe(frozenset({"t"}), now=0.0)
    join = script.take(m.JoinGroupRequest)
    assert mem.state is ClassicState.JOINING and join.timeout_ms == 65_000
    assert mem.commit_refusal() is not None
    join.answer(joined(), 0.5)
    assert mem.state is ClassicState.SYNCING
    script.take(m.SyncGroupRequest).answer(synced(T0, T1), 1.0)
    assert mem.owned == frozenset({T0, T1})
    assert mem.pull_events() == [PartitionsAssigned(partitions=frozenset({T0, T1}), generation=1)]
    assert mem.deadlines.get(MemberTimer.SESSION) == 11.0
    assert mem.next_deadline() == mem.deadlines.get(MemberTimer.HEARTBEAT) == 2.0
    mem.handle_timeout(now=2.0)
    beat = script.take(m.HeartbeatRequest)
    assert beat.request.generation_id == 1
    assert mem.next_deadline() == 11.0  # the next heartbeat waits for this one's answer
    beat.answer(m.HeartbeatResponse(), 2.5)
    assert mem.deadlines.get(MemberTimer.SESSION) == 12.5
    mem.handle_timeout(now=2.9)
    assert not script.asked


def test_member_id_required_then_a_second_join() -> None:
    mem, script = member()
    mem.subscribe(frozenset({"t"}), now=0.0)
    script.take(m.JoinGroupRequest).answer(
        m.JoinGroupResponse(error_code=ErrorCode.MEMBER_ID_REQUIRED, member_id="given")
    )
    assert script.take(m.JoinGroupRequest).request.member_id == "given"


def test_the_leader_assigns_and_waits_for_metadata_when_it_must() -> None:
    mem, script = member()
    mem.subscribe(frozenset({"t"}), now=0.0)
    script.take(m.JoinGroupRequest).answer(
        joined("m1", leader="m1", members={"m1": ["t"], "m2": ["t"]})
    )
    assert mem.is_leader
    sync = script.take(m.SyncGroupRequest).request
    assert sorted(a.member_id for a in sync.assignments) == ["m1", "m2"]
    blind, script2 = member(counts=False)
    blind.subscribe(frozenset({"t"}), now=0.0)
    script2.take(m.JoinGroupRequest).answer(joined("m1", leader="m1", members={"m1": ["t"]}))
    assert blind.state is ClassicState.SYNCING and not script2.has(m.SyncGroupRequest)
    blind.on_metadata(now=1.0)  # still nothing known: still waiting
    assert not script2.has(m.SyncGroupRequest)


def test_a_leader_resumes_when_metadata_arrives() -> None:
    known: dict[str, int] = {}
    script = Script()
    mem = ClassicMember(
        script,
        group_id="g",
        now=0.0,
        assignors=("range",),
        partition_counts=lambda topics, now: dict(known) if known else None,
    )
    mem.subscribe(frozenset({"t"}), now=0.0)
    script.take(m.JoinGroupRequest).answer(joined("m1", leader="m1", members={"m1": ["t"]}))
    assert not script.has(m.SyncGroupRequest)
    known["t"] = 2
    mem.on_metadata(now=1.0)
    assert script.take(m.SyncGroupRequest).request.assignments
    mem.on_metadata(now=2.0)  # nothing pending any more
    assert not script.asked


@pytest.mark.parametrize("code", [ErrorCode.INVALID_GROUP_ID, ErrorCode.GROUP_AUTHORIZATION_FAILED])
def test_a_fatal_join_answer_fails_the_member(code: int) -> None:
    mem, script = member()
    mem.subscribe(frozenset({"t"}), now=0.0)
    script.take(m.JoinGroupRequest).answer(m.JoinGroupResponse(error_code=code))
    assert mem.state is ClassicState.FAILED
    (event,) = mem.pull_events()
    assert isinstance(event, GroupFailed) and isinstance(event.error, GroupFatalError)
    assert "JoinGroup answered" in str(event.error) and event.error.__cause__ is not None
    with pytest.raises(GroupFatalError, match="the member failed"):
        mem.subscribe(frozenset({"u"}), now=1.0)
    mem.handle_timeout(now=100.0)
    assert not script.asked
    done: list[float] = []
    mem.leave(now=2.0, done=done.append)
    assert done == [2.0]


def test_find_coordinator_refusing_the_group_fails_the_member() -> None:
    mem, script = member()
    mem.subscribe(frozenset({"t"}), now=0.0)
    script.take(m.JoinGroupRequest).fail(GroupAuthorizationFailedError("no"))
    assert mem.state is ClassicState.FAILED
    assert "FindCoordinator answered" in str(mem.error)


def test_a_failed_join_retries_after_the_backoff() -> None:
    mem, script = member()
    mem.subscribe(frozenset({"t"}), now=0.0)
    script.take(m.JoinGroupRequest).fail(KafkaConnectionError("lost"), 1.0)
    assert mem.state is ClassicState.UNJOINED
    assert mem.deadlines.get(MemberTimer.REJOIN) == pytest.approx(1.1)
    assert MemberTimer.SESSION not in mem.deadlines  # it owned nothing
    mem.handle_timeout(now=1.1)
    assert script.has(m.JoinGroupRequest)


def test_a_cooperative_member_keeps_its_session_across_a_failed_round() -> None:
    mem, script = stable(T0, assignors=("cooperative-sticky",))
    mem.request_rejoin(now=5.0)
    script.take(m.JoinGroupRequest).answer(
        m.JoinGroupResponse(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS), 6.0
    )
    assert mem.owned == frozenset({T0})
    assert mem.deadlines.get(MemberTimer.SESSION) == 15.0  # from when that JoinGroup went out


def test_unknown_member_on_join_loses_and_rejoins_at_once() -> None:
    mem, script = stable(T0, assignors=("cooperative-sticky",))
    mem.request_rejoin(now=5.0)
    script.take(m.JoinGroupRequest).answer(
        m.JoinGroupResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID), 6.0
    )
    assert mem.member_id == "" and mem.owned == frozenset()
    assert mem.pull_events() == [PartitionsLost(partitions=frozenset({T0}), generation=1)]
    assert mem.deadlines.get(MemberTimer.REJOIN) == 6.0


@pytest.mark.parametrize("code", [ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION])
def test_a_gone_generation_on_sync_loses_and_rejoins(code: int) -> None:
    mem, script = member()
    mem.subscribe(frozenset({"t"}), now=0.0)
    script.take(m.JoinGroupRequest).answer(joined())
    script.take(m.SyncGroupRequest).answer(synced(code=code), 1.0)
    assert mem.state is ClassicState.UNJOINED and mem.generation == -1
    assert (mem.member_id == "") is (code == ErrorCode.UNKNOWN_MEMBER_ID)
    assert mem.deadlines.get(MemberTimer.REJOIN) == 1.0


def test_sync_answers_retry_fail_or_rejoin() -> None:
    cases = [
        (ErrorCode.REBALANCE_IN_PROGRESS, ClassicState.UNJOINED, 1.0),
        (ErrorCode.NOT_COORDINATOR, ClassicState.UNJOINED, 1.1),
        (ErrorCode.GROUP_AUTHORIZATION_FAILED, ClassicState.FAILED, None),
    ]
    for code, state, rejoin in cases:
        mem, script = member()
        mem.subscribe(frozenset({"t"}), now=0.0)
        script.take(m.JoinGroupRequest).answer(joined())
        script.take(m.SyncGroupRequest).answer(synced(code=code), 1.0)
        assert mem.state is state
        assert mem.deadlines.get(MemberTimer.REJOIN) == (pytest.approx(rejoin) if rejoin else None)
    mem, script = member()
    mem.subscribe(frozenset({"t"}), now=0.0)
    script.take(m.JoinGroupRequest).answer(joined())
    script.take(m.SyncGroupRequest).fail(KafkaConnectionError("lost"), 1.0)
    assert mem.state is ClassicState.UNJOINED


def test_answers_of_an_older_round_are_dropped() -> None:
    mem, script = member()
    mem.subscribe(frozenset({"t"}), now=0.0)
    old = script.take(m.JoinGroupRequest)
    mem.leave(now=0.5)
    old.answer(joined())
    assert mem.state is ClassicState.CLOSED and not script.has(m.SyncGroupRequest)


@pytest.mark.parametrize(
    ("code", "state", "lost"),
    [
        (ErrorCode.REBALANCE_IN_PROGRESS, ClassicState.JOINING, False),
        (ErrorCode.ILLEGAL_GENERATION, ClassicState.UNJOINED, True),
        (ErrorCode.UNKNOWN_MEMBER_ID, ClassicState.UNJOINED, True),
        (ErrorCode.GROUP_AUTHORIZATION_FAILED, ClassicState.FAILED, True),
        (ErrorCode.COORDINATOR_NOT_AVAILABLE, ClassicState.STABLE, False),
    ],
)
def test_heartbeat_answers(code: int, state: ClassicState, lost: bool) -> None:
    mem, script = stable(T0)
    mem.handle_timeout(now=1.0)
    script.take(m.HeartbeatRequest).answer(m.HeartbeatResponse(error_code=code), 1.5)
    assert mem.state is state
    assert any(isinstance(e, PartitionsLost) for e in mem.pull_events()) is lost
    if state is ClassicState.STABLE:
        assert mem.deadlines.get(MemberTimer.HEARTBEAT) == pytest.approx(1.6)


def test_a_failed_heartbeat_is_sent_again_after_the_backoff() -> None:
    mem, script = stable(T0)
    mem.handle_timeout(now=1.0)
    script.take(m.HeartbeatRequest).fail(KafkaConnectionError("lost"), 1.2)
    assert mem.deadlines.get(MemberTimer.HEARTBEAT) == pytest.approx(1.3)
    mem.handle_timeout(now=1.3)
    assert script.has(m.HeartbeatRequest)


def test_the_session_runs_out_without_heartbeats() -> None:
    mem, script = stable(T0)
    mem.deadlines.cancel(MemberTimer.HEARTBEAT)
    mem.handle_timeout(now=10.0)
    assert mem.state is ClassicState.JOINING  # lost, and rejoined at once
    assert script.has(m.JoinGroupRequest)
    assert PartitionsLost(partitions=frozenset({T0}), generation=1) in mem.pull_events()


def test_not_polling_leaves_the_group_and_polling_rejoins() -> None:
    mem, script = stable(T0)
    mem.deadlines.cancel(MemberTimer.HEARTBEAT)
    mem.deadlines.cancel(MemberTimer.SESSION)
    mem.handle_timeout(now=60.0)  # KIP-62: max_poll_interval_ms without poll()
    leave = script.take(m.LeaveGroupRequest)
    assert leave.build is not None
    assert leave.request.members[0].reason == "poll interval passed"
    assert mem.state is ClassicState.UNJOINED and mem.member_id == ""
    assert mem.pull_events() == [PartitionsLost(partitions=frozenset({T0}), generation=1)]
    mem.poll(now=61.0)
    assert script.has(m.JoinGroupRequest)


def test_a_static_member_that_stops_polling_keeps_its_id_and_sends_no_leave() -> None:
    mem, script = stable(T0, group_instance_id="static")
    mem.deadlines.cancel(MemberTimer.HEARTBEAT)
    mem.deadlines.cancel(MemberTimer.SESSION)
    mem.handle_timeout(now=60.0)
    assert not script.has(m.LeaveGroupRequest) and mem.member_id == "m1"


def test_the_poll_deadline_of_a_member_that_never_joined_does_nothing() -> None:
    mem, script = member()
    mem.poll(now=0.0)
    mem.handle_timeout(now=60.0)
    assert MemberTimer.POLL not in mem.deadlines and not script.asked
    mem.poll(now=61.0)  # not left for the poll interval: no rejoin of its own
    assert not script.asked


def test_leave_is_built_for_the_negotiated_version() -> None:
    mem, script = stable(T0)
    done: list[float] = []
    mem.leave(now=3.0, done=done.append)
    assert mem.state is ClassicState.LEAVING
    assert mem.pull_events() == [PartitionsRevoked(partitions=frozenset({T0}), generation=1)]
    leave = script.take(m.LeaveGroupRequest)
    assert leave.build is not None
    old = leave.build(2)
    assert (old.group_id, old.member_id, old.members) == ("g", "m1", [])
    new = leave.build(5)
    assert [(x.member_id, x.reason) for x in new.members] == [("m1", "the consumer is closing")]
    leave.answer(m.LeaveGroupResponse(), 3.5)
    assert mem.state is ClassicState.CLOSED and done == [3.5]
    assert (mem.member_id, mem.generation) == ("", -1)
    mem.leave(now=4.0, done=done.append)  # closed: done at once
    assert done == [3.5, 4.0]
    mem.leave(now=4.0)
    with pytest.raises(GroupFatalError, match="the member is closed"):
        mem.subscribe(frozenset({"t"}), now=5.0)


def test_a_static_member_just_stops_on_leave() -> None:
    mem, script = stable(T0, group_instance_id="static")
    done: list[float] = []
    mem.leave(now=3.0, done=done.append)
    assert mem.state is ClassicState.CLOSED and not script.has(m.LeaveGroupRequest)
    assert done == [3.0]  # KIP-345: the coordinator keeps the static member's place


def test_request_rejoin_in_each_state() -> None:
    mem, script = member()
    mem.request_rejoin(now=0.0)  # nothing subscribed: stays out
    assert mem.state is ClassicState.UNJOINED and not script.asked
    mem.subscribe(frozenset({"t"}), now=0.0)
    mem.request_rejoin(now=0.1)  # joining already
    assert len(script.asked) == 1
    script.take(m.JoinGroupRequest).answer(joined())
    mem.request_rejoin(now=0.2)  # syncing: after the answer
    script.take(m.SyncGroupRequest).answer(synced(T0), 0.3)
    assert mem.state is ClassicState.JOINING  # rejoined once the SyncGroup was answered
    mem.leave(now=0.4)
    mem.request_rejoin(now=0.5)
    assert mem.state is ClassicState.LEAVING


def test_an_empty_subscription_gives_everything_up() -> None:
    mem, _ = stable(T0)
    mem.subscribe(frozenset(), now=1.0)
    assert mem.state is ClassicState.UNJOINED and mem.owned == frozenset()
    assert PartitionsRevoked(partitions=frozenset({T0}), generation=1) in mem.pull_events()
    mem2, _ = member()
    mem2.subscribe(frozenset(), now=0.0)  # nothing owned, nothing to do
    assert mem2.state is ClassicState.UNJOINED


def test_the_same_subscription_again_is_nothing_new() -> None:
    mem, script = stable(T0)
    mem.subscribe(frozenset({"t"}), now=1.0)
    assert mem.state is ClassicState.STABLE and not script.asked


def test_a_cooperative_member_revokes_what_it_no_longer_follows_first() -> None:
    mem, script = stable(T0, U0, topics=frozenset({"t", "u"}), assignors=("cooperative-sticky",))
    mem.subscribe(frozenset({"t"}), now=1.0)
    assert mem.owned == frozenset({T0})
    assert PartitionsRevoked(partitions=frozenset({U0}), generation=1) in mem.pull_events()
    join = script.take(m.JoinGroupRequest)
    assert join.request.reason == "rejoining"


def test_a_cooperative_sync_that_takes_partitions_away_rejoins_after_revoking() -> None:
    mem, script = stable(T0, T1, assignors=("cooperative-sticky",))
    mem.request_rejoin(now=1.0)
    script.take(m.JoinGroupRequest).answer(joined(generation=2))
    script.take(m.SyncGroupRequest).answer(synced(T0), 2.0)
    events = mem.pull_events()
    assert events == [
        PartitionsRevoked(partitions=frozenset({T1}), generation=2),
        PartitionsAssigned(partitions=frozenset(), generation=2),
    ]
    assert script.has(m.JoinGroupRequest)


def test_a_revocation_that_ends_after_the_round_moved_on_does_not_assign() -> None:
    hooks: list[Any] = []
    mem, script = stable(
        T0,
        T1,
        assignors=("cooperative-sticky",),
        revoke_hook=lambda tps, now, done: hooks.append(done),
    )
    mem.request_rejoin(now=1.0)
    script.take(m.JoinGroupRequest).answer(joined(generation=2))
    script.take(m.SyncGroupRequest).answer(synced(T0), 2.0)
    mem.leave(now=2.5)  # a new round before the user let go
    hooks[-1](3.0)
    assert not any(isinstance(e, PartitionsAssigned) for e in mem.pull_events())


def test_a_commit_fenced_for_the_held_generation_loses_and_rejoins() -> None:
    mem, _ = stable(T0)
    code = ErrorCode.UNKNOWN_MEMBER_ID
    assert not mem.on_commit_fenced(generation=0, member_id="m1", code=code, now=1.0)
    assert mem.on_commit_fenced(generation=1, member_id="m1", code=code, now=1.0)
    assert mem.member_id == "" and mem.deadlines.get(MemberTimer.REJOIN) == 1.0


def test_a_commit_answered_rebalance_in_progress_rejoins_at_once_keeping_partitions() -> None:
    """Java's ConsumerCoordinator: the group rebalances and the member has not
    joined yet; it joins now (not at its next heartbeat) and, cooperative,
    keeps what it owns and its generation (KIP-429)."""
    mem, script = stable(T0, T1, assignors=("cooperative-sticky",))
    code = ErrorCode.REBALANCE_IN_PROGRESS
    assert not mem.on_commit_fenced(generation=0, member_id="m1", code=code, now=1.0)
    assert mem.state is ClassicState.STABLE and not script.has(m.JoinGroupRequest)
    assert mem.on_commit_fenced(generation=1, member_id="m1", code=code, now=1.0)
    assert mem.state is ClassicState.JOINING and script.has(m.JoinGroupRequest)
    assert mem.owned == {T0, T1} and mem.generation == 1 and mem.member_id == "m1"
    assert not mem.pull_events()  # nothing lost, nothing revoked


def test_stale_sync_and_heartbeat_answers_are_dropped() -> None:
    mem, script = member()
    mem.subscribe(frozenset({"t"}), now=0.0)
    script.take(m.JoinGroupRequest).answer(joined())
    sync = script.take(m.SyncGroupRequest)
    mem.leave(now=0.5)  # a new round
    sync.answer(synced(T0), 1.0)
    assert mem.owned == frozenset() and mem.state is ClassicState.LEAVING
    mem2, script2 = stable(T0)
    mem2.handle_timeout(now=1.0)
    beat = script2.take(m.HeartbeatRequest)
    mem2.request_rejoin(now=1.1)
    beat.answer(m.HeartbeatResponse(error_code=ErrorCode.ILLEGAL_GENERATION), 1.2)
    assert mem2.state is ClassicState.JOINING  # the old round's answer changed nothing


def test_a_rejoin_due_while_joining_waits_for_the_join() -> None:
    mem, script = member()
    mem.subscribe(frozenset({"t"}), now=0.0)
    mem.deadlines.set(MemberTimer.REJOIN, 0.5)
    mem.handle_timeout(now=0.5)
    assert len(script.asked) == 1 and mem.state is ClassicState.JOINING


def test_an_eager_rebalance_joins_after_the_revocation_unless_the_round_moved() -> None:
    hooks: list[Any] = []
    mem, script = stable(T0, revoke_hook=lambda tps, now, done: hooks.append(done))
    mem.request_rejoin(now=1.0)  # eager: revoke everything first
    assert mem.state is ClassicState.PREPARING and not script.has(m.JoinGroupRequest)
    mem.leave(now=1.5)
    hooks[-1](2.0)
    assert not script.has(m.JoinGroupRequest)


def test_a_fenced_commit_with_illegal_generation_keeps_the_member_id() -> None:
    mem, _ = stable(T0)
    assert mem.on_commit_fenced(
        generation=1, member_id="m1", code=ErrorCode.ILLEGAL_GENERATION, now=1.0
    )
    assert mem.member_id == "m1" and mem.generation == -1


def test_leave_without_done_callbacks() -> None:
    mem, script = stable(T0)
    mem.leave(now=1.0)
    script.take(m.LeaveGroupRequest).answer(m.LeaveGroupResponse(), 1.5)
    assert mem.state is ClassicState.CLOSED
    never, _ = member()
    never.leave(now=0.0)  # never joined: closed at once, nothing to call
    assert never.state is ClassicState.CLOSED


def test_leaving_for_the_poll_interval_without_partitions() -> None:
    mem, script = stable()
    mem.deadlines.cancel(MemberTimer.HEARTBEAT)
    mem.deadlines.cancel(MemberTimer.SESSION)
    mem.handle_timeout(now=60.0)
    assert script.has(m.LeaveGroupRequest) and mem.pull_events() == []

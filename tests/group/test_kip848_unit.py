"""Kip848Member alone, answered heartbeat by heartbeat: joining, reconciling
towards the target assignment (revoke first, then add, then acknowledge),
fencing, the poll interval, leaving, and its timers in ``deadlines``."""

from __future__ import annotations

import random
import uuid
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
from kafkacore.group.kip848 import Kip848Member, Kip848State
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.error_codes import GroupAuthorizationFailedError
from kafkacore.protocol.messages.consumer_group_heartbeat_response import (
    Assignment,
    TopicPartitions,
)
from tests.group.scripted import Script

TID = uuid.UUID(int=1)
NEW_TID = uuid.UUID(int=2)
T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
HB = m.ConsumerGroupHeartbeatRequest


def member(**kw: Any) -> tuple[Kip848Member, Script, dict[uuid.UUID, str]]:
    names = {TID: "t"}
    script = Script()
    mem = Kip848Member(
        script,
        group_id="g",
        now=0.0,
        rng=random.Random(7),
        topic_names=names.get,
        topic_ids=lambda t: {v: k for k, v in names.items()}.get(t),
        rebalance_timeout_ms=60_000,
        retry_backoff_ms=100,
        **kw,
    )
    return mem, script, names


def answer(
    *, epoch: int = 1, parts: dict[uuid.UUID, list[int]] | None = None, code: int = 0, **kw: Any
) -> Any:
    assignment = None
    if parts is not None:
        assignment = Assignment(
            topic_partitions=[TopicPartitions(topic_id=t, partitions=ps) for t, ps in parts.items()]
        )
    kw.setdefault("heartbeat_interval_ms", 2000)
    return m.ConsumerGroupHeartbeatResponse(
        error_code=code, member_epoch=epoch, assignment=assignment, **kw
    )


def stable(*partitions: int, **kw: Any) -> tuple[Kip848Member, Script, dict[uuid.UUID, str]]:
    mem, script, names = member(**kw)
    mem.poll(now=0.0)
    mem.subscribe(frozenset({"t"}), now=0.0)
    mem.handle_timeout(now=0.0)
    script.take(HB).answer(answer(parts={TID: list(partitions)}), 0.0)
    mem.handle_timeout(now=0.0)  # the acknowledgement
    if script.has(HB):
        script.take(HB).answer(answer(), 0.0)
    assert mem.state is Kip848State.STABLE
    mem.pull_events()
    return mem, script, names


def test_the_member_id_is_drawn_from_the_injected_rng() -> None:
    a, _, _ = member()
    b, _, _ = member()
    assert a.member_id == b.member_id and uuid.UUID(a.member_id).version == 4


def test_joining_heartbeats_at_once_and_takes_the_first_assignment() -> None:
    mem, script, _ = member(group_instance_id="static", rack="r1", server_assignor="uniform")
    assert mem.commit_identity() == (-1, "", "static") and mem.generation == 0
    mem.subscribe(frozenset({"t"}), now=0.0)
    assert mem.state is Kip848State.JOINING and mem.deadlines.get(MemberTimer.HEARTBEAT) == 0.0
    mem.handle_timeout(now=0.0)
    hb = script.take(HB)
    req = hb.request
    assert (req.member_epoch, req.instance_id, req.rack_id) == (0, "static", "r1")
    assert (req.subscribed_topic_names, req.server_assignor) == (["t"], "uniform")
    assert mem.next_deadline() is None  # a heartbeat is in flight
    hb.answer(answer(epoch=3, parts={TID: [0, 1]}, member_id="from-broker"), 1.0)
    assert mem.member_id == "from-broker" and mem.stable and mem.generation == 3
    assert mem.commit_identity() == (3, "from-broker", "static")
    assert mem.pull_events() == [PartitionsAssigned(partitions=frozenset({T0, T1}), generation=3)]
    assert mem.deadlines.get(MemberTimer.HEARTBEAT) == 1.0  # acknowledge at once
    mem.handle_timeout(now=1.0)
    ack = script.take(HB).request
    assert [(t.topic_id, t.partitions) for t in ack.topic_partitions] == [(TID, [0, 1])]


def test_an_empty_first_answer_is_announced_and_the_interval_kept() -> None:
    mem, script, _ = member()
    mem.subscribe(frozenset({"t"}), now=0.0)
    mem.handle_timeout(now=0.0)
    script.take(HB).answer(answer(parts={}, heartbeat_interval_ms=0), 0.0)
    assert mem.pull_events() == [PartitionsAssigned(partitions=frozenset(), generation=1)]
    assert mem.deadlines.get(MemberTimer.HEARTBEAT) == 3.0  # the default interval


def test_reconciling_revokes_first_then_acknowledges() -> None:
    hooks: list[Any] = []
    mem, script, _ = stable(0, 1, revoke_hook=lambda tps, now, done: hooks.append((tps, done)))
    mem.handle_timeout(now=2.0)
    script.take(HB).answer(answer(epoch=2, parts={TID: [0]}), 2.0)
    assert mem.state is Kip848State.RECONCILING and hooks[-1][0] == frozenset({T1})
    mem.handle_timeout(now=4.0)  # a heartbeat while the hook runs
    script.take(HB).answer(answer(epoch=2), 4.0)  # no new target: keeps reconciling
    assert mem.state is Kip848State.RECONCILING
    hooks[-1][1](5.0)
    assert mem.pull_events() == [PartitionsRevoked(partitions=frozenset({T1}), generation=2)]
    assert mem.owned == frozenset({T0}) and mem.deadlines.get(MemberTimer.HEARTBEAT) == 5.0


def test_a_target_arriving_while_reconciling_is_taken_next() -> None:
    hooks: list[Any] = []
    mem, script, _ = stable(0, 1, revoke_hook=lambda tps, now, done: hooks.append(done))
    mem.handle_timeout(now=2.0)
    script.take(HB).answer(answer(epoch=2, parts={TID: [0]}), 2.0)
    mem.handle_timeout(now=4.0)
    script.take(HB).answer(answer(epoch=3, parts={TID: []}), 4.0)
    hooks[0](5.0)  # first revocation done: the newer target follows
    assert len(hooks) == 2
    hooks[1](6.0)
    assert mem.owned == frozenset()


def test_an_unknown_topic_id_waits_for_metadata() -> None:
    mem, script, names = stable(0)
    mem.handle_timeout(now=2.0)
    script.take(HB).answer(answer(epoch=2, parts={TID: [0], NEW_TID: [0]}), 2.0)
    assert mem.owned == frozenset({T0}) and mem.state is Kip848State.STABLE
    names[NEW_TID] = "new"
    mem.on_metadata(now=3.0)
    assert mem.owned == frozenset({T0, TopicPartition("new", 0)})
    mem.on_metadata(now=4.0)  # nothing pending
    assert mem.pull_events() == [
        PartitionsAssigned(partitions=frozenset({TopicPartition("new", 0)}), generation=2)
    ]


@pytest.mark.parametrize("code", [ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID])
def test_fenced_loses_everything_and_joins_again(code: int) -> None:
    mem, script, _ = stable(0)
    mem.handle_timeout(now=2.0)
    script.take(HB).answer(answer(code=code), 2.5)
    assert mem.state is Kip848State.JOINING and mem.member_epoch == 0
    assert mem.pull_events() == [PartitionsLost(partitions=frozenset({T0}), generation=1)]
    assert mem.deadlines.get(MemberTimer.HEARTBEAT) == 2.5


def test_fatal_answers_fail_the_member() -> None:
    mem, script, _ = stable(0)
    mem.handle_timeout(now=2.0)
    script.take(HB).answer(
        answer(code=ErrorCode.GROUP_AUTHORIZATION_FAILED, error_message="no ACL"), 2.5
    )
    assert mem.state is Kip848State.FAILED and MemberTimer.HEARTBEAT not in mem.deadlines
    events = mem.pull_events()
    assert isinstance(events[-1], GroupFailed) and "ConsumerGroupHeartbeat answered" in str(
        events[-1].error
    )
    with pytest.raises(GroupFatalError, match="the member failed"):
        mem.subscribe(frozenset({"t"}), now=3.0)
    mem.handle_timeout(now=10.0)
    assert not script.asked


def test_find_coordinator_refusing_the_group_fails_the_member() -> None:
    mem, script, _ = member()
    mem.subscribe(frozenset({"t"}), now=0.0)
    mem.handle_timeout(now=0.0)
    script.take(HB).fail(GroupAuthorizationFailedError("no"), 0.5)
    assert mem.state is Kip848State.FAILED and "FindCoordinator" in str(mem.error)


def test_errors_to_retry_wait_the_backoff() -> None:
    mem, script, _ = stable(0)
    mem.handle_timeout(now=2.0)
    script.take(HB).fail(KafkaConnectionError("lost"), 2.5)
    assert mem.deadlines.get(MemberTimer.HEARTBEAT) == pytest.approx(2.6)
    mem.handle_timeout(now=2.6)
    script.take(HB).answer(answer(code=ErrorCode.COORDINATOR_NOT_AVAILABLE), 3.0)
    assert mem.deadlines.get(MemberTimer.HEARTBEAT) == pytest.approx(3.1)
    assert mem.state is Kip848State.STABLE


def test_a_stale_answer_or_one_after_leaving_is_dropped() -> None:
    mem, script, _ = stable(0)
    mem.handle_timeout(now=2.0)
    hb = script.take(HB)
    mem.leave(now=2.1)
    hb.answer(answer(code=ErrorCode.FENCED_MEMBER_EPOCH), 2.2)
    assert mem.state is Kip848State.LEAVING


def test_a_regex_subscription_names_no_topics() -> None:
    mem, script, _ = member()
    mem.subscribe(frozenset(), now=0.0, pattern="t.*")
    mem.handle_timeout(now=0.0)
    req = script.take(HB).request
    assert req.subscribed_topic_names is None and req.subscribed_topic_regex == "t.*"


def test_rejoin_requests_only_move_the_heartbeat_of_a_live_member() -> None:
    mem, _, _ = member()
    mem.request_rejoin(now=1.0)
    assert MemberTimer.HEARTBEAT not in mem.deadlines
    mem2, _, _ = stable(0)
    mem2.request_rejoin(now=7.0)
    assert mem2.deadlines.get(MemberTimer.HEARTBEAT) == 7.0


def test_fenced_commits_heartbeat_at_once_only_for_the_held_epoch() -> None:
    mem, _, _ = stable(0)
    assert mem.commit_refusal() is None
    assert not mem.on_commit_fenced(generation=1, member_id="other", code=110, now=1.0)
    assert mem.on_commit_fenced(generation=1, member_id=mem.member_id, code=110, now=1.0)
    assert mem.deadlines.get(MemberTimer.HEARTBEAT) == 1.0


def test_not_polling_loses_the_membership_and_polling_joins_again() -> None:
    mem, script, _ = stable(0, group_instance_id="static")
    mem.handle_timeout(now=60.0)
    leave = script.take(HB).request
    assert leave.member_epoch == -2  # a static member's temporary leave (KIP-345)
    assert mem.state is Kip848State.UNSUBSCRIBED and not mem.next_deadline()
    assert mem.pull_events() == [PartitionsLost(partitions=frozenset({T0}), generation=1)]
    mem.handle_timeout(now=61.0)  # unsubscribed: nothing to do
    assert not script.asked
    mem.poll(now=62.0)
    assert mem.state is Kip848State.JOINING and mem.deadlines.get(MemberTimer.HEARTBEAT) == 62.0


def test_leave_revokes_and_sends_the_leave_epoch() -> None:
    mem, script, _ = stable(0)
    done: list[float] = []
    mem.leave(now=3.0, done=done.append)
    assert mem.pull_events() == [PartitionsRevoked(partitions=frozenset({T0}), generation=1)]
    req = script.take(HB)
    assert req.request.member_epoch == -1
    mem.handle_timeout(now=100.0)  # leaving: no heartbeats
    assert not script.asked
    req.answer(answer(epoch=-1), 3.5)
    assert mem.state is Kip848State.CLOSED and done == [3.5] and mem.member_epoch == 0
    mem.leave(now=4.0, done=done.append)
    mem.leave(now=4.0)
    assert done == [3.5, 4.0]
    with pytest.raises(GroupFatalError, match="the member is closed"):
        mem.subscribe(frozenset({"t"}), now=5.0)


def test_leaving_before_joining_closes_at_once() -> None:
    mem, script, _ = member()
    done: list[float] = []
    mem.leave(now=1.0, done=done.append)
    assert mem.state is Kip848State.CLOSED and done == [1.0] and not script.asked
    mem2, script2, _ = stable(0)
    mem2.subscribe(frozenset(), now=2.0)  # an empty subscription leaves
    assert mem2.state is Kip848State.LEAVING
    script2.take(HB).answer(answer(epoch=-1), 2.5)
    assert mem2.state is Kip848State.CLOSED
    mem3, _, _ = member()
    mem3.subscribe(frozenset({"t"}), now=0.0)
    mem3.leave(now=1.0)  # joining, no epoch yet: nothing to tell the coordinator
    assert mem3.state is Kip848State.CLOSED


def test_subscribing_again_while_joined_keeps_the_epoch() -> None:
    mem, _, _ = stable(0)
    mem.subscribe(frozenset({"t", "u"}), now=5.0)
    assert mem.state is Kip848State.STABLE and mem.member_epoch == 1
    assert mem.deadlines.get(MemberTimer.HEARTBEAT) == 5.0


def test_owned_partitions_of_unknown_topics_are_not_reported() -> None:
    mem, script, names = stable(0)
    del names[TID]
    mem.handle_timeout(now=2.0)
    assert script.take(HB).request.topic_partitions == []


def test_a_revocation_finished_after_the_member_was_fenced_changes_nothing() -> None:
    hooks: list[Any] = []
    mem, script, _ = stable(0, 1, revoke_hook=lambda tps, now, done: hooks.append(done))
    mem.handle_timeout(now=2.0)
    script.take(HB).answer(answer(epoch=2, parts={TID: [0]}), 2.0)
    mem.handle_timeout(now=4.0)
    script.take(HB).answer(answer(code=ErrorCode.FENCED_MEMBER_EPOCH), 4.0)
    mem.pull_events()
    hooks[0](5.0)
    assert mem.pull_events() == [] and mem.owned == frozenset()


def test_an_answer_after_leaving_for_the_poll_interval_is_ignored() -> None:
    mem, script, _ = stable(0)
    mem.handle_timeout(now=2.0)
    hb = script.take(HB)
    mem.leave_for_poll(2.5)
    hb.answer(answer(epoch=5, parts={TID: [1]}), 3.0)
    assert mem.state is Kip848State.UNSUBSCRIBED and mem.member_epoch == 0


def test_no_heartbeat_before_it_is_due() -> None:
    mem, script, _ = stable(0)
    mem.handle_timeout(now=1.0)  # the next one is due at 2.0
    assert not script.asked


def test_a_target_waiting_for_topic_names_is_dropped_by_leaving() -> None:
    # Before the transition table, metadata arriving after leave() went on
    # reconciling the old target: a closed member became RECONCILING, then
    # STABLE, and announced partitions it had just given up.
    mem, script, names = stable(0)
    mem.handle_timeout(now=2.0)
    script.take(HB).answer(answer(epoch=2, parts={TID: [0], NEW_TID: [0]}), 2.0)
    mem.leave(now=3.0)
    script.take(HB).answer(answer(epoch=-1), 3.1)
    assert mem.state is Kip848State.CLOSED
    mem.pull_events()
    names[NEW_TID] = "new"
    mem.on_metadata(now=4.0)
    assert mem.state is Kip848State.CLOSED and not mem.owned and mem.pull_events() == []

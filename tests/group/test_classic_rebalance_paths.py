"""Classic members through the exact interleavings issue 10 (fault 9) found
with members that commit after every poll, against the scripted coordinator:

- a commit sent in generation N and answered ILLEGAL_GENERATION while the
  member is already syncing generation N+1 must not abandon that SyncGroup;
- commits are refused locally while the member rebalances;
- every successful SyncGroup ends in one PartitionsAssigned, the empty set
  included, after the revocation it brings (Java and librdkafka call
  onPartitionsAssigned after every rebalance, revocation first);
- a member the coordinator dropped while its JoinGroup was parked loses what
  it owned before joining afresh (it may be someone else's already).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkacore.group import (
    ClassicState,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from kafkacore.group.base import MemberTimer
from kafkacore.protocol import messages as m
from tests.group.test_classic_properties import Harness


def deliver_where(h: Harness, pred: Callable[[Any], bool]) -> None:
    """Deliver the first in-flight request (in order) that ``pred`` accepts."""
    for i, item in enumerate(h.coord.inflight):
        if pred(item):
            h.coord.deliver(i)
            h.absorb()
            return
    raise AssertionError(
        "no such request in flight: "
        + ", ".join(f"{x.owner}:{type(x.request).__name__}" for x in h.coord.inflight)
    )


def of(owner: int, kind: type) -> Callable[[Any], bool]:
    return lambda item: item.owner == owner and isinstance(item.request, kind)


def heartbeat_now(h: Harness, idx: int) -> None:
    member = h.members[idx]
    h.coord.now = max(h.coord.now, member.deadlines.get(MemberTimer.HEARTBEAT) or h.coord.now)
    member.handle_timeout(now=h.coord.now)
    deliver_where(h, of(idx, m.HeartbeatRequest))


def test_late_illegal_generation_does_not_abandon_the_sync_in_flight() -> None:
    h = Harness(("cooperative-sticky",))
    h.add()
    h.settle(commits=False)
    first = h.members[0]
    assert first.state is ClassicState.STABLE and first.generation == 1
    h.commit(0)  # sent in generation 1, held in flight across the rebalance
    h.add()
    deliver_where(h, of(1, m.JoinGroupRequest))  # MEMBER_ID_REQUIRED
    deliver_where(h, of(1, m.JoinGroupRequest))  # parked: the group prepares a rebalance
    heartbeat_now(h, 0)  # REBALANCE_IN_PROGRESS: member 0 rejoins
    assert first.state is ClassicState.JOINING
    assert first.commit_refusal() is not None, "a commit would go out while joining"
    deliver_where(h, of(0, m.JoinGroupRequest))  # the join completes: generation 2
    assert first.state is ClassicState.SYNCING and first.generation == 2
    rounds = first._round
    deliver_where(h, of(0, m.OffsetCommitRequest))  # ILLEGAL_GENERATION, about generation 1
    assert first.state is ClassicState.SYNCING and first._round == rounds
    assert any(isinstance(i.request, m.SyncGroupRequest) for i in h.coord.inflight if i.owner == 0)
    h.settle()
    # The cooperative protocol needs a second round to hand the freed
    # partitions over; nothing more after that.
    assert h.coord.generation == 3
    h.stay_stable()


def test_every_sync_ends_in_one_assignment_even_an_empty_one_after_the_revocation() -> None:
    h = Harness(("cooperative-sticky",))
    h.add()
    h.add()
    h.settle(commits=False)
    seen: list[list[object]] = [[], []]
    original = h.absorb

    def absorb() -> None:
        for i in (0, 1):
            seen[i].extend(h.members[i]._events)
        original()

    h.absorb = absorb  # type: ignore[method-assign]
    syncs = [0, 0]
    deliver = h.coord.deliver

    def counting(index: int) -> None:
        item = h.coord.inflight[index]
        if isinstance(item.request, m.SyncGroupRequest) and item.owner in (0, 1):
            syncs[item.owner] += 1
        deliver(index)

    h.coord.deliver = counting  # type: ignore[method-assign]
    h.add()
    h.settle(commits=False)
    for i in (0, 1):
        kinds = [type(e) for e in seen[i]]
        assigned = [e for e in seen[i] if isinstance(e, PartitionsAssigned)]
        # Two rounds (revoke, then hand over), each answered once.
        assert len(assigned) == syncs[i] == 2, (i, kinds, syncs)
        assert all(not e.partitions for e in assigned), "the old members gained nothing"
        if PartitionsRevoked in kinds:
            revoked_at = kinds.index(PartitionsRevoked)
            assert kinds[revoked_at + 1] is PartitionsAssigned, "revocation first, then assignment"


def test_member_dropped_while_joining_loses_its_partitions_before_rejoining() -> None:
    h = Harness(("cooperative-sticky",))
    h.add()
    h.settle(commits=False)
    first = h.members[0]
    owned = frozenset(first.owned)
    assert owned
    h.add()
    deliver_where(h, of(1, m.JoinGroupRequest))
    deliver_where(h, of(1, m.JoinGroupRequest))
    heartbeat_now(h, 0)
    assert first.state is ClassicState.JOINING
    assert not first._events
    h.coord.expire(first.member_id)  # the broker drops it before its JoinGroup arrives
    lost: list[object] = []
    original = h.absorb

    def absorb() -> None:
        lost.extend(e for e in first._events if isinstance(e, PartitionsLost))
        original()

    h.absorb = absorb  # type: ignore[method-assign]
    deliver_where(h, of(0, m.JoinGroupRequest))  # UNKNOWN_MEMBER_ID
    assert lost and lost[0].partitions == owned  # type: ignore[attr-defined]
    assert not first.owned and first.member_id == ""
    h.settle()


def test_a_long_join_does_not_expire_the_member_locally() -> None:
    """The coordinator keeps a member alive while it holds its JoinGroup (here
    waiting for a slow newcomer), so the member must not time its session out
    meanwhile: that used to drop the JoinGroup and start the join again."""
    h = Harness(("cooperative-sticky",))
    h.add()
    h.settle(commits=False)
    first = h.members[0]
    owned = frozenset(first.owned)
    h.add()
    deliver_where(h, of(1, m.JoinGroupRequest))  # MEMBER_ID_REQUIRED
    deliver_where(h, of(1, m.JoinGroupRequest))  # parked: a rebalance is prepared
    heartbeat_now(h, 0)  # REBALANCE_IN_PROGRESS
    deliver_where(h, of(0, m.JoinGroupRequest))
    assert first.state is ClassicState.JOINING or first.state is ClassicState.SYNCING
    rounds = first._round
    h.coord.joins.clear()  # the coordinator holds the joins for as long as it likes
    h.coord.inflight.clear()
    for _ in range(10):  # 30 s: three session timeouts
        h.coord.now += 3.0
        first.handle_timeout(now=h.coord.now)
    assert first._round == rounds and first.owned == owned
    assert not any(isinstance(e, PartitionsLost) for e in first._events)


def test_partitions_lost_while_their_revocation_waits_are_not_revoked_again() -> None:
    """A listener's revocation can take a while; if the member loses its
    partitions meanwhile (session expiry), they were announced as lost and
    the late end of the revocation must not announce them again."""
    h = Harness(("range",))
    h.add()
    h.settle(commits=False)
    first = h.members[0]
    pending: list[Any] = []
    first.revoke_hook = lambda partitions, now, done: pending.append(done)
    first.request_rejoin(now=h.coord.now)  # eager: revoke everything, waiting for the hook
    assert pending and first.state is ClassicState.PREPARING
    first.deadlines.set(MemberTimer.SESSION, h.coord.now)  # the session runs out meanwhile
    first.handle_timeout(now=h.coord.now)
    h.absorb()  # PartitionsLost for all of them
    assert not first.owned
    pending[0](h.coord.now)  # the listener finally returns
    assert not [e for e in first._events if isinstance(e, PartitionsRevoked)]
    h.absorb()


def _step(h: Harness) -> None:
    """Deliver the oldest request in flight, else run the next timer."""
    if h.coord.inflight:
        h.coord.deliver(0)
        h.absorb()
        return
    due = [d for member in h.members if (d := member.next_deadline()) is not None]
    h.tick(max(min(due) - h.coord.now, 0.0))


def test_a_late_revocation_is_finished_before_the_member_rejoins() -> None:
    """Issue 25: the user's thread of a starved process ends a cooperative
    revocation late; meanwhile another member rejoins and the late member's
    heartbeat is answered REBALANCE_IN_PROGRESS. Rejoining then claimed the
    partition being given up and dropped the round's assignment: once the
    revocation ended nobody owned that partition and no round came to
    hand it over. The member must finish the revocation, then rejoin."""
    h = Harness(("cooperative-sticky",))
    h.add()
    h.add()
    h.settle(commits=False)
    late = h.members[1]
    pending: list[Any] = []
    late.revoke_hook = lambda partitions, now, done: pending.append((partitions, done))
    h.add()
    for _ in range(200):
        if pending:
            break
        _step(h)
    assert pending, "the newcomer's first round took nothing from member 1"
    giving_up = pending[0][0]
    answered = 0
    while answered < 3 and late.state is ClassicState.STABLE:
        before = late._heartbeat_in_flight  # three heartbeats answered meanwhile
        _step(h)
        answered += before and not late._heartbeat_in_flight
    assert late.state is ClassicState.STABLE and giving_up <= late.owned, (
        f"member 1 went {late.state.value} while still giving {sorted(giving_up)} up"
    )
    assert h.coord.state == "preparing", "the other members rejoined: a rebalance waits"
    events: list[object] = []
    original = h.absorb

    def absorb() -> None:
        events.extend(late._events)
        original()

    h.absorb = absorb  # type: ignore[method-assign]
    pending.pop(0)[1](h.coord.now)  # the listener finally returns
    h.absorb()
    assert [type(e) for e in events] == [PartitionsRevoked, PartitionsAssigned], events
    assert late.state is ClassicState.JOINING and not giving_up & late.owned
    h.settle()  # every partition owned by one member
    h.stay_stable()

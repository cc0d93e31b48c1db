"""ClassicMember machines in one group against a scripted coordinator, over
random interleavings (hypothesis): joins, leaves, session expiry, coordinator
moves, lost connections, heartbeat errors, time jumps, and OffsetCommits sent
the way the consumer core sends them (refused while the member rebalances,
fenced answers handed to ``on_commit_fenced``), delivered in any order. No
sockets, no sleeps: time only moves when a step says so.

Invariants after every step:
- a member's events (assigned / revoked / lost) add up to what it owns, and
  never assign a partition it already owns nor take one it does not own;
- members stable in the coordinator's current generation own disjoint sets;
- a commit the coordinator accepts covers only partitions the sender was
  assigned in that generation;
- a fenced commit answered after the member moved on (new generation, or a
  rebalance under way) changes nothing: no new round, no SyncGroup dropped;
and at the end, delivering requests in order, jumping time and committing
after every step (as a consumer that commits after each poll), the group
settles - every partition has exactly one owner - and then stays in its
generation: commits alone never start a rebalance.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkacore.assignors import RebalanceProtocol
from kafkacore.client.metadata import TopicPartition
from kafkacore.group import (
    ClassicMember,
    ClassicState,
    GroupFailed,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from kafkacore.group.base import MemberTimer
from kafkacore.protocol import messages as m
from kafkacore.protocol.consumer_protocol import decode_assignment
from kafkacore.protocol.messages.offset_commit_request import (
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from tests.group.sim import Coordinator, Inflight

PARTITIONS = {"t1": 5, "t2": 3}
ALL = {TopicPartition(t, p) for t, n in PARTITIONS.items() for p in range(n)}


class Harness:
    def __init__(self, assignors: tuple[str, ...]) -> None:
        self.coord = Coordinator()
        self.assignors = assignors
        self.members: list[ClassicMember] = []
        self.owned: list[set[TopicPartition]] = []
        self.live: list[bool] = []
        self.refused = 0
        self.checked_commits = 0
        self.committing: set[int] = set()  # one commit in flight per member (commitSync)
        self.committed_at: dict[int, float] = {}  # one commit per poll, one poll per instant

    def add(self) -> None:
        idx = len(self.members)
        member = ClassicMember(
            self.coord.requester(idx),
            group_id="g",
            now=self.coord.now,
            assignors=self.assignors,
            session_timeout_ms=10000,
            rebalance_timeout_ms=60000,
            heartbeat_interval_ms=3000,
            partition_counts=lambda topics, now: {t: PARTITIONS.get(t, 0) for t in topics},
        )
        self.members.append(member)
        self.owned.append(set())
        self.live.append(True)
        member.poll(now=self.coord.now)
        member.subscribe(frozenset(PARTITIONS), now=self.coord.now)
        self.absorb()

    def absorb(self) -> None:
        for i, member in enumerate(self.members):
            owned = self.owned[i]
            for event in member.pull_events():
                if isinstance(event, PartitionsAssigned):
                    assert not (event.partitions & owned), f"member {i} assigned twice"
                    owned |= event.partitions
                elif isinstance(event, PartitionsRevoked | PartitionsLost):
                    assert event.partitions <= owned, f"member {i} gave up what it lacks"
                    owned -= event.partitions
                elif isinstance(event, GroupFailed):
                    raise AssertionError(f"member {i} failed: {event.error}")
            assert owned == set(member.owned), f"member {i}: events disagree with owned"

    def commit(self, idx: int) -> None:
        """Member ``idx`` commits what it owns, as ConsumerCore does."""
        member = self.members[idx]
        if not self.live[idx] or not member.owned or idx in self.committing:
            return
        if self.committed_at.get(idx) == self.coord.now:
            return
        self.committed_at[idx] = self.coord.now
        rebalancing = member.state in (ClassicState.JOINING, ClassicState.SYNCING)
        if member.commit_refusal() is not None:
            self.refused += 1
            return
        # Java refuses too: the generation is about to be replaced.
        assert not rebalancing, f"member {idx} would commit while {member.state.value}"
        generation, member_id, instance_id = member.commit_identity()
        topics: dict[str, list[int]] = {}
        for tp in sorted(member.owned):
            topics.setdefault(tp.topic, []).append(tp.partition)
        request = m.OffsetCommitRequest(
            group_id="g",
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            group_instance_id=instance_id,
            topics=[
                OffsetCommitRequestTopic(
                    name=t,
                    partitions=[
                        OffsetCommitRequestPartition(partition_index=p, committed_offset=1)
                        for p in ps
                    ],
                )
                for t, ps in topics.items()
            ],
        )

        def done(resp: Any, now: float) -> None:
            self.committing.discard(idx)
            if isinstance(resp, BaseException) or not self.live[idx]:
                return
            code = resp.topics[0].partitions[0].error_code
            if code not in (22, 25):
                return
            moved_on = member.generation != generation or member.state in (
                ClassicState.JOINING,
                ClassicState.SYNCING,
            )

            def snapshot() -> tuple[Any, ...]:
                pending = (member.deadlines.get(MemberTimer.REJOIN), member._rejoin_after_sync)
                return (member._round, member.state, member.generation, pending)

            before = snapshot()
            member.on_commit_fenced(generation=generation, member_id=member_id, code=code, now=now)
            if moved_on:
                after = snapshot()
                assert after == before, (
                    f"member {idx}: a commit fenced for generation {generation} "
                    f"(answered {code}) after it moved on changed {before} to {after}"
                )
            self.absorb()

        self.committing.add(idx)
        self.coord.inflight.append(Inflight(idx, request, done))

    def check_commits(self) -> None:
        coord = self.coord
        for member_id, generation, parts, blob in coord.commits[self.checked_commits :]:
            _, assignment = decode_assignment(blob) if blob else (0, None)
            given = {
                (t.topic, p)
                for t in (assignment.assigned_partitions if assignment is not None else [])
                for p in t.partitions
            }
            assert parts <= given, (
                f"{member_id} committed {sorted(parts - given)} in generation {generation} "
                "without being assigned them"
            )
        self.checked_commits = len(coord.commits)

    def check_safety(self) -> None:
        self.check_commits()
        coord = self.coord
        for i, member in enumerate(self.members):
            if member.protocol is RebalanceProtocol.EAGER and member.state in (
                ClassicState.JOINING,
                ClassicState.SYNCING,
            ):
                assert not member.owned, f"eager member {i} joins while owning partitions"
        if coord.state != "stable":
            return
        seen: set[TopicPartition] = set()
        for i, member in enumerate(self.members):
            if (
                self.live[i]
                and member.state is ClassicState.STABLE
                and member.generation == coord.generation
                and member.member_id in coord.members
            ):
                assert not (seen & member.owned), f"partition owned twice: {seen & member.owned}"
                seen |= member.owned

    def tick(self, dt: float) -> None:
        self.coord.tick(self.coord.now + dt)
        for i, member in enumerate(self.members):
            if self.live[i]:
                member.handle_timeout(now=self.coord.now)
        self.absorb()

    def settle(self, *, commits: bool = True) -> None:
        for _ in range(3000):
            live = [m for i, m in enumerate(self.members) if self.live[i]]
            # Settled means nothing is still on its way to the coordinator: a
            # JoinGroup of a member that left since is a membership change
            # still to come, not something commits would cause.
            if not self.coord.inflight and self.settled(live):
                return
            for i, member in enumerate(self.members):
                if self.live[i]:
                    member.poll(now=self.coord.now)
                    if commits:
                        self.commit(i)  # a consumer committing after every poll
            if self.coord.inflight:
                self.coord.deliver(0)
                self.absorb()
                continue
            deadlines = [d for m in live if (d := m.next_deadline()) is not None]
            assert deadlines, "nothing in flight and no timer: the group is stuck"
            self.tick(max(min(deadlines) - self.coord.now, 0.0))
            self.check_safety()
        raise AssertionError(
            "group did not settle: "
            + ", ".join(f"{m.state.value}/g{m.generation}" for m in self.members)
            + f"; coordinator {self.coord.state} g{self.coord.generation}"
        )

    def settled(self, live: list[ClassicMember]) -> bool:
        if not live or self.coord.state != "stable":
            return False
        if any(
            m.state is not ClassicState.STABLE or m.generation != self.coord.generation
            for m in live
        ):
            return False
        owners: dict[TopicPartition, int] = {}
        for i, member in enumerate(live):
            for tp in member.owned:
                assert tp not in owners, f"{tp} owned by two members after settling"
                owners[tp] = i
        return set(owners) == ALL

    def stay_stable(self, rounds: int = 40) -> None:
        """Committing after every poll with no membership change: no new round."""
        generation = self.coord.generation
        for _ in range(rounds):
            for i, member in enumerate(self.members):
                if self.live[i]:
                    member.poll(now=self.coord.now)
                    self.commit(i)
            while self.coord.inflight:
                self.coord.deliver(0)
                self.absorb()
            self.tick(1.0)
            self.check_safety()
        assert self.coord.generation == generation, (
            f"commits alone moved the group from generation {generation} to {self.coord.generation}"
        )


actions = st.lists(
    st.one_of(
        st.tuples(st.just("deliver"), st.integers(0, 50)),
        st.tuples(st.just("commit"), st.integers(0, 5)),
        st.tuples(st.just("fail"), st.integers(0, 50)),
        st.tuples(st.just("notcoord"), st.integers(0, 50)),
        st.tuples(st.just("tick"), st.floats(0.0, 12.0)),
        st.tuples(st.just("expire"), st.integers(0, 5)),
        st.tuples(st.just("leave"), st.integers(0, 5)),
        st.tuples(st.just("add"), st.just(0)),
        st.tuples(st.just("deliver"), st.integers(0, 50)),
        st.tuples(st.just("deliver"), st.integers(0, 50)),
    ),
    max_size=80,
)


@pytest.mark.parametrize(
    "assignors", [("range",), ("cooperative-sticky",), ("roundrobin",), ("sticky",)]
)
@settings(max_examples=150, deadline=None)  # 2 shared cores: no wall-clock deadline
@given(steps=actions, start=st.integers(1, 3))
def test_classic_group_random_interleavings(
    assignors: tuple[str, ...], steps: list[tuple[str, Any]], start: int
) -> None:
    h = Harness(assignors)
    for _ in range(start):
        h.add()
    for kind, arg in steps:
        coord = h.coord
        if kind in ("deliver", "fail", "notcoord") and coord.inflight:
            index = arg % len(coord.inflight)
            getattr(
                coord,
                "deliver" if kind == "deliver" else kind.replace("notcoord", "not_coordinator"),
            )(index)
            h.absorb()
        elif kind == "tick":
            h.tick(arg)
        elif kind == "expire":
            live = [m for i, m in enumerate(h.members) if h.live[i] and m.member_id]
            if live:
                coord.expire(live[arg % len(live)].member_id)
        elif kind == "leave" and sum(h.live) > 1:
            idx = [i for i, alive in enumerate(h.live) if alive][arg % sum(h.live)]
            h.members[idx].leave(now=coord.now)
            h.live[idx] = False
            h.absorb()
        elif kind == "add" and len(h.members) < 5:
            h.add()
        elif kind == "commit":
            h.commit(arg % len(h.members))
        h.check_safety()
    h.settle()
    h.stay_stable()


def test_member_id_required_then_stable_with_one_member() -> None:
    h = Harness(("range",))
    h.add()
    h.settle()
    member = h.members[0]
    assert member.member_id == "member-1"
    assert member.owned == frozenset(ALL)
    assert member.is_leader


def test_cooperative_rebalance_moves_only_what_must_move() -> None:
    h = Harness(("cooperative-sticky",))
    h.add()
    h.settle()
    first = set(h.members[0].owned)
    h.add()
    h.settle()
    # KIP-429: the first member kept part of what it had and never lost all of it.
    assert h.members[0].owned and set(h.members[0].owned) <= first
    assert len(h.members[0].owned) + len(h.members[1].owned) == len(ALL)


def test_eager_revokes_everything_before_rejoining() -> None:
    h = Harness(("range",))
    h.add()
    h.settle()
    revoked: list[frozenset[TopicPartition]] = []
    original = h.absorb

    def absorb() -> None:
        for event in list(h.members[0]._events):
            if isinstance(event, PartitionsRevoked):
                revoked.append(event.partitions)
        original()

    h.absorb = absorb  # type: ignore[method-assign]
    h.add()
    h.settle()
    assert revoked and revoked[0] == frozenset(ALL)


def test_static_member_does_not_send_leave() -> None:
    h = Harness(("range",))
    h.add()
    h.settle()
    member = h.members[0]
    member.group_instance_id = "static-1"
    member.leave(now=h.coord.now)
    assert member.state is ClassicState.CLOSED
    assert not any(type(i.request).__name__ == "LeaveGroupRequest" for i in h.coord.inflight)


def test_poll_interval_expiry_gives_partitions_up_and_poll_rejoins() -> None:
    h = Harness(("range",))
    h.add()
    h.settle()
    member = h.members[0]
    # Jump past max_poll_interval (rebalance timeout 60 s) without polling,
    # answering heartbeats so the session stays alive.
    for _ in range(40):
        h.coord.now += 2.0
        member.handle_timeout(now=h.coord.now)
        while h.coord.inflight:
            h.coord.deliver(0)
        h.absorb()
        if member.state is ClassicState.UNJOINED:
            break
    assert member.state is ClassicState.UNJOINED and not member.owned
    h.settle()
    assert member.owned == frozenset(ALL)


def test_session_expiry_without_heartbeat_answers_loses_partitions() -> None:
    h = Harness(("range",))
    h.add()
    h.settle()
    member = h.members[0]
    lost: list[object] = []
    for _ in range(10):
        h.coord.now += 3.0
        member.poll(now=h.coord.now)
        member.handle_timeout(now=h.coord.now)
        lost.extend(e for e in member._events if isinstance(e, PartitionsLost))
        h.absorb()  # requests stay in flight: the coordinator never answers
    assert lost, "no PartitionsLost after the session timeout passed"
    h.coord.inflight.clear()
    h.settle()


def test_eager_sticky_rejoin_carries_the_previous_assignment() -> None:
    """Eager members revoke everything before rejoining, so ``owned`` is empty
    then; the sticky user data must still carry the last assignment, or the
    leader cannot keep anything in place (Java's StickyAssignor keeps its own
    copy in onAssignment for this reason)."""
    from kafkacore.assignors import decode_sticky_user_data
    from kafkacore.protocol.consumer_protocol import decode_subscription

    h = Harness(("sticky",))
    h.add()
    h.settle()
    first = frozenset(h.members[0].owned)
    assert first == frozenset(ALL)
    h.add()
    h.settle()
    sent = h.coord.members[h.members[0].member_id].protocols
    ((name, metadata),) = sent
    assert name == "sticky"
    _, sub = decode_subscription(metadata)
    assert sub.user_data is not None
    carried = decode_sticky_user_data(bytes(sub.user_data))
    assert carried.generation == h.members[0].generation - 1  # the generation it was given
    assert {(tp.topic, tp.partition) for tp in carried.partitions} == {
        (tp.topic, tp.partition) for tp in first
    }
    # The leader kept what balance allows in place: member 0 keeps a subset
    # of what it had, and nothing it kept moved to member 1.
    kept = h.members[0].owned
    assert kept and kept <= first
    assert len(kept) + len(h.members[1].owned) == len(ALL)

"""Kip848Member machines against a scripted KIP-848 coordinator, over random
interleavings (hypothesis): joins, leaves, session expiry, lost answers,
coordinator moves, time jumps.

The scripted coordinator computes a round-robin target per member and, like
the real one, hands a partition to its new owner only once no other member
reports owning it. Invariants: events add up to what a member owns; members
the coordinator knows at their current epoch own disjoint sets; at the end
the group settles with every partition owned exactly once.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkacore.client.metadata import TopicPartition
from kafkacore.errors import KafkaConnectionError
from kafkacore.group import (
    GroupFailed,
    Kip848Member,
    Kip848State,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from kafkacore.group.base import MemberTimer
from kafkacore.protocol import messages as m
from kafkacore.protocol.messages.consumer_group_heartbeat_response import (
    Assignment,
    TopicPartitions,
)

TOPICS = {"t1": (uuid.UUID(int=1), 4), "t2": (uuid.UUID(int=2), 3)}
NAMES = {tid: name for name, (tid, _) in TOPICS.items()}
ALL = {TopicPartition(t, p) for t, (_, n) in TOPICS.items() for p in range(n)}


@dataclass
class _M:
    epoch: int
    owned: set[TopicPartition]
    last_seen: float
    sent: set[TopicPartition] = field(default_factory=set)


@dataclass
class Coord848:
    now: float = 0.0
    members: dict[str, _M] = field(default_factory=dict)
    group_epoch: int = 0
    inflight: list[tuple[int, Any, Any]] = field(default_factory=list)

    def target(self) -> dict[str, set[TopicPartition]]:
        ids = sorted(self.members)
        out: dict[str, set[TopicPartition]] = {mid: set() for mid in ids}
        for i, tp in enumerate(sorted(ALL)):
            out[ids[i % len(ids)]].add(tp)
        return out

    def handle(self, req: Any) -> Any:
        mid = req.member_id
        if req.member_epoch < 0:
            if self.members.pop(mid, None) is not None:
                self.group_epoch += 1
            return m.ConsumerGroupHeartbeatResponse(member_id=mid, member_epoch=req.member_epoch)
        owned = None
        if req.topic_partitions is not None:
            owned = {
                TopicPartition(NAMES[t.topic_id], p)
                for t in req.topic_partitions
                for p in t.partitions
            }
        if req.member_epoch == 0:
            self.group_epoch += 1
            self.members[mid] = _M(self.group_epoch, owned or set(), self.now)
        else:
            info = self.members.get(mid)
            if info is None:
                return m.ConsumerGroupHeartbeatResponse(error_code=25)
            if req.member_epoch != info.epoch:
                return m.ConsumerGroupHeartbeatResponse(error_code=110)
            if owned is not None:
                # Free only what the member says it gave up; what we sent last
                # stays its own until it reports otherwise.
                info.owned = owned | info.sent
        info = self.members[mid]
        info.last_seen = self.now
        info.epoch = self.group_epoch
        others = set().union(*(o.owned for k, o in self.members.items() if k != mid))
        mine = self.target()[mid] - others
        info.sent = set(mine)
        info.owned |= mine
        by_topic: dict[uuid.UUID, list[int]] = {}
        for tp in mine:
            by_topic.setdefault(TOPICS[tp.topic][0], []).append(tp.partition)
        return m.ConsumerGroupHeartbeatResponse(
            member_id=mid,
            member_epoch=info.epoch,
            heartbeat_interval_ms=2000,
            assignment=Assignment(
                topic_partitions=[
                    TopicPartitions(topic_id=t, partitions=sorted(ps)) for t, ps in by_topic.items()
                ]
            ),
        )

    def tick(self, now: float) -> None:
        self.now = now
        for mid, info in list(self.members.items()):
            if now - info.last_seen > 10.0:
                del self.members[mid]
                self.group_epoch += 1


class Req:
    def __init__(self, coord: Coord848, owner: int) -> None:
        self.coord, self.owner = coord, owner

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
        self.coord.inflight.append((self.owner, request, on_done))


class H:
    def __init__(self) -> None:
        self.coord = Coord848()
        self.members: list[Kip848Member] = []
        self.owned: list[set[TopicPartition]] = []
        self.live: list[bool] = []

    def add(self) -> None:
        i = len(self.members)
        member = Kip848Member(
            Req(self.coord, i),
            group_id="g",
            now=self.coord.now,
            rng=random.Random(i),
            topic_names=NAMES.get,
            topic_ids=lambda t: TOPICS[t][0] if t in TOPICS else None,
            rebalance_timeout_ms=60000,
        )
        self.members.append(member)
        self.owned.append(set())
        self.live.append(True)
        member.poll(now=self.coord.now)
        member.subscribe(frozenset(TOPICS), now=self.coord.now)

    def absorb(self) -> None:
        for i, member in enumerate(self.members):
            owned = self.owned[i]
            for e in member.pull_events():
                if isinstance(e, PartitionsAssigned):
                    assert not (e.partitions & owned)
                    owned |= e.partitions
                elif isinstance(e, PartitionsRevoked | PartitionsLost):
                    assert e.partitions <= owned
                    owned -= e.partitions
                elif isinstance(e, GroupFailed):
                    raise AssertionError(e.error)
            assert owned == set(member.owned)

    def safety(self) -> None:
        seen: set[TopicPartition] = set()
        for i, member in enumerate(self.members):
            info = self.coord.members.get(member.member_id)
            if self.live[i] and info is not None and member.member_epoch == info.epoch:
                assert not (seen & member.owned), f"owned twice: {seen & member.owned}"
                seen |= member.owned

    def deliver(self, index: int, fail: bool = False) -> None:
        _, req, on_done = self.coord.inflight.pop(index)
        if fail:
            on_done(KafkaConnectionError("lost (simulated)"), self.coord.now)
        else:
            on_done(self.coord.handle(req), self.coord.now)
        self.absorb()

    def tick(self, dt: float) -> None:
        self.coord.tick(self.coord.now + dt)
        for i, member in enumerate(self.members):
            if self.live[i]:
                member.handle_timeout(now=self.coord.now)
        self.absorb()

    def settle(self) -> None:
        for _ in range(2000):
            live = [mb for i, mb in enumerate(self.members) if self.live[i]]
            for mb in live:
                mb.poll(now=self.coord.now)
            owners = [tp for mb in live for tp in mb.owned]
            if (
                all(mb.state is Kip848State.STABLE for mb in live)
                and len(owners) == len(set(owners))
                and set(owners) == ALL
                and not self.coord.inflight
            ):
                return
            if self.coord.inflight:
                self.deliver(0)
            else:
                deadlines = [d for mb in live if (d := mb.next_deadline()) is not None]
                assert deadlines, "stuck: nothing in flight, no timer"
                self.tick(max(min(deadlines) - self.coord.now, 0.0))
            self.safety()
        raise AssertionError("KIP-848 group did not settle")


@settings(max_examples=150, deadline=None)  # 2 shared cores: no wall-clock deadline
@given(
    start=st.integers(1, 3),
    steps=st.lists(
        st.tuples(
            st.sampled_from(["deliver", "deliver", "fail", "tick", "leave", "add", "expire"]),
            st.integers(0, 50),
            st.floats(0.0, 12.0),
        ),
        max_size=80,
    ),
)
def test_kip848_group_random_interleavings(start: int, steps: list[tuple[str, int, float]]) -> None:
    h = H()
    for _ in range(start):
        h.add()
    for kind, n, dt in steps:
        if kind in ("deliver", "fail") and h.coord.inflight:
            h.deliver(n % len(h.coord.inflight), fail=kind == "fail")
        elif kind == "tick":
            h.tick(dt)
        elif kind == "leave" and sum(h.live) > 1:
            idx = [i for i, a in enumerate(h.live) if a][n % sum(h.live)]
            h.members[idx].leave(now=h.coord.now)
            h.live[idx] = False
            h.absorb()
        elif kind == "add" and len(h.members) < 5:
            h.add()
        elif kind == "expire" and h.coord.members:
            mid = sorted(h.coord.members)[n % len(h.coord.members)]
            del h.coord.members[mid]
            h.coord.group_epoch += 1
        h.safety()
    h.settle()


def test_member_id_is_a_client_made_uuid_from_the_injected_rng() -> None:
    a = Kip848Member(
        Req(Coord848(), 0),
        group_id="g",
        now=0.0,
        rng=random.Random(7),
        topic_names=NAMES.get,
        topic_ids=lambda t: None,
    )
    b = Kip848Member(
        Req(Coord848(), 0),
        group_id="g",
        now=0.0,
        rng=random.Random(7),
        topic_names=NAMES.get,
        topic_ids=lambda t: None,
    )
    assert a.member_id == b.member_id and uuid.UUID(a.member_id).version == 4


def test_leave_sends_epoch_minus_one_and_static_minus_two() -> None:
    for instance, epoch in ((None, -1), ("static", -2)):
        h = H()
        h.add()
        h.members[0].group_instance_id = instance
        h.settle()
        h.members[0].leave(now=h.coord.now)
        assert h.coord.inflight[-1][1].member_epoch == epoch


def test_fenced_member_loses_partitions_and_rejoins_with_epoch_zero() -> None:
    h = H()
    h.add()
    h.settle()
    member = h.members[0]
    h.coord.members[member.member_id].epoch += 5  # the coordinator moved on without us
    h.tick(3.0)
    h.deliver(0)
    assert not member.owned and member.member_epoch == 0 and member.state is Kip848State.JOINING
    h.settle()
    assert member.owned == frozenset(ALL)


def test_fenced_commit_heartbeats_at_once_only_for_the_epoch_still_held() -> None:
    h = H()
    h.add()
    h.settle()
    member = h.members[0]
    epoch = member.member_epoch
    scheduled = member.deadlines.get(MemberTimer.HEARTBEAT)
    assert member.commit_refusal() is None  # KIP-848 commits carry the epoch: never refused
    stale = member.on_commit_fenced(
        generation=epoch - 1, member_id=member.member_id, code=110, now=h.coord.now
    )
    assert not stale and member.deadlines.get(MemberTimer.HEARTBEAT) == scheduled, (
        "a stale answer moved the heartbeat"
    )
    current = member.on_commit_fenced(
        generation=epoch, member_id=member.member_id, code=110, now=h.coord.now
    )
    assert current and member.deadlines.get(MemberTimer.HEARTBEAT) == h.coord.now

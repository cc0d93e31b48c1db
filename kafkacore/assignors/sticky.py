"""The ``sticky`` and ``cooperative-sticky`` assignors.

Theory of operation
-------------------
Both compute one balanced, sticky plan in three steps; they differ only in
where previous ownership comes from and in what the plan may hand over.

1. Ownership. Each member claims what it consumed last generation: the
   eager ``sticky`` assignor reads it from the member's user data
   (``StickyAssignorUserData``, written by Java and kafkacore alike), the
   ``cooperative-sticky`` one from the subscription's owned partitions
   (KIP-429) and generation (KIP-792). A claim counts only for an existing
   partition of a topic the member still subscribes to. When several
   members claim one partition the highest generation wins; a tie at the
   top generation means nobody can be trusted, so nobody keeps it.
2. Placement. If every member subscribes to the same topics, quotas are
   exact: ``P // N`` each and one more for ``P % N`` members, the extra
   slots going to the members that own the most. Members keep owned
   partitions up to their quota (lowest partition numbers first, across
   topics), and the rest is dealt round the members still short. With
   differing subscriptions, members keep everything they validly own,
   free partitions go to the least loaded eligible member (partitions with
   the fewest eligible members first), then single moves from a member to
   an eligible one holding at least two fewer run until none is left.
   Moves take newly placed partitions before owned ones. That end state is
   Java's notion of balance: no partition can move to make things fairer.
   KIP-881 racks: when members and partitions both name racks, a free
   partition prefers a member on a rack holding one of its replicas, as
   long as that keeps the balance; owned partitions are kept regardless.
3. Hand-over (cooperative only). A partition placed on member B while some
   other member A still claims it is left out of the plan: A revokes it on
   receiving its own assignment, rejoins, and the follow-up rebalance gives
   it to B. So no partition ever has two consumers at once. B keeps it
   at once only if B is its valid owner from step 1 (a stale claim by
   another member does not hold it back), as in Java.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kafkacore.assignors._types import (
    DEFAULT_GENERATION,
    Member,
    PartitionRacks,
    Plan,
    TopicPartition,
    java_member_key,
)
from kafkacore.assignors.userdata import (
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)

__all__ = [
    "cooperative_sticky_assign",
    "cooperative_sticky_user_data",
    "sticky_assign",
    "sticky_plan",
    "sticky_user_data",
]


@dataclass(frozen=True, slots=True)
class _Claim:
    partitions: tuple[TopicPartition, ...]
    generation: int


def _sticky_claim(m: Member) -> _Claim:
    data = decode_sticky_user_data(m.user_data)
    gen = DEFAULT_GENERATION if data.generation is None else data.generation
    return _Claim(data.partitions, gen)


def _cooperative_claim(m: Member) -> _Claim:
    if m.generation >= 0:
        return _Claim(m.owned_partitions, m.generation)
    gen = decode_cooperative_user_data(m.user_data)
    return _Claim(m.owned_partitions, DEFAULT_GENERATION if gen is None else gen)


class _Layout:
    """Who may take what: the effective subscriptions and the racks, precomputed."""

    def __init__(
        self,
        members: Sequence[Member],
        partitions: Mapping[str, int],
        partition_racks: PartitionRacks | None,
    ) -> None:
        self.order = [m.member_id for m in sorted(members, key=java_member_key)]
        self.rank = {mid: i for i, mid in enumerate(self.order)}
        by_id = {m.member_id: m for m in members}
        self.topics_of = {
            mid: frozenset(t for t in by_id[mid].topics if partitions.get(t, 0) > 0)
            for mid in self.order
        }
        self.counts = {t: partitions[t] for ts in self.topics_of.values() for t in ts}
        self.subscribers: dict[str, list[str]] = {t: [] for t in sorted(self.counts)}
        for mid in self.order:
            for t in self.topics_of[mid]:
                self.subscribers[t].append(mid)
        self.member_rack = {mid: by_id[mid].rack for mid in self.order if by_id[mid].rack}
        self.racks: dict[TopicPartition, frozenset[str]] = {}
        if self.member_rack and partition_racks:
            for t, per_partition in partition_racks.items():
                if t in self.counts:
                    for p, rs in enumerate(per_partition):
                        self.racks[TopicPartition(t, p)] = frozenset(rs)
        all_racks = frozenset().union(*self.racks.values()) if self.racks else frozenset()
        # Same rule as Java: racks help only if they overlap and do not hold everything everywhere.
        self.rack_aware = bool(
            self.racks
            and not all_racks.isdisjoint(self.member_rack.values())
            and any(rs != all_racks for rs in self.racks.values())
        )

    def all_partitions(self) -> list[TopicPartition]:
        return [TopicPartition(t, p) for t in self.subscribers for p in range(self.counts[t])]

    def rack_match(self, mid: str, tp: TopicPartition) -> bool:
        rack = self.member_rack.get(mid)
        return rack is not None and rack in self.racks.get(tp, ())


def _valid_owners(layout: _Layout, claims: Mapping[str, _Claim]) -> dict[str, list[TopicPartition]]:
    best: dict[TopicPartition, tuple[int, list[str]]] = {}
    for mid in layout.order:
        claim = claims[mid]
        topics = layout.topics_of[mid]
        for tp in dict.fromkeys(claim.partitions):
            if tp.topic not in topics or not 0 <= tp.partition < layout.counts[tp.topic]:
                continue
            top = best.get(tp)
            if top is None or claim.generation > top[0]:
                best[tp] = (claim.generation, [mid])
            elif claim.generation == top[0]:
                top[1].append(mid)
    kept: dict[str, list[TopicPartition]] = {mid: [] for mid in layout.order}
    for tp, (_gen, owners) in best.items():
        if len(owners) == 1:
            kept[owners[0]].append(tp)
    return kept


def _place_equal(layout: _Layout, kept: dict[str, list[TopicPartition]]) -> Plan:
    """Identical subscriptions: exact quotas, owned partitions kept up to quota."""
    everything = layout.all_partitions()
    n = len(layout.order)
    base, extra = divmod(len(everything), n)
    by_ownership = sorted(layout.order, key=lambda mid: (-len(kept[mid]), layout.rank[mid]))
    quota = {mid: base + (1 if i < extra else 0) for i, mid in enumerate(by_ownership)}
    plan: Plan = {}
    taken: set[TopicPartition] = set()
    for mid in layout.order:
        # Lowest partition numbers first spreads what is kept over the topics.
        mine = sorted(kept[mid], key=lambda tp: (tp.partition, tp.topic))[: quota[mid]]
        plan[mid] = mine
        taken.update(mine)
    free = [tp for tp in everything if tp not in taken]
    need = {mid: quota[mid] - len(plan[mid]) for mid in layout.order}
    if layout.rack_aware:
        rest = []
        for tp in free:
            fits = [mid for mid in layout.order if need[mid] > 0 and layout.rack_match(mid, tp)]
            if fits:
                mid = max(fits, key=lambda m: (need[m], -layout.rank[m]))
                plan[mid].append(tp)
                need[mid] -= 1
            else:
                rest.append(tp)
        free = rest
    # Deal the rest round the members still short, one per member per round.
    slots = [
        mid for r in range(max(need.values(), default=0)) for mid in layout.order if need[mid] > r
    ]
    for tp, mid in zip(free, slots, strict=True):
        plan[mid].append(tp)
    return plan


def _place_general(layout: _Layout, kept: dict[str, list[TopicPartition]]) -> Plan:
    """Differing subscriptions: keep all valid ownership, fill, then move until fair."""
    rank = layout.rank
    # member -> topic -> partitions; kept ones first (ascending), newly placed ones after,
    # so popping from the end moves new placements before owned ones.
    held: dict[str, dict[str, list[TopicPartition]]] = {mid: {} for mid in layout.order}
    for mid in layout.order:
        for tp in sorted(kept[mid]):
            held[mid].setdefault(tp.topic, []).append(tp)
    count = {mid: len(kept[mid]) for mid in layout.order}
    owned = {mid: set(kept[mid]) for mid in layout.order}
    taken = {tp for ps in kept.values() for tp in ps}
    free = [tp for tp in layout.all_partitions() if tp not in taken]
    # The most constrained partitions first: they have the fewest places to go.
    free.sort(key=lambda tp: (len(layout.subscribers[tp.topic]), tp))
    for tp in free:
        subs = layout.subscribers[tp.topic]
        if layout.rack_aware:
            mid = min(subs, key=lambda m: (count[m], not layout.rack_match(m, tp), rank[m]))
        else:
            mid = min(subs, key=lambda m: (count[m], rank[m]))
        held[mid].setdefault(tp.topic, []).append(tp)
        count[mid] += 1
    # Move one partition at a time from a member to an eligible one holding at least
    # two fewer, heaviest members first, until a whole pass moves nothing. Each move
    # lowers the sum of squared counts by at least 2, so this ends.
    moved = True
    while moved:
        moved = False
        for src in sorted(layout.order, key=lambda m: (-count[m], rank[m])):
            while True:
                best: tuple[bool, str, str] | None = None  # (owned, topic, destination)
                for topic, ps in held[src].items():
                    if not ps:
                        continue
                    dst = min(layout.subscribers[topic], key=lambda m: (count[m], rank[m]))
                    if count[dst] + 1 < count[src]:
                        option = (ps[-1] in owned[src], topic, dst)
                        if best is None or option < best:
                            best = option
                if best is None:
                    break
                _, topic, dst = best
                held[dst].setdefault(topic, []).append(held[src][topic].pop())
                count[src] -= 1
                count[dst] += 1
                moved = True
    return {mid: [tp for ps in held[mid].values() for tp in ps] for mid in layout.order}


def _sticky(
    members: Sequence[Member],
    partitions: Mapping[str, int],
    claims: Mapping[str, _Claim],
    partition_racks: PartitionRacks | None,
) -> tuple[Plan, dict[str, list[TopicPartition]]]:
    layout = _Layout(members, partitions, partition_racks)
    kept = _valid_owners(layout, claims)
    equal = len(set(layout.topics_of.values())) == 1
    plan = _place_equal(layout, kept) if equal else _place_general(layout, kept)
    for ps in plan.values():
        ps.sort()
    return plan, kept


def sticky_plan(
    members: Sequence[Member],
    partitions: Mapping[str, int],
    claims: Mapping[str, tuple[Sequence[TopicPartition], int]],
    *,
    partition_racks: PartitionRacks | None = None,
) -> Plan:
    """The balanced sticky plan for explicit claims ``member_id -> (partitions, generation)``.

    Every existing partition of a subscribed topic is placed exactly once;
    no hand-over filtering. Both sticky assignors are built on this.
    """
    full = {
        m.member_id: _Claim(
            tuple(TopicPartition(*tp) for tp in claims[m.member_id][0]), claims[m.member_id][1]
        )
        if m.member_id in claims
        else _Claim((), DEFAULT_GENERATION)
        for m in members
    }
    return _sticky(members, partitions, full, partition_racks)[0]


def sticky_assign(
    members: Sequence[Member],
    partitions: Mapping[str, int],
    *,
    partition_racks: PartitionRacks | None = None,
) -> Plan:
    """Eager ``sticky``: previous assignments come from each member's user data."""
    claims = {m.member_id: _sticky_claim(m) for m in members}
    return _sticky(members, partitions, claims, partition_racks)[0]


def cooperative_sticky_assign(
    members: Sequence[Member],
    partitions: Mapping[str, int],
    *,
    partition_racks: PartitionRacks | None = None,
) -> Plan:
    """``cooperative-sticky`` (KIP-429): the sticky plan minus partitions still owned elsewhere."""
    claims = {m.member_id: _cooperative_claim(m) for m in members}
    plan, kept = _sticky(members, partitions, claims, partition_racks)
    claimed_by: dict[TopicPartition, set[str]] = {}
    for mid, c in claims.items():
        for tp in c.partitions:
            claimed_by.setdefault(tp, set()).add(mid)
    for mid, ps in plan.items():
        mine = set(kept[mid])
        # Withhold what another member may still be consuming; its valid owner keeps it.
        plan[mid] = [tp for tp in ps if tp in mine or not (claimed_by.get(tp, set()) - {mid})]
    return plan


def sticky_user_data(assigned: Sequence[TopicPartition] | None, generation: int) -> bytes | None:
    """Subscription user data of an eager sticky member: its last assignment and generation.

    ``None`` until the member received its first assignment, as in Java.
    """
    if assigned is None:
        return None
    return encode_sticky_user_data(assigned, generation)


def cooperative_sticky_user_data(
    assigned: Sequence[TopicPartition] | None, generation: int
) -> bytes:
    """Subscription user data of a cooperative sticky member: the generation alone."""
    return encode_cooperative_user_data(generation)

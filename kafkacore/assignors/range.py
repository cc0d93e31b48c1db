"""The ``range`` assignor, plan for plan the same as Java's ``RangeAssignor``.

Theory of operation: each topic is cut on its own. Its subscribers are put in
Java's member order and its partitions in numeric order; with ``n``
partitions and ``c`` subscribers every subscriber gets ``n // c`` consecutive
partitions and the first ``n % c`` get one more.

Rack awareness (KIP-881) only kicks in when some members name a rack and
some partition lives on a strict subset of the racks. Then, before the plain
pass, partitions are first handed to subscribers on a rack that holds a
replica, without breaking the per-topic quotas; topics with the same
subscribers and the same partition count are matched together, partition i
of all of them to one member, so co-partitioned joins keep working. What
rack matching could not place is dealt out by the plain pass. This follows
the Java algorithm step by step, because a mixed Java/kafkacore group must
compute the same plan whichever member leads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set

from kafkacore.assignors._types import (
    Member,
    PartitionRacks,
    Plan,
    TopicPartition,
    java_member_key,
)

__all__ = ["range_assign"]


class _TopicState:
    """Quota bookkeeping for one topic while it is being cut into ranges."""

    __slots__ = (
        "assigned",
        "consumers",
        "extra_left",
        "needs_rack_aware",
        "partition_racks",
        "per_consumer",
        "topic",
        "unassigned",
    )

    def __init__(
        self,
        topic: str,
        count: int,
        subscribers: list[Member],
        racks: Sequence[Set[str]] | None,
    ) -> None:
        self.topic = topic
        ordered = sorted(subscribers, key=java_member_key)
        # member id -> rack (None when the member named none); insertion order is Java's order.
        self.consumers: dict[str, str | None] = {m.member_id: m.rack or None for m in ordered}
        self.unassigned: dict[int, None] = dict.fromkeys(range(count))
        self.assigned = dict.fromkeys(self.consumers, 0)
        self.per_consumer = count // len(ordered) if ordered else 0
        self.extra_left = count % len(ordered) if ordered else 0
        consumer_racks = {r for r in self.consumers.values() if r is not None}
        all_partition_racks: set[str] = set()
        # Partition racks matter only when a subscriber named a rack.
        self.partition_racks: list[frozenset[str]] = []
        if consumer_racks:
            for p in range(count):
                prs = frozenset(racks[p]) if racks is not None else frozenset()
                self.partition_racks.append(prs)
                all_partition_racks |= prs
        self.needs_rack_aware = bool(
            consumer_racks
            and not consumer_racks.isdisjoint(all_partition_racks)
            and not all(prs == all_partition_racks for prs in self.partition_racks)
        )

    def racks_match(self, consumer: str, p: int) -> bool:
        rack = self.consumers[consumer]
        if rack is None:
            return True
        return p < len(self.partition_racks) and rack in self.partition_racks[p]

    def max_assignable(self, consumer: str) -> int:
        quota = self.per_consumer + (1 if self.extra_left > 0 else 0)
        return max(0, quota - self.assigned[consumer])

    def give(self, consumer: str, ps: list[int], plan: Plan) -> None:
        plan[consumer].extend(TopicPartition(self.topic, p) for p in ps)
        self.assigned[consumer] += len(ps)
        # Java decrements on every grant that leaves the member above the base quota.
        if self.assigned[consumer] > self.per_consumer:
            self.extra_left -= 1
        for p in ps:
            del self.unassigned[p]


def _assign_ranges(state: _TopicState, may: Callable[[str, int], bool], plan: Plan) -> None:
    for consumer in state.consumers:
        if not state.unassigned:
            break
        limit = state.max_assignable(consumer)
        grant: list[int] = []
        if limit:
            for p in state.unassigned:
                if may(consumer, p):
                    grant.append(p)
                    if len(grant) == limit:
                        break
        if grant:
            state.give(consumer, grant, plan)


def _assign_co_partitioned(states: list[_TopicState], count: int, plan: Plan) -> None:
    remaining = list(states[0].consumers)
    for p in range(count):
        for consumer in remaining:
            if all(t.racks_match(consumer, p) and t.max_assignable(consumer) > 0 for t in states):
                for t in states:
                    t.give(consumer, [p], plan)
                if not any(t.max_assignable(consumer) > 0 for t in states):
                    remaining.remove(consumer)
                break
        if not remaining:
            break


def range_assign(
    members: Sequence[Member],
    partitions: Mapping[str, int],
    *,
    partition_racks: PartitionRacks | None = None,
) -> Plan:
    """Assign like Java's ``RangeAssignor``, including its KIP-881 rack matching."""
    plan: Plan = {m.member_id: [] for m in members}
    racks = partition_racks or {}
    subscribed = sorted({t for m in members for t in m.topics})
    states = [
        _TopicState(
            topic, partitions[topic], [m for m in members if topic in m.topics], racks.get(topic)
        )
        for topic in subscribed
        if partitions.get(topic, 0) > 0
    ]
    rack_aware = any(s.needs_rack_aware for s in states)
    if rack_aware:
        groups: dict[tuple[tuple[str, str | None], ...], dict[int, list[_TopicState]]] = {}
        for s in states:
            key = tuple(s.consumers.items())
            groups.setdefault(key, {}).setdefault(len(s.partition_racks), []).append(s)
        for by_count in groups.values():
            for count, same in by_count.items():
                if len(same) > 1:
                    _assign_co_partitioned(same, count, plan)
                elif same[0].needs_rack_aware:
                    _assign_ranges(same[0], same[0].racks_match, plan)
    for s in states:
        _assign_ranges(s, lambda _c, _p: True, plan)
    if rack_aware:
        for assigned in plan.values():
            assigned.sort()
    return plan

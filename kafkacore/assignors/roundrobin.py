"""The ``roundrobin`` assignor (Java ``RoundRobinAssignor``) and kiel's naive allocator.

Theory of operation: lay out the members in Java's order (static members by
``group.instance.id``, then the rest by member id) and every partition of
every subscribed topic in (topic, partition) order. Deal the partitions out
one at a time, moving a cursor round the member circle; a member that does
not subscribe to the partition's topic is skipped over. With identical
subscriptions every member ends up within one partition of the others.
Racks and previous owners play no part, so this assignor is eager only.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import cycle

from kafkacore.assignors._types import (
    Member,
    PartitionRacks,
    Plan,
    TopicPartition,
    java_member_key,
    java_string_key,
)

__all__ = ["naive_allocator", "roundrobin_assign"]


def roundrobin_assign(
    members: Sequence[Member],
    partitions: Mapping[str, int],
    *,
    partition_racks: PartitionRacks | None = None,
) -> Plan:
    """Assign like Java's ``RoundRobinAssignor`` (``partition_racks`` is ignored)."""
    plan: Plan = {m.member_id: [] for m in members}
    ring = sorted(members, key=java_member_key)
    if not ring:
        return plan
    topics = sorted({t for m in members for t in m.topics}, key=java_string_key)
    cursor = 0
    size = len(ring)
    for topic in topics:
        for p in range(partitions.get(topic, 0)):
            # Some member subscribes to every topic in the list, so this ends.
            while topic not in ring[cursor].topics:
                cursor = (cursor + 1) % size
            plan[ring[cursor].member_id].append(TopicPartition(topic, p))
            cursor = (cursor + 1) % size
    return plan


def naive_allocator(
    members: Sequence[str], partitions: Iterable[str]
) -> dict[str, dict[str, list[int]]]:
    """kiel's ``naive_allocator``: deal ``"topic:partition"`` strings round the members.

    Kept for code written against kiel's ``GroupedConsumer(partition_allocator=...)``:
    members are taken in the order given, the result maps member -> topic ->
    partition ids, and members dealt nothing are absent.
    """
    mapping: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    if not members:
        return {}
    for member, name in zip(cycle(members), partitions):
        topic, sep, pid = name.rpartition(":")
        if not sep or not pid.isdigit():
            raise ValueError(f"naive_allocator: partition {name!r} is not 'topic:partition'")
        mapping[member][topic].append(int(pid))
    return {m: dict(topics) for m, topics in mapping.items()}

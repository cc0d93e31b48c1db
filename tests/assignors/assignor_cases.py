"""Hypothesis strategies and checks shared by the assignor tests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hypothesis import strategies as st

from kafkacore.assignors import Member, Plan, TopicPartition

RACKS = ("r0", "r1", "r2")


@dataclass(frozen=True)
class Group:
    members: tuple[Member, ...]
    partitions: dict[str, int]
    racks: dict[str, list[frozenset[str]]] | None


member_ids = st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=6)


@st.composite
def groups(
    draw: st.DrawFn,
    *,
    equal_subscriptions: bool = False,
    with_racks: bool = False,
    max_members: int = 7,
    max_topics: int = 4,
    nonempty_subscriptions: bool = False,
) -> Group:
    n_topics = draw(st.integers(1, max_topics))
    topics = [f"t{i}" for i in range(n_topics)]
    partitions = {t: draw(st.integers(0, 9)) for t in topics}
    ids = draw(st.lists(member_ids, min_size=1, max_size=max_members, unique=True))
    everyone = frozenset(draw(st.sets(st.sampled_from(topics), min_size=1)))
    members = []
    for mid in ids:
        subs = (
            everyone if equal_subscriptions else frozenset(draw(st.sets(st.sampled_from(topics))))
        )
        members.append(
            Member(
                member_id=mid,
                topics=subs,
                group_instance_id=draw(st.none() | member_ids),
                rack=draw(st.sampled_from((None, *RACKS))) if with_racks else None,
            )
        )
    racks = None
    if with_racks:
        racks = {
            t: [frozenset(draw(st.sets(st.sampled_from(RACKS), max_size=2))) for _ in range(n)]
            for t, n in partitions.items()
        }
    # Instance ids must be unique too (the broker enforces it).
    seen: set[str] = set()
    unique: list[Member] = []
    for m in members:
        if m.group_instance_id is not None and m.group_instance_id in seen:
            m = Member(member_id=m.member_id, topics=m.topics, rack=m.rack)
        if m.group_instance_id is not None:
            seen.add(m.group_instance_id)
        unique.append(m)
    return Group(tuple(unique), partitions, racks)


def expected_partitions(
    members: Sequence[Member], partitions: Mapping[str, int]
) -> set[TopicPartition]:
    topics = {t for m in members for t in m.topics}
    return {TopicPartition(t, p) for t in topics for p in range(partitions.get(t, 0))}


def assert_valid(
    plan: Plan, members: Sequence[Member], partitions: Mapping[str, int], *, complete: bool = True
) -> None:
    """Every member present; each partition once at most (exactly, if complete), to a subscriber."""
    assert set(plan) == {m.member_id for m in members}
    by_id = {m.member_id: m for m in members}
    given = Counter(tp for ps in plan.values() for tp in ps)
    assert all(n == 1 for n in given.values()), (
        f"assigned twice: {[tp for tp, n in given.items() if n > 1]}"
    )
    for mid, ps in plan.items():
        for tp in ps:
            assert tp.topic in by_id[mid].topics, f"{mid!r} got {tp} without subscribing"
            assert 0 <= tp.partition < partitions[tp.topic]
    if complete:
        assert set(given) == expected_partitions(members, partitions)


def counts(plan: Plan) -> list[int]:
    return [len(ps) for ps in plan.values()]


def assert_locally_balanced(plan: Plan, members: Sequence[Member]) -> None:
    """No partition could move to an eligible member holding two or more fewer."""
    size = {mid: len(ps) for mid, ps in plan.items()}
    for mid, ps in plan.items():
        for tp in ps:
            for other in members:
                if tp.topic in other.topics:
                    assert size[other.member_id] + 1 >= size[mid], (
                        f"{tp} could move from {mid!r} ({size[mid]}) to {other.member_id!r} "
                        f"({size[other.member_id]})"
                    )

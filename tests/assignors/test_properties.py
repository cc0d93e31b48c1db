"""Property tests of the built-in assignors (pure, no Java)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkacore.assignors import (
    Member,
    Plan,
    TopicPartition,
    get_assignor,
    sticky_plan,
    sticky_user_data,
)

from .assignor_cases import (
    Group,
    assert_locally_balanced,
    assert_valid,
    counts,
    expected_partitions,
    groups,
)

BUILTIN = ("range", "roundrobin", "sticky", "cooperative-sticky")


@pytest.mark.parametrize("name", BUILTIN)
@given(group=groups(with_racks=True))
def test_every_partition_exactly_once_to_a_subscriber(name: str, group: Group) -> None:
    plan = get_assignor(name).assign(group.members, group.partitions, partition_racks=group.racks)
    # Nobody owns anything yet, so even cooperative plans are complete.
    assert_valid(plan, group.members, group.partitions)


@pytest.mark.parametrize("name", BUILTIN)
@given(group=groups(with_racks=True), seed=st.integers(0, 2**32))
def test_plan_does_not_depend_on_member_order(name: str, group: Group, seed: int) -> None:
    shuffled = list(group.members)
    random.Random(seed).shuffle(shuffled)
    a = get_assignor(name).assign(group.members, group.partitions, partition_racks=group.racks)
    b = get_assignor(name).assign(shuffled, group.partitions, partition_racks=group.racks)
    assert a == b


@pytest.mark.parametrize("name", ["roundrobin", "sticky", "cooperative-sticky"])
@given(group=groups(equal_subscriptions=True, with_racks=True))
def test_equal_subscriptions_balance_within_one(name: str, group: Group) -> None:
    plan = get_assignor(name).assign(group.members, group.partitions, partition_racks=group.racks)
    assert max(counts(plan)) - min(counts(plan)) <= 1


@given(group=groups(with_racks=True))
def test_range_balances_each_topic_within_one(group: Group) -> None:
    plan = get_assignor("range").assign(
        group.members, group.partitions, partition_racks=group.racks
    )
    for topic in {t for m in group.members for t in m.topics}:
        per = [
            sum(1 for tp in plan[m.member_id] if tp.topic == topic)
            for m in group.members
            if topic in m.topics
        ]
        assert max(per) - min(per) <= 1


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
@given(group=groups())
def test_sticky_unequal_subscriptions_cannot_be_improved_by_one_move(
    name: str, group: Group
) -> None:
    plan = get_assignor(name).assign(group.members, group.partitions)
    assert_locally_balanced(plan, group.members)


def test_range_and_roundrobin_java_doc_examples() -> None:
    # The examples in the Java assignors' documentation.
    two = [Member(member_id=f"C{i}", topics=frozenset({"t0", "t1"})) for i in range(2)]
    tp = TopicPartition
    assert get_assignor("range").assign(two, {"t0": 3, "t1": 3}) == {
        "C0": [tp("t0", 0), tp("t0", 1), tp("t1", 0), tp("t1", 1)],
        "C1": [tp("t0", 2), tp("t1", 2)],
    }
    assert get_assignor("roundrobin").assign(two, {"t0": 3, "t1": 3}) == {
        "C0": [tp("t0", 0), tp("t0", 2), tp("t1", 1)],
        "C1": [tp("t0", 1), tp("t1", 0), tp("t1", 2)],
    }
    three = [
        Member(member_id="C0", topics=frozenset({"t0"})),
        Member(member_id="C1", topics=frozenset({"t0", "t1"})),
        Member(member_id="C2", topics=frozenset({"t0", "t1", "t2"})),
    ]
    assert get_assignor("roundrobin").assign(three, {"t0": 1, "t1": 2, "t2": 3}) == {
        "C0": [tp("t0", 0)],
        "C1": [tp("t1", 0)],
        "C2": [tp("t1", 1), tp("t2", 0), tp("t2", 1), tp("t2", 2)],
    }


def test_static_members_sort_first_by_instance_id() -> None:
    members = [
        Member(member_id="a", topics=frozenset({"t"})),
        Member(member_id="z", topics=frozenset({"t"}), group_instance_id="i2"),
        Member(member_id="y", topics=frozenset({"t"}), group_instance_id="i1"),
    ]
    plan = get_assignor("range").assign(members, {"t": 3})
    assert plan == {"y": [("t", 0)], "z": [("t", 1)], "a": [("t", 2)]}


def test_member_ids_order_like_java_strings() -> None:
    # Java compares UTF-16 units: U+FFFD sorts after the surrogate pair of U+1F600.
    members = [Member(member_id=mid, topics=frozenset({"t"})) for mid in ("\ufffd", "\U0001f600")]
    plan = get_assignor("range").assign(members, {"t": 2})
    assert plan["\U0001f600"] == [("t", 0)]


# ---- stickiness -------------------------------------------------------------


def _with_user_data(members: Sequence[Member], plan: Plan, generation: int) -> list[Member]:
    return [
        Member(
            member_id=m.member_id,
            topics=m.topics,
            group_instance_id=m.group_instance_id,
            rack=m.rack,
            user_data=sticky_user_data(plan.get(m.member_id), generation),
        )
        for m in members
    ]


def _best_kept(previous: Mapping[str, int], survivors: Sequence[str], total: int, n: int) -> int:
    """Most partitions the survivors can keep under exact quotas."""
    base, extra = divmod(total, n)
    owned = sorted((previous.get(mid, 0) for mid in survivors), reverse=True)
    return sum(min(c, base + 1 if i < extra else base) for i, c in enumerate(owned))


@settings(max_examples=60)
@given(
    group=groups(equal_subscriptions=True, max_members=6),
    leave=st.sets(st.integers(0, 5)),
    join=st.integers(0, 3),
    grow=st.integers(0, 4),
)
def test_sticky_keeps_as_much_as_balance_allows(
    group: Group, leave: set[int], join: int, grow: int
) -> None:
    sticky = get_assignor("sticky")
    first = sticky.assign(group.members, group.partitions)
    # Nothing changed: nothing moves.
    again = sticky.assign(_with_user_data(group.members, first, 1), group.partitions)
    assert again == first
    topics = group.members[0].topics
    survivors = [m for i, m in enumerate(group.members) if i not in leave]
    newcomers = [Member(member_id=f"new{i}", topics=topics) for i in range(join)]
    members = _with_user_data(survivors, first, 1) + newcomers
    if not members:
        return
    partitions = {t: n + (grow if t in topics else 0) for t, n in group.partitions.items()}
    second = sticky.assign(members, partitions)
    assert_valid(second, members, partitions)
    assert max(counts(second)) - min(counts(second)) <= 1
    kept = sum(len(set(first[m.member_id]) & set(second[m.member_id])) for m in survivors)
    total = len(expected_partitions(members, partitions))
    previous = {mid: len(ps) for mid, ps in first.items()}
    assert kept == _best_kept(previous, [m.member_id for m in survivors], total, len(members))


@given(group=groups(max_members=6), leave=st.sets(st.integers(0, 5)))
def test_sticky_unequal_subscriptions_previous_owner_keeps_when_balanced(
    group: Group, leave: set[int]
) -> None:
    sticky = get_assignor("sticky")
    first = sticky.assign(group.members, group.partitions)
    again = sticky.assign(_with_user_data(group.members, first, 3), group.partitions)
    assert again == first
    survivors = _with_user_data(
        [m for i, m in enumerate(group.members) if i not in leave], first, 3
    )
    if survivors:
        second = sticky.assign(survivors, group.partitions)
        assert_valid(second, survivors, group.partitions)
        assert_locally_balanced(second, survivors)


def test_sticky_conflicting_claims_resolve_by_generation() -> None:
    members = [Member(member_id=m, topics=frozenset({"t"})) for m in ("a", "b", "c")]
    tp = TopicPartition
    # a (gen 5) and b (gen 3) both claim t-0: a wins. b and c tie on t-1 at gen 5: neither keeps it.
    plan = sticky_plan(
        members,
        {"t": 3},
        {"a": ([tp("t", 0)], 5), "b": ([tp("t", 0), tp("t", 1)], 3), "c": ([tp("t", 1)], 3)},
    )
    assert plan["a"] == [tp("t", 0)]
    plan = sticky_plan(
        members, {"t": 3}, {"b": ([tp("t", 1)], 5), "c": ([tp("t", 1), tp("t", 2)], 5)}
    )
    assert plan["c"] == [tp("t", 2)]
    assert_valid(plan, members, {"t": 3})


def test_sticky_ignores_claims_on_unsubscribed_or_missing_partitions() -> None:
    members = [
        Member(member_id="a", topics=frozenset({"t"})),
        Member(member_id="b", topics=frozenset({"t"})),
    ]
    tp = TopicPartition
    plan = sticky_plan(members, {"t": 2, "u": 1}, {"b": ([tp("t", 0), tp("t", 7), tp("u", 0)], 1)})
    assert plan == {"a": [tp("t", 1)], "b": [tp("t", 0)]}


# ---- cooperative hand-over ----------------------------------------------------


def _owning(
    members: Sequence[Member], owned: Mapping[str, list[TopicPartition]], generation: int
) -> list[Member]:
    return [
        Member(
            member_id=m.member_id,
            topics=m.topics,
            group_instance_id=m.group_instance_id,
            rack=m.rack,
            owned_partitions=tuple(owned.get(m.member_id, ())),
            generation=generation if m.member_id in owned else -1,
        )
        for m in members
    ]


@settings(max_examples=80)
@given(
    group=groups(max_members=6),
    leave=st.sets(st.integers(0, 5)),
    join=st.integers(0, 3),
    resubscribe=st.booleans(),
)
def test_cooperative_never_hands_over_an_owned_partition(
    group: Group, leave: set[int], join: int, resubscribe: bool
) -> None:
    coop = get_assignor("cooperative-sticky")
    first = coop.assign(group.members, group.partitions)
    assert_valid(first, group.members, group.partitions)
    all_topics = sorted(group.partitions)
    members = [m for i, m in enumerate(group.members) if i not in leave]
    members += [
        Member(member_id=f"new{i}", topics=frozenset(all_topics[: i + 1])) for i in range(join)
    ]
    if resubscribe and members:
        m0 = members[0]
        members[0] = Member(member_id=m0.member_id, topics=frozenset(all_topics[::-1][:1]))
    if not members:
        return
    owned: dict[str, list[TopicPartition]] = {
        m.member_id: first[m.member_id] for m in members if m.member_id in first
    }
    generation = 1
    for _round in range(4):
        current = _owning(members, owned, generation)
        plan = coop.assign(current, group.partitions)
        assert_valid(plan, current, group.partitions, complete=False)
        for mid, ps in plan.items():
            for tp in ps:
                others = [o for o, held in owned.items() if o != mid and tp in held]
                assert not others, f"{tp} given to {mid!r} while {others} still own it"
        # Members revoke what they lost and take what they got; the group rebalances again
        # only while someone had to revoke.
        revoked = any(set(owned.get(mid, ())) - set(ps) for mid, ps in plan.items())
        owned = {mid: list(ps) for mid, ps in plan.items()}
        generation += 1
        if not revoked:
            break
    else:
        raise AssertionError("cooperative rebalancing did not settle in 4 rounds")
    assert_valid(owned, members, group.partitions)
    assert_locally_balanced(owned, members)

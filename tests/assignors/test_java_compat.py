"""The assignors next to the Java client's own, run in a JVM at test time."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkacore.assignors import (
    Member,
    Plan,
    TopicPartition,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    get_assignor,
    sticky_user_data,
)

from .assignor_cases import Group, assert_locally_balanced, assert_valid, counts, groups

pytestmark = pytest.mark.java


def _hex(text: str | None) -> str:
    return "-" if text is None else text.encode().hex()


def _case(name: str, group: Group) -> list[str]:
    lines = [f"case {name}"]
    for topic, count in sorted(group.partitions.items()):
        racks = "-"
        if group.racks is not None:
            racks = "r" + ";".join(
                ",".join(_hex(r) for r in sorted(rs)) for rs in group.racks[topic]
            )
        lines.append(f"topic {topic} {count} {racks}")
    for m in group.members:
        topics = ",".join(sorted(m.topics)) or "-"
        owned = ",".join(f"{tp.topic}:{tp.partition}" for tp in m.owned_partitions) or "-"
        data = "-" if m.user_data is None else m.user_data.hex()
        lines.append(
            f"member {_hex(m.member_id)} {_hex(m.group_instance_id)} {_hex(m.rack)} "
            f"{m.generation} {topics} {owned} {data}"
        )
    lines.append("run")
    return lines


def _run(oracle: tuple[str, str], lines: Sequence[str]) -> list[str]:
    java, classpath = oracle
    proc = subprocess.run(
        [java, "-cp", classpath, "AssignorOracle"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.splitlines()


def _java_plans(oracle: tuple[str, str], cases: Sequence[tuple[str, Group]]) -> list[Plan]:
    lines = [line for name, group in cases for line in _case(name, group)]
    plans: list[Plan] = []
    plan: Plan = {}
    for line in _run(oracle, lines):
        if line == "end":
            plans.append(plan)
            plan = {}
            continue
        _, mid, *tps = line.split(" ")
        parsed = [TopicPartition(t, int(p)) for t, _, p in (x.rpartition(":") for x in tps)]
        plan[bytes.fromhex(mid).decode()] = sorted(parsed)
    assert len(plans) == len(cases)
    return plans


def _draw_cases(data: st.DataObject, n: int, **kw: bool) -> list[Group]:
    return [data.draw(groups(**kw)) for _ in range(n)]


# One JVM per hypothesis example would be slow: each example carries a batch of cases.
_java_settings = settings(
    max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.mark.parametrize("name", ["range", "roundrobin"])
@pytest.mark.parametrize("with_racks", [False, True])
@_java_settings
@given(data=st.data())
def test_plans_identical_to_java(
    assignor_oracle: tuple[str, str], name: str, with_racks: bool, data: st.DataObject
) -> None:
    cases = _draw_cases(data, 30, with_racks=with_racks)
    cases += _draw_cases(data, 15, with_racks=with_racks, equal_subscriptions=True)
    java = _java_plans(assignor_oracle, [(name, g) for g in cases])
    for group, java_plan in zip(cases, java, strict=True):
        ours = get_assignor(name).assign(
            group.members, group.partitions, partition_racks=group.racks
        )
        assert {k: sorted(v) for k, v in ours.items()} == java_plan, group


def test_range_rack_aware_plan_identical_to_java(assignor_oracle: tuple[str, str]) -> None:
    # A hand-made case where rack matching changes the plan: co-partitioned t0/t1, and t2 alone.
    members = tuple(
        Member(member_id=f"c{i}", topics=frozenset({"t0", "t1", "t2"}), rack=f"r{i % 3}")
        for i in range(3)
    )
    racks = {t: [frozenset({f"r{(p + 1) % 3}"}) for p in range(5)] for t in ("t0", "t1", "t2")}
    group = Group(members, {"t0": 5, "t1": 5, "t2": 5}, racks)
    (java,) = _java_plans(assignor_oracle, [("range", group)])
    ours = get_assignor("range").assign(members, group.partitions, partition_racks=racks)
    plain = get_assignor("range").assign(members, group.partitions)
    assert ours == java
    assert ours != plain


def _round(members: Sequence[Member], plan: Plan, generation: int) -> list[Member]:
    return [
        Member(
            member_id=m.member_id,
            topics=m.topics,
            group_instance_id=m.group_instance_id,
            user_data=sticky_user_data(plan.get(m.member_id), generation),
        )
        for m in members
    ]


@_java_settings
@given(data=st.data())
def test_sticky_matches_java_balance_and_stickiness(
    assignor_oracle: tuple[str, str], data: st.DataObject
) -> None:
    """Not plan for plan: both balanced, ours at least as sticky, and Java reads our user data."""
    cases: list[Group] = []
    firsts: list[Plan] = []
    unchanged: list[bool] = []
    for equal, same in [(True, True)] * 8 + [(True, False)] * 12 + [(False, False)] * 10:
        # Java's StickyAssignor misplaces partitions when some member subscribes to
        # nothing (its equal-subscription check starts from that empty set), so
        # every member here subscribes to something.
        group = data.draw(groups(equal_subscriptions=equal, nonempty_subscriptions=True))
        first = get_assignor("sticky").assign(group.members, group.partitions)
        members = list(group.members)
        if not same:
            keep = data.draw(st.lists(st.booleans(), min_size=len(members), max_size=len(members)))
            members = [m for m, k in zip(members, keep, strict=True) if k] or members[:1]
            members += [Member(member_id="late", topics=group.members[0].topics)]
        cases.append(Group(tuple(_round(members, first, 4)), group.partitions, None))
        firsts.append(first)
        unchanged.append(same)
    java = _java_plans(assignor_oracle, [("sticky", g) for g in cases])
    compared = 0
    for group, first, same, java_plan in zip(cases, firsts, unchanged, java, strict=True):
        ours = get_assignor("sticky").assign(group.members, group.partitions)
        assert_valid(ours, group.members, group.partitions)
        assert_locally_balanced(ours, group.members)
        if same:
            # Java decoded our StickyAssignorUserData and kept every partition where it was.
            assert java_plan == first == ours
        try:
            assert_valid(java_plan, group.members, group.partitions)
        except AssertionError:
            # Java's StickyAssignor sometimes hands a partition to a member that
            # does not subscribe to its topic (depending on input order); such a
            # plan is no yardstick. Ours was checked above either way.
            continue
        compared += 1
        if len({m.topics for m in group.members}) == 1:
            assert max(counts(ours)) - min(counts(ours)) <= 1
            assert max(counts(java_plan)) - min(counts(java_plan)) <= 1

            def kept(plan: Plan, first: Plan = first) -> int:
                return sum(len(set(ps) & set(first.get(mid, ()))) for mid, ps in plan.items())

            assert kept(ours) >= kept(java_plan)
    # Most cases must have been compared, or this test would prove nothing.
    assert compared >= len(cases) // 2, f"only {compared} of {len(cases)} Java plans valid"


@_java_settings
@given(data=st.data())
def test_cooperative_sticky_java_reads_our_subscriptions(
    assignor_oracle: tuple[str, str], data: st.DataObject
) -> None:
    """Java's cooperative assignor, given our owned partitions, withholds what moves, like ours."""
    cases = []
    for _ in range(15):
        group = data.draw(groups(equal_subscriptions=True))
        first = get_assignor("cooperative-sticky").assign(group.members, group.partitions)
        members = [
            Member(
                member_id=m.member_id,
                topics=m.topics,
                owned_partitions=tuple(first[m.member_id]),
                generation=2,
            )
            for m in group.members
        ] + [Member(member_id="late", topics=group.members[0].topics, generation=-1)]
        cases.append(Group(tuple(members), group.partitions, None))
    java = _java_plans(assignor_oracle, [("cooperative-sticky", g) for g in cases])
    for group, java_plan in zip(cases, java, strict=True):
        ours = get_assignor("cooperative-sticky").assign(group.members, group.partitions)
        for plan in (ours, java_plan):
            assert_valid(plan, group.members, group.partitions, complete=False)
            owner = {tp: m.member_id for m in group.members for tp in m.owned_partitions}
            for mid, ps in plan.items():
                assert all(owner.get(tp, mid) == mid for tp in ps)
        # Same number of partitions still to hand over in the follow-up rebalance.
        assert sum(counts(ours)) == sum(counts(java_plan))


def test_user_data_bytes_interoperate(assignor_oracle: tuple[str, str]) -> None:
    tp = TopicPartition
    assigned = [tp("orders", 3), tp("orders", 0), tp("clicks", 7)]
    lines = [
        "stickydata 17 " + ",".join(f"{t.topic}:{t.partition}" for t in assigned),
        "stickydata -1 orders:1",
        "coopdata 9",
        "coopdata -1",
    ]
    sticky_17, sticky_default, coop_9, coop_default = _run(assignor_oracle, lines)
    decoded = decode_sticky_user_data(bytes.fromhex(sticky_17))
    assert sorted(decoded.partitions) == sorted(assigned)
    assert decoded.generation == 17
    assert decode_sticky_user_data(bytes.fromhex(sticky_default)) == ((tp("orders", 1),), -1)
    # One topic has one encoding: the bytes themselves must match.
    assert sticky_user_data([tp("orders", 1)], -1) == bytes.fromhex(sticky_default)
    assert encode_cooperative_user_data(9) == bytes.fromhex(coop_9)
    assert decode_cooperative_user_data(bytes.fromhex(coop_default)) == -1

"""Registry, input/plan checks, the kiel allocator and the sticky user-data codecs."""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkacore.assignors import (
    Member,
    RebalanceProtocol,
    TopicPartition,
    assignor_names,
    common_protocol,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    get_assignor,
    naive_allocator,
    register_assignor,
    unregister_assignor,
)
from kafkacore.errors import LocalProtocolError

tp = TopicPartition
MEMBERS = [
    Member(member_id="a", topics=frozenset({"t"})),
    Member(member_id="b", topics=frozenset({"t"})),
]


def test_builtins_have_java_names_and_protocols() -> None:
    assert {"range", "roundrobin", "sticky", "cooperative-sticky"} <= set(assignor_names())
    coop = get_assignor("cooperative-sticky")
    assert coop.protocols == (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)
    for name in ("range", "roundrobin", "sticky"):
        assert get_assignor(name).protocols == (RebalanceProtocol.EAGER,)
    assert common_protocol([coop]) is RebalanceProtocol.COOPERATIVE
    assert common_protocol([coop, get_assignor("range")]) is RebalanceProtocol.EAGER


def test_common_protocol_errors() -> None:
    with pytest.raises(LocalProtocolError, match="at least one"):
        common_protocol([])
    only_coop = register_assignor(
        "coop-only",
        lambda ms, ps: {m.member_id: [] for m in ms},
        protocols=[RebalanceProtocol.COOPERATIVE],
    )
    try:
        with pytest.raises(LocalProtocolError, match="share no rebalance protocol"):
            common_protocol([only_coop, get_assignor("range")])
    finally:
        unregister_assignor("coop-only")


def test_user_assignor_round_trip() -> None:
    def everything_to_first(
        members: Sequence[Member], partitions: Mapping[str, int]
    ) -> dict[str, list[TopicPartition]]:
        first = min(m.member_id for m in members)
        plan: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
        plan[first] = [tp(t, p) for t, n in partitions.items() for p in range(n)]
        return plan

    a = register_assignor("greedy", everything_to_first)
    try:
        assert get_assignor("greedy") is a
        assert a.assign(MEMBERS, {"t": 2}) == {"a": [tp("t", 0), tp("t", 1)], "b": []}
        assert a.user_data(None, 3) is None
        with pytest.raises(LocalProtocolError, match="already registered"):
            register_assignor("greedy", everything_to_first)
        register_assignor("greedy", everything_to_first, replace=True)
    finally:
        unregister_assignor("greedy")
    with pytest.raises(LocalProtocolError, match="no assignor named 'greedy'"):
        get_assignor("greedy")
    with pytest.raises(LocalProtocolError, match="no assignor named"):
        unregister_assignor("greedy")


def test_rack_aware_user_assignor_gets_racks() -> None:
    seen = []

    def fn(
        members: Sequence[Member], partitions: Mapping[str, int], *, partition_racks: object
    ) -> dict[str, list[TopicPartition]]:
        seen.append(partition_racks)
        return {m.member_id: [] for m in members}

    register_assignor("racky", fn, rack_aware=True)
    try:
        get_assignor("racky").assign(MEMBERS, {"t": 1}, partition_racks={"t": [{"r1"}]})
    finally:
        unregister_assignor("racky")
    assert seen == [{"t": [{"r1"}]}]


def test_builtins_cannot_be_replaced() -> None:
    with pytest.raises(LocalProtocolError, match="built-in"):
        register_assignor("range", lambda ms, ps: {}, replace=True)
    with pytest.raises(LocalProtocolError, match="built in"):
        unregister_assignor("sticky")
    with pytest.raises(LocalProtocolError, match="non-empty"):
        register_assignor("", lambda ms, ps: {})
    with pytest.raises(TypeError, match="not callable"):
        register_assignor("x", 42)  # type: ignore[arg-type]
    with pytest.raises(LocalProtocolError, match="must support"):
        register_assignor("x", lambda ms, ps: {}, protocols=())


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ([], "return a dict"),
        ({"a": []}, r"missing \['b'\]"),
        ({"a": [], "b": [], "c": []}, r"unknown \['c'\]"),
        ({"a": [tp("t", 5)], "b": []}, "does not exist"),
        ({"a": [tp("u", 0)], "b": []}, "does not exist"),
        ({"a": [tp("t", 0)], "b": [tp("t", 0)]}, "to both 'a' and 'b'"),
    ],
)
def test_bad_user_plans_are_rejected(plan: object, message: str) -> None:
    register_assignor("bad", lambda ms, ps: plan, replace=True)  # type: ignore[arg-type,return-value]
    try:
        with pytest.raises(LocalProtocolError, match=message):
            get_assignor("bad").assign(MEMBERS, {"t": 2})
    finally:
        unregister_assignor("bad")


def test_plan_to_unsubscribed_member_is_rejected() -> None:
    members = [*MEMBERS, Member(member_id="c", topics=frozenset({"u"}))]
    register_assignor("bad", lambda ms, ps: {"a": [], "b": [], "c": [tp("t", 0)]})
    try:
        with pytest.raises(LocalProtocolError, match="does not subscribe"):
            get_assignor("bad").assign(members, {"t": 1, "u": 1})
    finally:
        unregister_assignor("bad")


def test_bad_input_is_rejected() -> None:
    rr = get_assignor("roundrobin")
    with pytest.raises(LocalProtocolError, match="appears twice"):
        rr.assign([MEMBERS[0], MEMBERS[0]], {"t": 1})
    with pytest.raises(LocalProtocolError, match="partition count -1"):
        rr.assign(MEMBERS, {"t": -1})
    with pytest.raises(LocalProtocolError, match="rack sets"):
        rr.assign(MEMBERS, {"t": 2}, partition_racks={"t": [{"r"}]})
    with pytest.raises(TypeError, match="Member objects"):
        rr.assign(["a"], {"t": 1})  # type: ignore[list-item]
    with pytest.raises(TypeError, match="frozenset"):
        Member(member_id="a", topics="t")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="member_id"):
        Member(member_id=1, topics=frozenset())  # type: ignore[arg-type]


def test_member_normalises_topics_and_owned() -> None:
    m = Member(member_id="a", topics={"t"}, owned_partitions=[("t", 1)])  # type: ignore[arg-type]
    assert m.topics == frozenset({"t"})
    assert m.owned_partitions == (tp("t", 1),)


def test_empty_group_and_topics() -> None:
    for name in ("range", "roundrobin", "sticky", "cooperative-sticky"):
        assert get_assignor(name).assign([], {"t": 3}) == {}
        lonely = [Member(member_id="a", topics=frozenset({"missing", "empty"}))]
        assert get_assignor(name).assign(lonely, {"empty": 0}) == {"a": []}


def test_naive_allocator_is_kiels_round_robin() -> None:
    got = naive_allocator(["m1", "m2"], ["a:0", "a:1", "b:0", "b:1", "b:2"])
    assert got == {"m1": {"a": [0], "b": [0, 2]}, "m2": {"a": [1], "b": [1]}}
    assert naive_allocator(["m1", "m2", "m3"], ["a:0"]) == {"m1": {"a": [0]}}
    assert naive_allocator([], ["a:0"]) == {}
    with pytest.raises(ValueError, match="'topic:partition'"):
        naive_allocator(["m"], ["a0"])


# ---- user data codecs ----------------------------------------------------------

partition_lists = st.lists(
    st.builds(tp, st.text(min_size=1, max_size=12), st.integers(0, 2**31 - 1)),
    max_size=30,
    unique=True,
)


@given(partition_lists, st.integers(-(2**31), 2**31 - 1))
def test_sticky_user_data_round_trip(parts: list[TopicPartition], generation: int) -> None:
    decoded = decode_sticky_user_data(encode_sticky_user_data(parts, generation))
    assert sorted(decoded.partitions) == sorted(parts)
    assert decoded.generation == generation


def test_sticky_user_data_v0_and_garbage() -> None:
    v1 = encode_sticky_user_data([tp("t", 2), tp("t", 0)], 9)
    v0 = v1[:-4]
    assert decode_sticky_user_data(v0) == ((tp("t", 2), tp("t", 0)), None)
    assert decode_sticky_user_data(None) == ((), None)
    assert decode_sticky_user_data(b"") == ((), None)
    assert decode_sticky_user_data(b"\x00\x00") == ((), -1)
    # A count far beyond the bytes present is garbage, not an allocation.
    assert decode_sticky_user_data(struct.pack(">i", 2**30)) == ((), -1)
    # Trailing bytes after v1 are ignored, as Java's schema reader does.
    assert decode_sticky_user_data(v1 + b"junk") == ((tp("t", 2), tp("t", 0)), 9)


@given(st.binary(max_size=64))
def test_sticky_user_data_decoder_never_raises(data: bytes) -> None:
    decoded = decode_sticky_user_data(data)
    assert decoded.generation is None or -(2**31) <= decoded.generation < 2**31


def test_sticky_user_data_encoder_bounds() -> None:
    with pytest.raises(ValueError, match="int32"):
        encode_sticky_user_data([], 2**31)
    with pytest.raises(ValueError, match="too long"):
        encode_sticky_user_data([tp("x" * 40000, 0)], 1)


def test_cooperative_user_data() -> None:
    assert encode_cooperative_user_data(7) == b"\x00\x00\x00\x07"
    assert decode_cooperative_user_data(b"\x00\x00\x00\x07") == 7
    assert decode_cooperative_user_data(b"\xff\xff\xff\xff") == -1
    assert decode_cooperative_user_data(None) is None
    assert decode_cooperative_user_data(b"\x01") == -1
    with pytest.raises(ValueError, match="int32"):
        encode_cooperative_user_data(-(2**31) - 1)


def test_cooperative_generation_from_user_data_when_subscription_has_none() -> None:
    # A v0/v1 subscription carries no generation: the user data's wins the conflict.
    members = [
        Member(
            member_id="a",
            topics=frozenset({"t"}),
            owned_partitions=(tp("t", 0),),
            user_data=encode_cooperative_user_data(4),
        ),
        Member(
            member_id="b",
            topics=frozenset({"t"}),
            owned_partitions=(tp("t", 0),),
            user_data=encode_cooperative_user_data(2),
        ),
    ]
    plan = get_assignor("cooperative-sticky").assign(members, {"t": 2})
    assert plan == {"a": [tp("t", 0)], "b": [tp("t", 1)]}


def test_sticky_user_data_functions() -> None:
    sticky, coop = get_assignor("sticky"), get_assignor("cooperative-sticky")
    assert sticky.user_data(None, 5) is None
    data = sticky.user_data([tp("t", 1)], 5)
    assert data is not None and decode_sticky_user_data(data) == ((tp("t", 1),), 5)
    assert coop.user_data(None, -1) == encode_cooperative_user_data(-1)

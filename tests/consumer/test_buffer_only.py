"""FetchBuffer taking from named partitions only (``only=``, aiokafka's
``getmany(tp1, tp2)``): other partitions' fetches are skipped over, never
dropped, and keep their order and positions; a named partition must be
assigned. The property test interleaves fetches of three partitions with
random takes, named and not, and checks every record comes out exactly once,
in per-partition order, with the buffer's byte count and bound honest."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkacore.client.metadata import TopicPartition
from kafkacore.consumer.buffer import FetchBuffer, named_partitions
from tests.consumer.test_buffer import at, fetched
from tests.consumer.units import T0, T1, U0, world

ALL = (T0, T1, U0)


def offsets(records: list[object]) -> list[tuple[int, int]]:
    return [(r.partition, r.offset) for r in records]  # type: ignore[attr-defined]


def test_a_named_take_skips_other_partitions_and_leaves_them_in_order() -> None:
    w = world()
    at(w, (T0, 0), (T1, 0), (U0, 5))
    buf = FetchBuffer(max_bytes=1 << 20)
    a, b, c = fetched(T0, 0, 3), fetched(T1, 0, 2), fetched(U0, 5, 2)
    for cf in (a, b, c):
        buf.add(cf)
    got = buf.take_records(w.subs, 10, only=frozenset({T1}))
    assert offsets(got) == [(1, 0), (1, 1)]
    assert w.subs.parts[T0].position == 0 and w.subs.parts[U0].position == 5  # untouched
    assert w.subs.parts[T1].position == 2
    assert not buf.holds(T1) and buf.holds(T0) and buf.holds(U0)
    assert buf.nbytes == a.nbytes + c.nbytes and buf.released == 1
    # A plain take afterwards hands out the rest in arrival order.
    got = buf.take_records(w.subs, 10)
    assert [(r.topic, r.partition, r.offset) for r in got] == [
        ("t", 0, 0),
        ("t", 0, 1),
        ("t", 0, 2),
        ("u", 0, 5),
        ("u", 0, 6),
    ]
    assert len(buf) == 0 and buf.nbytes == 0


def test_a_named_take_walks_the_named_fetches_in_arrival_order_up_to_the_limit() -> None:
    w = world()
    at(w, (T0, 0), (T1, 0), (U0, 0))
    buf = FetchBuffer(max_bytes=1 << 20)
    for cf in (fetched(U0, 0, 2), fetched(T0, 0, 2), fetched(T1, 0, 3)):
        buf.add(cf)
    named = frozenset({T1, U0})
    assert offsets(buf.take_records(w.subs, 3, only=named)) == [(0, 0), (0, 1), (1, 0)]
    assert buf.holds(T1) and w.subs.parts[T1].position == 1  # part of T1's fetch is left
    assert offsets(buf.take_records(w.subs, 3, only=named)) == [(1, 1), (1, 2)]
    assert w.subs.parts[T0].position == 0
    assert offsets(buf.take_records(w.subs, 3)) == [(0, 0), (0, 1)]


def test_a_stale_named_fetch_is_dropped_and_a_stale_other_one_left_alone() -> None:
    w = world()
    at(w, (T0, 0), (T1, 0))
    buf = FetchBuffer(max_bytes=1 << 20)
    buf.add(fetched(T0, 0, 2))
    buf.add(fetched(T1, 0, 2))
    w.subs.seek(T0, 1)  # both fetches now start where the partitions no longer are
    w.subs.seek(T1, 1)
    assert buf.take_records(w.subs, 10, only=frozenset({T1})) == []
    assert not buf.holds(T1) and buf.holds(T0)  # T0's goes when a take reaches it
    assert buf.take_records(w.subs, 10) == [] and len(buf) == 0


def test_named_batches_and_lent_records() -> None:
    w = world()
    at(w, (T0, 0), (T1, 0))
    buf = FetchBuffer(max_bytes=1 << 20)
    buf.add(fetched(T0, 0, 3))
    buf.add(fetched(T1, 0, 4))
    batches = buf.take_batches(w.subs, 3, only=frozenset({T1}))
    assert [(b.partition, list(b.offsets)) for b in batches] == [(1, [0, 1, 2])]
    assert w.subs.parts[T0].position == 0
    got = buf.take_records(w.subs, 10, lend=True, only=frozenset({T1}))
    assert offsets(got) == [(1, 3)]
    assert w.subs.parts[T1].lent_from == (3, 3)  # commits cover only what was handed over
    assert w.subs.parts[T0].lent_from is None


def test_the_buffer_is_truthy_when_a_poll_like_the_last_would_find_data() -> None:
    # The fetcher announces RecordsAvailable when this turns true, so a
    # getone(T1) waiting while T0's data sits here wakes when T1's arrives.
    w = world()
    at(w, (T0, 0), (T1, 0))
    buf = FetchBuffer(max_bytes=1 << 20)
    buf.add(fetched(T0, 0, 2))
    assert buf
    assert buf.take_records(w.subs, 10, only=frozenset({T1})) == []
    assert not buf and len(buf) == 1  # T0's data waits, but not for this reader
    buf.add(fetched(T1, 0, 1))
    assert buf
    assert buf.take_batches(w.subs, 10, only=frozenset({U0})) == []
    assert not buf
    assert len(buf.take_records(w.subs, 1)) == 1  # a plain take reads anything again
    assert buf


def test_named_partitions_must_be_assigned_once_the_group_is_settled() -> None:
    assigned = {T0, T1}
    assert named_partitions([("t", 1)], assigned, settling=False) == {T1}
    with pytest.raises(ValueError, match=r"records of u-0 were asked for.*not assigned it"):
        named_partitions([T0, U0], assigned, settling=False)
    with pytest.raises(ValueError, match=r"assigned: nothing"):
        named_partitions([T0], set(), settling=False)
    many = {TopicPartition("t", p) for p in range(12)}
    with pytest.raises(ValueError, match=r"t-7 and 4 more"):
        named_partitions([U0], many, settling=False)
    # While the group rebalances, the partition may still come: no error yet.
    assert named_partitions([U0], assigned, settling=True) == {U0}
    with pytest.raises(ValueError, match="names no partition"):
        named_partitions([], assigned, settling=False)


# -- the property: named takes then plain ones hand out every record exactly once ----------
ops = st.lists(
    st.one_of(
        st.tuples(st.just("fetch"), st.sampled_from(ALL), st.integers(1, 5)),
        st.tuples(
            st.just("take"),
            st.frozensets(st.sampled_from(ALL), min_size=1),
            st.integers(1, 8),
            st.booleans(),
        ),
        st.tuples(st.just("all"), st.integers(1, 8), st.booleans()),
    ),
    max_size=50,
)


@settings(max_examples=200, deadline=None)
@given(script=ops, bound=st.integers(1, 600))
def test_named_then_plain_takes_hand_out_every_record_once_in_order(
    script: list[tuple[object, ...]], bound: int
) -> None:
    w = world()
    at(w, *((tp, 0) for tp in ALL))
    buf = FetchBuffer(max_bytes=bound)
    fetched_to = dict.fromkeys(ALL, 0)  # the log end each partition was fetched up to
    seen: dict[TopicPartition, list[int]] = {tp: [] for tp in ALL}
    largest = 0

    def take(limit: int, only: frozenset[TopicPartition] | None, batches: bool) -> None:
        before = {tp: w.subs.parts[tp].position for tp in ALL}
        if batches:
            got = [
                (TopicPartition(b.topic, b.partition), o)
                for b in buf.take_batches(w.subs, limit, only=only)
                for o in b.offsets
            ]
        else:
            got = [
                (TopicPartition(r.topic, r.partition), r.offset)
                for r in buf.take_records(w.subs, limit, only=only)
            ]
        assert len(got) <= limit
        for tp in ALL:
            mine = [o for t, o in got if t == tp]
            if only is not None and tp not in only:
                assert not mine and w.subs.parts[tp].position == before[tp]
            seen[tp].extend(mine)
            if mine:
                assert w.subs.parts[tp].position == mine[-1] + 1

    for op in script:
        if op[0] == "fetch":
            tp, count = op[1], op[2]
            assert isinstance(tp, TopicPartition) and isinstance(count, int)
            # As the fetcher: one fetch per partition, none while the buffer is full.
            if buf.holds(tp) or buf.full:
                continue
            cf = fetched(tp, fetched_to[tp], count)
            largest = max(largest, cf.nbytes)
            buf.add(cf)
            fetched_to[tp] += count
        elif op[0] == "take":
            only, limit, batches = op[1], op[2], op[3]
            assert isinstance(only, frozenset) and isinstance(limit, int)
            take(limit, only, bool(batches))
        else:
            limit, batches = op[1], op[2]
            assert isinstance(limit, int)
            take(limit, None, bool(batches))
        assert buf.nbytes < bound + largest  # the bound, overshot by one fetch at most
        assert buf.full == (buf.nbytes >= bound)
    while buf.holds(T0) or buf.holds(T1) or buf.holds(U0):
        take(7, None, False)
    assert buf.nbytes == 0
    for tp in ALL:
        assert seen[tp] == list(range(fetched_to[tp])), tp
        assert w.subs.parts[tp].position == fetched_to[tp]

"""ConsumerCore polls that name their partitions (``only=``, what aiokafka's
``getone(tp)`` / ``getmany(tp1, tp2)`` are built on), against the fake
broker: records of the named partitions only, the others kept for later
with their positions; a partition not assigned is a ValueError once the
group is stable, and no error while it is still being assigned; the data
of a named partition that arrives while others' data waits is announced.
The hypothesis test interleaves appends, fetches and named and plain polls
over three partitions on two leaders."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkacore.client.metadata import TopicPartition
from kafkacore.consumer import PartitionsAssigned, RecordsAvailable
from kafkacore.consumer.core import ConsumerCore
from kafkacore.errors import LocalProtocolError
from tests.client.fakebroker import Topic
from tests.consumer.fake import boot_consumer

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))
U0 = TopicPartition("u", 0)


def _assigned(n: int = 2, **consumer: Any) -> tuple[ConsumerCore, Any, Any]:
    """Two partitions of ``t`` (T1 led by broker 1), each with ``n`` records, both buffered."""
    core, pump, kafka, _ = boot_consumer(
        [Topic("t", 2, leaders={1: 1}), Topic("u", 1)],
        n=2,
        auto_offset_reset="earliest",
        **consumer,
    )
    for tp in (T0, T1):
        name = b"ab"[tp.partition : tp.partition + 1]
        kafka.log(tp.topic, tp.partition).append([b"%s-%d" % (name, i) for i in range(n)])
    core.assign([T0, T1], now=pump.now)
    pump.run(until=lambda: len(core._buffer) == 2)
    assert len(core._buffer) == 2
    return core, pump, kafka


def test_a_named_poll_reads_its_partitions_and_keeps_the_others() -> None:
    core, pump, _ = _assigned(3)
    got = core.poll_records(now=pump.now, only=frozenset({T1}))
    assert [(r.partition, r.offset, r.value) for r in got] == [
        (1, 0, b"b-0"),
        (1, 1, b"b-1"),
        (1, 2, b"b-2"),
    ]
    assert core.position(T0) == 0 and core.position(T1) == 3
    rest = core.poll_records(now=pump.now)
    assert [(r.partition, r.offset) for r in rest] == [(0, 0), (0, 1), (0, 2)]
    batches = core.poll_batches(now=pump.now, only=frozenset({T0}))
    assert batches == []  # everything was handed out once


def test_named_batches_keep_the_others_too() -> None:
    core, pump, _ = _assigned(4)
    batches = core.poll_batches(3, now=pump.now, only=frozenset({T0}))
    assert [(b.partition, list(b.offsets)) for b in batches] == [(0, [0, 1, 2])]
    assert core.position(T1) == 0
    assert [
        (r.partition, r.offset) for r in core.poll_records(2, now=pump.now, only=frozenset({T1}))
    ] == [
        (1, 0),
        (1, 1),
    ]


def test_an_unassigned_partition_is_a_value_error_naming_it() -> None:
    core, pump, _ = _assigned()
    with pytest.raises(ValueError, match=r"records of u-0 were asked for.*assigned: t-0, t-1"):
        core.poll_records(now=pump.now, only=frozenset({T0, U0}))
    with pytest.raises(ValueError, match=r"records of t-5 were asked"):
        core.poll_batches(now=pump.now, only=frozenset({TopicPartition("t", 5)}))
    assert core.position(T0) == 0  # nothing was taken
    core.shutdown(now=pump.now)
    with pytest.raises(LocalProtocolError, match="poll_records: the consumer is closed"):
        core.poll_records(now=pump.now, only=frozenset({U0}))  # closed first, not "unassigned"


def test_a_group_member_waits_for_its_assignment_then_refuses_what_it_was_not_given() -> None:
    core, pump, kafka, _ = boot_consumer(
        [Topic("t", 2), Topic("u", 1)], group_id="g", auto_offset_reset="earliest"
    )
    kafka.log("t", 0).append([b"a", b"b"])
    core.subscribe(["t"], now=pump.now)
    # Joining: T0 is not assigned yet but may be (aiokafka's getmany waits too).
    assert core.poll_records(now=pump.now, only=frozenset({T0})) == []
    assert core.poll_records(now=pump.now, only=frozenset({U0})) == []
    got: list[Any] = []

    def arrived() -> bool:
        got.extend(core.poll_records(now=pump.now, only=frozenset({T0})))
        pump.drain()
        return len(got) == 2

    pump.run(until=arrived, rounds=400)
    assert any(isinstance(e, PartitionsAssigned) for e in pump.events)
    assert [r.offset for r in got] == [0, 1]
    with pytest.raises(ValueError, match="records of u-0 were asked for"):
        core.poll_records(now=pump.now, only=frozenset({U0}))


def test_a_named_partitions_data_is_announced_while_others_wait_in_the_buffer() -> None:
    # What wakes a waiting getone(T1): RecordsAvailable, although T0's data
    # stayed in the buffer all along (the buffer was not empty).
    core, pump, kafka = _assigned()
    assert [r.partition for r in core.poll_records(now=pump.now, only=frozenset({T1}))] == [1, 1]
    assert core.poll_records(now=pump.now, only=frozenset({T1})) == []
    pump.drain()
    pump.events.clear()
    kafka.log("t", 1).append([b"late"])
    announced = lambda: any(isinstance(e, RecordsAvailable) for e in pump.events)  # noqa: E731
    pump.run(until=announced)
    assert announced(), "T1's data arrived unannounced: a waiting getone(T1) would sleep on"
    assert [r.value for r in core.poll_records(now=pump.now, only=frozenset({T1}))] == [b"late"]
    assert [r.offset for r in core.poll_records(now=pump.now)] == [0, 1]  # T0's, kept


def test_a_named_partition_at_its_end_is_fetched_while_its_leaders_others_wait_unread() -> None:
    # The issue 12 rule holds a leader back while its partitions wait in the
    # buffer; data a named poll leaves where it is must not hold back the
    # named partition's next Fetch, or getone(T1) would wait for T0's reader.
    core, pump, kafka, _ = boot_consumer([Topic("t", 2)], auto_offset_reset="earliest")
    for tp in (T0, T1):
        kafka.log("t", tp.partition).append([b"x", b"y"])
    core.assign([T0, T1], now=pump.now)
    pump.run(until=lambda: len(core._buffer) == 2)
    assert len(core.poll_records(now=pump.now, only=frozenset({T1}))) == 2
    kafka.log("t", 1).append([b"late"])
    got: list[Any] = []

    def arrived() -> bool:
        got.extend(core.poll_records(now=pump.now, only=frozenset({T1})))
        pump.drain()
        return bool(got)

    pump.run(until=arrived)
    assert [(r.partition, r.value) for r in got] == [(1, b"late")]
    assert [r.offset for r in core.poll_records(now=pump.now)] == [0, 1]  # T0's, kept


# -- the property ------------------------------------------------------------------------
PARTS = (T0, T1, T2)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.sampled_from(PARTS), st.integers(1, 5)),
        st.tuples(st.just("pump"), st.integers(1, 6)),
        st.tuples(
            st.just("named"),
            st.frozensets(st.sampled_from(PARTS), min_size=1),
            st.integers(1, 7),
            st.booleans(),
        ),
        st.tuples(st.just("plain"), st.integers(1, 7), st.booleans()),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(script=steps)
def test_named_then_plain_polls_hand_out_every_record_once_in_order(
    script: list[tuple[Any, ...]],
) -> None:
    core, pump, kafka, _ = boot_consumer(
        [Topic("t", 3, leaders={1: 1})],
        n=2,
        auto_offset_reset="earliest",
        default_api_timeout_ms=86_400_000,
        fetch_buffer_bytes=300,  # small: the bound is reached and drained often
    )
    core.assign(PARTS, now=pump.now)
    pump.run(until=lambda: core.positions_known(PARTS))
    seen: dict[TopicPartition, list[int]] = {tp: [] for tp in PARTS}

    def poll(limit: int, only: frozenset[TopicPartition] | None, batches: bool) -> None:
        before = {tp: core.position(tp) for tp in PARTS}
        if batches:
            got = [
                (TopicPartition(b.topic, b.partition), o)
                for b in core.poll_batches(limit, now=pump.now, only=only)
                for o in b.offsets
            ]
        else:
            got = [
                (TopicPartition(r.topic, r.partition), r.offset)
                for r in core.poll_records(limit, now=pump.now, only=only)
            ]
        assert len(got) <= limit
        for tp in PARTS:
            mine = [o for t, o in got if t == tp]
            if only is not None and tp not in only:
                assert not mine and core.position(tp) == before[tp]
            seen[tp].extend(mine)

    for step in script:
        if step[0] == "append":
            kafka.log("t", step[1].partition).append([b"x"] * step[2])
        elif step[0] == "pump":
            for _ in range(step[1]):
                pump.step()
        elif step[0] == "named":
            poll(step[2], step[1], step[3])
        else:
            poll(step[1], None, step[2])
    ends = {tp: kafka.log("t", tp.partition).end for tp in PARTS}

    def everything() -> bool:
        poll(7, None, False)
        pump.drain()
        return all(len(seen[tp]) >= ends[tp] for tp in PARTS)

    pump.run(until=everything, rounds=2000)
    for tp in PARTS:
        assert seen[tp] == list(range(ends[tp])), tp

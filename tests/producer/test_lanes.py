"""The fast lane (kafkacore/producer/lanes.py) puts every record where the slow path would.

Two cores with the same seed get the same appends; one may use lanes, the
other may not. Batches (partition, cut points, tokens, timestamps), the
buffer accounting and the sticky partitioner's state must be the same.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkacore.partitioner import StickyState
from kafkacore.producer import BufferFull, IdState, ProducerCore
from tests.client.fakebroker import Topic
from tests.producer.scripted import boot_producer

Op = tuple[str, int, bool, int | None, bool]  # topic, size, keyed, partition, headers


def _layout(core: ProducerCore) -> list[tuple[Any, list[object], list[int]]]:
    """Every batch opened since boot (queued or sent), in order: partition and records."""
    return [(b.tp, list(b.tokens), list(b.timestamps)) for b in core._opened]  # type: ignore[attr-defined]


def _recording(core: ProducerCore) -> None:
    acc = core._acc
    opened: list[Any] = []
    original = acc._open_batch

    def open_batch(q: Any, now: float) -> Any:
        batch = original(q, now)
        opened.append(batch)
        return batch

    acc._open_batch = open_batch  # type: ignore[method-assign]
    core._opened = opened  # type: ignore[attr-defined]


def _boot(lanes: bool, buffer_memory: int = 1 << 20) -> tuple[ProducerCore, Any]:
    core, pump, _log = boot_producer(
        topics=[Topic("a", 3), Topic("b", 2)],
        seed=7,
        linger_ms=60_000,
        batch_size=2048,
        buffer_memory=buffer_memory,
    )
    pump.run(until=lambda: core.id_state is IdState.READY)
    for topic in ("a", "b"):  # metadata for both, so every append is placed at once
        core.append(topic, b"warm", timestamp=0, token=("warm", topic), now=pump.now)
    core.flush(now=pump.now)
    pump.run(until=lambda: core.pending_records == 0)
    core._lanes_allowed = lanes
    _recording(core)
    return core, pump


def _apply(core: ProducerCore, now: float, ops: list[Op]) -> list[bool]:
    wakes = []
    for i, (topic, size, keyed, partition, headers) in enumerate(ops):
        wakes.append(
            core.append(
                topic,
                b"v" * size,
                b"k%d" % (i % 5) if keyed else None,
                [("h", b"1")] if headers else None,
                partition=partition,
                timestamp=1000 + i,
                token=i,
                now=now,
            )
        )
    return wakes


ops_strategy = st.lists(
    st.tuples(
        st.sampled_from(["a", "a", "a", "b"]),
        st.integers(0, 700),
        st.sampled_from([False, False, False, True]),
        st.sampled_from([None, None, None, None, 0, 1]),
        st.sampled_from([False, False, False, True]),
    ),
    max_size=300,
)


@settings(max_examples=60, deadline=None)
@given(ops=ops_strategy)
def test_lanes_place_every_record_as_the_slow_path(ops: list[Op]) -> None:
    fast, fast_pump = _boot(True)
    slow, slow_pump = _boot(False)
    fast_wakes = _apply(fast, fast_pump.now, ops)
    slow_wakes = _apply(slow, slow_pump.now, ops)
    assert fast_wakes == slow_wakes
    assert _layout(fast) == _layout(slow)
    assert sum(len(tokens) for _, tokens, _ in _layout(fast)) == len(ops)
    assert fast._acc.used == slow._acc.used
    fast._lanes.settle_all()
    for topic in ("a", "b"):
        assert fast._partitioner.state(topic) == slow._partitioner.state(topic)


def test_a_lane_takes_unkeyed_records_without_the_partitioner_until_the_batch_is_full() -> None:
    core, pump = _boot(True)
    assert core.append("a", b"x" * 100, timestamp=1, token=0, now=pump.now) is True
    lane = core._lanes.get("a")
    assert lane is not None and lane.batch.record_count == 1
    state, partition, produced = core._partitioner.state("a")
    assert (state, partition) == (StickyState.STUCK, lane.partition)
    joined = 0
    while core.try_append("a", b"x" * 100, 2, joined + 1):
        joined += 1
    # 2048-byte batches of 121-byte estimates: 16 fit, the 17th needs the slow path.
    assert joined == 15
    assert core._partitioner.state("a") == (state, partition, produced)  # not told yet
    assert core.append("a", b"x" * 100, timestamp=3, token=99, now=pump.now) is True
    assert core._partitioner.state("a")[0] is StickyState.UNCHOSEN or (
        core._partitioner.state("a")[1] != partition
    )


@pytest.mark.parametrize("why", ["keyed", "headers", "partition", "metadata", "close"])
def test_anything_but_a_plain_record_settles_the_lane_first(why: str) -> None:
    core, pump = _boot(True)
    core.append("a", b"x", timestamp=1, token=0, now=pump.now)
    core.try_append("a", b"y", 2, 1)
    lane = core._lanes.get("a")
    assert lane is not None and lane.pending == 22
    state_before = core._partitioner.state("a")
    if why == "keyed":
        core.append("a", b"z", b"key", timestamp=3, token=2, now=pump.now)
    elif why == "headers":
        core.append("a", b"z", None, [("h", b"v")], timestamp=3, token=2, now=pump.now)
    elif why == "partition":
        core.append("a", b"z", partition=0, timestamp=3, token=2, now=pump.now)
    elif why == "metadata":
        core.client.request_metadata_update(now=pump.now)
        pump.run(until=lambda: core._lanes.get("a") is None)
    else:
        core.close(now=pump.now)
    if why in ("keyed", "partition"):
        # The slow path reopened the lane after placing its record: the
        # fast appends were told to the partitioner first.
        assert core._partitioner.state("a")[2] >= state_before[2] + 22
    else:
        assert core._lanes.get("a") is None or core._lanes.get("a") is not lane


def test_no_lane_for_a_transactional_producer() -> None:
    core, _pump, _log = boot_producer(transactional_id="tx", linger_ms=60_000)
    assert core._lanes_allowed is False
    assert core.try_append("t", b"x", 1, 0) is False


def test_a_full_buffer_leaves_the_lane_and_refuses_in_the_slow_path() -> None:
    core, pump = _boot(True, buffer_memory=300)
    core.append("a", b"x" * 100, timestamp=1, token=0, now=pump.now)
    assert core.try_append("a", b"x" * 100, 2, 1) is True  # 242 of 300 bytes
    assert core.try_append("a", b"x" * 100, 3, 2) is False  # 363 > 300: nothing happened
    with pytest.raises(BufferFull):
        core.append("a", b"x" * 100, timestamp=3, token=2, now=pump.now)
    assert core._acc.used == 242

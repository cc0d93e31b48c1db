"""PositionsKnown: a lookup that positions partitions says so, once per step.

Without it a ``position()`` at a log's end slept until its deadline: no
``RecordsAvailable`` follows a reset to the end, and nothing else woke it.
"""

from __future__ import annotations

from kafkacore.client.metadata import TopicPartition
from kafkacore.consumer import OffsetAndMetadata, PositionsKnown
from tests.client.fakebroker import Topic
from tests.consumer.fake import boot_consumer

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def _known(events: list[object]) -> list[frozenset[TopicPartition]]:
    return [e.partitions for e in events if isinstance(e, PositionsKnown)]


def test_a_reset_to_the_end_of_empty_partitions_is_announced_once_for_both() -> None:
    core, pump, _, _ = boot_consumer([Topic("t", 2)], auto_offset_reset="latest")
    pump.events.clear()
    core.assign([T0, T1], now=pump.now)
    pump.run(until=lambda: core.position(T0) is not None and core.position(T1) is not None)
    pump.drain()
    assert _known(pump.events) == [frozenset({T0, T1})]
    assert (core.position(T0), core.position(T1)) == (0, 0)


def test_seek_to_end_then_the_answer_is_announced() -> None:
    core, pump, kafka, _ = boot_consumer([Topic("t", 2)], auto_offset_reset="earliest")
    kafka.log("t", 0).append([b"a", b"b", b"c"])
    core.assign([T0], now=pump.now)
    pump.run(until=lambda: core.position(T0) is not None)
    pump.drain()
    pump.events.clear()
    core.seek_to_end([T0], now=pump.now)
    assert core.position(T0) is None  # asked, not yet answered
    pump.run(until=lambda: core.position(T0) is not None)
    pump.drain()
    assert _known(pump.events) == [frozenset({T0})]
    assert core.position(T0) == 3


def test_a_committed_offset_found_is_announced() -> None:
    core, pump, _, _ = boot_consumer([Topic("t", 2)], group_id="g")
    core.assign([T0], now=pump.now)
    pump.run(until=lambda: core.position(T0) is not None)
    op = core.commit({T0: OffsetAndMetadata(7)}, now=pump.now)
    pump.run(until=lambda: op.done)
    core.assign([], now=pump.now)
    pump.events.clear()
    core.assign([T0], now=pump.now)
    pump.run(until=lambda: core.position(T0) is not None)
    pump.drain()
    assert _known(pump.events) == [frozenset({T0})]
    assert core.position(T0) == 7


def test_nothing_is_announced_for_a_partition_revoked_before_its_answer() -> None:
    core, pump, _, _ = boot_consumer([Topic("t", 2)], auto_offset_reset="latest")
    core.assign([T0], now=pump.now)
    core._subs._newly_known.add(T1)  # answered for a partition no longer assigned
    assert core._subs.take_newly_known() == frozenset()
    pump.run(until=lambda: core.position(T0) is not None)
    pump.drain()
    assert frozenset({T1}) not in _known(pump.events)

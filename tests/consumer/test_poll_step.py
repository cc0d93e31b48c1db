"""A poll served from the buffer runs no consumer step (issue 12).

``poll_records`` / ``poll_batches`` step the consumer only when the poll
changed something a step acts on: a partition left the buffer (fetch it
again), the buffer's bound was crossed, a request was queued (auto-commit),
nothing was buffered, or a timer is due.
"""

from __future__ import annotations

from typing import Any

from kafkacore.client.metadata import TopicPartition
from kafkacore.consumer.core import ConsumerCore
from tests.consumer.fake import boot_consumer

T0 = TopicPartition("t", 0)


def _counting(core: ConsumerCore) -> list[float]:
    steps: list[float] = []
    real = core._step

    def step(now: float) -> None:
        steps.append(now)
        real(now)

    core._step = step  # type: ignore[method-assign]
    return steps


def _buffered(n: int, **consumer: Any) -> tuple[ConsumerCore, Any]:
    core, pump, kafka, _ = boot_consumer(auto_offset_reset="earliest", **consumer)
    kafka.log("t", 0).append([b"v%d" % i for i in range(n)])
    core.assign([T0], now=pump.now)
    pump.run(until=core.has_buffered)
    return core, pump


def test_a_poll_that_takes_part_of_the_buffer_does_not_step() -> None:
    core, pump = _buffered(10)
    steps = _counting(core)
    first = core.poll_records(3, now=pump.now)
    second = core.poll_records(3, now=pump.now)
    assert [r.offset for r in first + second] == list(range(6))
    assert steps == []
    assert core.position(T0) == 6


def test_the_poll_that_empties_a_partition_steps_and_fetches_it_again() -> None:
    core, pump = _buffered(4)
    steps = _counting(core)
    sent_before = core._sent
    assert len(core.poll_records(10, now=pump.now)) == 4
    assert steps == [pump.now]  # the partition left the buffer: fetch it again
    assert core._sent > sent_before


def test_an_empty_poll_steps() -> None:
    core, pump, _, _ = boot_consumer(auto_offset_reset="earliest")
    core.assign([T0], now=pump.now)
    steps = _counting(core)
    assert core.poll_records(now=pump.now) == []
    assert steps == [pump.now]


def test_a_poll_with_auto_commit_due_steps_to_send_it() -> None:
    core, pump = _buffered(10, group_id="g", auto_commit_interval_ms=1000)
    core.poll_records(2, now=pump.now)
    steps = _counting(core)
    pump.now += 1.5  # the auto-commit interval passed
    core.poll_records(2, now=pump.now)
    assert steps == [pump.now]


def test_a_due_timer_makes_the_poll_step() -> None:
    core, pump = _buffered(10)
    steps = _counting(core)
    core.deadlines.set("probe", pump.now)
    core.poll_records(2, now=pump.now)
    assert steps == [pump.now]


def test_poll_batches_follows_the_same_rule() -> None:
    core, pump = _buffered(10)
    steps = _counting(core)
    batches = core.poll_batches(3, now=pump.now)
    assert sum(len(b) for b in batches) == 3 and steps == []
    core.poll_batches(100, now=pump.now)
    assert steps == [pump.now]


T1 = TopicPartition("t", 1)


def _asked(body: Any) -> set[TopicPartition]:
    return {TopicPartition(t.topic, p.partition) for t in body.topics for p in t.partitions}


def test_a_caught_up_partition_waits_for_the_buffered_ones_of_its_leader() -> None:
    """No long poll for a partition at its end while its leader's other
    partitions wait in the buffer: that Fetch would hold theirs back."""
    core, pump, kafka, _ = boot_consumer(auto_offset_reset="earliest")
    ends = {T0: 3, T1: 20}
    kafka.log("t", 0).append([b"a%d" % i for i in range(ends[T0])])
    kafka.log("t", 1).append([b"b%d" % i for i in range(ends[T1])])
    core.assign([T0, T1], now=pump.now)
    pump.run(until=lambda: core._buffer.holds(T0) and core._buffer.holds(T1))
    fetches = len(kafka.fetches)
    # Whichever partition is at the head of the buffer is handed out to its
    # end (caught up) while the other still waits there.
    first = core._buffer._fetches[0].tp
    second = T1 if first == T0 else T0
    while core.position(first) != ends[first]:
        assert core.poll_records(1, now=pump.now)
    assert not core._buffer.holds(first) and core._buffer.holds(second)
    pump.run(rounds=5, jump=False)
    assert len(kafka.fetches) == fetches  # no Fetch for the caught-up partition alone
    while core._buffer.holds(second):
        core.poll_records(100, now=pump.now)
    pump.run(until=lambda: len(kafka.fetches) > fetches, jump=False)
    assert _asked(kafka.fetches[fetches]) >= {second}

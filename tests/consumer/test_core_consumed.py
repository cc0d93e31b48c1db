"""What commits cover when an iterator hands lent records over one by one
(issue 10, fault 7), in the core, on the fake broker with time jumped.

A record counts as consumed once handed to the user; records lent to the
iterator but not handed over are never committed - not by ``commit()``,
not by the auto-commit timer, not by ``close`` - and ``return_lent`` puts
them back to be fetched again.
"""

from __future__ import annotations

from typing import Any

from kafkacore.client.metadata import TopicPartition
from kafkacore.consumer import ConsumerRecord
from tests.consumer.fake import boot_consumer

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)


def lend(core: Any, pump: Any, want: int) -> list[ConsumerRecord]:
    got: list[ConsumerRecord] = []

    def done() -> bool:
        got.extend(core.poll_records(now=pump.now, lend=True))
        pump.drain()
        return len(got) >= want

    pump.run(until=done)
    return got


def commit_now(core: Any, pump: Any) -> dict[TopicPartition, Any]:
    handle = core.commit(now=pump.now)
    pump.run(until=lambda: handle.done)
    result: dict[TopicPartition, Any] = handle.result()
    return result


def test_commit_covers_only_what_was_handed_over() -> None:
    core, pump, kafka, _ = boot_consumer(group_id="g", auto_offset_reset="earliest")
    kafka.log("t", 0).append([b"v%d" % i for i in range(30)])
    core.assign([T0], now=pump.now)
    batch = lend(core, pump, 30)
    assert len(batch) == 30
    assert commit_now(core, pump)[T0].offset == 0, "nothing handed over yet"
    assert core.position(T0) == 0
    first = batch[0]
    core.note_consumed({T0: (first.offset + 1, first.leader_epoch)}, now=pump.now)
    assert core.position(T0) == 1 and core.lag(T0) == 29
    assert commit_now(core, pump)[T0].offset == 1
    assert kafka.committed[T0] == (1, "")
    core.note_consumed({}, now=pump.now, everything=True)
    assert commit_now(core, pump)[T0].offset == 30


def test_autocommit_and_close_leave_unhanded_records_out() -> None:
    core, pump, kafka, _ = boot_consumer(
        group_id="g", auto_offset_reset="earliest", auto_commit_interval_ms=1000
    )
    kafka.log("t", 0).append([b"v%d" % i for i in range(30)])
    kafka.log("t", 1).append([b"w%d" % i for i in range(10)])
    core.assign([T0, T1], now=pump.now)
    batch = lend(core, pump, 40)
    handed = [r for r in batch if r.partition == 0][:3]
    core.note_consumed({T0: (handed[-1].offset + 1, handed[-1].leader_epoch)}, now=pump.now)
    pump.now += 1.5  # the auto-commit timer is due
    core.handle_timeout(now=pump.now)
    pump.run(until=lambda: T0 in kafka.committed)
    assert kafka.committed[T0] == (3, "")
    assert T1 not in kafka.committed or kafka.committed[T1] == (0, "")
    handle = core.close(now=pump.now)
    pump.run(until=lambda: handle.done)
    assert kafka.committed[T0] == (3, "")
    assert kafka.committed.get(T1, (0, ""))[0] == 0


def test_return_lent_hands_the_rest_out_again() -> None:
    core, pump, kafka, _ = boot_consumer(group_id="g", auto_offset_reset="earliest")
    kafka.log("t", 0).append([b"v%d" % i for i in range(30)])
    core.assign([T0], now=pump.now)
    batch = lend(core, pump, 30)
    core.note_consumed({T0: (batch[4].offset + 1, batch[4].leader_epoch)}, now=pump.now)
    core.return_lent(now=pump.now)
    assert core.position(T0) == 5
    again: list[ConsumerRecord] = []

    def done() -> bool:
        again.extend(core.poll_records(now=pump.now))
        pump.drain()
        return len(again) >= 25

    pump.run(until=done)
    assert [r.offset for r in again] == list(range(5, 30))
    assert commit_now(core, pump)[T0].offset == 30  # poll() hands everything it returns


def test_seek_while_lent_starts_from_the_seek() -> None:
    core, pump, kafka, _ = boot_consumer(group_id="g", auto_offset_reset="earliest")
    kafka.log("t", 0).append([b"v%d" % i for i in range(10)])
    core.assign([T0], now=pump.now)
    lend(core, pump, 10)
    core.seek(T0, 7, now=pump.now)
    assert core.position(T0) == 7
    assert commit_now(core, pump)[T0].offset == 7

"""FetchBuffer alone: its bound, one fetch per partition, and handing out
only what still matches the partition's position."""

from __future__ import annotations

import pytest

from kafkacore.client.metadata import TopicPartition
from kafkacore.consumer.buffer import FetchBuffer
from kafkacore.consumer.completed import CompletedFetch
from kafkacore.consumer.events import OffsetAndMetadata
from kafkacore.records import ControlRecordType, RecordBatchBuilder, control_batch
from tests.consumer.units import T0, T1, World, world


def records(start: int, count: int, *, epoch: int = 3) -> bytes:
    b = RecordBatchBuilder(base_offset=start, partition_leader_epoch=epoch)
    for i in range(count):
        b.append(b"v%d" % (start + i), timestamp=1000 + start + i)
    return b.build()


def fetched(tp: TopicPartition, start: int, count: int) -> CompletedFetch:
    return CompletedFetch(
        tp, start, records(start, count), aborted=None, read_committed=False, check_crc=True
    )


def at(w: World, *positions: tuple[TopicPartition, int]) -> None:
    w.subs.assign(frozenset(tp for tp, _ in positions))
    for tp, offset in positions:
        w.subs.committed_found(tp, OffsetAndMetadata(offset), None)


def test_the_bound_stops_new_fetches_once_reached() -> None:
    buf = FetchBuffer(max_bytes=100)
    assert not buf.full and len(buf) == 0 and not buf
    cf = fetched(T0, 0, 3)
    buf.add(cf)
    assert buf.nbytes == cf.nbytes and buf.holds(T0) and not buf.holds(T1)
    assert buf.full == (cf.nbytes >= 100)
    big = FetchBuffer(max_bytes=cf.nbytes + 1)
    big.add(fetched(T0, 0, 3))
    assert not big.full
    big.add(fetched(T1, 0, 1))
    assert big.full  # no more fetches until poll drains
    with pytest.raises(ValueError, match="max_bytes 0"):
        FetchBuffer(max_bytes=0)


def test_one_fetch_per_partition() -> None:
    buf = FetchBuffer(max_bytes=1 << 20)
    buf.add(fetched(T0, 0, 1))
    with pytest.raises(AssertionError, match="already has data"):
        buf.add(fetched(T0, 1, 1))


def test_drop_forgets_one_partition_and_its_bytes() -> None:
    buf = FetchBuffer(max_bytes=1 << 20)
    a, b = fetched(T0, 0, 2), fetched(T1, 0, 2)
    buf.add(a)
    buf.add(b)
    buf.drop(T0)
    assert buf.nbytes == b.nbytes and not buf.holds(T0) and len(buf) == 1
    buf.drop(T0)  # nothing left for it: no change
    assert buf.nbytes == b.nbytes


def test_take_records_moves_positions_and_respects_the_limit() -> None:
    w = world()
    at(w, (T0, 0), (T1, 0))
    buf = FetchBuffer(max_bytes=1 << 20)
    buf.add(fetched(T0, 0, 3))
    buf.add(fetched(T1, 0, 2))
    got = buf.take_records(w.subs, 2)
    assert [(r.partition, r.offset) for r in got] == [(0, 0), (0, 1)]
    assert w.subs.parts[T0].position == 2 and w.subs.parts[T0].position_epoch == 3
    assert buf.holds(T0)
    got = buf.take_records(w.subs, 10)
    assert [(r.partition, r.offset) for r in got] == [(0, 2), (1, 0), (1, 1)]
    assert len(buf) == 0 and buf.nbytes == 0 and not buf.holds(T0)


def test_stale_heads_are_dropped_not_handed_out() -> None:
    w = world()
    at(w, (T0, 0), (T1, 0))
    buf = FetchBuffer(max_bytes=1 << 20)
    buf.add(fetched(T0, 0, 2))  # the position moves away below
    buf.add(fetched(T1, 0, 2))  # paused below
    buf.add(fetched(TopicPartition("gone", 0), 0, 1))  # not assigned
    w.subs.seek(T0, 1)
    w.subs.parts[T1].paused = True
    assert buf.take_records(w.subs, 10) == []
    assert len(buf) == 0 and buf.nbytes == 0


def test_lent_records_remember_where_they_start() -> None:
    w = world()
    at(w, (T0, 0))
    buf = FetchBuffer(max_bytes=1 << 20)
    buf.add(fetched(T0, 0, 2))
    got = buf.take_records(w.subs, 10, lend=True)
    assert len(got) == 2 and w.subs.parts[T0].lent_from == (0, None)
    assert w.subs.position(T0) == 0  # the user has not been handed them yet


def test_take_batches_counts_records_across_partitions() -> None:
    w = world()
    at(w, (T0, 0), (T1, 0))
    buf = FetchBuffer(max_bytes=1 << 20)
    buf.add(fetched(T0, 0, 3))
    buf.add(fetched(T1, 0, 3))
    batches = buf.take_batches(w.subs, 4)
    assert [(b.partition, list(b.offsets)) for b in batches] == [(0, [0, 1, 2]), (1, [0])]
    w.subs.seek(T1, 2)  # the rest of t-1 is stale now
    assert buf.take_batches(w.subs, 10) == []
    assert len(buf) == 0


def test_a_fetch_of_control_records_only_yields_no_batch_but_moves_on() -> None:
    w = world()
    at(w, (T0, 0))
    marker = control_batch(
        ControlRecordType.COMMIT, producer_id=7, producer_epoch=0, base_offset=0, timestamp=5
    )
    buf = FetchBuffer(max_bytes=1 << 20)
    buf.add(CompletedFetch(T0, 0, marker, aborted=None, read_committed=False, check_crc=True))
    assert buf.take_batches(w.subs, 10) == []
    assert w.subs.position(T0) == 1 and len(buf) == 0

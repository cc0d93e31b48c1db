"""Acquired records and the buffer's lock expiry (kafkacore.share.buffer)."""

from __future__ import annotations

from kafkacore.client.metadata import TopicPartition
from kafkacore.records import RecordBatchBuilder
from kafkacore.share.buffer import AcquiredBatch, ShareBuffer, acquired_records

TP = TopicPartition("t", 0)


def batch(base: int, n: int) -> bytes:
    b = RecordBatchBuilder(base_offset=base)
    for i in range(n):
        b.append(b"%d" % (base + i), timestamp=1)
    return b.build()


def test_only_acquired_records_are_kept_with_their_delivery_count() -> None:
    recs, gaps = acquired_records(TP, batch(10, 6), [(14, 15, 1), (11, 12, 3)], check_crc=True)
    assert [(r.offset, r.delivery_count) for r in recs] == [(11, 3), (12, 3), (14, 1), (15, 1)]
    assert gaps == []


def test_acquired_offsets_without_a_record_are_gaps() -> None:
    recs, gaps = acquired_records(TP, batch(10, 2), [(10, 13, 1)], check_crc=True)
    assert [r.offset for r in recs] == [10, 11]
    assert gaps == [12, 13]
    assert acquired_records(TP, None, [(5, 6, 2)], check_crc=True) == ([], [5, 6])
    assert acquired_records(TP, batch(0, 3), [], check_crc=True) == ([], [])


def test_buffer_hands_out_in_order_and_drops_expired_batches() -> None:
    recs, _ = acquired_records(TP, batch(0, 4), [(0, 3, 1)], check_crc=True)
    buf = ShareBuffer()
    buf.add(AcquiredBatch(TP, 1, recs[:2], expires_at=5.0))
    buf.add(AcquiredBatch(TP, 2, recs[2:], expires_at=50.0))
    buf.add(AcquiredBatch(TP, 2, [], expires_at=50.0))  # nothing to keep
    assert len(buf) == 4 and buf.holds_from(1) and not buf.holds_from(3)
    assert [(r.offset, e) for r, e in buf.take(1, now=0.0)] == [(0, 5.0)]
    # The first batch's lock ran out: its last record is not handed out.
    assert [r.offset for r, _ in buf.take(10, now=6.0)] == [2, 3]
    assert not buf


def test_buffer_drop() -> None:
    recs, _ = acquired_records(TP, batch(0, 2), [(0, 1, 1)], check_crc=True)
    other = TopicPartition("t", 1)
    buf = ShareBuffer()
    buf.add(AcquiredBatch(TP, 1, recs, 9.0))
    buf.add(AcquiredBatch(other, 1, recs, 9.0))
    buf.drop([TP])
    assert len(buf) == 2
    buf.drop()
    assert not buf

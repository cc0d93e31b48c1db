"""CompletedFetch alone: what it skips without reaching the user (batches
and records before the position, a compacted tail) and legacy message sets,
which carry no leader epoch."""

from __future__ import annotations

import struct
import zlib

from kafkacore.client.metadata import TopicPartition
from kafkacore.consumer.completed import CompletedFetch
from kafkacore.records import RecordBatchBuilder, crc32c

TP = TopicPartition("t", 0)


def batch(start: int, count: int, *, epoch: int = 4) -> bytes:
    b = RecordBatchBuilder(base_offset=start, partition_leader_epoch=epoch)
    for i in range(count):
        b.append(b"v%d" % (start + i), timestamp=1000)
    return b.build()


def compacted_tail(data: bytes, last_offset_delta: int) -> bytes:
    """``data`` (one v2 batch) claiming offsets up to ``last_offset_delta``,
    as compaction leaves a batch whose last records were removed."""
    out = bytearray(data)
    struct.pack_into(">i", out, 23, last_offset_delta)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def legacy(offset: int, value: bytes, *, magic: int = 1) -> bytes:
    body = struct.pack(">bb", magic, 0)
    if magic == 1:
        body += struct.pack(">q", 1234)
    body += struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    msg = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(msg)) + msg


def fetched(data: bytes, offset: int) -> CompletedFetch:
    return CompletedFetch(TP, offset, data, aborted=None, read_committed=False, check_crc=True)


def test_batches_before_the_position_are_skipped() -> None:
    cf = fetched(batch(0, 3) + batch(3, 2), 3)
    assert [r.offset for r in cf.take(10)] == [3, 4]
    assert cf.next_offset == 5 and cf.last_epoch == 4 and cf.exhausted


def test_a_compacted_tail_moves_the_position_past_it() -> None:
    # Records 0 and 1 remain of a batch that covered 0..9; the position is 5.
    cf = fetched(compacted_tail(batch(0, 2), 9) + batch(10, 1), 5)
    assert [r.offset for r in cf.take(10)] == [10]
    assert cf.next_offset == 11


def test_legacy_messages_carry_no_leader_epoch() -> None:
    cf = fetched(legacy(0, b"a") + legacy(1, b"b", magic=0), 0)
    got = cf.take_batch(10)
    assert got is not None and list(got.offsets) == [0] and got.leader_epoch is None
    assert cf.last_epoch is None
    rest = cf.take(10)
    assert [(r.offset, r.value, r.leader_epoch) for r in rest] == [(1, b"b", None)]
    assert cf.next_offset == 2 and cf.take_batch(10) is None

"""RecordAccumulator and PartitionQueue: batches, memory bounds, readiness, order, stamps."""

from __future__ import annotations

import pytest

from kafkacore.client import TopicPartition
from kafkacore.producer import BufferFull, ProducerConfig, RecordTooLargeError
from kafkacore.producer.accumulator import (
    SEQUENCE_WRAP,
    PartitionQueue,
    RecordAccumulator,
    record_estimate,
)
from kafkacore.producer.batch import BatchState, ProducerBatch
from kafkacore.producer.idempotence import ProducerIdentity

TP = TopicPartition("t", 0)


def _acc(identity: ProducerIdentity | None = None, **options: object) -> RecordAccumulator:
    return RecordAccumulator(ProducerConfig(**options), identity)  # type: ignore[arg-type]


def _ready_identity(pid: int = 9, epoch: int = 1) -> ProducerIdentity:
    ident = ProducerIdentity()
    ident.fire("request")
    ident.assign(pid, epoch)
    return ident


def _append(acc: RecordAccumulator, n: int, size: int = 30, tp: TopicPartition = TP) -> None:
    for i in range(n):
        acc.append(tp, b"x" * (size - 21), None, None, 1, i, size, 0.0)


def test_record_estimate_counts_headers() -> None:
    assert record_estimate(None, None, None) == 21
    assert record_estimate(b"k", b"vv", None) == 24
    assert record_estimate(b"k", None, [("h", b"12"), ("i", None)]) == 22 + (10 + 3 + 2) + 13


def test_appends_fill_a_batch_then_open_the_next() -> None:
    acc = _acc(batch_size=100)
    _append(acc, 4, size=30)  # 3 fit in 100 bytes, the 4th opens a batch
    q = acc.queues[TP]
    assert [b.record_count for b in q.batches] == [3, 1]
    assert acc.used == 120 and acc.available == ProducerConfig().buffer_memory - 120
    assert acc.has_queued() and len(list(acc.all_batches())) == 2
    q.batches[-1].state = BatchState.SEALED
    _append(acc, 1)  # a sealed last batch takes no more records
    assert [b.record_count for b in q.batches] == [3, 1, 1]


def test_append_many_cuts_batches_at_the_limit() -> None:
    acc = _acc(batch_size=100)
    charged = acc.append_many(TP, [b"a"] * 7, None, [30] * 7, 5, "tok", 0.0, limit=90)
    q = acc.queues[TP]
    assert charged == 210 and [b.record_count for b in q.batches] == [3, 3, 1]
    assert q.batches[0].tokens == ["tok"] * 3 and q.batches[0].timestamps == [5] * 3
    # A record bigger than the room left goes to a new batch; the old one is sealed.
    acc.append_many(TP, [b"b"], [b"k"], [80], 5, "big", 0.0)
    assert [b.record_count for b in q.batches] == [3, 3, 1, 1]
    assert q.batches[2].state is BatchState.SEALED
    # An empty batch takes one record however big it is.
    acc2 = _acc(batch_size=100)
    acc2.append_many(TP, [b"c", b"d"], None, [150, 10], 5, "huge", 0.0)
    assert [b.record_count for b in acc2.queues[TP].batches] == [1, 1]


def test_sizes_that_can_never_fit_are_refused() -> None:
    acc = _acc(max_request_size=1000, buffer_memory=800)
    with pytest.raises(RecordTooLargeError, match="exceeds max_request_size=1000"):
        acc.check_size(950, "append to 't'")
    with pytest.raises(RecordTooLargeError, match="exceeds buffer_memory=800"):
        acc.check_size(850, "append to 't'")
    acc.check_size(700, "append to 't'")


def test_reserve_refuses_when_full_and_remembers_it() -> None:
    acc = _acc(buffer_memory=100, batch_size=100)
    acc.reserve(500)  # an empty buffer takes anything that passed check_size
    _append(acc, 3, size=30)
    with pytest.raises(BufferFull) as info:
        acc.reserve(20)
    assert info.value.needed == 20 and acc.refused
    acc.reserve(10)


def test_head_ready_rules() -> None:
    acc = _acc(batch_size=100)
    _append(acc, 1)
    q = acc.queues[TP]
    assert not acc.head_ready(q, 0.004, 0.005, force=False)  # lingering
    assert acc.head_ready(q, 0.005, 0.005, force=False)  # lingered
    assert acc.head_ready(q, 0.0, 0.005, force=True)  # flush
    _append(acc, 3)  # a second batch: the first is full
    assert acc.head_ready(q, 0.0, 0.005, force=False)
    head = q.batches[0]
    head.state = BatchState.SEALED
    head.retry_at = 1.0
    assert not acc.head_ready(q, 0.5, 0.0, force=True)  # a retry waits for its backoff
    assert acc.head_ready(q, 1.0, 0.0, force=False)
    acc2 = _acc(batch_size=60)
    _append(acc2, 2)  # exactly batch_size bytes: full
    assert acc2.head_ready(acc2.queues[TP], 0.0, 10.0, force=False)


def _batch(id: int, seq: int = -1, order: tuple[int, ...] | None = None) -> ProducerBatch:
    batch = ProducerBatch(
        id,
        TP,
        now=0.0,
        delivery_timeout_s=1.0,
        batch_size=100,
        compression=ProducerConfig().compression,
        compression_level=None,
    )
    batch.base_sequence = seq
    if order is not None:
        batch.order = order
    return batch


def test_reinsert_puts_a_retry_back_in_sequence_order() -> None:
    q = PartitionQueue(TP)
    q.batches.extend([_batch(3, seq=10), _batch(4)])
    retry = _batch(1, seq=0)
    q.reinsert(retry)
    assert [b.id for b in q.batches] == [1, 3, 4] and retry.state is BatchState.SEALED
    last = _batch(9, seq=-1, order=(9,))
    q.reinsert(last)
    assert [b.id for b in q.batches] == [1, 3, 4, 9]


def test_split_halves_go_where_their_parent_was() -> None:
    q = PartitionQueue(TP)
    q.batches.extend([_batch(1), _batch(5)])
    parent = _batch(3)
    halves = [_batch(6, order=(3, 0)), _batch(7, order=(3, 2))]
    q.insert_before_later(halves, parent)
    assert [b.id for b in q.batches] == [1, 6, 7, 5]
    assert all(b.state is BatchState.SEALED for b in halves)
    q2 = PartitionQueue(TP)
    q2.insert_before_later([_batch(8)], parent)
    assert [b.id for b in q2.batches] == [8]


def test_take_and_reset_sequences() -> None:
    acc = _acc(batch_size=60)
    _append(acc, 4)
    _append(acc, 2, tp=TopicPartition("u", 1))
    acc.queue(TopicPartition("v", 0))  # an empty queue
    q = acc.queues[TP]
    assert acc.queue(TP) is q
    q.batches[0].base_sequence = 0
    q.next_sequence = 2
    unsequenced = acc.take(lambda b: b.base_sequence < 0)
    assert len(unsequenced) == 2 and [b.base_sequence for b in q.batches] == [0]
    acc.reset_sequences()
    assert q.next_sequence == 0 and q.batches[0].base_sequence == -1
    assert len(acc.take_all()) == 1 and not acc.has_queued()


# ------------------------------------------------------------ planned stamps
def test_no_stamp_is_planned_without_an_identity_or_an_id() -> None:
    q = PartitionQueue(TP)
    assert _acc().planned_stamp(q) is None
    assert _acc(ProducerIdentity()).planned_stamp(q) is None


def test_a_batch_opened_with_an_id_carries_the_stamp_it_will_be_sent_with() -> None:
    acc = _acc(_ready_identity(9, 1), batch_size=60)
    _append(acc, 5)  # batches of 2, 2, 1
    q = acc.queues[TP]
    assert [b.written for b in q.batches] == [
        (9, 1, 0, False),
        (9, 1, 2, False),
        (9, 1, 4, False),
    ]


def test_the_planned_sequence_follows_a_sequenced_batch_and_wraps() -> None:
    acc = _acc(_ready_identity(9, 1))
    q = acc.queue(TP)
    q.next_sequence = SEQUENCE_WRAP - 1
    sent = _batch(1, seq=SEQUENCE_WRAP - 3)
    q.batches.append(sent)  # a retry waiting in the queue: next_sequence counts it
    assert acc.planned_stamp(q) == (9, 1, SEQUENCE_WRAP - 1)
    q.batches.clear()
    _append(acc, 2, size=30)
    planned = acc.planned_stamp(q)
    assert q.batches[-1].written[2] == SEQUENCE_WRAP - 1 and planned == (9, 1, 1)


def test_no_stamp_is_planned_after_an_unstamped_or_older_batch() -> None:
    ident = _ready_identity(9, 1)
    acc = _acc(ident)
    q = acc.queue(TP)
    q.batches.append(_batch(1))  # opened before the id came
    assert acc.planned_stamp(q) is None
    q.batches.clear()
    _append(acc, 1)
    ident.fire("need_bump")
    ident.fire("request")
    ident.assign(9, 2)  # a bump after the batch was opened
    assert acc.planned_stamp(q) is None


def test_a_transactional_producer_plans_transactional_batches() -> None:
    acc = _acc(_ready_identity(), transactional_id="tx")
    _append(acc, 1)
    assert acc.queues[TP].batches[0].written == (9, 1, 0, True)

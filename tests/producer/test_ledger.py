"""DeliveryLedger: every record reported once, memory given back, flush marks, operations."""

from __future__ import annotations

import pytest

from kafkacore.client import TopicPartition
from kafkacore.operation import OperationCompleted
from kafkacore.producer import BatchCompleted, BufferFreed, BufferFull, ProducerConfig
from kafkacore.producer.accumulator import RecordAccumulator
from kafkacore.producer.batch import BatchState, ProducerBatch
from kafkacore.producer.ledger import DeliveryLedger

TP = TopicPartition("t", 0)


class _Ledger:
    """A ledger over a small accumulator, with what it emitted and reported as failed."""

    def __init__(self, buffer_memory: int = 100) -> None:
        self.acc = RecordAccumulator(ProducerConfig(buffer_memory=buffer_memory, batch_size=40))
        self.events: list[object] = []
        self.failed: list[tuple[ProducerBatch, BaseException]] = []
        self.ledger = DeliveryLedger(
            self.acc, self.events.append, lambda b, e: self.failed.append((b, e))
        )

    def batch(self, n: int = 1, size: int = 30) -> ProducerBatch:
        batch = None
        for i in range(n):
            batch = self.acc.append(TP, b"v", None, None, 7, f"r{i}", size, 0.0)
        assert batch is not None
        return batch


def test_complete_reports_once_and_gives_memory_back() -> None:
    f = _Ledger()
    batch = f.batch()
    f.ledger.track(batch.id, 0)
    f.ledger.complete(batch, 42, -1, None)
    (event,) = f.events
    assert event == BatchCompleted(
        topic="t", partition=0, base_offset=42, log_append_time=-1, tokens=["r0"], timestamps=[7]
    )
    assert batch.state is BatchState.DONE and batch.accounted == 0 and f.acc.used == 0
    assert f.ledger.incomplete == {} and f.failed == []
    f.ledger.complete(batch, 43, -1, RuntimeError("late"))  # already reported: ignored
    assert len(f.events) == 1 and f.failed == []


def test_a_failed_batch_is_handed_to_on_failed() -> None:
    f = _Ledger()
    batch = f.batch()
    error = RuntimeError("refused")
    f.ledger.fail_all([batch], error)
    assert f.failed == [(batch, error)]
    assert isinstance(f.events[0], BatchCompleted) and f.events[0].error is error


def test_buffer_freed_follows_a_refused_append_once_room_returns() -> None:
    f = _Ledger(buffer_memory=60)
    first = f.batch(size=30)
    second = f.acc.append(TopicPartition("t", 1), b"v", None, None, 7, "x", 30, 0.0)
    with pytest.raises(BufferFull):
        f.acc.reserve(30)
    f.ledger.complete(first, 0, -1, None)
    assert [type(e) for e in f.events] == [BatchCompleted, BufferFreed]
    assert f.events[1] == BufferFreed(available=30)
    f.ledger.complete(second, 1, -1, None)  # no refusal since: no second BufferFreed
    assert [type(e) for e in f.events] == [BatchCompleted, BufferFreed, BatchCompleted]


def test_report_and_release_for_records_that_never_reached_a_batch() -> None:
    f = _Ledger()
    f.acc.used = 50
    f.ledger.track(9, 0)
    error = LookupError("no such topic")
    f.ledger.report("u", -1, ["a", "b"], [1, 2], error)
    f.ledger.release(9, 50)
    assert f.events == [
        BatchCompleted(
            topic="u",
            partition=-1,
            base_offset=-1,
            log_append_time=-1,
            tokens=["a", "b"],
            timestamps=[1, 2],
            error=error,
        )
    ]
    assert f.acc.used == 0 and f.ledger.incomplete == {}


def test_ages_keep_the_oldest_append() -> None:
    f = _Ledger()
    f.ledger.track(5, 0)
    assert f.ledger.incomplete == {5: 5}
    f.ledger.track(5, 3)
    f.ledger.track(5, 4)  # younger than what it holds already
    assert f.ledger.incomplete == {5: 3}
    f.ledger.track(6, 2)
    assert f.ledger.incomplete == {5: 3, 6: 2}


def test_new_batches_are_registered_and_the_last_one_takes_the_age() -> None:
    f = _Ledger()
    old = f.batch(1)
    q = f.acc.queues[TP]
    f.ledger.track(old.id, 0)
    f.batch(3)  # fills `old`, opens two more
    f.ledger.track_new_batches(q, old.id, 0)
    ids = [b.id for b in q.batches]
    assert f.ledger.incomplete == {i: i for i in ids}
    f.ledger.track_new_batches(q, ids[-1], 1)  # records that waited since append #1
    assert f.ledger.incomplete[ids[-1]] == 1 and f.ledger.incomplete[ids[0]] == ids[0]


def test_flush_waits_for_older_units_only() -> None:
    f = _Ledger()
    f.ledger.track(3, 0)
    older = f.ledger.op("flush")
    f.ledger.add_flush(4, older)  # unit 3 is older than mark 4: wait
    assert not older.done
    f.ledger.track(5, 0)
    younger = f.ledger.op("flush")
    f.ledger.add_flush(2, younger)  # nothing older than mark 2
    assert younger.done and younger.error is None
    f.ledger.incomplete.pop(3)
    f.ledger.check_flushes()
    assert older.done and f.ledger.flushes == []
    completed = [e.handle for e in f.events if isinstance(e, OperationCompleted)]
    assert completed == [younger, older]


def test_operations_are_numbered_and_finished_once() -> None:
    f = _Ledger()
    a, b = f.ledger.op("flush"), f.ledger.op("commit_transaction")
    assert (a.id, a.kind, b.id) == (1, "flush", 2)
    error = RuntimeError("closed")
    f.ledger.finish(b, error)
    f.ledger.finish(b, None)  # done already: no second event
    assert b.error is error and len(f.events) == 1


def test_fail_flushes_completes_every_pending_flush_with_the_error() -> None:
    f = _Ledger()
    f.ledger.track(1, 0)
    ops = [f.ledger.op("flush") for _ in range(2)]
    for mark, handle in enumerate(ops, start=5):
        f.ledger.add_flush(mark, handle)
    error = RuntimeError("closed")
    f.ledger.fail_flushes(error)
    assert all(op.error is error for op in ops) and f.ledger.flushes == []


def test_completing_the_last_older_batch_completes_the_flush() -> None:
    f = _Ledger()
    batch = f.batch()
    f.ledger.track(batch.id, 0)
    flush = f.ledger.op("flush")
    f.ledger.add_flush(batch.id + 1, flush)
    assert not flush.done
    f.ledger.complete(batch, 0, -1, None)
    assert flush.done and isinstance(f.events[-1], OperationCompleted)

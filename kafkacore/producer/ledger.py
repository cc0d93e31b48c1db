"""The delivery ledger: the one place a producer reports records and completes its operations.

Theory of operation
-------------------
Every record handed to the producer is reported exactly once, in a
:class:`~kafkacore.producer.events.BatchCompleted`. Records live in a batch
(:meth:`DeliveryLedger.complete`) or, before their topic's partitions are
known, in the waiting queue (:meth:`DeliveryLedger.report`); either way the
bytes they were charged against ``buffer_memory`` come back through here
(the accumulator, which owns the batches and the bytes, marks a batch DONE
and releases its charge: :meth:`~kafkacore.producer.accumulator.RecordAccumulator.complete`),
and a refused append learns that it may try again (``BufferFreed``).

The ledger also answers flush. Each unfinished unit (a batch, or the
records of one waiting append) is registered under its id with an *age*:
the id of the oldest append it holds, ids growing with every append. A
flush takes a fresh id as its mark and completes once no unfinished unit
is older than the mark (:meth:`DeliveryLedger.check_flushes`), so records
appended after the flush do not hold it back.

Operations (:class:`~kafkacore.operation.Operation`, for flush and the
transaction calls) are numbered and completed here, each with exactly one
:class:`~kafkacore.operation.OperationCompleted`.

A failed batch may change the producer's state (a transaction becomes
abortable, a sequence gap asks for an epoch bump, KIP-360): the ledger
hands it to ``on_failed``, which the producer supplies.
"""

from __future__ import annotations

from collections.abc import Callable

from kafkacore.operation import Operation, OperationCompleted
from kafkacore.producer.accumulator import PartitionQueue, RecordAccumulator
from kafkacore.producer.batch import ProducerBatch
from kafkacore.producer.events import BatchCompleted, BufferFreed

__all__ = ["DeliveryLedger"]


class DeliveryLedger:
    """See the module docstring."""

    __slots__ = ("_acc", "_emit", "_next_op", "flushes", "incomplete", "on_failed")

    def __init__(
        self,
        acc: RecordAccumulator,
        emit: Callable[[object], None],
        on_failed: Callable[[ProducerBatch, BaseException], None],
    ) -> None:
        self._acc = acc
        self._emit = emit
        self.on_failed = on_failed
        #: Unfinished units: id -> age (the oldest append they hold).
        self.incomplete: dict[int, int] = {}
        #: (mark, operation) of every flush not yet complete.
        self.flushes: list[tuple[int, Operation[None]]] = []
        self._next_op = 1

    # ------------------------------------------------------------ records
    def complete(
        self,
        batch: ProducerBatch,
        base_offset: int,
        log_append_time: int,
        error: BaseException | None,
    ) -> None:
        """Report ``batch`` (once: a batch already DONE is left alone)."""
        if not self._acc.complete(batch):
            return
        self.incomplete.pop(batch.id, None)
        self._emit(
            BatchCompleted(
                topic=batch.tp.topic,
                partition=batch.tp.partition,
                base_offset=base_offset,
                log_append_time=log_append_time,
                tokens=batch.tokens,
                timestamps=batch.timestamps,
                error=error,
            )
        )
        if error is not None:
            self.on_failed(batch, error)
        self.after_release()

    def fail_all(self, batches: list[ProducerBatch], error: BaseException) -> None:
        for batch in batches:
            self.complete(batch, -1, -1, error)

    def report(
        self,
        topic: str,
        partition: int,
        tokens: list[object],
        timestamps: list[int],
        error: BaseException,
    ) -> None:
        """Report records that never reached a batch (no charge is released here)."""
        self._emit(
            BatchCompleted(
                topic=topic,
                partition=partition,
                base_offset=-1,
                log_append_time=-1,
                tokens=tokens,
                timestamps=timestamps,
                error=error,
            )
        )

    def release(self, unit: int, size: int) -> None:
        """Unit ``unit`` (records that waited) is done and gives back ``size`` bytes."""
        self._acc.release(size)
        self.incomplete.pop(unit, None)
        self.after_release()

    def after_release(self) -> None:
        acc = self._acc
        if acc.room_returned():
            self._emit(BufferFreed(available=acc.available))
        if self.flushes:
            self.check_flushes()

    # ------------------------------------------------------------ ages
    def track(self, unit: int, age: int) -> None:
        """Register ``unit`` (or make it at least as old as ``age``)."""
        old = self.incomplete.get(unit, unit)
        self.incomplete[unit] = min(old, age) if age else old

    def track_new_batches(self, q: PartitionQueue, last: int, age: int) -> None:
        """Register the batches of ``q`` opened after batch ``last``; with
        ``age``, ``last`` itself took records that old too."""
        for batch in q.batches:
            if batch.id > last or (age and batch.id == last):
                self.track(batch.id, age)

    # ------------------------------------------------------------ operations
    def op(self, kind: str) -> Operation[None]:
        handle: Operation[None] = Operation(self._next_op, kind)
        self._next_op += 1
        return handle

    def finish(self, handle: Operation[None], error: BaseException | None) -> None:
        """Complete ``handle`` unless it is done already."""
        if handle.done:
            return
        handle._complete(None, error)
        self._emit(OperationCompleted(handle=handle))

    def add_flush(self, mark: int, handle: Operation[None]) -> None:
        self.flushes.append((mark, handle))
        self.check_flushes()

    def check_flushes(self) -> None:
        first = min(self.incomplete.values(), default=None)
        keep = []
        for mark, handle in self.flushes:
            if first is None or first > mark:
                self.finish(handle, None)
            else:
                keep.append((mark, handle))
        self.flushes = keep

    def fail_flushes(self, error: BaseException) -> None:
        flushes, self.flushes = self.flushes, []
        for _, handle in flushes:
            self.finish(handle, error)

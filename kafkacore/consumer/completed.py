"""The records of one partition from one Fetch answer, handed out lazily.

Theory of operation
-------------------
A :class:`CompletedFetch` keeps the answer's record bytes (zero-copy
batches from :func:`kafkacore.records.iter_batches`) and decodes one batch
at a time, through the columnar path, only when ``poll`` asks for records.
``next_offset`` is the position after everything handed out or skipped so
far; the consumer's position follows it.

Skipped without reaching the user: records before the fetch position (a
compressed batch may start earlier), control batches (transaction markers),
and with ``read_committed`` the batches of aborted transactions. The
aborted list of the answer is sorted by first offset; a producer becomes
"aborting" once a batch reaches its first offset and stops being so at its
ABORT marker (KIP-98).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Iterator
from functools import partial
from itertools import repeat

from kafkacore.client.metadata import TopicPartition
from kafkacore.consumer.events import ConsumerRecord, PartitionBatch
from kafkacore.records import LegacyBatch, RecordBatch, RecordColumns, iter_batches

__all__ = ["CompletedFetch"]

#: Builds a ConsumerRecord from one row in C (no Python frame per record):
#: about 40% cheaper than calling the NamedTuple class.
_new_record = partial(tuple.__new__, ConsumerRecord)


class CompletedFetch:
    """Lazily decoded records of one partition; see the module docstring."""

    __slots__ = (
        "_aborted",
        "_aborting",
        "_batch_next",
        "_batches",
        "_cols",
        "_epoch",
        "_idx",
        "_read_committed",
        "_ts_type",
        "last_epoch",
        "nbytes",
        "next_offset",
        "tp",
    )

    def __init__(
        self,
        tp: TopicPartition,
        fetch_offset: int,
        records: bytes | memoryview,
        *,
        aborted: list[tuple[int, int]] | None,
        read_committed: bool,
        check_crc: bool,
    ) -> None:
        self.tp = tp
        self.next_offset = fetch_offset
        self.nbytes = len(records)
        self.last_epoch: int | None = None
        self._batches: Iterator[RecordBatch | LegacyBatch] = iter_batches(
            records, check_crc=check_crc
        )
        self._read_committed = read_committed
        self._aborted = deque(sorted(aborted or (), key=lambda a: a[1]))
        self._aborting: set[int] = set()
        self._cols: RecordColumns | None = None
        self._idx = 0
        self._epoch: int | None = None
        self._ts_type = 0
        self._batch_next = 0

    def _advance(self) -> bool:
        """Load the next batch that has records for the user; False when none is left."""
        if self._cols is not None:
            if self._idx < len(self._cols):
                return True
            self.next_offset = max(self.next_offset, self._batch_next)
            self._cols = None
        for batch in self._batches:
            if batch.next_offset <= self.next_offset:
                continue
            is_control = isinstance(batch, RecordBatch) and batch.is_control
            if self._read_committed and isinstance(batch, RecordBatch):
                aborted = self._aborted
                while aborted and aborted[0][1] <= batch.last_offset:
                    self._aborting.add(aborted.popleft()[0])
                if is_control:
                    self._aborting.discard(batch.producer_id)
                    self.next_offset = batch.next_offset
                    continue
                if batch.is_transactional and batch.producer_id in self._aborting:
                    self.next_offset = batch.next_offset
                    continue
            elif is_control:
                self.next_offset = batch.next_offset
                continue
            cols = batch.columns()
            start = 0
            if cols.offsets and cols.offsets[0] < self.next_offset:
                start = bisect_left(cols.offsets, self.next_offset)
            if start >= len(cols):
                self.next_offset = batch.next_offset
                continue
            self._cols = cols
            self._idx = start
            self._batch_next = batch.next_offset
            if isinstance(batch, RecordBatch):
                epoch = batch.partition_leader_epoch
                self._epoch = epoch if epoch >= 0 else None
            else:
                self._epoch = None
            self._ts_type = int(batch.timestamp_type)
            return True
        return False

    @property
    def exhausted(self) -> bool:
        return not self._advance()

    def take(self, limit: int) -> list[ConsumerRecord]:
        """Up to ``limit`` records, in offset order."""
        out: list[ConsumerRecord] = []
        topic, partition = self.tp
        while len(out) < limit and self._advance():
            cols = self._cols
            assert cols is not None
            i = self._idx
            j = min(len(cols), i + limit - len(out))
            n = j - i
            out.extend(
                map(
                    _new_record,
                    zip(
                        repeat(topic, n),
                        repeat(partition, n),
                        cols.offsets[i:j],
                        cols.timestamps[i:j],
                        repeat(self._ts_type, n),
                        cols.keys[i:j],
                        cols.values[i:j],
                        cols.headers[i:j],
                        repeat(self._epoch, n),
                        strict=True,
                    ),
                )
            )
            self._idx = j
            self.next_offset = cols.offsets[j - 1] + 1
            if self._epoch is not None:
                self.last_epoch = self._epoch
        return out

    def take_batch(self, limit: int) -> PartitionBatch | None:
        """The rest of the current batch (at most ``limit`` records) as columns."""
        if not self._advance():
            return None
        cols = self._cols
        assert cols is not None
        i = self._idx
        j = min(len(cols), i + limit)
        whole = i == 0 and j == len(cols)
        out = PartitionBatch(
            topic=self.tp.topic,
            partition=self.tp.partition,
            offsets=cols.offsets if whole else cols.offsets[i:j],
            timestamps=cols.timestamps if whole else cols.timestamps[i:j],
            keys=cols.keys if whole else cols.keys[i:j],
            values=cols.values if whole else cols.values[i:j],
            headers=cols.headers if whole else cols.headers[i:j],
            timestamp_type=self._ts_type,
            leader_epoch=self._epoch,
        )
        self._idx = j
        self.next_offset = cols.offsets[j - 1] + 1
        if self._epoch is not None:
            self.last_epoch = self._epoch
        return out

"""Acquired records waiting for ``poll``, with their lock expiry (KIP-932).

Theory of operation
-------------------
A ShareFetch answer carries, per partition, record batches and the
*acquired ranges* (first offset, last offset, delivery count) that say
which of those records now belong to this member. :func:`acquired_records`
keeps exactly the records inside a range, tagged with its delivery count,
and lists the acquired offsets that have no record for the user (control
batches, compacted gaps) so they can be acknowledged as GAP.

The buffer holds one :class:`AcquiredBatch` per partition and answer. Each
lock runs from the moment the fetch was *sent* (a safe lower bound of the
broker's acquisition time) for the record lock duration the broker returned.
A batch whose lock has run out is dropped instead of handed out: the broker
has already taken those records back and will deliver them again, with a
higher delivery count, to whoever fetches next. The buffer's size is bound by
the fetches: a leader is fetched from only while none of its records wait here.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence

from kafkacore.client.metadata import TopicPartition
from kafkacore.consumer.completed import CompletedFetch
from kafkacore.share.events import ShareRecord

__all__ = ["AcquiredBatch", "ShareBuffer", "acquired_records"]

#: (first offset, last offset, delivery count) of one acquired range.
Acquired = tuple[int, int, int]


def acquired_records(
    tp: TopicPartition,
    records: bytes | memoryview | None,
    ranges: Sequence[Acquired],
    *,
    check_crc: bool,
) -> tuple[list[ShareRecord], list[int]]:
    """The acquired records of one partition, and the acquired offsets without one."""
    ranges = sorted(ranges)
    if not ranges:
        return [], []
    out: list[ShareRecord] = []
    seen: set[int] = set()
    if records:
        fetch = CompletedFetch(
            tp, ranges[0][0], records, aborted=None, read_committed=False, check_crc=check_crc
        )
        i = 0
        for rec in fetch.take(1 << 62):
            while i < len(ranges) and ranges[i][1] < rec.offset:
                i += 1
            if i == len(ranges):
                break
            first, _last, count = ranges[i]
            if rec.offset >= first and rec.offset not in seen:
                seen.add(rec.offset)
                out.append(ShareRecord(*rec, delivery_count=count))
    gaps = [o for first, last, _ in ranges for o in range(first, last + 1) if o not in seen]
    return out, gaps


class AcquiredBatch:
    """Records of one partition from one answer, locked until ``expires_at``."""

    __slots__ = ("expires_at", "node", "records", "tp")

    def __init__(
        self, tp: TopicPartition, node: int, records: Iterable[ShareRecord], expires_at: float
    ) -> None:
        self.tp = tp
        self.node = node
        self.records = deque(records)
        self.expires_at = expires_at


class ShareBuffer:
    """Acquired batches in arrival order; see the module docstring."""

    def __init__(self) -> None:
        self._batches: deque[AcquiredBatch] = deque()

    def __bool__(self) -> bool:
        return any(b.records for b in self._batches)

    def __len__(self) -> int:
        return sum(len(b.records) for b in self._batches)

    def add(self, batch: AcquiredBatch) -> None:
        if batch.records:
            self._batches.append(batch)

    def holds_from(self, node: int) -> bool:
        return any(b.node == node and b.records for b in self._batches)

    def take(self, limit: int, *, now: float) -> list[tuple[ShareRecord, float]]:
        """Up to ``limit`` records whose lock still holds, with its expiry, oldest first."""
        out: list[tuple[ShareRecord, float]] = []
        while self._batches and len(out) < limit:
            batch = self._batches[0]
            if batch.expires_at <= now or not batch.records:
                self._batches.popleft()  # the broker has taken these back
                continue
            while batch.records and len(out) < limit:
                out.append((batch.records.popleft(), batch.expires_at))
        return out

    def drop(self, tps: Iterable[TopicPartition] | None = None) -> None:
        """Forget buffered records (of ``tps``, or all): their partitions are gone."""
        if tps is None:
            self._batches.clear()
            return
        gone = set(tps)
        self._batches = deque(b for b in self._batches if b.tp not in gone)

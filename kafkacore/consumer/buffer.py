"""The completed-fetch buffer: fetched data waiting for poll, bounded.

Theory of operation
-------------------
Each Fetch response adds at most one :class:`~kafkacore.consumer.completed.CompletedFetch`
per partition, in arrival order; ``poll_records``/``poll_batches`` take
records from the head. A partition with data here is not fetched again
until that data is handed out or dropped, so the buffer never holds two
fetches for one partition.

The bound is ``fetch_buffer_bytes`` (the prefetch limit): while the buffer
holds that much (:attr:`FetchBuffer.full`), no new Fetch is sent. A
response already on its way is still taken in, so the buffer can exceed the
bound by at most the responses in flight (each capped by ``fetch_max_bytes``
on the broker), and then drains as poll hands records out.

Handing out checks the head against the partition's state: data for a
partition that was revoked, paused or moved (seek, reset) since it was
fetched is dropped, never handed out.
"""

from __future__ import annotations

from collections import deque

from kafkacore.client.metadata import TopicPartition
from kafkacore.consumer.completed import CompletedFetch
from kafkacore.consumer.events import ConsumerRecord, PartitionBatch
from kafkacore.consumer.positions import PartitionState, SubscriptionState

__all__ = ["FetchBuffer"]


class FetchBuffer:
    """Completed fetches in arrival order, at most one per partition."""

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 1:
            raise ValueError(f"FetchBuffer: max_bytes {max_bytes} must be >= 1")
        self.max_bytes = max_bytes
        self._fetches: deque[CompletedFetch] = deque()
        self._tps: set[TopicPartition] = set()
        self._bytes = 0
        #: Completed fetches handed out or dropped so far: a partition left
        #: the buffer (it may be fetched again) exactly when this moves.
        self.released = 0

    @property
    def nbytes(self) -> int:
        """Bytes of record data held (as fetched, before decompression)."""
        return self._bytes

    @property
    def full(self) -> bool:
        """At the bound: no new Fetch until poll drains some."""
        return self._bytes >= self.max_bytes

    def __len__(self) -> int:
        return len(self._fetches)

    def holds(self, tp: TopicPartition) -> bool:
        """True while data fetched for ``tp`` waits here."""
        return tp in self._tps

    def add(self, cf: CompletedFetch) -> None:
        if cf.tp in self._tps:
            raise AssertionError(f"FetchBuffer: {cf.tp} already has data waiting")
        self._fetches.append(cf)
        self._tps.add(cf.tp)
        self._bytes += cf.nbytes

    def drop(self, tp: TopicPartition) -> None:
        """Forget what was fetched for ``tp`` (its position moved, or it left)."""
        if tp not in self._tps:
            return
        self.released += 1
        keep: deque[CompletedFetch] = deque()
        for cf in self._fetches:
            if cf.tp == tp:
                self._bytes -= cf.nbytes
            else:
                keep.append(cf)
        self._fetches = keep
        self._tps.discard(tp)

    def take_records(
        self, subs: SubscriptionState, limit: int, *, lend: bool = False
    ) -> list[ConsumerRecord]:
        """Up to ``limit`` records from the head; ``lend``: they go to an
        iterator, so the positions they start from are remembered."""
        out: list[ConsumerRecord] = []
        while self._fetches and len(out) < limit:
            cf, st = self._head(subs)
            if st is None:
                continue
            if lend:
                subs.lend(st)
            got = cf.take(limit - len(out))
            self._advance(subs, cf)
            out.extend(got)
        return out

    def take_batches(self, subs: SubscriptionState, limit: int) -> list[PartitionBatch]:
        """Like :meth:`take_records`, as per-partition columnar batches."""
        out: list[PartitionBatch] = []
        count = 0
        while self._fetches and count < limit:
            cf, st = self._head(subs)
            if st is None:
                continue
            batch = cf.take_batch(limit - count)
            self._advance(subs, cf)
            if batch is not None:
                out.append(batch)
                count += len(batch)
        return out

    # ------------------------------------------------------------ internals
    def _head(self, subs: SubscriptionState) -> tuple[CompletedFetch, PartitionState | None]:
        """The head fetch and its partition's state; a stale head is dropped (state None)."""
        cf = self._fetches[0]
        st = subs.parts.get(cf.tp)
        if st is None or st.paused or st.position != cf.next_offset:
            self._pop()
            return cf, None
        return cf, st

    def _advance(self, subs: SubscriptionState, cf: CompletedFetch) -> None:
        subs.advance(cf.tp, cf.next_offset, cf.last_epoch)
        if cf.exhausted:
            self._pop()

    def _pop(self) -> None:
        self.released += 1
        cf = self._fetches.popleft()
        self._bytes -= cf.nbytes
        self._tps.discard(cf.tp)

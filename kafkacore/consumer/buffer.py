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

A poll may name the partitions it reads (``only``, aiokafka's
``getmany(tp1, tp2)``): it walks the buffer in arrival order past the
fetches of other partitions, which stay where they are, positions
untouched, for a later poll. They keep their bytes in the buffer, so
partitions nobody reads can fill it to its bound, and then nothing more is
fetched, the named partitions included: read them too, or ``pause()``
them (which drops what was fetched for them).

The buffer is truthy when a poll like the last one would get records:
not empty, or, after a poll that named partitions, holding a fetch of
one of them. The fetcher announces ``RecordsAvailable`` when that turns
true, so a ``getone(tp)`` waiting for ``tp`` wakes when ``tp``'s data
arrives even while other partitions' data waits here.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator

from kafkacore.client.metadata import TopicPartition
from kafkacore.consumer.completed import CompletedFetch
from kafkacore.consumer.events import ConsumerRecord, PartitionBatch
from kafkacore.consumer.positions import PartitionState, SubscriptionState

__all__ = ["FetchBuffer", "named_partitions"]


def named_partitions(
    only: Iterable[TopicPartition], assigned: Collection[TopicPartition], *, settling: bool
) -> frozenset[TopicPartition]:
    """The partitions a poll names, each one assigned; ``settling``: the group
    is rebalancing, so one not assigned yet may still come (aiokafka's
    ``getmany`` waits for the assignment too) and is no error for now."""
    named = frozenset(TopicPartition(*tp) for tp in only)
    if not named:
        raise ValueError("poll: only= names no partition; pass None to read every one")
    missing = [tp for tp in named if tp not in assigned]
    if missing and not settling:
        names = ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(missing))
        owned = [f"{tp.topic}-{tp.partition}" for tp in sorted(assigned)]
        shown = ", ".join(owned[:8]) + (f" and {len(owned) - 8} more" if len(owned) > 8 else "")
        raise ValueError(
            f"poll: records of {names} were asked for, but this consumer is not assigned "
            f"{'it' if len(missing) == 1 else 'them'} (assigned: {shown or 'nothing'}); "
            "name assigned partitions only, or assign() them first"
        )
    return named


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
        #: The partitions the last poll named (None: it took from any).
        self._reader: frozenset[TopicPartition] | None = None

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

    def __bool__(self) -> bool:
        """A poll like the last one would find data (see the module docstring)."""
        reader = self._reader
        if reader is None:
            return bool(self._fetches)
        return any(cf.tp in reader for cf in self._fetches)

    def holds(self, tp: TopicPartition) -> bool:
        """True while data fetched for ``tp`` waits here."""
        return tp in self._tps

    def read_next(self, tp: TopicPartition) -> bool:
        """The last poll would take ``tp``'s data (it named no partition, or
        ``tp``): the fetcher holds a leader back only for such data, never
        for data a reader of other partitions leaves where it is."""
        reader = self._reader
        return reader is None or tp in reader

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
        self,
        subs: SubscriptionState,
        limit: int,
        *,
        lend: bool = False,
        only: frozenset[TopicPartition] | None = None,
    ) -> list[ConsumerRecord]:
        """Up to ``limit`` records from the head; ``lend``: they go to an
        iterator, so the positions they start from are remembered; ``only``:
        from those partitions' fetches alone, the others left in place."""
        out: list[ConsumerRecord] = []

        def take(cf: CompletedFetch, st: PartitionState, room: int) -> int:
            if lend:
                subs.lend(st)
            got = cf.take(room)
            out.extend(got)
            return len(got)

        self._hand_out(subs, limit, only, take)
        return out

    def take_batches(
        self,
        subs: SubscriptionState,
        limit: int,
        *,
        only: frozenset[TopicPartition] | None = None,
    ) -> list[PartitionBatch]:
        """Like :meth:`take_records`, as per-partition columnar batches."""
        out: list[PartitionBatch] = []

        def take(cf: CompletedFetch, st: PartitionState, room: int) -> int:
            batch = cf.take_batch(room)
            if batch is None:
                return 0
            out.append(batch)
            return len(batch)

        self._hand_out(subs, limit, only, take)
        return out

    # ------------------------------------------------------------ internals
    def _hand_out(
        self,
        subs: SubscriptionState,
        limit: int,
        only: frozenset[TopicPartition] | None,
        take: Callable[[CompletedFetch, PartitionState, int], int],
    ) -> None:
        """``take(fetch, state, room)`` from each fetch in order until ``limit``
        are taken (it returns how many it took); each partition's position
        follows, and an exhausted fetch leaves the buffer."""
        self._reader = only
        sources = self._sources(subs, only)
        count = 0
        while count < limit:
            found = next(sources, None)
            if found is None:
                break
            cf, st = found
            count += take(cf, st, limit - count)
            subs.advance(cf.tp, cf.next_offset, cf.last_epoch)
            if cf.exhausted:
                self._remove(cf)

    def _sources(
        self, subs: SubscriptionState, only: frozenset[TopicPartition] | None
    ) -> Iterator[tuple[CompletedFetch, PartitionState]]:
        """The fetches to hand out from, with their partitions' states: the
        head, again and again (a stale head is dropped), or ``only``'s."""
        if only is not None:
            yield from self._named(subs, only)
            return
        while self._fetches:
            cf = self._fetches[0]
            st = self._fresh(subs, cf)
            if st is not None:
                yield cf, st

    def _named(
        self, subs: SubscriptionState, only: frozenset[TopicPartition]
    ) -> Iterator[tuple[CompletedFetch, PartitionState]]:
        """The fetches of ``only``'s partitions in arrival order, each with its
        partition's state; a stale one is dropped on the way (as at the head).
        Walks a snapshot: the caller may remove what it exhausts."""
        for cf in [cf for cf in self._fetches if cf.tp in only]:
            st = self._fresh(subs, cf)
            if st is not None:
                yield cf, st

    def _fresh(self, subs: SubscriptionState, cf: CompletedFetch) -> PartitionState | None:
        """``cf``'s partition state, or None (and ``cf`` dropped) when it is stale:
        the partition left, is paused, or its position moved off the fetch."""
        st = subs.parts.get(cf.tp)
        if st is None or st.paused or st.position != cf.next_offset:
            self._remove(cf)
            return None
        return st

    def _remove(self, cf: CompletedFetch) -> None:
        """Take ``cf`` out of the buffer (the head, or from anywhere for a named read)."""
        self.released += 1
        self._fetches.remove(cf)
        self._bytes -= cf.nbytes
        self._tps.discard(cf.tp)

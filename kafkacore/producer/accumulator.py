"""The record accumulator: per-partition queues of batches, bounded in bytes.

Theory of operation
-------------------
The accumulator is the one owner of batch state: only it (and a
:class:`~kafkacore.producer.batch.ProducerBatch`'s own methods) writes a
batch's state, sequence, attempts, charge and records, and a
:class:`PartitionQueue`'s batches, in-flight count and next sequence. The
other machines decide and ask it by name: the sender puts head batches in
flight (:meth:`RecordAccumulator.drain_heads`), lands, requeues, splits and
marks them; the expiry's decision is applied through
:meth:`RecordAccumulator.expire`; the ledger reports a batch after
:meth:`RecordAccumulator.complete`. The one exception is the per-record
fast path (:mod:`~kafkacore.producer.lanes`), which appends to the open
batch directly because a method call per record is what it exists to
avoid. ``tests/producer/test_batch_ownership.py`` holds every module to it.

Every partition has a :class:`PartitionQueue`: a deque of batches in the
order their records were appended (the last one OPEN for appends, the
others sealed and waiting), plus what the sender needs to keep order: how
many of its batches are in flight and the next idempotent sequence number.

Appends charge an upper-bound estimate of each record's encoded size
against ``buffer_memory``; the charge is released when the batch completes.
An append that does not fit raises :class:`BufferFull` *before* touching
anything, so the transport can wait (``max_block_ms``) and try again; the
core says when room came back (``BufferFreed``). A record that could never
fit (``max_request_size`` or ``buffer_memory``) is a
:class:`~kafkacore.producer.errors.RecordTooLargeError` at once.

A batch is *ready* to drain when it is full (a later batch exists or its
size reached ``batch_size``), when it has lingered ``linger_ms``, or when
someone waits for it (flush, close, commit). Draining takes the head
batches the sender chose, builds them once and stamps each with its
partition's next sequence (Java's ``RecordAccumulator.drain``). Retried
batches go back into the queue in sequence order (Java's
``insertInSequenceOrder``); a batch the broker found too large is replaced
by two halves that keep its sequence range (:meth:`RecordAccumulator.split`).

For an idempotent producer with its id, a new batch is opened with the
stamp it will most likely be sent with (:meth:`RecordAccumulator.planned_stamp`):
the partition's next sequence, or the one after the batch before it. The
builder then writes the header and the CRC once; the sender re-stamps only
when the guess no longer holds (see :mod:`~kafkacore.producer.batch`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kafkacore.client.metadata import TopicPartition
from kafkacore.producer.batch import BatchState, ProducerBatch
from kafkacore.producer.config import ProducerConfig
from kafkacore.producer.errors import RecordTooLargeError
from kafkacore.producer.idempotence import IdState, ProducerIdentity
from kafkacore.records import RECORD_BATCH_OVERHEAD, Header, RecordBatch

__all__ = [
    "SEQUENCE_WRAP",
    "BufferFull",
    "PartitionQueue",
    "RecordAccumulator",
    "record_estimate",
]

#: Sequence numbers are int32 and wrap to 0 (KIP-98).
SEQUENCE_WRAP = 2**31

# Per-record framing beyond key and value: length, attributes, deltas,
# key/value lengths and the header count, all as worst-case varints.
RECORD_OVERHEAD = 21


class BufferFull(Exception):
    """Internal signal: the append does not fit ``buffer_memory`` right now."""

    def __init__(self, needed: int) -> None:
        super().__init__(needed)
        self.needed = needed


def record_estimate(
    key: bytes | None, value: bytes | None, headers: Sequence[Header] | None
) -> int:
    size = RECORD_OVERHEAD + (len(key) if key is not None else 0)
    size += len(value) if value is not None else 0
    if headers:
        for hkey, hvalue in headers:
            size += 10 + len(hkey) * 3 + (len(hvalue) if hvalue is not None else 0)
    return size


class PartitionQueue:
    """Batches of one partition and its ordering state."""

    __slots__ = ("batches", "in_flight", "next_sequence", "tp")

    def __init__(self, tp: TopicPartition) -> None:
        self.tp = tp
        self.batches: deque[ProducerBatch] = deque()
        self.in_flight = 0
        self.next_sequence = 0

    def reinsert(self, batch: ProducerBatch) -> None:
        """Put a batch to retry back before every later batch (by sequence, then append order)."""
        batch.state = BatchState.SEALED
        key = _order(batch)
        for i, other in enumerate(self.batches):
            if _order(other) > key:
                self.batches.insert(i, batch)
                return
        self.batches.append(batch)

    def insert_before_later(self, batches: list[ProducerBatch], like: ProducerBatch) -> None:
        """Insert ``batches`` (in order) where ``like`` belongs: before every later batch."""
        key = _order(like)
        index = len(self.batches)
        for i, other in enumerate(self.batches):
            if _order(other) > key:
                index = i
                break
        for offset, batch in enumerate(batches):
            batch.state = BatchState.SEALED
            self.batches.insert(index + offset, batch)


def _order(batch: ProducerBatch) -> tuple[int, tuple[int, ...]]:
    """Sort key: sequence first (what the broker checks), then append order."""
    return (batch.base_sequence if batch.base_sequence >= 0 else 1 << 62, batch.order)


class RecordAccumulator:
    """See the module docstring."""

    def __init__(self, config: ProducerConfig, identity: ProducerIdentity | None = None) -> None:
        """``identity`` (idempotent producers) lets new batches be stamped when opened."""
        self._cfg = config
        self._identity = identity
        self._transactional = config.transactional_id is not None
        self._delivery_s = config.delivery_timeout_ms / 1000
        self.queues: dict[TopicPartition, PartitionQueue] = {}
        self.used = 0
        self._next_id = 1
        self.refused = False  # an append was refused; announce when room returns

    # -- ids ----------------------------------------------------------------
    def take_id(self) -> int:
        n = self._next_id
        self._next_id += 1
        return n

    @property
    def available(self) -> int:
        return self._cfg.buffer_memory - self.used

    def check_size(self, size: int, what: str) -> None:
        """RecordTooLargeError if a record of ``size`` bytes can never be sent."""
        cfg = self._cfg
        if size + RECORD_BATCH_OVERHEAD > cfg.max_request_size:
            raise RecordTooLargeError(
                f"{what}: record of ~{size} bytes exceeds max_request_size="
                f"{cfg.max_request_size}; raise max_request_size or send smaller records"
            )
        if size > cfg.buffer_memory:
            raise RecordTooLargeError(
                f"{what}: record of ~{size} bytes exceeds buffer_memory={cfg.buffer_memory}"
            )

    def reserve(self, size: int) -> None:
        if self.used + size > self._cfg.buffer_memory and self.used > 0:
            self.refused = True
            raise BufferFull(size)

    def queue(self, tp: TopicPartition) -> PartitionQueue:
        q = self.queues.get(tp)
        if q is None:
            q = self.queues[tp] = PartitionQueue(tp)
        return q

    def planned_stamp(self, q: PartitionQueue) -> tuple[int, int, int] | None:
        """The (producer id, epoch, base sequence) a batch opened now in ``q``
        will probably be sent with; None when it cannot be known yet."""
        ident = self._identity
        if ident is None or ident.state is not IdState.READY:
            return None
        pid, epoch = ident.producer_id, ident.epoch
        last = q.batches[-1] if q.batches else None
        if last is None or last.base_sequence >= 0:
            return (pid, epoch, q.next_sequence)
        w_pid, w_epoch, w_seq, _ = last.written
        if w_pid != pid or w_epoch != epoch or w_seq < 0:
            return None
        return (pid, epoch, (w_seq + last.record_count) % SEQUENCE_WRAP)

    def _open_batch(self, q: PartitionQueue, now: float) -> ProducerBatch:
        cfg = self._cfg
        stamp = self.planned_stamp(q) if self._identity is not None else None
        batch = ProducerBatch(
            self.take_id(),
            q.tp,
            now=now,
            delivery_timeout_s=self._delivery_s,
            batch_size=cfg.batch_size,
            compression=cfg.compression,
            compression_level=cfg.compression_level,
            stamp=stamp,
            transactional=self._transactional and stamp is not None,
        )
        q.batches.append(batch)
        return batch

    # -- appends ------------------------------------------------------------
    def append(
        self,
        tp: TopicPartition,
        value: bytes | None,
        key: bytes | None,
        headers: Sequence[Header] | None,
        timestamp: int,
        token: object,
        size: int,
        now: float,
    ) -> ProducerBatch:
        """Append one record (``size`` already reserved); returns its batch."""
        q = self.queues.get(tp) or self.queue(tp)
        batches = q.batches
        batch = batches[-1] if batches else None
        if (
            batch is None
            or batch.state is not BatchState.OPEN
            or (batch.tokens and batch.accounted + size > self._cfg.batch_size)
        ):
            batch = self._open_batch(q, now)
        builder = batch.builder
        assert builder is not None
        builder.append(value, key, timestamp=timestamp, headers=headers or ())
        batch.tokens.append(token)
        batch.timestamps.append(timestamp)
        batch.accounted += size
        self.used += size
        return batch

    def append_many(
        self,
        tp: TopicPartition,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        sizes: Sequence[int],
        timestamp: int,
        token: object,
        now: float,
        limit: int = 0,
    ) -> int:
        """Append column slices to ``tp``, cutting batches at ``limit`` bytes
        (default ``batch_size``); returns the bytes charged."""
        q = self.queues.get(tp) or self.queue(tp)
        limit = limit or self._cfg.batch_size
        n = len(values)
        start = 0
        total = 0
        while start < n:
            batch = q.batches[-1] if q.batches else None
            if batch is None or batch.state is not BatchState.OPEN or batch.accounted >= limit:
                batch = self._open_batch(q, now)
            room = limit - batch.accounted
            end = start
            acc = 0
            while end < n and (acc + sizes[end] <= room or (end == start and not batch.tokens)):
                acc += sizes[end]
                end += 1
            if end == start:
                batch.state = BatchState.SEALED if batch.tokens else batch.state
                batch = self._open_batch(q, now)
                continue
            builder = batch.builder
            assert builder is not None
            builder.append_many(
                values[start:end],
                None if keys is None else keys[start:end],
                timestamps=timestamp,
            )
            count = end - start
            batch.tokens += [token] * count
            batch.timestamps += [timestamp] * count
            batch.accounted += acc
            self.used += acc
            total += acc
            start = end
        return total

    # -- readiness ----------------------------------------------------------
    def head_ready(self, q: PartitionQueue, now: float, linger_s: float, force: bool) -> bool:
        """Whether the first batch of ``q`` should be sent now."""
        batch = q.batches[0]
        if batch.state is not BatchState.OPEN:
            return batch.retry_at <= now
        if force or len(q.batches) > 1 or batch.accounted >= self._cfg.batch_size:
            return True
        return now >= batch.created + linger_s

    def all_batches(self) -> Iterable[ProducerBatch]:
        for q in self.queues.values():
            yield from q.batches

    def has_queued(self) -> bool:
        return any(q.batches for q in self.queues.values())

    # -- sending and answers (the sender asks) ------------------------------
    def drain_heads(
        self, queues: list[PartitionQueue], budget: int
    ) -> list[tuple[ProducerBatch, bytes]]:
        """Take the head batch of each of ``queues`` in flight, built (and,
        idempotent, stamped with the partition's next sequence) while the
        bytes stay within ``budget``; the first always goes."""
        ident = self._identity
        transactional = self._transactional
        taken: list[tuple[ProducerBatch, bytes]] = []
        for q in queues:
            batch = q.batches[0]
            data = batch.build()
            if taken and len(data) > budget:
                continue
            if ident is not None and (
                batch.base_sequence < 0
                or batch.producer_epoch != ident.epoch
                or batch.producer_id != ident.producer_id
            ):
                data = batch.seal(ident.producer_id, ident.epoch, q.next_sequence, transactional)
                q.next_sequence = (q.next_sequence + batch.record_count) % SEQUENCE_WRAP
            budget -= len(data)
            q.batches.popleft()
            q.in_flight += 1
            batch.state = BatchState.IN_FLIGHT
            batch.attempts += 1
            taken.append((batch, data))
        return taken

    def landed(self, batches: Iterable[ProducerBatch]) -> None:
        """The request carrying ``batches`` ended: their partitions have one less in flight."""
        queues = self.queues
        for batch in batches:
            queues[batch.tp].in_flight -= 1

    def mark_unknown(self, batch: ProducerBatch) -> None:
        """An attempt of ``batch`` may have been written (sticky; see ProducerBatch)."""
        batch.unknown = True

    def note_failure(self, batch: ProducerBatch, error: BaseException) -> None:
        """Why the last attempt of ``batch`` failed (reported if it is not delivered)."""
        batch.last_error = error

    def requeue(self, batch: ProducerBatch, retry_at: float) -> None:
        """Queue ``batch`` again, in sequence order, to be retried from ``retry_at``."""
        batch.retry_at = retry_at
        self.queue(batch.tp).reinsert(batch)

    def complete(self, batch: ProducerBatch) -> bool:
        """Mark ``batch`` DONE and give its bytes back; False if it was already."""
        if batch.state is BatchState.DONE:
            return False
        batch.state = BatchState.DONE
        self.used -= batch.accounted
        batch.accounted = 0
        return True

    def split(self, batch: ProducerBatch, now: float) -> list[ProducerBatch]:
        """Replace ``batch`` by two halves queued where it belongs; returns them.

        The halves keep the records' order, tokens, timestamps and charge
        and, with a sequence, the original's sequence range; the original is
        DONE (reported through its halves).
        """
        records = list(RecordBatch(batch.build()))
        n = len(records)
        half = n // 2
        pieces: list[ProducerBatch] = []
        charged = 0
        for start, end in ((0, half), (half, n)):
            piece = self._piece(batch, records[start:end], start, now)
            piece.accounted = (
                batch.accounted * (end - start) // n if start == 0 else batch.accounted - charged
            )
            charged += piece.accounted
            pieces.append(piece)
        batch.state = BatchState.DONE
        batch.accounted = 0
        self.queue(batch.tp).insert_before_later(pieces, batch)
        return pieces

    def _piece(
        self, batch: ProducerBatch, records: list[Any], start: int, now: float
    ) -> ProducerBatch:
        """A new batch holding ``records``, the part of ``batch`` from record ``start``."""
        cfg = self._cfg
        piece = ProducerBatch(
            self.take_id(),
            batch.tp,
            now=batch.created,
            delivery_timeout_s=self._delivery_s,
            batch_size=cfg.batch_size,
            compression=cfg.compression,
            compression_level=cfg.compression_level,
        )
        builder = piece.builder
        assert builder is not None
        for record in records:
            builder.append(
                record.value, record.key, timestamp=record.timestamp, headers=record.headers
            )
        end = start + len(records)
        piece.order = (*batch.order, start)
        piece.tokens = batch.tokens[start:end]
        piece.timestamps = batch.timestamps[start:end]
        piece.attempts = batch.attempts  # a retry: sent alone, in order
        piece.unknown = batch.unknown
        piece.retry_at = now
        piece.build()
        if batch.base_sequence >= 0:
            piece.seal(
                batch.producer_id,
                batch.producer_epoch,
                (batch.base_sequence + start) % SEQUENCE_WRAP,
                self._transactional,
            )
        return piece

    # -- memory outside batches ---------------------------------------------
    def charge(self, size: int) -> None:
        """Charge ``size`` bytes held outside a batch (records waiting for metadata)."""
        self.used += size

    def release(self, size: int) -> None:
        """Give back ``size`` bytes charged with :meth:`charge`."""
        self.used -= size

    def room_returned(self) -> bool:
        """True once after a refused append, when room came back (announce it)."""
        if self.refused and self.available > 0:
            self.refused = False
            return True
        return False

    # -- removal and sequences ----------------------------------------------
    def expire(self, batch: ProducerBatch) -> None:
        """Remove queued ``batch`` (past its delivery deadline) from its queue."""
        batches = self.queues[batch.tp].batches
        if batches[0] is batch:
            batches.popleft()
        else:
            batches.remove(batch)

    def take(self, which: Callable[[ProducerBatch], bool]) -> list[ProducerBatch]:
        """Remove the queued batches ``which`` selects, keeping the others' order."""
        taken: list[ProducerBatch] = []
        for q in self.queues.values():
            if not q.batches:
                continue
            keep: deque[ProducerBatch] = deque()
            for batch in q.batches:
                (taken if which(batch) else keep).append(batch)
            q.batches = keep
        return taken

    def take_all(self) -> list[ProducerBatch]:
        """Remove every queued batch."""
        taken: list[ProducerBatch] = []
        for q in self.queues.values():
            taken.extend(q.batches)
            q.batches = deque()
        return taken

    def reset_sequences(self) -> None:
        """A new producer id or epoch: every partition's sequence restarts at 0
        and queued batches get fresh sequences when sent (KIP-360, KIP-890)."""
        for q in self.queues.values():
            q.next_sequence = 0
            for batch in q.batches:
                batch.base_sequence = -1

    def take_unknown(self) -> list[ProducerBatch]:
        """Remove the queued batches that may have been written, their sequence
        forgotten: after an epoch bump their gap is closed by the bump itself."""
        taken = self.take(lambda b: b.unknown)
        for batch in taken:
            batch.base_sequence = -1
        return taken

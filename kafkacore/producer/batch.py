"""One producer batch: records for one partition, from first append to outcome.

Theory of operation
-------------------
A :class:`ProducerBatch` moves through :class:`BatchState`::

    OPEN --seal--> SEALED --send--> IN_FLIGHT --ok/fail--> DONE
                      ^                 |
                      +----retry--------+

While OPEN, records go into a :class:`~kafkacore.records.RecordBatchBuilder`
together with the caller's tokens. When first drained the batch is built
once (compressed, CRC'd) and carries the producer id, epoch and base
sequence (KIP-98). Retries send the same bytes with the same sequence, so
the broker can drop duplicates; only an epoch bump (KIP-360) re-stamps them.

The accumulator usually knows the stamp when it opens the batch (the
producer id is ready, and the sequence follows the batch before it), so the
builder writes it and the CRC-32C once (:attr:`ProducerBatch.written`).
:meth:`ProducerBatch.seal` compares the stamp the sender wants with the one
the bytes carry and rewrites the header only when they differ (an epoch
bump, a batch opened before the id came, a batch ahead that failed):
stamping copies the bytes and recomputes the CRC, which covers everything
from the attributes on.

Who changes a batch: its own methods (:meth:`ProducerBatch.build`,
:meth:`ProducerBatch.seal`) and the
:class:`~kafkacore.producer.accumulator.RecordAccumulator`, which the other
machines ask (see its docstring); the per-record fast path
(:mod:`~kafkacore.producer.lanes`) is the one exception.
"""

from __future__ import annotations

import struct
from enum import Enum

from kafkacore.client.metadata import TopicPartition
from kafkacore.records import Compression, RecordBatchBuilder, crc32c

__all__ = ["BatchState", "ProducerBatch", "stamp"]

_ATTR = struct.Struct(">h")
_PRODUCER = struct.Struct(">qhi")
_CRC = struct.Struct(">I")
_TRANSACTIONAL = 0x10


class BatchState(Enum):
    OPEN = "open"
    SEALED = "sealed"
    IN_FLIGHT = "in_flight"
    DONE = "done"


def stamp(
    data: bytes, *, producer_id: int, producer_epoch: int, base_sequence: int, transactional: bool
) -> bytes:
    """``data`` (a built v2 batch) with new producer fields and a fresh CRC."""
    out = bytearray(data)
    (attrs,) = _ATTR.unpack_from(out, 21)
    attrs = (attrs | _TRANSACTIONAL) if transactional else (attrs & ~_TRANSACTIONAL)
    _ATTR.pack_into(out, 21, attrs)
    _PRODUCER.pack_into(out, 43, producer_id, producer_epoch, base_sequence)
    _CRC.pack_into(out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


class ProducerBatch:
    """See the module docstring."""

    __slots__ = (
        "accounted",
        "attempts",
        "base_sequence",
        "builder",
        "created",
        "data",
        "deadline",
        "id",
        "last_error",
        "order",
        "producer_epoch",
        "producer_id",
        "retry_at",
        "state",
        "timestamps",
        "tokens",
        "tp",
        "unknown",
        "written",
    )

    def __init__(
        self,
        id: int,
        tp: TopicPartition,
        *,
        now: float,
        delivery_timeout_s: float,
        batch_size: int,
        compression: Compression,
        compression_level: int | None,
        stamp: tuple[int, int, int] | None = None,
        transactional: bool = False,
    ) -> None:
        """``stamp`` is the (producer id, epoch, base sequence) expected when
        the batch is sent: the builder writes it (see the module docstring)."""
        self.id = id
        # Position among the partition's batches when no sequence says it:
        # (id,), and the halves of a split batch extend their parent's.
        self.order: tuple[int, ...] = (id,)
        self.tp = tp
        self.created = now
        self.deadline = now + delivery_timeout_s
        if stamp is None:
            self.builder: RecordBatchBuilder | None = RecordBatchBuilder(
                compression=compression, compression_level=compression_level, batch_size=batch_size
            )
            #: (producer id, epoch, base sequence, transactional) the bytes carry.
            self.written: tuple[int, int, int, bool] = (-1, -1, -1, False)
        else:
            pid, epoch, sequence = stamp
            self.builder = RecordBatchBuilder(
                compression=compression,
                compression_level=compression_level,
                batch_size=batch_size,
                producer_id=pid,
                producer_epoch=epoch,
                base_sequence=sequence,
                transactional=transactional,
            )
            self.written = (pid, epoch, sequence, transactional)
        self.tokens: list[object] = []
        self.timestamps: list[int] = []
        self.accounted = 0  # bytes charged against buffer_memory
        self.data: bytes | None = None
        self.state = BatchState.OPEN
        self.attempts = 0
        self.retry_at = 0.0
        self.base_sequence = -1
        self.producer_id = -1
        self.producer_epoch = -1
        # An attempt ended without an answer (lost connection, timeout): the
        # broker may have written it. Sticky: a later refusal does not undo it.
        self.unknown = False
        # Why the last attempt failed (None before any): the cause reported
        # if the batch is not delivered in the end (issue 10, fault 4).
        self.last_error: BaseException | None = None

    @property
    def record_count(self) -> int:
        return len(self.tokens)

    def size(self) -> int:
        """Bytes on the wire (built) or the uncompressed size so far."""
        if self.data is not None:
            return len(self.data)
        assert self.builder is not None
        return self.builder.size_in_bytes

    def build(self) -> bytes:
        """Seal and encode the batch (once); the builder is dropped afterwards."""
        if self.data is None:
            assert self.builder is not None
            self.data = self.builder.build()
            self.builder = None
        if self.state is BatchState.OPEN:
            self.state = BatchState.SEALED
        return self.data

    def seal(
        self, producer_id: int, producer_epoch: int, base_sequence: int, transactional: bool
    ) -> bytes:
        """Build the batch for sending with this producer id, epoch and base sequence.

        Rewrites the header (a copy and a CRC) only if the bytes carry another stamp.
        """
        data = self.build()
        wanted = (producer_id, producer_epoch, base_sequence, transactional)
        if wanted != self.written:
            data = self.data = stamp(
                data,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                base_sequence=base_sequence,
                transactional=transactional,
            )
            self.written = wanted
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        return data

    def __repr__(self) -> str:
        return (
            f"<ProducerBatch #{self.id} {self.tp.topic}-{self.tp.partition} "
            f"{self.record_count} records {self.state.value} seq={self.base_sequence}>"
        )

"""Acknowledgement bookkeeping of a share consumer (KIP-932).

Theory of operation
-------------------
A share-group member does not keep positions: the partition leader hands it
*acquired* records, each locked to the member for the group's record lock
duration and carrying a delivery count, and the member answers each
delivery with one acknowledgement: ACCEPT (processed), RELEASE (give it to
someone again, with a higher delivery count) or REJECT (never deliver it
again). GAP marks offsets inside an acquired range that hold no record for
the user (transaction markers, compacted-away records).

Each record of one partition moves through these states (one
:class:`PartitionAcks` per partition)::

    (new delivery) --handed out by poll--> DELIVERED
    DELIVERED --acknowledge(type)--> PENDING (type)
    (offset without a record) ---------> PENDING (GAP)
    PENDING --taken into a request--> IN_FLIGHT --answer--> settled (forgotten)

A record is acknowledged at most once per delivery: acknowledging it again
is a caller error (``LocalProtocolError``), and so is acknowledging a
delivery that a newer one of the same offset has replaced (its lock ran
out and the broker handed the record out again).

In *implicit* mode the next poll (or a commit, or close) accepts every
record the previous poll handed out that was not acknowledged explicitly;
in *explicit* mode a poll with unacknowledged records is a caller error.
Pending acknowledgements leave as :class:`AckRange` batches, one per run of
consecutive offsets, the shape ShareFetch and ShareAcknowledge carry: one
type for the whole run, or one per offset when they differ.

Every acknowledgement gets a sequence number so a commit can wait for
exactly the acknowledgements made before it (:meth:`Acknowledgements.unsettled_through`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from kafkacore.client.metadata import TopicPartition
from kafkacore.errors import KafkaError, LocalProtocolError

__all__ = [
    "AckRange",
    "AcknowledgeType",
    "AcknowledgementMode",
    "Acknowledgements",
    "AcquisitionLockTimedOut",
    "PartitionAcks",
    "ack_ranges",
]


class AcquisitionLockTimedOut(KafkaError):
    """The record's acquisition lock ran out before its acknowledgement could be
    sent: the broker has taken it back and delivers it again (Java reports
    this as an InvalidRecordStateException)."""


class AcknowledgeType(enum.IntEnum):
    """KIP-932's acknowledgement types, with their wire values."""

    #: An offset in an acquired range with no record for the user (internal).
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3


class AcknowledgementMode(enum.Enum):
    """Java's ``share.acknowledgement.mode``."""

    IMPLICIT = "implicit"
    EXPLICIT = "explicit"


@dataclass(frozen=True, slots=True)
class AckRange:
    """Consecutive offsets ``first..last`` and their types (one for all, or one each)."""

    first: int
    last: int
    types: tuple[int, ...]


def ack_ranges(acks: dict[int, AcknowledgeType]) -> list[AckRange]:
    """``acks`` (offset -> type) as batches of consecutive offsets, in offset order."""
    out: list[AckRange] = []
    run: list[tuple[int, AcknowledgeType]] = []

    def close() -> None:
        types = [int(t) for _, t in run]
        same = all(t == types[0] for t in types)
        out.append(AckRange(run[0][0], run[-1][0], (types[0],) if same else tuple(types)))

    for offset in sorted(acks):
        if run and offset != run[-1][0] + 1:
            close()
            run = []
        run.append((offset, acks[offset]))
    if run:
        close()
    return out


class PartitionAcks:
    """The deliveries and acknowledgements of one partition; see the module docstring."""

    __slots__ = ("delivered", "in_flight", "pending", "tp")

    def __init__(self, tp: TopicPartition) -> None:
        self.tp = tp
        #: Handed to the user, not yet acknowledged: offset -> (delivery count, lock expiry).
        self.delivered: dict[int, tuple[int, float]] = {}
        #: Acknowledged, not yet sent: offset -> (type, sequence number, lock expiry).
        self.pending: dict[int, tuple[AcknowledgeType, int, float]] = {}
        #: Sent, not yet answered: offset -> (type, sequence number).
        self.in_flight: dict[int, tuple[AcknowledgeType, int]] = {}

    def deliver(self, offset: int, delivery_count: int, expires: float) -> None:
        """The user now holds this delivery (it replaces an older one of the offset)."""
        self.delivered[offset] = (delivery_count, expires)

    def acknowledge(
        self, offset: int, delivery_count: int, kind: AcknowledgeType, seq: int
    ) -> None:
        held = self.delivered.get(offset)
        if held is None:
            if offset in self.pending or offset in self.in_flight:
                raise LocalProtocolError(
                    f"acknowledge: {self.tp} offset {offset} is already acknowledged for "
                    "this delivery; each delivery takes exactly one acknowledgement"
                )
            raise LocalProtocolError(
                f"acknowledge: {self.tp} offset {offset} was not handed out by poll() "
                "(or its partition was lost); acknowledge only records poll() returned"
            )
        if held[0] != delivery_count:
            raise LocalProtocolError(
                f"acknowledge: {self.tp} offset {offset} delivery {delivery_count} is stale: "
                f"the record was delivered again (delivery {held[0]}); acknowledge that one"
            )
        del self.delivered[offset]
        self.pending[offset] = (kind, seq, held[1])

    def gap(self, offset: int, seq: int, expires: float) -> None:
        """``offset`` was acquired but holds no record for the user."""
        self.pending[offset] = (AcknowledgeType.GAP, seq, expires)

    def accept_delivered(self, seq: int) -> int:
        """Implicit mode: accept everything handed out and not acknowledged."""
        n = len(self.delivered)
        for offset, (_, expires) in self.delivered.items():
            self.pending[offset] = (AcknowledgeType.ACCEPT, seq, expires)
        self.delivered.clear()
        return n

    def take(self, now: float) -> tuple[list[AckRange], frozenset[int], frozenset[int]]:
        """Move every pending acknowledgement into flight: the batches, their offsets,
        and the offsets left out because their lock ran out (also in flight, to settle)."""
        if not self.pending:
            return [], frozenset(), frozenset()
        taken = self.pending
        self.pending = {}
        self.in_flight.update((o, (t, s)) for o, (t, s, _) in taken.items())
        live = {o: t for o, (t, _, expires) in taken.items() if expires > now}
        expired = frozenset(o for o in taken if o not in live)
        return ack_ranges(live), frozenset(live), expired

    def settle(self, offsets: Iterable[int]) -> dict[int, AcknowledgeType]:
        """The answer for ``offsets`` came; what they were (GAPs left out)."""
        out: dict[int, AcknowledgeType] = {}
        for offset in offsets:
            entry = self.in_flight.pop(offset, None)
            if entry is not None and entry[0] is not AcknowledgeType.GAP:
                out[offset] = entry[0]
        return out

    def min_seq(self) -> int | None:
        """The oldest acknowledgement not answered yet."""
        seqs = [s for _, s, _ in self.pending.values()] + [s for _, s in self.in_flight.values()]
        return min(seqs) if seqs else None


class Acknowledgements:
    """Every partition's :class:`PartitionAcks`, and the acknowledgement mode."""

    def __init__(self, mode: AcknowledgementMode) -> None:
        self.mode = mode
        self.parts: dict[TopicPartition, PartitionAcks] = {}
        self._seq = 0

    @property
    def seq(self) -> int:
        """The sequence number of the latest acknowledgement (0 before any)."""
        return self._seq

    def part(self, tp: TopicPartition) -> PartitionAcks:
        acks = self.parts.get(tp)
        if acks is None:
            acks = self.parts[tp] = PartitionAcks(tp)
        return acks

    def deliver(self, tp: TopicPartition, offset: int, delivery_count: int, expires: float) -> None:
        self.part(tp).deliver(offset, delivery_count, expires)

    def gap(self, tp: TopicPartition, offset: int, expires: float) -> None:
        self._seq += 1
        self.part(tp).gap(offset, self._seq, expires)

    def acknowledge(
        self, tp: TopicPartition, offset: int, delivery_count: int, kind: AcknowledgeType
    ) -> None:
        if not isinstance(kind, AcknowledgeType) or kind is AcknowledgeType.GAP:
            raise LocalProtocolError(f"acknowledge: type {kind!r} is not ACCEPT, RELEASE or REJECT")
        if self.mode is AcknowledgementMode.IMPLICIT:
            raise LocalProtocolError(
                "acknowledge: the consumer is in implicit mode (the next poll accepts "
                "everything); set acknowledgement_mode='explicit' to acknowledge records"
            )
        part = self.parts.get(tp)
        if part is None:
            raise LocalProtocolError(
                f"acknowledge: {tp} offset {offset} was not handed out by poll(); "
                "acknowledge only records poll() returned"
            )
        part.acknowledge(offset, delivery_count, kind, self._seq + 1)
        self._seq += 1

    def before_poll(self) -> None:
        """Implicit mode accepts the last poll's records; explicit mode insists they were acked."""
        if self.mode is AcknowledgementMode.IMPLICIT:
            self.accept_delivered()
            return
        held = self.unacknowledged()
        if held:
            first = min(held)
            raise LocalProtocolError(
                f"poll: {len(held)} record(s) of the previous poll are not acknowledged "
                f"(first: {first[0]} offset {first[1]}); in explicit mode acknowledge "
                "every record before polling again"
            )

    def accept_delivered(self) -> None:
        """Accept everything handed out and not acknowledged (implicit mode)."""
        if self.mode is not AcknowledgementMode.IMPLICIT:
            return
        self._seq += 1
        for part in self.parts.values():
            part.accept_delivered(self._seq)

    def unacknowledged(self) -> list[tuple[TopicPartition, int]]:
        return [(tp, o) for tp, part in self.parts.items() for o in part.delivered]

    def has_pending(self, tps: Iterable[TopicPartition] | None = None) -> bool:
        parts = self.parts.values() if tps is None else (self.parts.get(tp) for tp in tps)
        return any(p is not None and p.pending for p in parts)

    def unsettled_through(self, seq: int) -> frozenset[TopicPartition]:
        """Partitions with an acknowledgement numbered ``seq`` or less not yet answered."""
        out = []
        for tp, part in self.parts.items():
            oldest = part.min_seq()
            if oldest is not None and oldest <= seq:
                out.append(tp)
        return frozenset(out)

    def drop_delivered(self, tps: Iterable[TopicPartition]) -> None:
        """The partitions are gone (lost assignment): their held records cannot be acknowledged."""
        for tp in tps:
            part = self.parts.get(tp)
            if part is not None:
                part.delivered.clear()

    def __iter__(self) -> Iterator[PartitionAcks]:
        return iter(list(self.parts.values()))

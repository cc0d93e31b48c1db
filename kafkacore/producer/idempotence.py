"""The producer identity machine: producer id and epoch for idempotence (KIP-98, KIP-360).

Theory of operation
-------------------
An idempotent producer stamps every batch with ``(producer_id, epoch,
base_sequence)``; the partition leader drops a batch whose sequence it
already wrote and rejects one that leaves a gap. The identity moves through
:class:`IdState`, transitions as data in :data:`TRANSITIONS`::

    NONE --request--> REQUESTING --assigned--> READY
    READY --need_bump--> BUMP_PENDING --request--> BUMPING --assigned--> READY
    any --fatal--> FATAL

``need_bump`` follows a sequence the broker no longer accepts
(OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID) or a batch that failed
after it got a sequence, which leaves a gap. Per KIP-360 the producer waits
until nothing is in flight, asks InitProducerId with its current id and
epoch for the next epoch, and restarts every partition's sequence at 0;
queued batches are re-stamped before they are sent again.
"""

from __future__ import annotations

from enum import Enum

from kafkacore.errors import LocalProtocolError

__all__ = ["TRANSITIONS", "IdState", "ProducerIdentity"]


class IdState(Enum):
    NONE = "none"
    REQUESTING = "requesting"
    READY = "ready"
    BUMP_PENDING = "bump_pending"
    BUMPING = "bumping"
    FATAL = "fatal"


TRANSITIONS: dict[tuple[IdState, str], IdState] = {
    (IdState.NONE, "request"): IdState.REQUESTING,
    (IdState.REQUESTING, "assigned"): IdState.READY,
    (IdState.REQUESTING, "failed"): IdState.NONE,
    (IdState.READY, "need_bump"): IdState.BUMP_PENDING,
    (IdState.BUMP_PENDING, "need_bump"): IdState.BUMP_PENDING,
    (IdState.BUMPING, "need_bump"): IdState.BUMPING,
    (IdState.BUMP_PENDING, "request"): IdState.BUMPING,
    (IdState.BUMPING, "assigned"): IdState.READY,
    (IdState.BUMPING, "failed"): IdState.BUMP_PENDING,
    # A transactional producer re-initialises from READY (init after abort).
    # Transactions v2 (KIP-890): EndTxn v5 hands out the next epoch.
    (IdState.READY, "renewed"): IdState.READY,
    (IdState.READY, "request"): IdState.REQUESTING,
}


class ProducerIdentity:
    """Producer id, epoch and the :class:`IdState` they are in."""

    __slots__ = ("epoch", "producer_id", "state")

    def __init__(self) -> None:
        self.state = IdState.NONE
        self.producer_id = -1
        self.epoch = -1

    def fire(self, event: str) -> IdState:
        if event == "fatal":
            self.state = IdState.FATAL
            return self.state
        nxt = TRANSITIONS.get((self.state, event))
        if nxt is None:
            raise LocalProtocolError(
                f"producer identity: no transition for {event!r} in state {self.state.value}"
            )
        self.state = nxt
        return nxt

    def assign(self, producer_id: int, epoch: int) -> None:
        self.fire("assigned")
        self.producer_id = producer_id
        self.epoch = epoch

    def renew(self, producer_id: int, epoch: int) -> None:
        """Take the id/epoch an EndTxn v5 answer names for the next transaction."""
        self.fire("renewed")
        self.producer_id = producer_id
        self.epoch = epoch

    @property
    def ready(self) -> bool:
        return self.state is IdState.READY

"""The delivery timeout: which batches outlived ``delivery_timeout_ms``, and why: a pure policy.

Theory of operation
-------------------
Every batch carries its delivery deadline (``delivery_timeout_ms`` after
its first record was appended). On each pass :meth:`Expiry.decide` reads
the queues and the requests in flight (read-only views:
:class:`QueueView`, :class:`FlightView`) and returns an
:class:`ExpiryDecision`; it changes nothing. The sender carries it out
(:meth:`~kafkacore.producer.sender.Sender.apply_expiry`): the accumulator
removes and completes the batches (it alone writes batch state), the
ledger reports them, the sender moves its flights' deadlines and withdraws
requests.

* a queued batch past its deadline (from the head of its queue) fails with
  the reason it still waits (:meth:`Expiry.why_queued`: its last failed
  attempt, no producer id, the partition not added to the transaction, no
  leader, an unreachable leader, or linger and the in-flight limit);
* a batch in flight past its deadline fails too (issue 10, fault 2: the
  delivery timeout bounds a batch in flight, as in Java's Sender). The
  request stays with the client (written bytes cannot be unsent) and its
  answer is ignored for that batch. A failed batch that had a sequence
  leaves its partition's sequence state unknown: the sender asks for an
  epoch bump (KIP-360), which waits until nothing is in flight, so the
  partition continues only under a new epoch, where no late write of the
  old attempt can be mistaken for a new one. A request not written yet is
  withdrawn once none of its batches is left (:attr:`FlightExpiry.withdraw`).

The reasons are read at the start of the pass, before any batch of it is
reported. The errors name what went wrong last
(:mod:`~kafkacore.producer.causes`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kafkacore.client import KafkaClientCore, RequestHandle
from kafkacore.errors import KafkaTimeoutError
from kafkacore.producer.batch import BatchState, ProducerBatch
from kafkacore.producer.causes import FailureLog, expired
from kafkacore.producer.config import ProducerConfig
from kafkacore.producer.idempotence import ProducerIdentity
from kafkacore.producer.transaction import TransactionManager
from kafkacore.protocol.messages import ProduceResponse

__all__ = [
    "NOTHING",
    "Expired",
    "Expiry",
    "ExpiryDecision",
    "FlightExpiry",
    "FlightView",
    "QueueView",
]


class QueueView(Protocol):
    """What the policy reads of a partition queue."""

    @property
    def batches(self) -> Sequence[ProducerBatch]: ...


class FlightView(Protocol):
    """What the policy reads of a Produce request in flight (a sender's ``Flight``)."""

    @property
    def node(self) -> int: ...
    @property
    def sent(self) -> float: ...
    @property
    def batches(self) -> Sequence[ProducerBatch]: ...
    @property
    def deadline(self) -> float: ...
    @property
    def handle(self) -> RequestHandle[ProduceResponse]: ...


@dataclass(frozen=True, slots=True)
class Expired:
    """One batch to fail with ``error``."""

    batch: ProducerBatch
    error: KafkaTimeoutError
    #: Its request was written and had no answer: the broker may have it.
    written: bool = False


@dataclass(frozen=True, slots=True)
class FlightExpiry:
    """What becomes of one request in flight whose deadline came."""

    #: The request's handle id (the sender's key for the flight).
    flight_id: int
    expired: tuple[Expired, ...]
    #: The earliest deadline among its batches still live (inf: none).
    deadline: float
    #: None of its batches is left and it was never written: cancel it.
    withdraw: bool


@dataclass(frozen=True, slots=True)
class ExpiryDecision:
    """Everything one pass expires: queued batches (in queue order), then flights."""

    queued: tuple[Expired, ...] = ()
    flights: tuple[FlightExpiry, ...] = ()


#: The decision of a pass that found nothing due (most passes).
NOTHING = ExpiryDecision()


class Expiry:
    """See the module docstring."""

    __slots__ = ("_cfg", "_client", "_failures", "_identity", "_timeout_ms", "_txn")

    def __init__(
        self,
        cfg: ProducerConfig,
        client: KafkaClientCore,
        identity: ProducerIdentity,
        txn: TransactionManager | None,
        failures: FailureLog,
    ) -> None:
        self._cfg = cfg
        self._client = client
        self._identity = identity
        self._txn = txn
        self._failures = failures
        self._timeout_ms = cfg.delivery_timeout_ms

    def decide(
        self, now: float, queues: Iterable[QueueView], flights: Iterable[FlightView]
    ) -> ExpiryDecision:
        """What outlived its deadline at ``now``: :data:`NOTHING` when nothing did."""
        queued: list[Expired] = []
        for q in queues:
            for batch in q.batches:
                if batch.deadline > now:
                    break
                reason, cause = self.why_queued(batch)
                error = expired(
                    batch.record_count,
                    batch.tp,
                    self._timeout_ms,
                    reason,
                    cause,
                    maybe_written=batch.unknown,
                )
                queued.append(Expired(batch, error))
        due = [self._flight(flight, now) for flight in flights if flight.deadline <= now]
        if not queued and not due:
            return NOTHING
        return ExpiryDecision(tuple(queued), tuple(due))

    def _flight(self, flight: FlightView, now: float) -> FlightExpiry:
        """The batches of ``flight`` past their deadline, and what becomes of the request."""
        handle = flight.handle
        written = handle.node_id is not None
        live = math.inf
        failed: list[Expired] = []
        for batch in flight.batches:
            if batch.state is BatchState.DONE:
                continue
            if batch.deadline > now:
                live = min(live, batch.deadline)
                continue
            stalled = self._stalled(flight, batch, written, now)
            error = expired(
                batch.record_count,
                batch.tp,
                self._timeout_ms,
                str(stalled),
                stalled.__cause__,
                maybe_written=written or batch.unknown,
            )
            error.__cause__ = stalled
            failed.append(Expired(batch, error, written))
        withdraw = live is math.inf and not written and not handle.done
        return FlightExpiry(handle.id, tuple(failed), live, withdraw)

    def _stalled(
        self, flight: FlightView, batch: ProducerBatch, written: bool, now: float
    ) -> KafkaTimeoutError:
        """Why the request carrying ``batch`` did not deliver it."""
        where = self._client.describe_node(flight.node)
        handle = flight.handle
        if written:
            stalled = KafkaTimeoutError(
                f"Produce request #{handle.id} to {where} had no answer "
                f"after {now - flight.sent:.3f} s (attempt {batch.attempts})"
            )
            stalled.__cause__ = batch.last_error
        else:
            stalled = KafkaTimeoutError(
                f"Produce request #{handle.id} still waits for a connection to "
                f"{where} (attempt {batch.attempts})"
            )
            stalled.__cause__ = self._failures.nodes.get(flight.node, batch.last_error)
        return stalled

    def why_queued(self, batch: ProducerBatch) -> tuple[str, BaseException | None]:
        """Why ``batch`` still waits in its queue, and the failure behind it."""
        if batch.last_error is not None:
            return (f"attempt {batch.attempts} failed: {batch.last_error}", batch.last_error)
        if self._cfg.idempotent and not self._identity.ready:
            failure = self._failures.producer_id
            return (
                "the producer has no producer id yet (InitProducerId did not succeed"
                + (f": {failure})" if failure is not None else ")"),
                failure,
            )
        tp = batch.tp
        txn = self._txn
        if txn is not None and tp not in txn.added:
            return ("the partition was not added to the transaction", txn.error)
        leader = self._client.cluster.leader_for_partition(tp)
        if leader is None or leader < 0:
            failure = self._failures.metadata
            return (
                f"no leader known for {tp.topic}-{tp.partition}"
                + (f" (metadata failed: {failure})" if failure is not None else ""),
                failure,
            )
        failure = self._failures.nodes.get(leader)
        if failure is not None:
            where = self._client.describe_node(leader)
            return (f"its leader, {where}, is unreachable: {failure}", failure)
        return ("it was never sent (linger_ms or the in-flight limit held it)", None)

"""The delivery timeout: batches that outlived ``delivery_timeout_ms``, and why they did.

Theory of operation
-------------------
Every batch carries its delivery deadline (``delivery_timeout_ms`` after
its first record was appended). On each pass (:meth:`Expiry.expire`):

* a queued batch past its deadline fails with the reason it still waits
  (:meth:`Expiry.why_queued`: its last failed attempt, no producer id, the
  partition not added to the transaction, no leader, an unreachable
  leader, or linger and the in-flight limit);
* a batch in flight past its deadline fails too (issue 10, fault 2: the
  delivery timeout bounds a batch in flight, as in Java's Sender). The
  request stays with the client (written bytes cannot be unsent) and its
  answer is ignored for that batch. A failed batch that had a sequence
  leaves its partition's sequence state unknown: the sender asks for an
  epoch bump (KIP-360), which waits until nothing is in flight, so the
  partition continues only under a new epoch, where no late write of the
  old attempt can be mistaken for a new one. A request not written yet is
  cancelled once none of its batches is left.

The errors name what went wrong last (:mod:`~kafkacore.producer.causes`).
"""

from __future__ import annotations

import math

from kafkacore.client import KafkaClientCore
from kafkacore.errors import KafkaTimeoutError
from kafkacore.producer.accumulator import RecordAccumulator
from kafkacore.producer.batch import BatchState, ProducerBatch
from kafkacore.producer.causes import FailureLog, expired
from kafkacore.producer.config import ProducerConfig
from kafkacore.producer.idempotence import ProducerIdentity
from kafkacore.producer.ledger import DeliveryLedger
from kafkacore.producer.sender import Flight, Sender
from kafkacore.producer.transaction import TransactionManager

__all__ = ["Expiry"]


class Expiry:
    """See the module docstring."""

    __slots__ = (
        "_acc",
        "_cfg",
        "_client",
        "_failures",
        "_identity",
        "_ledger",
        "_sender",
        "_timeout_ms",
        "_txn",
    )

    def __init__(
        self,
        cfg: ProducerConfig,
        client: KafkaClientCore,
        acc: RecordAccumulator,
        sender: Sender,
        ledger: DeliveryLedger,
        identity: ProducerIdentity,
        txn: TransactionManager | None,
        failures: FailureLog,
    ) -> None:
        self._cfg = cfg
        self._client = client
        self._acc = acc
        self._sender = sender
        self._ledger = ledger
        self._identity = identity
        self._txn = txn
        self._failures = failures
        self._timeout_ms = cfg.delivery_timeout_ms

    def expire(self, now: float) -> bool:
        """Fail what outlived its deadline; True if a request was withdrawn from the client."""
        for q in self._acc.queues.values():
            batches = q.batches
            while batches and batches[0].deadline <= now:
                batch = batches.popleft()
                reason, cause = self.why_queued(batch)
                error = expired(
                    batch.record_count,
                    batch.tp,
                    self._timeout_ms,
                    reason,
                    cause,
                    maybe_written=batch.unknown,
                )
                self._ledger.complete(batch, -1, -1, error)
        withdrew = False
        for flight in list(self._sender.flights.values()):
            if flight.deadline <= now:
                withdrew = self._expire_flight(flight, now) or withdrew
        return withdrew

    def _expire_flight(self, flight: Flight, now: float) -> bool:
        """Fail the batches of ``flight`` past their deadline; True if the request was cancelled."""
        handle = flight.handle
        written = handle.node_id is not None
        live = math.inf
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
                maybe_written=batch.unknown,
            )
            error.__cause__ = stalled
            self._ledger.complete(batch, -1, -1, error)
        flight.deadline = live
        if live is math.inf and not written and not handle.done:
            return self._client.cancel(handle, now=now)
        return False

    def _stalled(
        self, flight: Flight, batch: ProducerBatch, written: bool, now: float
    ) -> KafkaTimeoutError:
        """Why the request carrying ``batch`` did not deliver it."""
        where = self._client.describe_node(flight.node)
        handle = flight.handle
        if written:
            batch.unknown = True
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

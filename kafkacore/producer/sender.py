"""The sender: ready batches to Produce requests per leader, and their answers back.

Theory of operation
-------------------
On each pass (:meth:`Sender.drain`) the sender takes the head batch of
every partition queue that is ready (full, lingered ``linger_ms``, or
forced by a flush or a transaction end), groups them by the partition's
leader and sends one ProduceRequest per leader, holding at most
``max_in_flight_requests_per_connection`` requests per broker. A partition
whose batch is being retried sends that batch alone, so the order of its
records survives retries; otherwise it pipelines up to the same limit
(idempotence keeps that ordered). A partition without a known leader asks
for metadata (:class:`~kafkacore.producer.waiting.MetadataAsks`).

An idempotent producer stamps each batch, the first time it is sent, with
the producer id, epoch and the partition's next sequence (KIP-98); a retry
sends the same bytes. The sender decides; the accumulator, which owns the
batches and their queues, carries it out: it takes the chosen head
batches in flight and stamps them
(:meth:`~kafkacore.producer.accumulator.RecordAccumulator.drain_heads`),
lands, requeues, splits and marks them. Each request in flight is a
:class:`Flight` until its answer: each partition's answer goes through
:func:`~kafkacore.producer.outcome.decide` (complete, duplicate, retry,
bump then retry, split, fence, abortable, fail). A retry goes back into
its queue in sequence order after a backoff growing with its attempts
(KIP-580), until ``retries`` or ``delivery_timeout_ms``; a batch the broker
found too large is split in two halves that keep its sequence range.

Failed batches leave their mark (:meth:`Sender.batch_failed`): a
transaction becomes abortable; a batch that had a sequence leaves a gap,
so the producer asks for an epoch bump (KIP-360).

The flights are the sender's own: the expiry policy reads them and its
decision comes back here (:meth:`Sender.apply_expiry`), which fails the
batches, moves each flight's deadline and withdraws unwritten requests.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from kafkacore.client import KafkaClientCore, Node, RequestHandle
from kafkacore.client.stack import Answer, Send
from kafkacore.errors import AuthenticationError, KafkaConnectionError, RemoteProtocolError
from kafkacore.producer.accumulator import PartitionQueue, RecordAccumulator
from kafkacore.producer.batch import BatchState, ProducerBatch
from kafkacore.producer.causes import (
    authentication_failed,
    broker_refusal,
    expired,
    retry_cannot_help,
)
from kafkacore.producer.config import ProducerConfig
from kafkacore.producer.errors import RecordTooLargeError, TransactionAbortedError
from kafkacore.producer.expiry import ExpiryDecision
from kafkacore.producer.idempotence import ProducerIdentity
from kafkacore.producer.ledger import DeliveryLedger
from kafkacore.producer.outcome import Facts, Verdict, decide
from kafkacore.producer.producer_id import ProducerIds
from kafkacore.producer.transaction import PRODUCE_MAX, TransactionManager, TxnState
from kafkacore.producer.waiting import MetadataAsks
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.messages import ProduceRequest, ProduceResponse
from kafkacore.protocol.messages.produce_request import PartitionProduceData, TopicProduceData
from kafkacore.protocol.messages.produce_response import PartitionProduceResponse

__all__ = ["Flight", "Sender"]


@dataclass(slots=True, eq=False)
class Flight:
    """One Produce request handed to the client, until its answer."""

    node: int
    sent: float
    batches: list[ProducerBatch]
    # Earliest delivery deadline among its batches not yet reported.
    deadline: float
    handle: RequestHandle[ProduceResponse] = field(init=False, repr=False)


class Sender:
    """See the module docstring."""

    def __init__(
        self,
        cfg: ProducerConfig,
        client: KafkaClientCore,
        acc: RecordAccumulator,
        identity: ProducerIdentity,
        txn: TransactionManager | None,
        ledger: DeliveryLedger,
        ids: ProducerIds,
        asks: MetadataAsks,
        backoff: Callable[[int], float],
        send: Send,
    ) -> None:
        self._cfg = cfg
        self._client = client
        self._acc = acc
        self._identity = identity
        self._txn = txn
        self._ledger = ledger
        self._ids = ids
        self._asks = asks
        self._backoff_s = backoff
        self._send = send
        ccfg = client.config
        self._request_timeout_ms = ccfg.request_timeout_ms
        self._max_in_flight = ccfg.max_in_flight_requests_per_connection
        self._linger_s = cfg.linger_ms / 1000
        self.flights: dict[int, Flight] = {}  # by request handle id
        self.node_in_flight: dict[int, int] = {}
        self.produce_in_flight = 0
        self.missing_leader = False  # the last drain found a partition without a leader
        self.closed = False

    # ------------------------------------------------------------- queries
    def in_flight_records(self) -> int:
        return sum(
            b.record_count
            for f in self.flights.values()
            for b in f.batches
            if b.state is not BatchState.DONE
        )

    def wake(self, now: float, can_send: bool) -> float:
        """Earliest time a queued batch or a flight needs the producer (inf if none).

        Sending that waits for an answer (producer id, added partitions, a free
        in-flight slot) needs no timer: the answer steps the producer.
        """
        wake = math.inf
        limit = self._max_in_flight
        cluster = self._client.cluster
        txn = self._txn
        meta_next = self._asks.next_at
        for tp, q in self._acc.queues.items():
            if not q.batches:
                continue
            head = q.batches[0]
            wake = min(wake, head.deadline)
            if not can_send or (txn is not None and tp not in txn.added):
                continue
            if q.in_flight and (head.attempts or q.in_flight >= limit):
                continue
            leader = cluster.leader_for_partition(tp)
            if leader is None or leader < 0:
                if meta_next > now:  # the next ask for its leader
                    wake = min(wake, meta_next)
                    continue
                # else: the drain asks once the batch is ready (below)
            elif self.node_in_flight.get(leader, 0) >= limit:
                continue
            if head.state is BatchState.OPEN:
                wake = min(wake, head.created + self._linger_s)
            else:
                wake = min(wake, head.retry_at)
        for flight in self.flights.values():
            wake = min(wake, flight.deadline)
        return wake

    # --------------------------------------------------------------- drain
    def drain(self, now: float, force: bool) -> bool:
        """Send what is ready; True if a request went out."""
        acc = self._acc
        if not acc.queues:
            return False
        cluster = self._client.cluster
        txn = self._txn
        limit = self._max_in_flight
        by_node: dict[int, list[PartitionQueue]] = {}
        missing_leader = False
        for tp, q in acc.queues.items():
            if not q.batches:
                continue
            if txn is not None and tp not in txn.added:
                continue
            head = q.batches[0]
            # Keep order: a retried batch goes alone; otherwise pipeline up
            # to the in-flight limit (idempotence keeps that ordered).
            if q.in_flight and (head.attempts or q.in_flight >= limit):
                continue
            if not acc.head_ready(q, now, self._linger_s, force):
                continue
            leader = cluster.leader_for_partition(tp)
            if leader is None or leader < 0:
                missing_leader = True
                continue
            by_node.setdefault(leader, []).append(q)
        self.missing_leader = missing_leader
        if missing_leader:
            self._asks.ask(now)
        sent = False
        for node, queues in by_node.items():
            if self.node_in_flight.get(node, 0) >= limit:
                continue
            self._produce(node, queues, now)
            sent = True
        return sent

    def _produce(self, node: int, queues: list[PartitionQueue], now: float) -> None:
        # The request stays within max_request_size (100 bytes for its own framing).
        taken = self._acc.drain_heads(queues, self._cfg.max_request_size - 100)
        topics: dict[str, list[PartitionProduceData]] = {}
        for batch, data in taken:
            topics.setdefault(batch.tp.topic, []).append(
                PartitionProduceData(index=batch.tp.partition, records=data)
            )
        txn = self._txn
        if txn is not None and txn.v2:
            txn.started = True  # the leader adds the partition (KIP-890)
        request = ProduceRequest(
            transactional_id=None if txn is None else txn.transactional_id,
            acks=self._cfg.acks_value,
            timeout_ms=self._request_timeout_ms,
            topic_data=[TopicProduceData(name=t, partition_data=ps) for t, ps in topics.items()],
        )
        self.node_in_flight[node] = self.node_in_flight.get(node, 0) + 1
        self.produce_in_flight += 1
        batches = [batch for batch, _ in taken]
        flight = Flight(node, now, batches, min(b.deadline for b in batches))
        flight.handle = self._send(
            request,
            functools.partial(self._answered, flight),
            now=now,
            target=Node(node),
            max_version=PRODUCE_MAX if txn is None else txn.produce_max,
        )
        self.flights[flight.handle.id] = flight

    # ------------------------------------------------------------ answers
    def _answered(
        self, flight: Flight, response: Answer[ProduceResponse] | None, now: float
    ) -> None:
        """A Produce answered: its response, its error, or None (``acks=0``)."""
        if self.flights.pop(flight.handle.id, None) is None:
            return
        self.node_in_flight[flight.node] -= 1
        self.produce_in_flight -= 1
        self._acc.landed(flight.batches)
        # Batches already reported (expired while in flight) ignore the answer.
        batches = [b for b in flight.batches if b.state is not BatchState.DONE]
        if isinstance(response, BaseException):
            # Written (the handle names its node) and unanswered: the broker
            # may have appended it. Never written: it certainly did not.
            written = flight.handle.node_id is not None
            for batch in batches:
                if written:
                    self._acc.mark_unknown(batch)
                self.retry_or_fail(batch, response, now, refresh=True)
            return
        if response is None:  # acks=0: nothing comes back
            for batch in batches:
                self._ledger.complete(batch, -1, -1, None)
            return
        results: dict[tuple[str, int], PartitionProduceResponse] = {}
        for topic in response.responses:
            for answered in topic.partition_responses:
                results[(topic.name, answered.index)] = answered
        for batch in batches:
            part = results.get((batch.tp.topic, batch.tp.partition))
            if part is not None:
                self._partition_answered(batch, part, flight.node, now)
                continue
            lacks = RemoteProtocolError(
                f"Produce response from {self._client.describe_node(flight.node)} lacks "
                f"{batch.tp.topic}-{batch.tp.partition}"
            )
            self.retry_or_fail(batch, lacks, now, refresh=False)

    def _partition_answered(
        self, batch: ProducerBatch, part: PartitionProduceResponse, node: int, now: float
    ) -> None:
        code = part.error_code
        if code == ErrorCode.NONE:  # the hot path, before building any facts
            self._ledger.complete(batch, part.base_offset, part.log_append_time_ms, None)
            return
        txn = self._txn
        verdict = decide(
            Facts(
                code=code,
                transactional=txn is not None,
                idempotent=self._cfg.idempotent,
                earlier_unfinished=code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
                and self._earlier_unfinished(batch),
                multi_record=batch.record_count > 1,
            )
        )
        if verdict is Verdict.DUPLICATE:
            self._ledger.complete(batch, -1, -1, None)
        elif verdict is Verdict.SPLIT:
            self._split(batch, now)
        elif verdict is Verdict.TOO_LARGE:
            too_large = RecordTooLargeError(
                f"{batch.tp.topic}-{batch.tp.partition}: broker refused a batch of "
                f"{batch.size()} bytes as too large; lower batch_size or raise the "
                "topic's max.message.bytes",
                node_id=node,
            )
            self._ledger.complete(batch, -1, -1, too_large)
        else:
            self._refused(batch, verdict, code, part.error_message, node, now)

    def _refused(
        self,
        batch: ProducerBatch,
        verdict: Verdict,
        code: int,
        message: str | None,
        node: int,
        now: float,
    ) -> None:
        where = self._client.describe_node(node)
        detail = f"{where} refused {batch.tp.topic}-{batch.tp.partition} (error code {code})"
        if message:
            detail += f": {message}"
        error = broker_refusal(code, detail, node_id=node)
        if verdict is Verdict.FENCE:
            txn = self._txn
            assert txn is not None
            txn.fence(error.__class__.__name__)
            self._ledger.complete(batch, -1, -1, txn.fatal_error())
        elif verdict is Verdict.BUMP_AND_RETRY:
            self._ids.need_bump()
            self.retry_or_fail(batch, error, now, refresh=False)
        elif verdict is Verdict.RETRY:
            refresh = error.invalid_metadata
            self.retry_or_fail(batch, error, now, refresh=refresh)
        else:  # ABORTABLE (the transaction learns it in batch_failed) or FAIL
            self._ledger.complete(batch, -1, -1, error)

    def _split(self, batch: ProducerBatch, now: float) -> None:
        """Resend a batch the broker found too large as two halves (as Java does).

        The accumulator makes them (:meth:`RecordAccumulator.split`: same
        records, order and sequence range, so later batches keep theirs);
        they are as old as the batch for flush. Halves that are still too
        large are split again when the broker says so.
        """
        ledger = self._ledger
        age = ledger.incomplete.pop(batch.id, batch.id)
        for piece in self._acc.split(batch, now):
            ledger.incomplete[piece.id] = age

    def _earlier_unfinished(self, batch: ProducerBatch) -> bool:
        """An earlier batch of the partition still waits (its retry fills the gap)."""
        for other in self._acc.queues[batch.tp].batches:
            if 0 <= other.base_sequence < batch.base_sequence:
                return True
        for flight in self.flights.values():
            for other in flight.batches:
                if (
                    other.tp == batch.tp
                    and other.state is not BatchState.DONE
                    and 0 <= other.base_sequence < batch.base_sequence
                ):
                    return True
        return False

    # ------------------------------------------------------------ retries
    def retry_or_fail(
        self, batch: ProducerBatch, error: BaseException, now: float, *, refresh: bool
    ) -> None:
        """Queue ``batch`` again after its backoff, or fail it (credentials, time, retries)."""
        if batch.state is BatchState.DONE:
            return
        acc = self._acc
        acc.note_failure(batch, error)
        if retry_cannot_help(error):  # same credentials or same request, same answer
            self._ledger.complete(batch, -1, -1, error)
            return
        if now >= batch.deadline:
            reason = f"attempt {batch.attempts} failed: {error}"
            late = expired(
                batch.record_count,
                batch.tp,
                self._cfg.delivery_timeout_ms,
                reason,
                error,
                maybe_written=batch.unknown,
            )
            self._ledger.complete(batch, -1, -1, late)
            return
        if batch.attempts > self._cfg.retries:
            self._ledger.complete(batch, -1, -1, error)
            return
        # KIP-580: the n-th retry of a batch waits retry_backoff_ms * 2**(n-1),
        # at most retry_backoff_max_ms, +-20% jitter (Java's RecordAccumulator).
        acc.requeue(batch, now + self._backoff_s(batch.attempts))
        if refresh or isinstance(error, KafkaConnectionError):
            self._asks.ask(now)

    def batch_failed(self, batch: ProducerBatch, error: BaseException) -> None:
        """What a failed batch means for the producer (the ledger's ``on_failed``)."""
        if self.closed:
            return
        txn = self._txn
        if txn is not None:
            if txn.state is not TxnState.FATAL_ERROR and not isinstance(
                error, TransactionAbortedError
            ):
                txn.abortable(error)
        elif batch.base_sequence >= 0:
            self._ids.need_bump()  # its sequences are a gap now (KIP-360)

    # ------------------------------------------------------------ expiry
    def apply_expiry(self, decision: ExpiryDecision, now: float) -> bool:
        """Carry out what :meth:`Expiry.decide <kafkacore.producer.expiry.Expiry.decide>`
        found; True if a request was withdrawn from the client."""
        acc = self._acc
        complete = self._ledger.complete
        for item in decision.queued:
            acc.expire(item.batch)
            complete(item.batch, -1, -1, item.error)
        withdrew = False
        for verdict in decision.flights:
            for item in verdict.expired:
                if item.written:
                    acc.mark_unknown(item.batch)
                complete(item.batch, -1, -1, item.error)
            flight = self.flights.get(verdict.flight_id)
            if flight is None:  # pragma: no cover - answered while its batches were reported
                continue
            flight.deadline = verdict.deadline
            if verdict.withdraw:
                withdrew = self._client.cancel(flight.handle, now=now) or withdrew
        return withdrew

    # ------------------------------------------------------------ failing
    def fail_for_auth(self, error: AuthenticationError, node: int | None) -> None:
        """The brokers refused our credentials: fail the queued batches whose
        leader is ``node`` or unknown (every queued batch while an idempotent
        producer has no id to stamp them with). In-flight requests end with
        the connection and fail then (:meth:`retry_or_fail` does not retry an
        AuthenticationError)."""
        cluster = self._client.cluster
        every = self._cfg.idempotent and not self._identity.ready

        def stuck(batch: ProducerBatch) -> bool:
            leader = cluster.leader_for_partition(batch.tp)
            return every or leader is None or leader < 0 or leader == node

        for batch in self._acc.take(stuck):
            tp = batch.tp
            what = f"{batch.record_count} records for {tp.topic}-{tp.partition}"
            self._ledger.complete(batch, -1, -1, authentication_failed(what, error))

    def close(self, error: BaseException) -> None:
        """Fail everything queued or in flight (the client cancels the requests)."""
        self.closed = True
        self._ledger.fail_all(self._acc.take_all(), error)
        for flight in self.flights.values():
            self._ledger.fail_all(flight.batches, error)
        self.flights.clear()

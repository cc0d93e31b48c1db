"""The producer core: appends in, Produce requests out, sans I/O.

Theory of operation
-------------------
:class:`ProducerCore` is a :class:`~kafkacore.client.stack.StackedMachine`
on a :class:`~kafkacore.client.KafkaClientCore`: a transport drives it with
the same Bridge as a client (facts go to the client, then the producer
takes one step; actions come from the client). It is a small facade over
machines that each keep their own state:

================  ==========================================================
machine           concern
================  ==========================================================
accumulator       per-partition batches, ``buffer_memory``: the one writer of
                  batch and queue state (``RecordAccumulator``)
waiting           appends waiting for their topic's metadata (``MetadataWait``)
sender            Produce requests per leader, answers, retries (``Sender``)
expiry            ``delivery_timeout_ms`` and its reasons, a pure policy (``Expiry``)
producer_id       InitProducerId, epoch bumps, KIP-360 (``ProducerIds``)
txn_driver        the transaction requests, KIP-98/447/890 (``TransactionDriver``)
coordinator       coordinator requests and their retries (``CoordinatorRequests``)
ledger            reports, flush, operations (``DeliveryLedger``)
================  ==========================================================

Each step (the base's one loop) hands completed requests to the machine
that sent them and other client events to :meth:`_on_client_event` (new
metadata, lost connections, refused credentials); then :meth:`_work`
places records whose topic became known, expires what outlived its
deadline (the expiry decides, the sender applies), obtains or bumps the
producer id, drives the transaction and
drains ready batches; when nothing moves it arms the ``"send"`` deadline
(a lingering batch, a retry backoff, an expiry, the next metadata ask).
Coordinator retries wait under their own deadlines.

User commands (:meth:`append`, :meth:`append_many`, :meth:`flush`, the
transaction calls) return at once. Each record is reported exactly once in
a :class:`~kafkacore.producer.events.BatchCompleted` event with the token
the caller gave; flush and transaction calls return an
:class:`~kafkacore.operation.Operation` completed through
:class:`~kafkacore.operation.OperationCompleted`. An append that does not
fit ``buffer_memory`` raises :class:`BufferFull`; ``BufferFreed`` follows
when it may be retried (the transport blocks up to ``max_block_ms``).

Retries, sequences and epoch bumps are the sender's and the producer id
machine's (their docstrings say how, after the Java producer).
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

from kafkacore.client import (
    ClientConfig,
    ConnectionStateChanged,
    KafkaClientCore,
    MetadataUpdated,
    TopicPartition,
)
from kafkacore.client.backoff import ExponentialBackoff
from kafkacore.client.stack import StackedMachine
from kafkacore.errors import AuthenticationError, LocalProtocolError
from kafkacore.operation import Operation
from kafkacore.partitioner import DefaultPartitioner, StickyState
from kafkacore.producer.accumulator import (
    RECORD_OVERHEAD,
    BufferFull,
    PartitionQueue,
    RecordAccumulator,
    record_estimate,
)
from kafkacore.producer.batch import BatchState, ProducerBatch
from kafkacore.producer.causes import FailureLog
from kafkacore.producer.config import ProducerConfig
from kafkacore.producer.coordinator import CoordinatorRequests
from kafkacore.producer.errors import (
    ProducerClosedError,
    RecordTooLargeError,
    TransactionStateError,
)
from kafkacore.producer.events import PRODUCER_EVENTS, ProducerEvent
from kafkacore.producer.expiry import NOTHING, Expiry
from kafkacore.producer.idempotence import IdState, ProducerIdentity
from kafkacore.producer.lanes import Lane, Lanes
from kafkacore.producer.ledger import DeliveryLedger
from kafkacore.producer.placement import ColumnPlacer
from kafkacore.producer.producer_id import ProducerIds
from kafkacore.producer.sender import Sender
from kafkacore.producer.transaction import TransactionManager, TxnState
from kafkacore.producer.txn_driver import Offsets, TransactionDriver
from kafkacore.producer.waiting import MetadataAsks, MetadataWait, WaitingRecords
from kafkacore.records import RECORD_BATCH_OVERHEAD, Header
from kafkacore.timers import Deadlines

if TYPE_CHECKING:
    # Types only: importing it runs the consumer package (see txn_driver).
    from kafkacore.consumer.group_metadata import ConsumerGroupMetadata

__all__ = ["BufferFull", "ProducerCore"]

#: The deadline of the sender's next need (linger, retry backoff, expiry, metadata ask).
_SEND = "send"
_ENDING = (TxnState.COMMITTING, TxnState.ABORTING)
_OPEN = BatchState.OPEN


class ProducerCore(StackedMachine[ProducerEvent]):
    """Sans-IO Kafka producer; see the module docstring."""

    EVENT_TYPES = PRODUCER_EVENTS

    def __init__(
        self,
        config: ProducerConfig | None = None,
        *,
        now: float,
        rng: random.Random,
        client: KafkaClientCore | None = None,
    ) -> None:
        cfg = config if config is not None else ProducerConfig()
        if client is None:
            client = KafkaClientCore(ClientConfig(**cfg.client), now=now, rng=rng)
        super().__init__(client)
        self._cfg = cfg
        self._rng = rng
        # KIP-580: retries back off exponentially with jitter, from
        # retry_backoff_ms to retry_backoff_max_ms (a client option, as Java's
        # CommonClientConfigs; a max below the base is a constant backoff).
        ccfg = client.config
        max_ms = ccfg.retry_backoff_max_ms
        self._backoff = ExponentialBackoff(min(ccfg.retry_backoff_ms, max_ms), max_ms)
        self._linger_s = cfg.linger_ms / 1000
        self._idempotent = cfg.idempotent
        self._identity = identity = ProducerIdentity()
        self._acc = acc = RecordAccumulator(cfg, identity if cfg.idempotent else None)
        self._partitioner = DefaultPartitioner(
            rng=rng, batch_size=cfg.batch_size, ignore_keys=cfg.partitioner_ignore_keys
        )
        tid = cfg.transactional_id
        self._txn = txn = TransactionManager(tid) if tid is not None else None
        self._failures = failures = FailureLog()
        self._ledger = ledger = DeliveryLedger(acc, self._emit, self._batch_failed)
        self._incomplete = ledger.incomplete  # the append path registers batches directly
        self._asks = asks = MetadataAsks(client, self._backoff_s)
        self._wait = wait = MetadataWait(client, acc, ledger, asks, failures, cfg.max_block_ms)
        self._coordinator = coordinator = CoordinatorRequests(
            self._request, self.deadlines, self._backoff_s, transactional=txn is not None
        )
        self._ids = ids = ProducerIds(
            cfg, identity, acc, ledger, coordinator, failures, self._backoff_s
        )
        self._driver = (
            TransactionDriver(txn, identity, ids, coordinator, ledger, acc, wait, client)
            if txn is not None
            else None
        )
        self._sender = Sender(
            cfg, client, acc, identity, txn, ledger, ids, asks, self._backoff_s, self._request
        )
        self._expiry = Expiry(cfg, client, identity, txn, failures)
        # Batches filled by append_many may grow past batch_size, up to a
        # quarter of max_request_size and 256 KiB.
        self._columns = ColumnPlacer(
            acc,
            self._partitioner,
            ledger,
            txn,
            self._choose,
            limit=max(cfg.batch_size, min(256 * 1024, cfg.max_request_size // 4)),
            ignore_keys=cfg.partitioner_ignore_keys,
        )
        self._meta_changed = False
        self._closed = False
        # (partition count, available partitions) per topic, until new metadata.
        self._layouts: dict[str, tuple[int, list[int]]] = {}
        self._max_record = min(cfg.max_request_size, cfg.buffer_memory + RECORD_BATCH_OVERHEAD)
        self._buffer_memory = cfg.buffer_memory
        # The per-record fast path (see lanes.py); none for transactions, whose
        # appends must first tell the transaction which partitions they touch.
        self._lanes = Lanes(self._partitioner)
        self._lane_of = self._lanes.get
        self._lanes_allowed = txn is None
        self._step(now)

    # ------------------------------------------------------------- queries
    @property
    def config(self) -> ProducerConfig:
        return self._cfg

    @property
    def buffer_available(self) -> int:
        """Bytes ``buffer_memory`` still has room for."""
        return self._acc.available

    @property
    def buffer_used(self) -> int:
        """Bytes of ``buffer_memory`` taken by records not yet reported."""
        return self._acc.used

    @property
    def producer_id(self) -> tuple[int, int]:
        """``(producer_id, epoch)``; ``(-1, -1)`` before one was assigned."""
        return self._identity.producer_id, self._identity.epoch

    @property
    def transaction_state(self) -> TxnState | None:
        return None if self._txn is None else self._txn.state

    @property
    def transactions_v2(self) -> bool:
        """Whether the current (or last) transaction uses KIP-890 part 2."""
        return self._txn is not None and self._txn.v2

    @property
    def id_state(self) -> IdState:
        return self._identity.state

    @property
    def pending_records(self) -> int:
        """Records appended and not yet reported (queued, waiting or in flight)."""
        n = sum(b.record_count for b in self._acc.all_batches())
        return n + self._wait.record_count + self._sender.in_flight_records()

    @property
    def closed(self) -> bool:
        return self._closed

    def _backoff_s(self, failures: int) -> float:
        """Seconds to wait after ``failures`` consecutive failures (KIP-580, with jitter)."""
        return self._backoff.delay_ms(failures, self._rng) / 1000

    # ------------------------------------------------------------- appends
    def append(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[Header] | None = None,
        *,
        partition: int | None = None,
        timestamp: int,
        token: object = None,
        now: float,
    ) -> bool:
        """Queue one record (already serialized); reported later with ``token``.

        Returns True when the transport's loop must look at the core soon
        (a batch was opened, so a linger deadline may have moved earlier, a
        step ran and may have written requests, or the record waits for
        metadata); False when the record only joined an open batch.

        Raises :class:`BufferFull` (nothing queued; wait for ``BufferFreed``),
        :class:`~kafkacore.producer.errors.RecordTooLargeError`, or
        :class:`~kafkacore.producer.errors.TransactionStateError` outside a
        transaction of a transactional producer.
        """
        if key is None and partition is None and not headers:
            if self.try_append(topic, value, timestamp, token):
                return False
            self._lanes.settle(topic)
        if (
            self._txn is not None
            or self._closed
            or partition is not None
            or type(topic) is not str
            or not topic
        ):
            self._check_append("append", topic, partition)
        if headers:
            size = record_estimate(key, value, headers)
        else:
            size = RECORD_OVERHEAD + (len(value) if value is not None else 0)
            size += len(key) if key else 0
        acc = self._acc
        if size + RECORD_BATCH_OVERHEAD > self._max_record:
            acc.check_size(size, f"append to {topic!r}")
        if acc.used + size > self._buffer_memory and acc.used > 0:
            acc.reserve(size)  # raises BufferFull
        layout = self._layouts.get(topic)
        if layout is None:
            layout = self._layout(topic)
        if layout is None:
            waiting = self._waiting(topic, partition, size, token, timestamp, now)
            waiting.value, waiting.key, waiting.headers = value, key, headers
            self._wait_for_topic(waiting, now)
            return True
        self._lanes.settle(topic)
        return self._place_one(
            topic, value, key, headers, partition, timestamp, token, size, layout[0], now
        )

    def try_append(self, topic: str, value: bytes | None, timestamp: int, token: object) -> bool:
        """The fast path of :meth:`append` for an unkeyed record without headers
        or partition: True when it joined the open batch of ``topic``'s
        sticky partition (see lanes.py); False when nothing happened and
        :meth:`append` must decide. Needs no ``now``: it never opens a batch."""
        # The one place outside the accumulator that writes batch state (the
        # batch's charge, the buffer's bytes; the lane's bound mutators append
        # the record): per record, a method call would cost what the lane saves.
        lane = self._lane_of(topic)
        if lane is None:
            return False
        batch = lane.batch
        size = RECORD_OVERHEAD + len(value) if value is not None else RECORD_OVERHEAD
        accounted = batch.accounted + size
        acc = self._acc
        used = acc.used + size
        if (
            accounted > lane.limit
            or used > self._buffer_memory
            or batch.state is not _OPEN
            or lane.queue.batches[-1] is not batch
        ):
            return False
        lane.append(value, None, timestamp=timestamp)
        lane.add_token(token)
        lane.add_stamp(timestamp)
        batch.accounted = accounted
        acc.used = used
        lane.pending += size
        return True

    def append_many(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None = None,
        *,
        partition: int | None = None,
        timestamp: int,
        token: object = None,
        now: float,
    ) -> None:
        """Queue many records (columns) with one timestamp; each reported with ``token``.

        All or nothing: :class:`BufferFull` means none was queued.
        """
        self._check_append("append_many", topic, partition)
        if keys is not None and len(keys) != len(values):
            raise ValueError(
                f"append_many: {len(keys)} keys for {len(values)} values; give one key per value"
            )
        if not values:
            return
        if keys is None:
            sizes = [RECORD_OVERHEAD + (len(v) if v is not None else 0) for v in values]
        else:
            sizes = [
                RECORD_OVERHEAD
                + (len(v) if v is not None else 0)
                + (len(k) if k is not None else 0)
                for v, k in zip(values, keys, strict=True)
            ]
        acc = self._acc
        biggest = max(sizes)
        if biggest + RECORD_BATCH_OVERHEAD > self._cfg.max_request_size:
            acc.check_size(biggest, f"append_many to {topic!r}")
        total = sum(sizes)
        if total > self._cfg.buffer_memory:
            raise RecordTooLargeError(
                f"append_many to {topic!r}: {total} bytes at once exceed buffer_memory="
                f"{self._cfg.buffer_memory}; send fewer records per call"
            )
        acc.reserve(total)
        self._lanes.settle(topic)
        layout = self._layouts.get(topic) or self._layout(topic)
        if layout is None:
            waiting = self._waiting(topic, partition, total, token, timestamp, now)
            waiting.many = (values, keys, sizes)
            self._wait_for_topic(waiting, now)
            return
        self._place_many(topic, values, keys, sizes, partition, timestamp, token, layout[0], now)

    def _check_append(self, what: str, topic: str, partition: int | None) -> None:
        if self._closed:
            raise ProducerClosedError(f"{what}: producer is closed; make a new one")
        if not isinstance(topic, str) or not topic:
            raise TypeError(f"{what}: topic must be a non-empty str, got {topic!r}")
        if partition is not None and (
            isinstance(partition, bool) or not isinstance(partition, int) or partition < 0
        ):
            raise ValueError(f"{what}: partition must be an int >= 0 or None, got {partition!r}")
        txn = self._txn
        if txn is not None and txn.state is not TxnState.IN_TRANSACTION:
            if txn.state is TxnState.FATAL_ERROR:
                raise txn.fatal_error()
            raise TransactionStateError(
                f"{what}: transactional producer {txn.transactional_id!r} is "
                f"{txn.state.value}; call begin_transaction() first"
            )

    # ------------------------------------------------------------ placing
    def _layout(self, topic: str) -> tuple[int, list[int]] | None:
        """``(partition count, available partitions)`` of ``topic``; cached until new metadata."""
        if topic in self._wait:
            return None
        cluster = self.client.cluster
        parts = cluster.partitions_for_topic(topic)
        if not parts:
            return None
        layout = (len(parts), sorted(cluster.available_partitions_for_topic(topic) or ()))
        self._layouts[topic] = layout
        return layout

    def _choose(self, topic: str, key: bytes | None, count: int) -> int:
        layout = self._layouts.get(topic) or self._layout(topic)
        avail = layout[1] if layout is not None else []
        return self._partitioner.partition(topic, key, count, avail)

    def _place_one(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None,
        headers: Sequence[Header] | None,
        partition: int | None,
        timestamp: int,
        token: object,
        size: int,
        count: int,
        now: float,
        age: int = 0,
    ) -> bool:
        """Append one record to its partition; True when a batch was opened (see append)."""
        sticky = partition is None and (key is None or self._cfg.partitioner_ignore_keys)
        if partition is None:
            partition = self._choose(topic, key, count)
        elif partition >= count:
            self._report_unplaced(topic, partition, [token], [timestamp], count)
            return True
        tp = TopicPartition(topic, partition)
        if self._txn is not None:
            self._txn.need(tp)
        acc = self._acc
        batch = acc.append(tp, value, key, headers, timestamp, token, size, now)
        self._partitioner.record_appended(topic, partition, size)
        if age:  # a record that waited for metadata: the batch is as old as it
            self._incomplete[batch.id] = min(self._incomplete.get(batch.id, batch.id), age)
        opened = len(batch.tokens) == 1
        if opened:  # a new batch was opened
            self._incomplete.setdefault(batch.id, batch.id)
            if len(acc.queues[tp].batches) > 1 or self._linger_s == 0:
                self._step(now)  # the previous batch is full: send it now
            else:
                self.deadlines.set_earliest(_SEND, now + self._linger_s)
        if sticky and self._lanes_allowed and batch.state is _OPEN and topic not in self._wait:
            self._open_lane(topic, partition, acc.queues[tp], batch)
        return opened

    def _open_lane(
        self, topic: str, partition: int, queue: PartitionQueue, batch: ProducerBatch
    ) -> None:
        """Let the next unkeyed records of ``topic`` take the fast path into ``batch``."""
        state, stuck, produced = self._partitioner.state(topic)
        if state is not StickyState.STUCK or stuck != partition:
            return
        cfg = self._cfg
        # Room before the slow path would act differently: a full batch opens
        # a new one, the sticky partitioner switches at batch_size bytes
        # (strictly below: the settled sum must not reach it), and a record
        # too large for a request is an error.
        room = min(
            cfg.batch_size - batch.accounted,
            cfg.batch_size - produced - 1,
            self._max_record - RECORD_BATCH_OVERHEAD,
        )
        if room > RECORD_OVERHEAD:
            self._lanes.open(Lane(topic, partition, queue, batch, room))

    def _place_many(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        sizes: list[int],
        partition: int | None,
        timestamp: int,
        token: object,
        count: int,
        now: float,
        age: int = 0,
    ) -> None:
        if partition is not None and partition >= count:
            n = len(values)
            self._report_unplaced(topic, partition, [token] * n, [timestamp] * n, count)
            return
        self._columns.place(
            topic, values, keys, sizes, partition, count, timestamp, token, now, age
        )
        self._step(now)

    def _report_unplaced(
        self, topic: str, partition: int, tokens: list[object], timestamps: list[int], count: int
    ) -> None:
        error = LocalProtocolError(
            f"topic {topic!r} has {count} partitions; partition {partition} does not exist"
        )
        self._ledger.report(topic, partition, tokens, timestamps, error)

    def _waiting(
        self,
        topic: str,
        partition: int | None,
        size: int,
        token: object,
        timestamp: int,
        now: float,
    ) -> WaitingRecords:
        deadline = now + self._cfg.max_block_ms / 1000
        return WaitingRecords(
            self._acc.take_id(), topic, partition, size, deadline, token, timestamp
        )

    def _wait_for_topic(self, waiting: WaitingRecords, now: float) -> None:
        self._wait.add(waiting, now)
        auth = self._failures.auth
        if auth is not None:
            # The brokers refused our credentials and no answer came since:
            # no metadata will come either; say so at once (issue 10, fault 8).
            self._auth_failed(auth, None)
        self._step(now)

    def _place_waiting(self, w: WaitingRecords, count: int, now: float) -> None:
        """Place the records of ``w`` now that its topic has ``count`` partitions."""
        self._lanes.settle(w.topic)
        if w.many is not None:
            values, keys, sizes = w.many
            self._place_many(
                w.topic, values, keys, sizes, w.partition, w.timestamp, w.token, count, now, w.id
            )
        else:
            self._place_one(
                w.topic,
                w.value,
                w.key,
                w.headers,
                w.partition,
                w.timestamp,
                w.token,
                w.size,
                count,
                now,
                w.id,
            )

    # ----------------------------------------------------------- operations
    def flush(self, *, now: float) -> Operation[None]:
        """Send everything appended so far at once; the handle completes when all of it did."""
        handle = self._ledger.op("flush")
        if self._closed:
            self._ledger.finish(handle, ProducerClosedError("flush: producer is closed"))
            return handle
        self._ledger.add_flush(self._acc.take_id(), handle)
        self._step(now)
        return handle

    def _require_txn(self, what: str) -> TransactionDriver:
        if self._driver is None:
            raise TransactionStateError(
                f"{what}: this producer has no transactional_id; set one to use transactions"
            )
        if self._closed:
            raise ProducerClosedError(f"{what}: producer is closed")
        self._driver.check_idle(what)
        return self._driver

    def init_transactions(self, *, now: float) -> Operation[None]:
        """Get the producer id for ``transactional_id``, fencing older instances."""
        handle = self._require_txn("init_transactions").init(now)
        self._step(now)
        return handle

    def begin_transaction(self, *, now: float) -> None:
        """Start a transaction (local only; the coordinator hears of it on first add)."""
        self._require_txn("begin_transaction").begin()

    def send_offsets_to_transaction(
        self,
        offsets: Offsets,
        group_id: str | ConsumerGroupMetadata,
        *,
        now: float,
        generation_id: int = -1,
        member_id: str = "",
        group_instance_id: str | None = None,
    ) -> Operation[None]:
        """Commit consumer ``offsets`` for ``group_id`` as part of the transaction.

        Pass the consumer's ``group_metadata()`` instead of a bare group id so
        the coordinator fences a consumer that has left the group (KIP-447):
        its generation and member id travel with the commit.
        """
        driver = self._require_txn("send_offsets_to_transaction")
        handle = driver.send_offsets(
            offsets,
            group_id,
            now,
            generation_id=generation_id,
            member_id=member_id,
            group_instance_id=group_instance_id,
        )
        self._step(now)
        return handle

    def commit_transaction(self, *, now: float) -> Operation[None]:
        """Flush the transaction's records, then commit it (EndTxn)."""
        handle = self._require_txn("commit_transaction").commit()
        self._step(now)
        return handle

    def abort_transaction(self, *, now: float) -> Operation[None]:
        """Drop unsent records of the transaction and abort it (EndTxn)."""
        handle = self._require_txn("abort_transaction").abort()
        self._step(now)
        return handle

    def close(self, *, now: float) -> None:
        """Stop at once: every unreported record fails with ProducerClosedError.

        Flush first for a graceful close. Shuts the client down (every
        request it still holds ends with RequestCancelled).
        """
        if self._closed:
            return
        self._closed = True
        self._lanes.settle_all()
        error = ProducerClosedError("producer closed before the record was delivered")
        self._sender.close(error)
        self._wait.fail_all(error)
        self._ledger.fail_flushes(error)
        if self._driver is not None:
            self._driver.close(error)
        self._coordinator.cancel_all()
        self._responses.clear()
        self.client.shutdown(now=now)
        self.client.pull_events()
        self.deadlines = Deadlines()

    # ---------------------------------------------------- the step's hooks
    def _stopped(self) -> bool:
        return self._closed

    def _on_client_event(self, event: object, now: float) -> None:
        if isinstance(event, MetadataUpdated):
            self._meta_changed = True
            self._layouts.clear()
            self._lanes.settle_all()  # a partition count may have changed
        auth = self._failures.note(event)
        if auth is not None:
            node = event.node_id if isinstance(event, ConnectionStateChanged) else None
            self._auth_failed(auth, node)

    def _on_deadline(self, key: Hashable, now: float) -> None:
        if isinstance(key, tuple) and key[0] == "coordinator":
            self._coordinator.resend(key[1], now)

    def _work(self, now: float) -> bool:
        """One pass of the producer's machines; True if a request went out (or was withdrawn)."""
        wait = self._wait
        waiting = wait.queues  # read as a dict: this runs at every step
        if self._meta_changed or (waiting and now >= self._asks.next_at):
            self._meta_changed = False
            wait.place(now, self._place_waiting)
        # The expiry policy decides, the sender carries it out; a withdrawn
        # request completes through a client event: step again.
        sender = self._sender
        decision = self._expiry.decide(now, self._acc.queues.values(), sender.flights.values())
        sent = decision is not NOTHING and sender.apply_expiry(decision, now)
        if waiting:
            wait.expire(now)
        ready = self._identity.state is IdState.READY
        if not ready and self._ids.wants(now, sender.produce_in_flight):
            self._ids.request(now)
            sent = True
        if self._driver is not None and ready:
            sent = self._driver.drive(now, sender.produce_in_flight) or sent
        if ready or not self._idempotent:
            sent = sender.drain(now, self._force()) or sent
        if not waiting and not sender.missing_leader:
            self._asks.reset()  # nothing waits for metadata: the next ask is a first one
        if not sent:
            self._arm(now, ready)
        return sent

    def _force(self) -> bool:
        """Someone waits for every queued batch (flush, commit, abort): linger no more."""
        txn = self._txn
        return bool(self._ledger.flushes) or (txn is not None and txn.state in _ENDING)

    def _arm(self, now: float, ready: bool) -> None:
        """Set the ``"send"`` deadline: the earliest time a machine needs a step."""
        wake = self._sender.wake(now, ready or not self._idempotent)
        wakes = [self._ids.wake(now)] if not ready else []
        if self._wait.queues:
            wakes += (self._wait.wake(), self._asks.wake(now))  # ask again for their topics
        for when in wakes:
            if when is not None and when < wake:
                wake = when
        if wake is math.inf:
            self.deadlines.cancel(_SEND)
            return
        # Nothing due now can be sent now (e.g. waiting for the in-flight
        # limit); the client's events will step us again, so no busy timer.
        self.deadlines.set(_SEND, max(wake, now + 0.001) if wake <= now else wake)

    # ----------------------------------------------------------- failures
    def _batch_failed(self, batch: ProducerBatch, error: BaseException) -> None:
        self._sender.batch_failed(batch, error)

    def _auth_failed(self, error: AuthenticationError, node: int | None) -> None:
        """The brokers refused our credentials: fail at once what cannot be sent
        (what waits for metadata, and see :meth:`Sender.fail_for_auth`)."""
        self._wait.fail_auth(error)
        self._sender.fail_for_auth(error, node)

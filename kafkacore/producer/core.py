"""The producer core: accumulator, sender, idempotence and transactions, sans I/O.

Theory of operation
-------------------
:class:`ProducerCore` owns a :class:`~kafkacore.client.KafkaClientCore` and
implements the same :class:`~kafkacore.client.driver.Driven` contract, so a
transport drives it with the same Bridge: facts go to the client, actions
come from the client, and every input ends in one *step*:

1. take the client's events: completed requests go to the callback that
   sent them (Produce, InitProducerId, transaction requests); a metadata
   update places records that waited for their topic's partitions;
2. run the sender: expire what outlived ``delivery_timeout_ms`` (or, for
   records still waiting for metadata, ``max_block_ms``); obtain or bump the
   producer id (:mod:`~kafkacore.producer.idempotence`); add partitions to
   the transaction (v1 only; v2 adds them with Produce v12, KIP-890) and
   end it (:mod:`~kafkacore.producer.transaction`);
   then drain ready batches, one per partition, grouped per leader into
   ProduceRequests, at most ``max_in_flight_requests_per_connection`` per
   broker and, while a partition retries, one batch of it at a time so
   order survives retries;
3. loop until neither side has anything new; then ``next_deadline()`` is
   the earliest of the client's deadline, a lingering batch, a retry
   backoff, an expiry, or a transaction retry.

User commands (:meth:`append`, :meth:`append_many`, :meth:`flush`, the
transaction calls) return at once. Each record is reported exactly once in
a :class:`~kafkacore.producer.events.BatchCompleted` event with the token
the caller gave; flush and transaction calls return an
:class:`~kafkacore.operation.Operation` completed through
:class:`~kafkacore.producer.events.OperationCompleted`. An append that does
not fit ``buffer_memory`` raises :class:`BufferFull`; ``BufferFreed``
follows when it may be retried (the transport blocks up to ``max_block_ms``).

Retry policy (as the Java producer, KIP-98/KIP-360): retriable errors and
lost connections send the same bytes again after ``retry_backoff_ms``
until ``delivery_timeout_ms``; DUPLICATE_SEQUENCE_NUMBER is success;
OUT_OF_ORDER_SEQUENCE_NUMBER behind an earlier unfinished batch is a plain
retry, otherwise (and UNKNOWN_PRODUCER_ID, INVALID_PRODUCER_EPOCH, or a
failed batch that leaves a sequence gap) the epoch is bumped once nothing
is in flight and every queued batch gets fresh sequences. For a
transactional producer those errors make the transaction abortable
instead, and PRODUCER_FENCED / INVALID_PRODUCER_EPOCH are fatal.
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafkacore.client import (
    AnyNode,
    ClientConfig,
    ConnectionStateChanged,
    GroupCoordinator,
    KafkaClientCore,
    MetadataUpdated,
    Node,
    RequestCompleted,
    RequestHandle,
    Target,
    TopicPartition,
    TransactionCoordinator,
)
from kafkacore.client.backoff import ExponentialBackoff
from kafkacore.client.driver import Action, ConnId
from kafkacore.consumer.group_metadata import ConsumerGroupMetadata
from kafkacore.errors import (
    AuthenticationError,
    BrokerError,
    KafkaConnectionError,
    KafkaTimeoutError,
    LocalProtocolError,
    NoBrokersAvailable,
    RemoteProtocolError,
)
from kafkacore.operation import Operation, OperationCompleted
from kafkacore.partitioner import DefaultPartitioner, partition_for_key
from kafkacore.producer.accumulator import (
    BufferFull,
    PartitionQueue,
    RecordAccumulator,
    record_estimate,
)
from kafkacore.producer.batch import BatchState, ProducerBatch
from kafkacore.producer.causes import (
    FailureLog,
    auth_error_in,
    authentication_failed,
    expired,
    metadata_timeout,
    topic_error,
)
from kafkacore.producer.config import ProducerConfig
from kafkacore.producer.errors import (
    ProducerClosedError,
    RecordTooLargeError,
    TransactionAbortedError,
    TransactionStateError,
)
from kafkacore.producer.events import BatchCompleted, BufferFreed
from kafkacore.producer.idempotence import IdState, ProducerIdentity
from kafkacore.producer.outcome import Facts, Verdict, decide
from kafkacore.producer.transaction import TransactionManager, TxnState
from kafkacore.protocol.enums import PRODUCER_FENCING, TXN_COORDINATOR_RETRY, ApiKey, ErrorCode
from kafkacore.protocol.error_codes import error_class
from kafkacore.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
)
from kafkacore.protocol.messages.add_partitions_to_txn_request import AddPartitionsToTxnTopic
from kafkacore.protocol.messages.produce_request import PartitionProduceData, TopicProduceData
from kafkacore.protocol.messages.txn_offset_commit_request import (
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from kafkacore.records import Header, RecordBatch

__all__ = ["BufferFull", "ProducerCore"]

#: Java's default retry.backoff.max.ms (CommonClientConfigs), until ClientConfig has it.
_RETRY_BACKOFF_MAX_MS = 1000

# Transactions v1 (KIP-98) wire versions: Produce v12, AddPartitionsToTxn v4,
# EndTxn v5 and TxnOffsetCommit v5 mean transactions v2 (KIP-890 part 2).
_PRODUCE_MAX = 12  # v13 names topics by id only (KIP-516); not needed here
_PRODUCE_MAX_TXN_V1 = 11
_ADD_PARTITIONS_MAX = 3
_END_TXN_MAX = 4
_TXN_OFFSET_COMMIT_MAX = 4
# Transactions v2 (KIP-890 part 2): only with the finalized feature
# transaction.version >= 2; these versions are what tells the broker so.
_PRODUCE_TXN_V2 = 12
_END_TXN_V2 = 5
_TXN_OFFSET_COMMIT_V2 = 5
_TV2_APIS = (
    (ApiKey.PRODUCE, _PRODUCE_TXN_V2),
    (ApiKey.END_TXN, _END_TXN_V2),
    (ApiKey.TXN_OFFSET_COMMIT, _TXN_OFFSET_COMMIT_V2),
)
_INIT_PRODUCER_ID_MAX = 5  # v6 is KIP-939 two-phase commit
_SEQUENCE_WRAP = 2**31


@dataclass(slots=True)
class _Waiting:
    """Records appended before their topic's partitions were known."""

    id: int
    topic: str
    partition: int | None
    size: int
    deadline: float
    token: object
    timestamp: int
    value: bytes | None = None
    key: bytes | None = None
    headers: Sequence[Header] | None = None
    many: tuple[Sequence[bytes | None], Sequence[bytes | None] | None, list[int]] | None = None


@dataclass(slots=True)
class _Flight:
    """One Produce request handed to the client, until its completion event."""

    handle: RequestHandle[Any]
    node: int
    sent: float
    batches: list[ProducerBatch]
    # Earliest delivery deadline among its batches not yet reported.
    deadline: float


class ProducerCore:
    """Sans-IO Kafka producer; see the module docstring."""

    def __init__(
        self,
        config: ProducerConfig | None = None,
        *,
        now: float,
        rng: random.Random,
        client: KafkaClientCore | None = None,
    ) -> None:
        cfg = config if config is not None else ProducerConfig()
        self._cfg = cfg
        if client is None:
            client = KafkaClientCore(ClientConfig(**cfg.client), now=now, rng=rng)
        self.client = client
        ccfg = client.config
        self._rng = rng
        # KIP-580: retries back off exponentially with jitter, from
        # retry_backoff_ms to retry_backoff_max_ms (a client option, as Java's
        # CommonClientConfigs; a max below the base is a constant backoff).
        max_ms = int(getattr(ccfg, "retry_backoff_max_ms", _RETRY_BACKOFF_MAX_MS))
        self._backoff = ExponentialBackoff(min(ccfg.retry_backoff_ms, max_ms), max_ms)
        self._request_timeout_ms = ccfg.request_timeout_ms
        self._max_in_flight = ccfg.max_in_flight_requests_per_connection
        self._linger_s = cfg.linger_ms / 1000
        self._identity = ProducerIdentity()
        self._acc = RecordAccumulator(cfg, self._identity if cfg.idempotent else None)
        self._partitioner = DefaultPartitioner(
            rng=rng, batch_size=cfg.batch_size, ignore_keys=cfg.partitioner_ignore_keys
        )
        tid = cfg.transactional_id
        self._txn = TransactionManager(tid) if tid is not None else None
        self._idempotent = cfg.idempotent
        self._callbacks: dict[
            RequestHandle[Any], Callable[[Any, BaseException | None, float], None]
        ] = {}
        self._events: list[object] = []
        self._waiting: dict[str, deque[_Waiting]] = {}
        # Unfinished batches/waiters: id -> age (the oldest append they hold, for flush).
        self._incomplete: dict[int, int] = {}
        self._flushes: list[tuple[int, Operation[Any]]] = []
        self._node_in_flight: dict[int, int] = {}
        self._produce_in_flight = 0
        self._retries: list[tuple[float, Callable[[float], None]]] = []
        self._txn_op: Operation[Any] | None = None
        self._txn_busy = False  # a transaction request is in flight or scheduled
        self._next_op = 1
        # Metadata asked for by the producer itself (missing leaders, waiting
        # topics): not before _meta_next, backing off while asks bring nothing.
        self._meta_next = -math.inf
        self._meta_streak = 0
        self._missing_leader = False
        self._meta_changed = False
        self._failures = FailureLog()
        # A failed InitProducerId of an idempotent producer: next try not before.
        self._id_retry_at = -math.inf
        self._id_failures = 0
        self._closed = False
        self._flights: dict[int, _Flight] = {}
        self._layouts: dict[str, tuple[int, list[int]]] = {}
        self._max_record = min(cfg.max_request_size, cfg.buffer_memory + 61)
        self._buffer_memory = cfg.buffer_memory
        # Batches filled by append_many may grow past batch_size (a batch call
        # has its records at hand; bigger batches mean fewer requests), up to
        # a quarter of max_request_size and 256 KiB.
        self._many_limit = max(cfg.batch_size, min(256 * 1024, cfg.max_request_size // 4))
        self._wake: float | None = None
        self._stepping = False
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
    def producer_id(self) -> tuple[int, int]:
        """``(producer_id, epoch)``; ``(-1, -1)`` before one was assigned."""
        return self._identity.producer_id, self._identity.epoch

    @property
    def transaction_state(self) -> TxnState | None:
        return None if self._txn is None else self._txn.state

    @property
    def id_state(self) -> IdState:
        return self._identity.state

    @property
    def pending_records(self) -> int:
        """Records appended and not yet reported (queued, waiting or in flight)."""
        n = sum(b.record_count for b in self._acc.all_batches())
        n += sum(len(w.many[0]) if w.many else 1 for ws in self._waiting.values() for w in ws)
        return n + self._in_flight_records()

    def _in_flight_records(self) -> int:
        return sum(
            b.record_count
            for f in self._flights.values()
            for b in f.batches
            if b.state is not BatchState.DONE
        )

    def _backoff_s(self, failures: int) -> float:
        """Seconds to wait after ``failures`` consecutive failures (KIP-580, with jitter)."""
        return self._backoff.delay_ms(failures, self._rng) / 1000

    @property
    def closed(self) -> bool:
        return self._closed

    # ------------------------------------------------------- driver contract
    def connection_made(self, conn_id: ConnId, *, now: float) -> None:
        self.client.connection_made(conn_id, now=now)
        self._step(now)

    def connection_failed(self, conn_id: ConnId, error: BaseException, *, now: float) -> None:
        self.client.connection_failed(conn_id, error, now=now)
        self._step(now)

    def data_received(
        self, conn_id: ConnId, data: bytes | bytearray | memoryview, *, now: float
    ) -> None:
        self.client.data_received(conn_id, data, now=now)
        self._step(now)

    def connection_lost(self, conn_id: ConnId, error: BaseException | None, *, now: float) -> None:
        self.client.connection_lost(conn_id, error, now=now)
        self._step(now)

    def handle_timeout(self, *, now: float) -> None:
        self.client.handle_timeout(now=now)
        self._step(now)

    def next_deadline(self) -> float | None:
        theirs = self.client.next_deadline()
        ours = self._wake
        if theirs is None:
            return ours
        if ours is None:
            return theirs
        return min(theirs, ours)

    def pull_actions(self) -> list[Action]:
        return self.client.pull_actions()

    def pull_events(self) -> list[object]:
        events, self._events = self._events, []
        return events

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
    ) -> None:
        """Queue one record (already serialized); reported later with ``token``.

        Raises :class:`BufferFull` (nothing queued; wait for ``BufferFreed``),
        :class:`~kafkacore.producer.errors.RecordTooLargeError`, or
        :class:`~kafkacore.producer.errors.TransactionStateError` outside a
        transaction of a transactional producer.
        """
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
            size = 21 + (len(value) if value is not None else 0) + (len(key) if key else 0)
        acc = self._acc
        if size + 61 > self._max_record:
            acc.check_size(size, f"append to {topic!r}")
        if acc.used + size > self._buffer_memory and acc.used > 0:
            acc.reserve(size)  # raises BufferFull
        layout = self._layouts.get(topic)
        if layout is None:
            layout = self._layout(topic)
        if layout is None:
            self._wait_for_topic(
                _Waiting(
                    id=acc.take_id(),
                    topic=topic,
                    partition=partition,
                    size=size,
                    deadline=now + self._cfg.max_block_ms / 1000,
                    token=token,
                    timestamp=timestamp,
                    value=value,
                    key=key,
                    headers=headers,
                ),
                now,
            )
            return
        self._place_one(
            topic, value, key, headers, partition, timestamp, token, size, layout[0], now
        )

    def _layout(self, topic: str) -> tuple[int, list[int]] | None:
        """``(partition count, available partitions)`` of ``topic``; cached until new metadata."""
        if topic in self._waiting:
            return None
        cluster = self.client.cluster
        parts = cluster.partitions_for_topic(topic)
        if not parts:
            return None
        layout = (len(parts), sorted(cluster.available_partitions_for_topic(topic) or ()))
        self._layouts[topic] = layout
        return layout

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
            sizes = [21 + (len(v) if v is not None else 0) for v in values]
        else:
            sizes = [
                21 + (len(v) if v is not None else 0) + (len(k) if k is not None else 0)
                for v, k in zip(values, keys, strict=True)
            ]
        acc = self._acc
        biggest = max(sizes)
        if biggest + 61 > self._cfg.max_request_size:
            acc.check_size(biggest, f"append_many to {topic!r}")
        total = sum(sizes)
        if total > self._cfg.buffer_memory:
            raise RecordTooLargeError(
                f"append_many to {topic!r}: {total} bytes at once exceed buffer_memory="
                f"{self._cfg.buffer_memory}; send fewer records per call"
            )
        acc.reserve(total)
        layout = self._layouts.get(topic) or self._layout(topic)
        if layout is None:
            self._wait_for_topic(
                _Waiting(
                    id=acc.take_id(),
                    topic=topic,
                    partition=partition,
                    size=total,
                    deadline=now + self._cfg.max_block_ms / 1000,
                    token=token,
                    timestamp=timestamp,
                    many=(values, keys, sizes),
                ),
                now,
            )
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

    def _wait_for_topic(self, waiting: _Waiting, now: float) -> None:
        queue = self._waiting.get(waiting.topic)
        if queue is None:
            queue = self._waiting[waiting.topic] = deque()
        queue.append(waiting)
        self._acc.used += waiting.size  # charged while it waits
        self._incomplete[waiting.id] = waiting.id
        if waiting.topic not in self.client.topics:
            self.client.add_topic(waiting.topic, now=now)
        auth = self._failures.auth
        if auth is not None:
            # The brokers refused our credentials and no answer came since:
            # no metadata will come either; say so at once (issue 10, fault 8).
            self._auth_failed(auth, None)
        self._step(now)

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
    ) -> None:
        if partition is None:
            partition = self._choose(topic, key, count)
        elif partition >= count:
            self._report_unplaced(topic, partition, [token], [timestamp], count)
            return
        tp = TopicPartition(topic, partition)
        if self._txn is not None:
            self._txn.need(tp)
        acc = self._acc
        batch = acc.append(tp, value, key, headers, timestamp, token, size, now)
        self._partitioner.record_appended(topic, partition, size)
        if age:  # a record that waited for metadata: the batch is as old as it
            self._incomplete[batch.id] = min(self._incomplete.get(batch.id, batch.id), age)
        if len(batch.tokens) == 1:  # a new batch was opened
            self._incomplete.setdefault(batch.id, batch.id)
            if len(acc.queues[tp].batches) > 1 or self._linger_s == 0:
                self._step(now)  # the previous batch is full: send it now
            else:
                deadline = now + self._linger_s
                if self._wake is None or deadline < self._wake:
                    self._wake = deadline

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
        acc = self._acc
        groups: dict[int, list[int]] | None = None
        if partition is None:
            if keys is not None and not self._cfg.partitioner_ignore_keys:
                groups = {}
                for i, k in enumerate(keys):
                    p = (
                        partition_for_key(k, count)
                        if k is not None
                        else self._choose(topic, None, count)
                    )
                    groups.setdefault(p, []).append(i)
        elif partition >= count:
            self._report_unplaced(
                topic, partition, [token] * len(values), [timestamp] * len(values), count
            )
            return
        groups_list: list[
            tuple[int, Sequence[bytes | None], Sequence[bytes | None] | None, list[int]]
        ]
        if partition is not None:
            groups_list = [(partition, values, keys, sizes)]
        elif groups is None:
            # Unkeyed: cut the columns into pieces of one batch each and let
            # the sticky partitioner (KIP-480) pick a partition per piece, as
            # it would record by record, so a big call spreads over partitions.
            groups_list = []
            start, acc_size, limit = 0, 0, self._many_limit
            for i, size in enumerate(sizes):
                acc_size += size
                if acc_size >= limit or i == len(sizes) - 1:
                    p = self._choose(topic, None, count)
                    groups_list.append(
                        (
                            p,
                            values[start : i + 1],
                            None if keys is None else keys[start : i + 1],
                            sizes[start : i + 1],
                        )
                    )
                    self._partitioner.record_appended(topic, p, acc_size)
                    start, acc_size = i + 1, 0
        else:
            groups_list = [
                (
                    p,
                    [values[i] for i in idx],
                    None if keys is None else [keys[i] for i in idx],
                    [sizes[i] for i in idx],
                )
                for p, idx in groups.items()
            ]
        for p, vals, ks, szs in groups_list:
            tp = TopicPartition(topic, p)
            if self._txn is not None:
                self._txn.need(tp)
            q = acc.queue(tp)
            last = q.batches[-1].id if q.batches else 0
            total = acc.append_many(
                tp, vals, ks, szs, timestamp, token, now, limit=self._many_limit
            )
            for b in q.batches:
                if b.id > last or (age and b.id == last):
                    old = self._incomplete.get(b.id, b.id)
                    self._incomplete[b.id] = min(old, age) if age else old
            if groups is not None:
                self._partitioner.record_appended(topic, p, total)
        self._step(now)

    def _report_unplaced(
        self, topic: str, partition: int, tokens: list[object], timestamps: list[int], count: int
    ) -> None:
        self._events.append(
            BatchCompleted(
                topic=topic,
                partition=partition,
                base_offset=-1,
                log_append_time=-1,
                tokens=tokens,
                timestamps=timestamps,
                error=LocalProtocolError(
                    f"topic {topic!r} has {count} partitions; partition {partition} does not exist"
                ),
            )
        )

    # ----------------------------------------------------------- operations
    def _op(self, kind: str) -> Operation[None]:
        handle: Operation[None] = Operation(self._next_op, kind)
        self._next_op += 1
        return handle

    def _finish_op(self, handle: Operation[None], error: BaseException | None) -> None:
        if handle.done:
            return
        handle._complete(None, error)
        self._events.append(OperationCompleted(handle=handle))

    def flush(self, *, now: float) -> Operation[None]:
        """Send everything appended so far at once; the handle completes when all of it did."""
        handle = self._op("flush")
        if self._closed:
            self._finish_op(handle, ProducerClosedError("flush: producer is closed"))
            return handle
        self._flushes.append((self._acc.take_id(), handle))
        self._check_flushes()
        self._step(now)
        return handle

    def _check_flushes(self) -> None:
        if not self._flushes:
            return
        first = min(self._incomplete.values(), default=None)
        keep = []
        for mark, handle in self._flushes:
            if first is None or first > mark:
                self._finish_op(handle, None)
            else:
                keep.append((mark, handle))
        self._flushes = keep

    def _require_txn(self, what: str) -> TransactionManager:
        if self._txn is None:
            raise TransactionStateError(
                f"{what}: this producer has no transactional_id; set one to use transactions"
            )
        if self._closed:
            raise ProducerClosedError(f"{what}: producer is closed")
        if self._txn_op is not None and not self._txn_op.done:
            raise TransactionStateError(
                f"{what}: {self._txn_op.kind} is still running; wait for it first"
            )
        return self._txn

    def init_transactions(self, *, now: float) -> Operation[None]:
        """Get the producer id for ``transactional_id``, fencing older instances."""
        txn = self._require_txn("init_transactions")
        txn.to(TxnState.INITIALIZING, "init_transactions")
        handle = self._txn_op = self._op("init_transactions")
        self._identity.fire("request")
        self._send_init_producer_id(now)
        self._step(now)
        return handle

    def begin_transaction(self, *, now: float) -> None:
        """Start a transaction (local only; the coordinator hears of it on first add)."""
        txn = self._require_txn("begin_transaction")
        txn.to(TxnState.IN_TRANSACTION, "begin_transaction")
        # Chosen per transaction: a transaction never mixes the two protocols.
        txn.v2 = self._tv2_available()

    def _tv2_available(self) -> bool:
        """True if the cluster finalized transaction.version >= 2 (KIP-890 part 2)
        and the broker speaks the versions that carry it."""
        features = self.client.finalized_features() or {}
        if features.get("transaction.version", 0) < 2:
            return False
        versions = self.client.get_api_versions() or {}
        return all(versions.get(key, (0, -1))[1] >= v for key, v in _TV2_APIS)

    @property
    def transactions_v2(self) -> bool:
        """Whether the current (or last) transaction uses KIP-890 part 2."""
        return self._txn is not None and self._txn.v2

    def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, int] | Mapping[tuple[str, int], int],
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
        if isinstance(group_id, ConsumerGroupMetadata):
            meta = group_id
            group_id = meta.group_id
            generation_id, member_id = meta.generation_id, meta.member_id
            group_instance_id = meta.group_instance_id
        txn = self._require_txn("send_offsets_to_transaction")
        if txn.state is not TxnState.IN_TRANSACTION:
            if txn.state is TxnState.FATAL_ERROR:
                raise txn.fatal_error()
            raise TransactionStateError(
                f"send_offsets_to_transaction: transaction is {txn.state.value}; "
                "call begin_transaction() first"
            )
        if not isinstance(group_id, str) or not group_id:
            raise ValueError("send_offsets_to_transaction: group_id must be a non-empty str")
        by_topic: dict[str, list[TxnOffsetCommitRequestPartition]] = {}
        for tp, offset in offsets.items():
            topic, part = tp
            by_topic.setdefault(topic, []).append(
                TxnOffsetCommitRequestPartition(partition_index=part, committed_offset=offset)
            )
        handle = self._txn_op = self._op("send_offsets_to_transaction")
        ident = self._identity
        tid = txn.transactional_id
        commit = TxnOffsetCommitRequest(
            transactional_id=tid,
            group_id=group_id,
            producer_id=ident.producer_id,
            producer_epoch=ident.epoch,
            generation_id=generation_id,
            member_id=member_id,
            group_instance_id=group_instance_id,
            topics=[
                TxnOffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()
            ],
        )

        def offsets_added(response: Any, now: float) -> None:
            txn.started = True
            self._txn_request(
                commit,
                now,
                target=GroupCoordinator(group_id),
                max_version=_TXN_OFFSET_COMMIT_V2 if txn.v2 else _TXN_OFFSET_COMMIT_MAX,
                codes=_txn_offset_codes,
                on_ok=lambda r, now: self._op_done(None),
            )

        if txn.v2:
            # KIP-890: TxnOffsetCommit v5 adds the offsets partition itself;
            # no AddOffsetsToTxn. The coordinator may hear of the transaction
            # through it, so EndTxn must follow even if it fails.
            offsets_added(None, now)
            self._step(now)
            return handle
        self._txn_request(
            AddOffsetsToTxnRequest(
                transactional_id=tid,
                producer_id=ident.producer_id,
                producer_epoch=ident.epoch,
                group_id=group_id,
            ),
            now,
            on_ok=offsets_added,
        )
        self._step(now)
        return handle

    def commit_transaction(self, *, now: float) -> Operation[None]:
        """Flush the transaction's records, then commit it (EndTxn)."""
        txn = self._require_txn("commit_transaction")
        if txn.state is TxnState.ABORTABLE_ERROR:
            raise TransactionStateError(
                f"commit_transaction: the transaction failed ({txn.error}); call "
                "abort_transaction()"
            )
        txn.to(TxnState.COMMITTING, "commit_transaction")
        handle = self._txn_op = self._op("commit_transaction")
        self._step(now)
        return handle

    def abort_transaction(self, *, now: float) -> Operation[None]:
        """Drop unsent records of the transaction and abort it (EndTxn)."""
        txn = self._require_txn("abort_transaction")
        txn.to(TxnState.ABORTING, "abort_transaction")
        handle = self._txn_op = self._op("abort_transaction")
        aborted = TransactionAbortedError(
            f"transaction of {txn.transactional_id!r} was aborted before the record was sent"
        )
        for q in self._acc.queues.values():
            keep: deque[ProducerBatch] = deque()
            for batch in q.batches:
                if batch.base_sequence >= 0:
                    keep.append(batch)  # has a sequence: must still be sent
                else:
                    self._complete(batch, -1, -1, aborted, queued=False)
            q.batches = keep
        self._fail_waiting(aborted)
        txn.pending.clear()
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
        error = ProducerClosedError("producer closed before the record was delivered")
        for q in self._acc.queues.values():
            batches, q.batches = q.batches, deque()
            for batch in batches:
                self._complete(batch, -1, -1, error, queued=False)
        for flight in list(self._flights.values()):
            for batch in flight.batches:
                self._complete(batch, -1, -1, error, queued=False)
        self._flights.clear()
        self._fail_waiting(error)
        for _, handle in self._flushes:
            self._finish_op(handle, error)
        self._flushes = []
        if self._txn_op is not None:
            self._finish_op(self._txn_op, error)
        self._callbacks.clear()
        self._retries.clear()
        self.client.shutdown(now=now)
        self.client.pull_events()
        self._wake = None

    # ----------------------------------------------------------------- step
    def _step(self, now: float) -> None:
        if self._stepping or self._closed:
            return
        self._stepping = True
        try:
            for _ in range(1000):
                events = self.client.pull_events()
                for event in events:
                    if isinstance(event, RequestCompleted):
                        callback = self._callbacks.pop(event.handle, None)
                        if callback is not None:
                            callback(event.response, event.error, now)
                    elif isinstance(event, MetadataUpdated):
                        self._meta_changed = True
                        self._layouts.clear()
                    auth = self._failures.note(event)
                    if auth is not None:
                        node = event.node_id if isinstance(event, ConnectionStateChanged) else None
                        self._auth_failed(auth, node)
                if self._waiting:
                    self._fail_waiting_if_unreachable()
                sent = self._sender(now)
                if not events and not sent:
                    break
            self._wake = self._compute_wake(now)
        finally:
            self._stepping = False

    def _compute_wake(self, now: float) -> float | None:
        wake = math.inf
        linger = self._linger_s
        limit = self._max_in_flight
        # Sending waits for an answer (producer id, added partitions, a free
        # in-flight slot): that answer steps us, so no timer is needed for it.
        can_send = not self._idempotent or self._identity.ready
        cluster = self.client.cluster
        txn = self._txn
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
                if self._meta_next > now:  # the next ask for its leader
                    wake = min(wake, self._meta_next)
                    continue
                # else: the drain asks once the batch is ready (below)
            elif self._node_in_flight.get(leader, 0) >= limit:
                continue
            if head.state is BatchState.OPEN:
                wake = min(wake, head.created + linger)
            else:
                wake = min(wake, head.retry_at)
        for ws in self._waiting.values():
            if ws:
                wake = min(wake, ws[0].deadline)
        if self._waiting and self._meta_next > now:
            wake = min(wake, self._meta_next)  # ask again for their topics
        for flight in self._flights.values():
            wake = min(wake, flight.deadline)
        for when, _ in self._retries:
            wake = min(wake, when)
        if (
            self._idempotent
            and self._txn is None
            and self._identity.state in (IdState.NONE, IdState.BUMP_PENDING)
            and self._id_retry_at > now  # a retry waits for its backoff
        ):
            wake = min(wake, self._id_retry_at)
        if wake is math.inf:
            return None
        # Nothing due now can be sent now (e.g. waiting for the in-flight
        # limit); the client's events will step us again, so no busy timer.
        return max(wake, now + 0.001) if wake <= now else wake

    def _sender(self, now: float) -> bool:
        """One pass of the sender; True if it issued (or withdrew) a request."""
        if self._meta_changed or (self._waiting and now >= self._meta_next):
            self._meta_changed = False
            self._place_waiting(now)
        # A withdrawn request completes through a client event: step again.
        sent = self._expire(now)
        if self._retries:
            due = [fn for when, fn in self._retries if when <= now]
            if due:
                self._retries = [(w, f) for w, f in self._retries if w > now]
                for fn in due:
                    fn(now)
                sent = True
        ident = self._identity
        wants_id = now >= self._id_retry_at and (
            ident.state is IdState.NONE
            or (ident.state is IdState.BUMP_PENDING and self._produce_in_flight == 0)
        )
        if self._idempotent and self._txn is None and wants_id:
            ident.fire("request")
            self._send_init_producer_id(now)
            sent = True
        if self._txn is not None and ident.ready:
            sent = self._drive_transaction(now) or sent
        if not self._idempotent or ident.ready:
            sent = self._drain(now) or sent
        if not self._missing_leader and not self._waiting:
            self._meta_streak = 0  # nothing waits for metadata: the next ask is a first one
        return sent

    def _ask_metadata(self, now: float) -> None:
        """Ask the client for fresh metadata, backing off while asks change nothing."""
        if now < self._meta_next:
            return
        self._meta_streak += 1
        self._meta_next = now + self._backoff_s(self._meta_streak)
        self.client.request_metadata_update(now=now)

    # -------------------------------------------------------------- expiry
    def _expire(self, now: float) -> bool:
        """Report what outlived its deadline (issue 10, fault 2: the delivery
        timeout bounds a batch in flight too, as in Java's Sender).

        True if a request was withdrawn from the client."""
        timeout_ms = self._cfg.delivery_timeout_ms
        for q in self._acc.queues.values():
            batches = q.batches
            while batches and batches[0].deadline <= now:
                batch = batches.popleft()
                reason, cause = self._why_queued(batch)
                error = expired(
                    batch.record_count,
                    batch.tp,
                    timeout_ms,
                    reason,
                    cause,
                    maybe_written=batch.unknown,
                )
                self._complete(batch, -1, -1, error, queued=False)
        withdrew = False
        for flight in list(self._flights.values()):
            if flight.deadline <= now:
                withdrew = self._expire_flight(flight, now) or withdrew
        cluster = self.client.cluster
        for topic, ws in list(self._waiting.items()):
            while ws and ws[0].deadline <= now:
                w = ws.popleft()
                self._fail_one_waiting(
                    w,
                    metadata_timeout(
                        topic,
                        self._cfg.max_block_ms,
                        cluster.topic_error(topic),
                        self._failures.metadata or self.client.unavailable_cause(),
                    ),
                )
            if not ws:
                del self._waiting[topic]  # nothing waits for it: stop asking
        return withdrew

    def _expire_flight(self, flight: _Flight, now: float) -> bool:
        """Fail the batches of ``flight`` past their delivery deadline.

        The request stays with the client (written bytes cannot be unsent)
        and its answer is ignored for them. A failed batch that had a
        sequence leaves its partition's sequence state unknown: ``_complete``
        asks for an epoch bump (KIP-360), which waits until nothing is in
        flight, so the partition continues only under a new epoch, where no
        late write of the old attempt can be mistaken for a new one. A
        request not written yet is cancelled once none of its batches is
        left (True then).
        """
        handle = flight.handle
        written = handle.node_id is not None
        live = math.inf
        for batch in flight.batches:
            if batch.state is BatchState.DONE:
                continue
            if batch.deadline > now:
                live = min(live, batch.deadline)
                continue
            if written:
                batch.unknown = True
                stalled: BaseException = KafkaTimeoutError(
                    f"Produce request #{handle.id} to {self.client.describe_node(flight.node)} "
                    "had no answer "
                    f"after {now - flight.sent:.3f} s (attempt {batch.attempts})"
                )
                stalled.__cause__ = batch.last_error
            else:
                stalled = KafkaTimeoutError(
                    f"Produce request #{handle.id} still waits for a connection to "
                    f"{self.client.describe_node(flight.node)} (attempt {batch.attempts})"
                )
                stalled.__cause__ = self._failures.nodes.get(flight.node, batch.last_error)
            error = expired(
                batch.record_count,
                batch.tp,
                self._cfg.delivery_timeout_ms,
                str(stalled),
                stalled.__cause__,
                maybe_written=batch.unknown,
            )
            error.__cause__ = stalled
            self._complete(batch, -1, -1, error, queued=False)
        flight.deadline = live
        if live is math.inf and not written and not handle.done:
            return self.client.cancel(handle, now=now)
        return False

    def _why_queued(self, batch: ProducerBatch) -> tuple[str, BaseException | None]:
        """Why ``batch`` still waits in its queue, and the failure behind it."""
        if batch.last_error is not None:
            return (f"attempt {batch.attempts} failed: {batch.last_error}", batch.last_error)
        if self._idempotent and not self._identity.ready:
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
        leader = self.client.cluster.leader_for_partition(tp)
        if leader is None or leader < 0:
            failure = self._failures.metadata
            return (
                f"no leader known for {tp.topic}-{tp.partition}"
                + (f" (metadata failed: {failure})" if failure is not None else ""),
                failure,
            )
        failure = self._failures.nodes.get(leader)
        if failure is not None:
            return (
                f"its leader, {self.client.describe_node(leader)}, is unreachable: {failure}",
                failure,
            )
        return ("it was never sent (linger_ms or the in-flight limit held it)", None)

    def _auth_failed(self, error: AuthenticationError, node: int | None) -> None:
        """The brokers refused our credentials: fail at once what cannot be sent.

        Records waiting for metadata, and queued batches whose leader is
        ``node`` or unknown (or every queued batch while an idempotent
        producer has no id to stamp them with). In-flight requests end with
        the connection and fail then (``_retry_or_fail`` does not retry an
        AuthenticationError).
        """
        waiting, self._waiting = self._waiting, {}
        for topic, ws in waiting.items():
            for w in ws:
                self._fail_one_waiting(
                    w, authentication_failed(f"records for topic {topic!r}", error)
                )
        no_id = self._idempotent and not self._identity.ready
        cluster = self.client.cluster
        for tp, q in self._acc.queues.items():
            if not q.batches:
                continue
            leader = cluster.leader_for_partition(tp)
            if not no_id and leader is not None and leader >= 0 and leader != node:
                continue
            batches, q.batches = q.batches, deque()
            for batch in batches:
                self._complete(
                    batch,
                    -1,
                    -1,
                    authentication_failed(
                        f"{batch.record_count} records for {tp.topic}-{tp.partition}", error
                    ),
                    queued=False,
                )

    def _fail_one_waiting(self, w: _Waiting, error: BaseException) -> None:
        self._acc.used -= w.size
        self._incomplete.pop(w.id, None)
        n = len(w.many[0]) if w.many else 1
        self._events.append(
            BatchCompleted(
                topic=w.topic,
                partition=-1 if w.partition is None else w.partition,
                base_offset=-1,
                log_append_time=-1,
                tokens=[w.token] * n,
                timestamps=[w.timestamp] * n,
                error=error,
            )
        )
        self._after_release()

    def _fail_waiting(self, error: BaseException) -> None:
        waiting, self._waiting = self._waiting, {}
        for ws in waiting.values():
            for w in ws:
                self._fail_one_waiting(w, error)

    def _fail_waiting_if_unreachable(self) -> None:
        """Records waiting for metadata of a cluster never reached fail now,
        with the reason (a wrong address, the cluster down), not at max_block_ms."""
        unreachable = self.client.unreachable_from_the_start()
        if unreachable is None:
            return
        waiting, self._waiting = self._waiting, {}
        for topic, ws in waiting.items():
            error = NoBrokersAvailable(f"no metadata for topic {topic!r}: {unreachable}")
            error.__cause__ = unreachable.__cause__
            for w in ws:
                self._fail_one_waiting(w, error)

    def _after_release(self) -> None:
        if self._acc.refused and self._acc.used < self._cfg.buffer_memory:
            self._acc.refused = False
            self._events.append(BufferFreed(available=self._acc.available))
        self._check_flushes()

    def _place_waiting(self, now: float) -> None:
        cluster = self.client.cluster
        for topic in list(self._waiting):
            ws = self._waiting[topic]
            code = cluster.topic_error(topic)
            cls = error_class(code) if code else None
            if cls is not None and not cls.retriable:
                # TOPIC_AUTHORIZATION_FAILED, INVALID_TOPIC_EXCEPTION, a code
                # this client does not know...: waiting will not help.
                # The cluster's failure names the broker that answered.
                error = cluster.topic_failure(topic) or topic_error(topic, code or ErrorCode.NONE)
                del self._waiting[topic]
                for w in ws:
                    self._fail_one_waiting(w, error)
                continue
            parts = cluster.partitions_for_topic(topic)
            if not parts:
                self._ask_metadata(now)
                continue
            del self._waiting[topic]
            for w in ws:
                self._incomplete.pop(w.id, None)
                self._acc.used -= w.size  # placing charges it again
                if w.many is not None:
                    values, keys, sizes = w.many
                    self._place_many(
                        topic,
                        values,
                        keys,
                        sizes,
                        w.partition,
                        w.timestamp,
                        w.token,
                        len(parts),
                        now,
                        age=w.id,
                    )
                else:
                    self._place_one(
                        topic,
                        w.value,
                        w.key,
                        w.headers,
                        w.partition,
                        w.timestamp,
                        w.token,
                        w.size,
                        len(parts),
                        now,
                        age=w.id,
                    )

    # --------------------------------------------------------------- drain
    def _drain(self, now: float) -> bool:
        acc = self._acc
        if not acc.queues:
            return False
        cluster = self.client.cluster
        txn = self._txn
        force = bool(self._flushes) or (
            txn is not None and txn.state in (TxnState.COMMITTING, TxnState.ABORTING)
        )
        linger = self._linger_s
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
            if not acc.head_ready(q, now, linger, force):
                continue
            leader = cluster.leader_for_partition(tp)
            if leader is None or leader < 0:
                missing_leader = True
                continue
            by_node.setdefault(leader, []).append(q)
        self._missing_leader = missing_leader
        if missing_leader:
            self._ask_metadata(now)
        sent = False
        for node, queues in by_node.items():
            if self._node_in_flight.get(node, 0) >= limit:
                continue
            self._send_produce(node, queues, now)
            sent = True
        return sent

    def _send_produce(self, node: int, queues: list[PartitionQueue], now: float) -> None:
        cfg = self._cfg
        ident = self._identity
        txn = self._txn
        budget = cfg.max_request_size - 100
        taken: list[ProducerBatch] = []
        topics: dict[str, list[PartitionProduceData]] = {}
        for q in queues:
            batch = q.batches[0]
            data = batch.build()
            if taken and len(data) > budget:
                continue
            if self._idempotent and (
                batch.base_sequence < 0
                or batch.producer_epoch != ident.epoch
                or batch.producer_id != ident.producer_id
            ):
                data = batch.seal(ident.producer_id, ident.epoch, q.next_sequence, txn is not None)
                q.next_sequence = (q.next_sequence + batch.record_count) % _SEQUENCE_WRAP
            budget -= len(data)
            q.batches.popleft()
            q.in_flight += 1
            batch.state = BatchState.IN_FLIGHT
            batch.attempts += 1
            taken.append(batch)
            topics.setdefault(batch.tp.topic, []).append(
                PartitionProduceData(index=batch.tp.partition, records=data)
            )
        if txn is not None and txn.v2 and taken:
            txn.started = True  # the leader adds the partition (KIP-890)
        request = ProduceRequest(
            transactional_id=None if txn is None else txn.transactional_id,
            acks=cfg.acks_value,
            timeout_ms=self._request_timeout_ms,
            topic_data=[
                TopicProduceData(name=t, partition_data=parts) for t, parts in topics.items()
            ],
        )
        self._node_in_flight[node] = self._node_in_flight.get(node, 0) + 1
        self._produce_in_flight += 1
        handle = self.client.send(
            request,
            now=now,
            target=Node(node),
            max_version=(
                _PRODUCE_MAX if txn is None else _PRODUCE_TXN_V2 if txn.v2 else _PRODUCE_MAX_TXN_V1
            ),
        )
        self._flights[handle.id] = _Flight(
            handle=handle,
            node=node,
            sent=now,
            batches=taken,
            deadline=min(b.deadline for b in taken),
        )
        self._callbacks[handle] = lambda r, e, t: self._on_produce(handle.id, node, r, e, t)

    def _on_produce(
        self, hid: int, node: int, response: Any, error: BaseException | None, now: float
    ) -> None:
        flight = self._flights.pop(hid, None)
        if flight is None:
            return
        self._node_in_flight[node] -= 1
        self._produce_in_flight -= 1
        for batch in flight.batches:
            q = self._acc.queues.get(batch.tp)
            if q is not None:
                q.in_flight -= 1
        # Batches already reported (expired while in flight) ignore the answer.
        batches = [b for b in flight.batches if b.state is not BatchState.DONE]
        if error is not None:
            # Written (the handle names its node) and unanswered: the broker
            # may have appended it. Never written: it certainly did not.
            written = flight.handle.node_id is not None
            for batch in batches:
                batch.unknown = batch.unknown or written
                self._retry_or_fail(batch, error, now, refresh=True)
            return
        if response is None:  # acks=0: nothing comes back
            for batch in batches:
                self._complete(batch, -1, -1, None)
            return
        results: dict[tuple[str, int], Any] = {}
        for topic in response.responses:
            for part in topic.partition_responses:
                results[(topic.name, part.index)] = part
        for batch in batches:
            part = results.get((batch.tp.topic, batch.tp.partition))
            if part is None:
                self._retry_or_fail(
                    batch,
                    RemoteProtocolError(
                        f"Produce response from {self.client.describe_node(node)} lacks "
                        f"{batch.tp.topic}-{batch.tp.partition}"
                    ),
                    now,
                    refresh=False,
                )
                continue
            self._on_partition_result(batch, part, node, now)

    def _on_partition_result(self, batch: ProducerBatch, part: Any, node: int, now: float) -> None:
        code = part.error_code
        if code == ErrorCode.NONE:  # the hot path, before building any facts
            self._complete(batch, part.base_offset, part.log_append_time_ms, None)
            return
        txn = self._txn
        verdict = decide(
            Facts(
                code=code,
                transactional=txn is not None,
                idempotent=self._idempotent,
                earlier_unfinished=code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
                and self._earlier_unfinished(batch),
                multi_record=batch.record_count > 1,
            )
        )
        if verdict is Verdict.DUPLICATE:
            self._complete(batch, -1, -1, None)
            return
        if verdict is Verdict.SPLIT:
            self._split(batch, now)
            return
        if verdict is Verdict.TOO_LARGE:
            self._complete(
                batch,
                -1,
                -1,
                RecordTooLargeError(
                    f"{batch.tp.topic}-{batch.tp.partition}: broker refused a batch of "
                    f"{batch.size()} bytes as too large; lower batch_size or raise the "
                    "topic's max.message.bytes"
                ),
            )
            return
        cls = error_class(code)
        where = self.client.describe_node(node)
        detail = f"{where} refused {batch.tp.topic}-{batch.tp.partition} (error code {code})"
        if part.error_message:
            detail += f": {part.error_message}"
        error = cls(detail) if cls is not None else RemoteProtocolError(detail)
        if verdict is Verdict.FENCE:
            assert txn is not None
            txn.fence(error.__class__.__name__)
            self._complete(batch, -1, -1, txn.fatal_error())
        elif verdict is Verdict.BUMP_AND_RETRY:
            self._need_bump()
            self._retry_or_fail(batch, error, now, refresh=False)
        elif verdict is Verdict.RETRY:
            refresh = cls is not None and cls.invalid_metadata
            self._retry_or_fail(batch, error, now, refresh=refresh)
        else:  # ABORTABLE (the transaction learns it in _complete) or FAIL
            self._complete(batch, -1, -1, error)

    def _split(self, batch: ProducerBatch, now: float) -> None:
        """Resend a batch the broker found too large as two halves (as Java does).

        The halves keep the records' order, tokens and timestamps and, with
        idempotence, the original's sequence range (the broker wrote none of
        it), so later batches keep their sequences. Halves that are still
        too large are split again when the broker says so.
        """
        cfg = self._cfg
        data = batch.build()
        records = list(RecordBatch(data))
        n = len(records)
        half = n // 2
        q = self._acc.queue(batch.tp)
        age = self._incomplete.pop(batch.id, batch.id)
        pieces: list[ProducerBatch] = []
        charged = 0
        for start, end in ((0, half), (half, n)):
            piece = ProducerBatch(
                self._acc.take_id(),
                batch.tp,
                now=batch.created,
                delivery_timeout_s=cfg.delivery_timeout_ms / 1000,
                batch_size=cfg.batch_size,
                compression=cfg.compression,
                compression_level=cfg.compression_level,
            )
            builder = piece.builder
            assert builder is not None
            for record in records[start:end]:
                builder.append(
                    record.value, record.key, timestamp=record.timestamp, headers=record.headers
                )
            piece.order = (*batch.order, start)
            piece.tokens = batch.tokens[start:end]
            piece.timestamps = batch.timestamps[start:end]
            piece.accounted = (
                batch.accounted * (end - start) // n if start == 0 else batch.accounted - charged
            )
            charged += piece.accounted
            piece.attempts = batch.attempts  # a retry: sent alone, in order
            piece.unknown = batch.unknown
            piece.retry_at = now
            piece.build()
            if batch.base_sequence >= 0:
                piece.seal(
                    batch.producer_id,
                    batch.producer_epoch,
                    (batch.base_sequence + start) % _SEQUENCE_WRAP,
                    self._txn is not None,
                )
            self._incomplete[piece.id] = age
            pieces.append(piece)
        batch.state = BatchState.DONE  # replaced by its halves; reported through them
        batch.accounted = 0
        q.insert_before_later(pieces, batch)

    def _earlier_unfinished(self, batch: ProducerBatch) -> bool:
        q = self._acc.queues.get(batch.tp)
        if q is None:
            return False
        for other in q.batches:
            if 0 <= other.base_sequence < batch.base_sequence:
                return True
        for flight in self._flights.values():
            for other in flight.batches:
                if (
                    other.tp == batch.tp
                    and other.state is not BatchState.DONE
                    and 0 <= other.base_sequence < batch.base_sequence
                ):
                    return True
        return False

    def _need_bump(self) -> None:
        if (
            self._idempotent
            and self._txn is None
            and self._identity.state in (IdState.READY, IdState.BUMP_PENDING, IdState.BUMPING)
        ):
            self._identity.fire("need_bump")

    def _retry_or_fail(
        self, batch: ProducerBatch, error: BaseException, now: float, *, refresh: bool
    ) -> None:
        if batch.state is BatchState.DONE:
            return
        batch.last_error = error
        auth = auth_error_in(error)
        if auth is not None:  # same credentials, same answer: no retry
            self._complete(batch, -1, -1, error)
            return
        if now >= batch.deadline:
            self._complete(
                batch,
                -1,
                -1,
                expired(
                    batch.record_count,
                    batch.tp,
                    self._cfg.delivery_timeout_ms,
                    f"attempt {batch.attempts} failed: {error}",
                    error,
                    maybe_written=batch.unknown,
                ),
            )
            return
        if batch.attempts > self._cfg.retries:
            self._complete(batch, -1, -1, error)
            return
        # KIP-580: the n-th retry of a batch waits retry_backoff_ms * 2**(n-1),
        # at most retry_backoff_max_ms, +-20% jitter (Java's RecordAccumulator).
        batch.retry_at = now + self._backoff_s(batch.attempts)
        self._acc.queue(batch.tp).reinsert(batch)
        if refresh or isinstance(error, KafkaConnectionError):
            self._ask_metadata(now)

    def _complete(
        self,
        batch: ProducerBatch,
        base_offset: int,
        log_append_time: int,
        error: BaseException | None,
        *,
        queued: bool = True,
    ) -> None:
        if batch.state is BatchState.DONE:
            return
        batch.state = BatchState.DONE
        self._acc.used -= batch.accounted
        batch.accounted = 0
        self._incomplete.pop(batch.id, None)
        self._events.append(
            BatchCompleted(
                topic=batch.tp.topic,
                partition=batch.tp.partition,
                base_offset=base_offset,
                log_append_time=log_append_time,
                tokens=batch.tokens,
                timestamps=batch.timestamps,
                error=error,
            )
        )
        if error is not None and not self._closed:
            if self._txn is not None:
                if self._txn.state is not TxnState.FATAL_ERROR and not isinstance(
                    error, TransactionAbortedError
                ):
                    self._txn.abortable(error)
            elif batch.base_sequence >= 0:
                self._need_bump()  # its sequences are a gap now (KIP-360)
        self._after_release()

    # ------------------------------------------------------- producer ids
    def _send_init_producer_id(self, now: float) -> None:
        cfg = self._cfg
        ident = self._identity
        bump = ident.state is IdState.BUMPING
        request = InitProducerIdRequest(
            transactional_id=cfg.transactional_id,
            transaction_timeout_ms=cfg.transaction_timeout_ms,
            producer_id=ident.producer_id if bump else -1,
            producer_epoch=ident.epoch if bump else -1,
        )
        target: Target = (
            TransactionCoordinator(cfg.transactional_id)
            if cfg.transactional_id is not None
            else AnyNode()
        )
        self._txn_request(
            request,
            now,
            target=target,
            max_version=_INIT_PRODUCER_ID_MAX,
            on_ok=self._on_producer_id,
            on_fail=self._on_producer_id_failed,
            busy=False,
            note=self._note_producer_id_failure,
        )

    def _note_producer_id_failure(self, error: BaseException) -> None:
        self._failures.producer_id = error

    def _on_producer_id(self, response: Any, now: float) -> None:
        ident = self._identity
        bumped = ident.state is IdState.BUMPING
        if bumped:
            # A batch whose earlier attempt may have been written cannot be
            # resent under the new epoch: the broker could not tell it is a
            # duplicate. It fails instead (as Java fails unresolved batches).
            for q in self._acc.queues.values():
                keep: deque[ProducerBatch] = deque()
                for batch in q.batches:
                    if batch.unknown:
                        batch.base_sequence = -1  # its gap is closed by the bump itself
                        self._complete(batch, -1, -1, _unresolved(batch), queued=False)
                    else:
                        keep.append(batch)
                q.batches = keep
        ident.assign(response.producer_id, response.producer_epoch)
        self._id_failures = 0
        self._failures.producer_id = None
        if bumped or self._txn is not None:
            for q in self._acc.queues.values():
                q.next_sequence = 0
                for batch in q.batches:
                    batch.base_sequence = -1
        if self._txn is not None:
            self._txn.to(TxnState.READY, "init_transactions")
            self._op_done(None)

    def _on_producer_id_failed(self, error: BaseException, now: float) -> None:
        ident = self._identity
        if self._txn is not None:
            if self._txn.state is TxnState.INITIALIZING:
                self._txn.state = TxnState.UNINITIALIZED
            ident.state = IdState.NONE
            self._op_done(error)
            return
        # Without an id nothing can be sent: fail what waits, then try again
        # after a backoff that grows while it keeps failing (KIP-580).
        self._failures.producer_id = error
        ident.fire("failed")
        self._id_failures += 1
        self._id_retry_at = now + self._backoff_s(self._id_failures)
        auth = auth_error_in(error)
        for q in self._acc.queues.values():
            batches, q.batches = q.batches, deque()
            for batch in batches:
                what = f"{batch.record_count} records for {batch.tp.topic}-{batch.tp.partition}"
                self._complete(
                    batch,
                    -1,
                    -1,
                    authentication_failed(what, auth) if auth is not None else error,
                    queued=False,
                )

    # -------------------------------------------------------- transactions
    def _op_done(self, error: BaseException | None) -> None:
        op = self._txn_op
        if op is not None and not op.done:
            self._finish_op(op, error)

    def _drive_transaction(self, now: float) -> bool:
        txn = self._txn
        assert txn is not None
        if self._txn_busy:
            return False
        if txn.state is TxnState.FATAL_ERROR:
            self._op_done(txn.fatal_error())
            return False
        if txn.pending and txn.state in (TxnState.IN_TRANSACTION, TxnState.COMMITTING):
            self._send_add_partitions(now)
            return True
        if txn.state is TxnState.COMMITTING or txn.state is TxnState.ABORTING:
            if self._produce_in_flight or txn.adding:
                return False
            if txn.state is TxnState.COMMITTING:
                if txn.error is not None:
                    return False
                if any(q.batches for q in self._acc.queues.values()) or self._waiting:
                    return False
            elif any(q.batches for q in self._acc.queues.values()):
                return False  # sequenced batches still to send before the abort
            if not txn.started:
                txn.to(TxnState.READY, "end transaction")
                self._op_done(None)
                return False
            committed = txn.state is TxnState.COMMITTING
            ident = self._identity

            v2 = txn.v2

            def ended(response: Any, now: float) -> None:
                if v2 and response.producer_id >= 0:
                    # KIP-890: every transaction end bumps the epoch (or, when
                    # it is exhausted, hands out a new id); sequences restart.
                    ident.renew(response.producer_id, response.producer_epoch)
                    for q in self._acc.queues.values():
                        q.next_sequence = 0
                        for batch in q.batches:
                            batch.base_sequence = -1
                txn.to(TxnState.READY, "end transaction")
                self._op_done(None)

            self._txn_request(
                EndTxnRequest(
                    transactional_id=txn.transactional_id,
                    producer_id=ident.producer_id,
                    producer_epoch=ident.epoch,
                    committed=committed,
                ),
                now,
                max_version=_END_TXN_V2 if v2 else _END_TXN_MAX,
                on_ok=ended,
            )
            return True
        op = self._txn_op
        if (
            txn.state is TxnState.ABORTABLE_ERROR
            and op is not None
            and op.kind == "commit_transaction"
        ):
            self._op_done(txn.error)
        return False

    def _send_add_partitions(self, now: float) -> None:
        txn = self._txn
        assert txn is not None
        adding = set(txn.pending)
        txn.pending.clear()
        txn.adding |= adding
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(adding):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        ident = self._identity

        def added(response: Any, now: float) -> None:
            txn.adding -= adding
            txn.added |= adding
            txn.started = True

        def failed(error: BaseException, now: float) -> None:
            txn.adding -= adding
            txn.abortable(error)
            self._fail_unadded(error)

        self._txn_request(
            AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=txn.transactional_id,
                v3_and_below_producer_id=ident.producer_id,
                v3_and_below_producer_epoch=ident.epoch,
                v3_and_below_topics=[
                    AddPartitionsToTxnTopic(name=t, partitions=ps) for t, ps in by_topic.items()
                ],
            ),
            now,
            max_version=_ADD_PARTITIONS_MAX,
            codes=_add_partitions_codes,
            on_ok=added,
            on_fail=failed,
        )

    def _fail_unadded(self, error: BaseException) -> None:
        txn = self._txn
        assert txn is not None
        for tp, q in self._acc.queues.items():
            if tp in txn.added:
                continue
            batches, q.batches = q.batches, deque()
            for batch in batches:
                self._complete(batch, -1, -1, error, queued=False)

    def _txn_request(
        self,
        request: Any,
        now: float,
        *,
        on_ok: Callable[[Any, float], None],
        target: Target | None = None,
        max_version: int | None = None,
        codes: Callable[[Any], int] | None = None,
        on_fail: Callable[[BaseException, float], None] | None = None,
        busy: bool = True,
        note: Callable[[BaseException], None] | None = None,
    ) -> None:
        """Send a coordinator request; retry coordinator trouble; fence on fencing codes.

        Retries back off exponentially (KIP-580) and hand each failure to
        ``note``; an AuthenticationError is not retried (same credentials,
        same answer).
        """
        if target is None:
            assert self._txn is not None
            target = TransactionCoordinator(self._txn.transactional_id)
        if busy:
            self._txn_busy = True

        def fail(error: BaseException, now: float) -> None:
            if busy:
                self._txn_busy = False
            if on_fail is not None:
                on_fail(error, now)
            else:
                if self._txn is not None and not isinstance(error, type(self._txn.error)):
                    self._txn.abortable(error)
                self._op_done(error)

        attempts = 0

        def retry(now: float, error: BaseException) -> None:
            nonlocal attempts
            attempts += 1
            if note is not None:
                note(error)
            self._retries.append((now + self._backoff_s(attempts), send))

        def done(response: Any, error: BaseException | None, now: float) -> None:
            if error is not None:
                if self._closed:
                    return
                if note is not None:
                    note(error)
                if auth_error_in(error) is not None or (
                    isinstance(error, BrokerError) and not error.retriable
                ):
                    # Refused credentials, or FindCoordinator refusing the
                    # transactional id or group: the same request gets the same answer.
                    fail(error, now)
                    return
                retry(now, error)
                return
            code = codes(response) if codes is not None else response.error_code
            if code == ErrorCode.NONE:
                if busy:
                    self._txn_busy = False
                on_ok(response, now)
                return
            cls = error_class(code)
            exc = (
                cls(type(request).__name__)
                if cls is not None
                else RemoteProtocolError(f"{type(request).__name__}: error code {code}")
            )
            if code in TXN_COORDINATOR_RETRY or (
                cls is not None and cls.retriable and code not in PRODUCER_FENCING
            ):
                retry(now, exc)
                return
            if code in PRODUCER_FENCING and self._txn is not None:
                self._txn.fence(exc.__class__.__name__)
                if busy:
                    self._txn_busy = False
                self._identity.fire("fatal")
                self._op_done(self._txn.fatal_error())
                return
            fail(exc, now)

        def send(now: float) -> None:
            if self._closed:
                return
            handle = self.client.send(request, now=now, target=target, max_version=max_version)
            self._callbacks[handle] = done

        send(now)


def _unresolved(batch: ProducerBatch) -> KafkaTimeoutError:
    last = batch.last_error
    error = KafkaTimeoutError(
        f"{batch.record_count} records for {batch.tp.topic}-{batch.tp.partition}: an earlier "
        "attempt got no answer"
        + (f" ({type(last).__name__}: {last})" if last is not None else "")
        + " and the producer epoch had to be bumped; not resent, since "
        "the broker could not drop a duplicate (they may or may not be in the log)"
    )
    error.__cause__ = last
    return error


def _add_partitions_codes(response: Any) -> int:
    if response.error_code:
        return int(response.error_code)
    worst: int = ErrorCode.NONE
    for topic in response.results_by_topic_v3_and_below:
        for part in topic.results_by_partition:
            code = part.partition_error_code
            # OPERATION_NOT_ATTEMPTED only says another partition failed.
            if code and code != ErrorCode.OPERATION_NOT_ATTEMPTED and worst == ErrorCode.NONE:
                worst = code
    return worst


def _txn_offset_codes(response: Any) -> int:
    for topic in response.topics:
        for part in topic.partitions:
            if part.error_code:
                return int(part.error_code)
    return ErrorCode.NONE

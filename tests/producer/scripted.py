"""A scripted Kafka log behind the client's fake brokers, for producer tests.

:class:`ScriptedLog` answers Produce like a partition leader: it decodes each
batch, keeps per-producer sequence state (the last five batches per
partition, as brokers do) and appends records, answering duplicates with the
first attempt's offset and gaps with OUT_OF_ORDER_SEQUENCE_NUMBER. Tests
inject faults per Produce request through ``fault``: answer with an error
code for every partition, or swallow the reply (the write happened, the
answer is lost). A swallowed reply with requests pipelined behind it makes
the client see responses out of order and drop the connection, as after a
real disconnect; alone, it makes the request time out. Either way the
client resends. A stall (``("stall", seconds)``) writes the records and
then holds every reply of every broker for ``seconds``: the broker stops
answering, then answers late on the connections still open.

:func:`drive` runs the pump like ``Pump.run`` and also ends stalls on
time and stamps every ``BatchCompleted`` with the time it was reported
(``ScriptedLog.reported``), for tests of the delivery timeout.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkacore.producer import BatchCompleted, ProducerConfig, ProducerCore
from kafkacore.protocol import messages as m
from kafkacore.protocol.messages.add_partitions_to_txn_response import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnTopicResult,
)
from kafkacore.protocol.messages.api_versions_response import ApiVersion, FinalizedFeatureKey
from kafkacore.protocol.messages.produce_response import (
    PartitionProduceResponse,
    TopicProduceResponse,
)
from kafkacore.protocol.messages.txn_offset_commit_response import (
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)
from kafkacore.records import RecordBatch, iter_batches
from tests.client.fakebroker import FakeBroker, Pump, Topic, make_cluster

#: A fault for one Produce request: None (answer normally), ("error", code)
#: before writing, ("lose",) write but drop the reply, ("stall", seconds)
#: write, then hold every broker's replies for that long.
Fault = tuple[Any, ...] | None


@dataclass
class _ProducerState:
    epoch: int
    batches: list[tuple[int, int, int]] = field(default_factory=list)  # first, last, offset


class ScriptedLog:
    def __init__(self) -> None:
        self.logs: dict[tuple[str, int], list[tuple[bytes | None, bytes | None]]] = {}
        self.state: dict[tuple[str, int, int], _ProducerState] = {}
        self.next_pid = 1000
        self.epochs: dict[int, int] = {}
        self.fault: Callable[[], Fault] = lambda: None
        self.produce_requests = 0
        #: Batches with more records are refused with MESSAGE_TOO_LARGE.
        self.max_batch_records: int | None = None
        #: Set by ``boot_producer(tv2=...)``: answers the transaction APIs.
        self.coordinator: ScriptedCoordinator | None = None
        #: Produce versions seen, in order.
        self.produce_versions: list[int] = []
        #: The test's clock (set by boot_producer) and when a stall ends.
        self.clock: Callable[[], float] = lambda: 0.0
        self.stalled_until: float | None = None
        self.brokers: list[FakeBroker] = []
        #: (time reported, event) for every BatchCompleted seen by drive().
        self.reported: list[tuple[float, BatchCompleted]] = []
        self.stamped = 0  # how many of the pump's events drive() has looked at
        #: Time each Produce request reached a broker.
        self.produce_times: list[float] = []

    def install(self, brokers: dict[Any, FakeBroker]) -> None:
        self.brokers = list(brokers.values())
        for broker in brokers.values():
            broker.handlers[0] = self.produce
            broker.handlers[22] = self.init_producer_id

    def init_producer_id(self, broker: FakeBroker, body: Any, version: int, session: Any) -> Any:
        if body.producer_id >= 0:
            pid = body.producer_id
            self.epochs[pid] += 1
        else:
            pid = self.next_pid
            self.next_pid += 1
            self.epochs[pid] = 0
        return m.InitProducerIdResponse(producer_id=pid, producer_epoch=self.epochs[pid])

    def _append(self, tp: tuple[str, int], data: bytes) -> tuple[int, int]:
        log = self.logs.setdefault(tp, [])
        code, base = 0, len(log)
        for batch in iter_batches(data):
            assert isinstance(batch, RecordBatch), "the producer writes v2 batches only"
            pid, epoch, seq = batch.producer_id, batch.producer_epoch, batch.base_sequence
            n = batch.record_count
            if self.max_batch_records is not None and n > self.max_batch_records:
                return 10, -1
            if pid >= 0:
                key = (tp[0], tp[1], pid)
                st = self.state.get(key)
                if st is None or epoch > st.epoch:
                    if seq != 0:
                        return 45, -1
                    st = self.state[key] = _ProducerState(epoch)
                elif epoch < st.epoch:
                    return 47, -1
                else:
                    for first, last, offset in st.batches:
                        if (first, last) == (seq, seq + n - 1):
                            return 0, offset
                    if st.batches and seq != st.batches[-1][1] + 1:
                        return 45, -1
                    if not st.batches and seq != 0:
                        return 45, -1
                st.batches.append((seq, seq + n - 1, len(log)))
                del st.batches[:-5]
            base = len(log)
            for record in batch:
                log.append((record.key, record.value))
        return code, base

    def produce(self, broker: FakeBroker, body: Any, version: int, session: Any) -> Any:
        self.produce_requests += 1
        self.produce_versions.append(version)
        self.produce_times.append(self.clock())
        fault = self.fault()
        if fault is not None and fault[0] == "stall":
            self.stalled_until = self.clock() + fault[1]
            for b in self.brokers:
                b.hold = True
        topics = []
        for t in body.topic_data:
            parts = []
            for p in t.partition_data:
                if fault is not None and fault[0] == "error":
                    parts.append(PartitionProduceResponse(index=p.index, error_code=fault[1]))
                    continue
                code, base = self._append((t.name, p.index), bytes(p.records))
                parts.append(
                    PartitionProduceResponse(index=p.index, error_code=code, base_offset=base)
                )
            topics.append(TopicProduceResponse(name=t.name, partition_responses=parts))
        if body.acks == 0 or (fault is not None and fault[0] == "lose"):
            return None
        return m.ProduceResponse(responses=topics)


class ScriptedCoordinator:
    """A transaction coordinator for :class:`ScriptedLog`'s producer ids.

    With ``tv2`` the brokers advertise the finalized feature
    ``transaction.version`` 2 in ApiVersions; EndTxn v5+ then bumps the
    epoch and answers with it, as KIP-890 part 2 coordinators do. Every
    request is kept in ``calls`` as ``(api_key, version)``.
    """

    def __init__(self, log: ScriptedLog, *, tv2: bool) -> None:
        self.log = log
        self.tv2 = tv2
        self.calls: list[tuple[int, int]] = []
        self.ended: list[tuple[bool, int, int]] = []  # (committed, producer id, epoch sent)

    def install(self, brokers: dict[Any, FakeBroker]) -> None:
        for broker in brokers.values():
            broker.handlers[18] = self.api_versions
            broker.handlers[24] = self.add_partitions
            broker.handlers[25] = self.add_offsets
            broker.handlers[26] = self.end_txn
            broker.handlers[28] = self.txn_offset_commit

    def api_versions(self, broker: FakeBroker, body: Any, version: int, session: Any) -> Any:
        features = (
            [
                FinalizedFeatureKey(
                    name="transaction.version", min_version_level=2, max_version_level=2
                )
            ]
            if self.tv2
            else []
        )
        return m.ApiVersionsResponse(
            api_keys=[
                ApiVersion(api_key=k, min_version=lo, max_version=hi)
                for k, (lo, hi) in sorted(broker.cluster.api_ranges.items())
            ],
            finalized_features_epoch=1 if self.tv2 else -1,
            finalized_features=features,
        )

    def add_partitions(self, broker: FakeBroker, body: Any, version: int, session: Any) -> Any:
        self.calls.append((24, version))
        return m.AddPartitionsToTxnResponse(
            results_by_topic_v3_and_below=[
                AddPartitionsToTxnTopicResult(
                    name=t.name,
                    results_by_partition=[
                        AddPartitionsToTxnPartitionResult(partition_index=p) for p in t.partitions
                    ],
                )
                for t in body.v3_and_below_topics
            ]
        )

    def add_offsets(self, broker: FakeBroker, body: Any, version: int, session: Any) -> Any:
        self.calls.append((25, version))
        return m.AddOffsetsToTxnResponse()

    def txn_offset_commit(self, broker: FakeBroker, body: Any, version: int, session: Any) -> Any:
        self.calls.append((28, version))
        return m.TxnOffsetCommitResponse(
            topics=[
                TxnOffsetCommitResponseTopic(
                    name=t.name,
                    partitions=[
                        TxnOffsetCommitResponsePartition(partition_index=p.partition_index)
                        for p in t.partitions
                    ],
                )
                for t in body.topics
            ]
        )

    def end_txn(self, broker: FakeBroker, body: Any, version: int, session: Any) -> Any:
        self.calls.append((26, version))
        self.ended.append((body.committed, body.producer_id, body.producer_epoch))
        if version < 5:
            return m.EndTxnResponse()
        pid = body.producer_id
        self.log.epochs[pid] += 1
        return m.EndTxnResponse(producer_id=pid, producer_epoch=self.log.epochs[pid])


def boot_producer(
    *,
    partitions: int = 3,
    brokers: int = 1,
    seed: int = 0,
    topics: list[Topic] | None = None,
    **options: Any,
) -> tuple[ProducerCore, Pump, ScriptedLog]:
    topics = topics if topics is not None else [Topic("t", partitions)]
    _cluster, fakes = make_cluster(brokers, topics)
    log = ScriptedLog()
    log.install(fakes)
    tv2 = options.pop("tv2", None)
    if tv2 is not None:
        log.coordinator = ScriptedCoordinator(log, tv2=tv2)
        log.coordinator.install(fakes)
    client = {"bootstrap_servers": "127.0.0.1:9092"}
    client.update(options.pop("client", {}))
    config = ProducerConfig(client=client, **options)
    core = ProducerCore(config, now=0.0, rng=random.Random(seed))
    pump = Pump(core, fakes)  # type: ignore[arg-type]
    log.clock = lambda: pump.now
    return core, pump, log


def end_stall(pump: Pump, log: ScriptedLog) -> None:
    """The brokers answer again: held replies reach the connections still open."""
    log.stalled_until = None
    for broker in log.brokers:
        broker.hold = False
    pump.release()


def drop_connections(pump: Pump) -> int:
    """Every connection breaks (as a reset by the peer); returns how many."""
    conns = list(pump.conns)
    for conn_id in conns:
        pump.conns.pop(conn_id, None)
        pump.to_client.pop(conn_id, None)
        pump.core.connection_lost(
            conn_id, ConnectionResetError("connection reset by peer"), now=pump.now
        )
    pump.drain()
    return len(conns)


def drive(
    pump: Pump,
    log: ScriptedLog,
    *,
    until: Callable[[], bool],
    rounds: int = 20_000,
    between: Callable[[], None] | None = None,
) -> None:
    """``Pump.run`` that ends stalls on time and stamps reports; see the module docstring.

    ``between`` runs after every round (e.g. to break connections).
    """

    def stamp() -> None:
        for event in pump.events[log.stamped :]:
            if isinstance(event, BatchCompleted):
                log.reported.append((pump.now, event))
        log.stamped = len(pump.events)

    for _ in range(rounds):
        stamp()
        if until():
            return
        if log.stalled_until is not None and pump.now >= log.stalled_until:
            end_stall(pump, log)
            continue
        progress = pump.step()
        if between is not None:
            between()
        if progress:
            continue
        deadline = pump.core.next_deadline()
        wake = math.inf if deadline is None else deadline
        if log.stalled_until is not None:
            wake = min(wake, log.stalled_until)
        if wake is math.inf:
            break
        pump.now = max(pump.now, wake)
        pump.core.handle_timeout(now=pump.now)
        pump.drain()
    stamp()
    if not until():
        raise AssertionError(f"drive: condition not reached in {rounds} rounds")

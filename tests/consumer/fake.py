"""Fake-broker handlers for the consumer core: a partition log, fetch sessions
(KIP-227, checked like the broker checks them), ListOffsets, OffsetCommit /
OffsetFetch, OffsetForLeaderEpoch, and the classic group APIs through the
scripted coordinator of tests/group/sim.py.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from kafkacore.client.config import ClientConfig
from kafkacore.client.metadata import TopicPartition
from kafkacore.consumer import ConsumerConfig, ConsumerCore
from kafkacore.protocol import messages as m
from kafkacore.protocol.messages.fetch_response import (
    AbortedTransaction,
    EpochEndOffset,
    FetchableTopicResponse,
    PartitionData,
)
from kafkacore.protocol.messages.list_offsets_response import (
    ListOffsetsPartitionResponse,
    ListOffsetsTopicResponse,
)
from kafkacore.protocol.messages.offset_commit_response import (
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from kafkacore.protocol.messages.offset_fetch_response import (
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopics,
)
from kafkacore.protocol.messages.offset_for_leader_epoch_response import (
    EpochEndOffset as OffsetForLeaderEpochEnd,
)
from kafkacore.protocol.messages.offset_for_leader_epoch_response import (
    OffsetForLeaderTopicResult,
)
from kafkacore.records import RecordBatchBuilder
from tests.client.fakebroker import FakeBroker, Pump, Topic, make_cluster
from tests.group.sim import Coordinator


@dataclass
class Log:
    """One partition: batches as (base_offset, bytes), plus aborted transactions."""

    batches: list[tuple[int, bytes]] = field(default_factory=list)
    end: int = 0
    aborted: list[tuple[int, int]] = field(default_factory=list)
    epoch: int = 0

    def append(self, values: list[bytes], **kw: Any) -> int:
        b = RecordBatchBuilder(base_offset=self.end, partition_leader_epoch=self.epoch, **kw)
        for v in values:
            b.append(v, timestamp=1000 + self.end)
        self.batches.append((self.end, b.build()))
        first = self.end
        self.end += len(values)
        return first

    def append_raw(self, data: bytes, count: int) -> None:
        self.batches.append((self.end, data))
        self.end += count

    def read(self, offset: int) -> bytes:
        return b"".join(
            data for base, data in self.batches if base >= offset or self._contains(base, offset)
        )

    def _contains(self, base: int, offset: int) -> bool:
        nxt = [b for b, _ in self.batches if b > base]
        return base <= offset < (min(nxt) if nxt else self.end)


@dataclass
class FakeKafka:
    logs: dict[TopicPartition, Log] = field(default_factory=dict)
    committed: dict[TopicPartition, tuple[int, str]] = field(default_factory=dict)
    commit_errors: list[dict[TopicPartition, int]] = field(default_factory=list)
    fetch_error: dict[TopicPartition, int] = field(default_factory=dict)
    diverging: dict[TopicPartition, tuple[int, int]] = field(default_factory=dict)
    epoch_end: dict[TopicPartition, tuple[int, int]] = field(default_factory=dict)
    sessions: dict[int, dict[TopicPartition, int]] = field(default_factory=dict)
    session_epochs: dict[int, int] = field(default_factory=dict)
    fetches: list[Any] = field(default_factory=list)
    commits: list[Any] = field(default_factory=list)
    next_session: int = 100
    drop_sessions: bool = False
    coord: Coordinator = field(default_factory=Coordinator)

    def log(self, topic: str, partition: int) -> Log:
        return self.logs.setdefault(TopicPartition(topic, partition), Log())

    # -- handlers ------------------------------------------------------------
    def fetch(self, broker: FakeBroker, body: Any, version: int, session: dict[str, Any]) -> Any:
        self.fetches.append(body)
        if self.drop_sessions and body.session_id:
            self.drop_sessions = False
            return m.FetchResponse(error_code=70)
        wanted: dict[TopicPartition, int]
        if body.session_id == 0:
            wanted = {
                TopicPartition(t.topic, p.partition): p.fetch_offset
                for t in body.topics
                for p in t.partitions
            }
            sid = 0
            if body.session_epoch == 0:
                self.next_session += 1
                sid = self.next_session
                self.sessions[sid] = dict(wanted)
                self.session_epochs[sid] = 1
            full = True
        else:
            sid = body.session_id
            if sid not in self.sessions:
                return m.FetchResponse(error_code=70)
            if body.session_epoch != self.session_epochs[sid]:
                return m.FetchResponse(error_code=71)
            self.session_epochs[sid] += 1
            cache = self.sessions[sid]
            for t in body.forgotten_topics_data:
                for p in t.partitions:
                    cache.pop(TopicPartition(t.topic, p), None)
            for t in body.topics:
                for p in t.partitions:
                    cache[TopicPartition(t.topic, p.partition)] = p.fetch_offset
            wanted = dict(cache)
            full = False
        out: dict[str, list[PartitionData]] = {}
        for tp, offset in wanted.items():
            log = self.logs.get(tp, Log())
            err = self.fetch_error.pop(tp, 0)
            pd = PartitionData(
                partition_index=tp.partition,
                error_code=err,
                high_watermark=log.end,
                last_stable_offset=log.end,
                log_start_offset=0,
            )
            if err == 0:
                if tp in self.diverging:
                    ep, end = self.diverging.pop(tp)
                    pd.diverging_epoch = EpochEndOffset(epoch=ep, end_offset=end)
                else:
                    data = log.read(offset)
                    pd.records = data
                    pd.aborted_transactions = [
                        AbortedTransaction(producer_id=pid, first_offset=fo)
                        for pid, fo in log.aborted
                    ]
                    if not data and not full:
                        continue  # incremental: nothing new, nothing said
            out.setdefault(tp.topic, []).append(pd)
        return (
            m.FetchResponse(
                session_id=sid,
                responses=[FetchableTopicResponse(topic=t, partitions=ps) for t, ps in out.items()],
            ),
            version,
        )

    def list_offsets(
        self, broker: FakeBroker, body: Any, version: int, session: dict[str, Any]
    ) -> Any:
        topics = []
        for t in body.topics:
            parts = []
            for p in t.partitions:
                log = self.logs.get(TopicPartition(t.name, p.partition_index), Log())
                off = (
                    0
                    if p.timestamp == -2
                    else log.end
                    if p.timestamp == -1
                    else self._by_time(log, p.timestamp)
                )
                parts.append(
                    ListOffsetsPartitionResponse(
                        partition_index=p.partition_index,
                        offset=off,
                        timestamp=-1,
                        leader_epoch=log.epoch,
                    )
                )
            topics.append(ListOffsetsTopicResponse(name=t.name, partitions=parts))
        return m.ListOffsetsResponse(topics=topics)

    def _by_time(self, log: Log, ts: int) -> int:
        # Record i of the log has timestamp 1000 + i (see Log.append).
        off = max(ts - 1000, 0)
        return off if off < log.end else -1

    def offset_commit(
        self, broker: FakeBroker, body: Any, version: int, session: dict[str, Any]
    ) -> Any:
        self.commits.append(body)
        errors = self.commit_errors.pop(0) if self.commit_errors else {}
        topics = []
        for t in body.topics:
            parts = []
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                code = errors.get(tp, 0)
                if code == 0:
                    self.committed[tp] = (p.committed_offset, p.committed_metadata or "")
                parts.append(
                    OffsetCommitResponsePartition(
                        partition_index=p.partition_index, error_code=code
                    )
                )
            topics.append(OffsetCommitResponseTopic(name=t.name, partitions=parts))
        return m.OffsetCommitResponse(topics=topics)

    def offset_fetch(
        self, broker: FakeBroker, body: Any, version: int, session: dict[str, Any]
    ) -> Any:
        groups = []
        for g in body.groups:
            topics = []
            for t in g.topics or []:
                parts = []
                for p in t.partition_indexes:
                    off, meta = self.committed.get(TopicPartition(t.name, p), (-1, ""))
                    parts.append(
                        OffsetFetchResponsePartitions(
                            partition_index=p, committed_offset=off, metadata=meta
                        )
                    )
                topics.append(OffsetFetchResponseTopics(name=t.name, partitions=parts))
            groups.append(OffsetFetchResponseGroup(group_id=g.group_id, topics=topics))
        return m.OffsetFetchResponse(groups=groups)

    def epochs(self, broker: FakeBroker, body: Any, version: int, session: dict[str, Any]) -> Any:
        topics = []
        for t in body.topics:
            parts = []
            for p in t.partitions:
                ep, end = self.epoch_end.get(
                    TopicPartition(t.topic, p.partition), (p.leader_epoch, 10**9)
                )
                parts.append(
                    OffsetForLeaderEpochEnd(partition=p.partition, leader_epoch=ep, end_offset=end)
                )
            topics.append(OffsetForLeaderTopicResult(topic=t.topic, partitions=parts))
        return m.OffsetForLeaderEpochResponse(topics=topics)

    def group(self, broker: FakeBroker, body: Any, version: int, session: dict[str, Any]) -> Any:
        box: list[Any] = []
        self.coord.handle(body, box.append)
        return box[0] if box else None

    def install(self, fakes: dict[Any, FakeBroker]) -> None:
        for broker in fakes.values():
            broker.handlers.update(
                {
                    1: self.fetch,
                    2: self.list_offsets,
                    8: self.offset_commit,
                    9: self.offset_fetch,
                    23: self.epochs,
                    11: self.group,
                    14: self.group,
                    12: self.group,
                    13: self.group,
                }
            )


def boot_consumer(
    topics: list[Topic] | None = None, *, n: int = 1, seed: int = 0, **consumer: Any
) -> tuple[ConsumerCore, Pump, FakeKafka, Any]:
    cluster, fakes = make_cluster(n, topics or [Topic("t", 2)])
    # Versions that name topics (the fake cluster has no topic ids).
    cluster.api_ranges[1] = (4, 12)
    cluster.api_ranges[8] = (2, 9)
    cluster.api_ranges[9] = (1, 9)
    kafka = FakeKafka()
    kafka.install(fakes)
    core = ConsumerCore(
        ClientConfig(bootstrap_servers="127.0.0.1:9092"),
        ConsumerConfig(**consumer),
        now=0.0,
        rng=random.Random(seed),
    )
    pump = Pump(core, fakes)  # type: ignore[arg-type]
    pump.run(until=lambda: core.client.cluster.update_count > 0)
    return core, pump, kafka, cluster

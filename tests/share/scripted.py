"""A scripted share-group broker for the share machines' tests (KIP-932).

It keeps, per partition, each record's state as the broker does: available,
acquired (by a member, with a delivery count and a lock expiry),
acknowledged or archived (rejected, or out of deliveries). ShareFetch and
ShareAcknowledge sessions are checked like the broker checks them (epoch 0
opens, each answer moves it on, -1 closes and releases what the session
holds). Every acknowledgement the client sends is checked against what it
holds: ``violations`` lists each breach (an offset acknowledged that the
member does not hold in that delivery, a record accepted twice).
"""

from __future__ import annotations

import enum
import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from kafkacore.client.config import ClientConfig
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.messages import share_acknowledge_response as ar
from kafkacore.protocol.messages import share_fetch_response as fr
from kafkacore.protocol.messages import share_group_heartbeat_response as hr
from kafkacore.records import RecordBatchBuilder
from kafkacore.share import ShareConsumerConfig, ShareConsumerCore
from tests.client.fakebroker import FakeBroker, Pump, Topic, make_cluster


class St(enum.Enum):
    AVAILABLE = "available"
    ACQUIRED = "acquired"
    ACKNOWLEDGED = "acknowledged"
    ARCHIVED = "archived"


@dataclass
class Rec:
    value: bytes
    state: St = St.AVAILABLE
    count: int = 0
    owner: str = ""
    expires: float = 0.0


@dataclass
class Session:
    member: str
    epoch: int
    partitions: set[tuple[str, int]] = field(default_factory=set)


def topic_id(name: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_DNS, name)


class ShareKafka:
    """The scripted broker; ``clock()`` is the pump's time (lock expiry)."""

    def __init__(self, clock: Any, *, lock_ms: int = 30000, max_deliveries: int = 5) -> None:
        self.clock = clock
        self.lock_ms = lock_ms
        self.max_deliveries = max_deliveries
        self.logs: dict[tuple[str, int], list[Rec]] = {}
        self.members: dict[str, int] = {}
        self.sessions: dict[tuple[int, str], Session] = {}
        self.violations: list[str] = []
        self.accepted: dict[tuple[str, int, int], int] = {}
        self.names: dict[uuid.UUID, str] = {}
        #: Acknowledgement outcome to answer (e.g. INVALID_RECORD_STATE); NONE normally.
        self.ack_error = ErrorCode.NONE

    def produce(self, topic: str, partition: int, values: list[bytes]) -> None:
        self.logs.setdefault((topic, partition), []).extend(Rec(v) for v in values)

    def install(self, cluster: Any, fakes: dict[Any, FakeBroker]) -> None:
        plain = cluster.metadata

        def metadata(request: Any) -> Any:
            resp = plain(request)
            for t in resp.topics:
                t.topic_id = topic_id(t.name)
                self.names[t.topic_id] = t.name
            return resp

        cluster.metadata = metadata
        for broker in fakes.values():
            broker.handlers.update({76: self.heartbeat, 78: self.fetch, 79: self.acknowledge})

    # ------------------------------------------------------------ membership
    def heartbeat(self, broker: FakeBroker, body: Any, version: int, session: Any) -> Any:
        if body.member_epoch == -1:
            self.members.pop(body.member_id, None)
            self._release(body.member_id, None)
            return m.ShareGroupHeartbeatResponse(member_id=body.member_id, member_epoch=-1)
        if body.member_epoch == 0:
            self.members[body.member_id] = self.members.get(body.member_id, 0) + 1
        elif self.members.get(body.member_id) != body.member_epoch:
            return m.ShareGroupHeartbeatResponse(error_code=ErrorCode.FENCED_MEMBER_EPOCH)
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(self.logs):
            if t in (body.subscribed_topic_names or []):
                by_topic.setdefault(t, []).append(p)
        return m.ShareGroupHeartbeatResponse(
            member_id=body.member_id,
            member_epoch=self.members[body.member_id],
            heartbeat_interval_ms=1000,
            assignment=hr.Assignment(
                topic_partitions=[
                    hr.TopicPartitions(topic_id=topic_id(t), partitions=ps)
                    for t, ps in by_topic.items()
                ]
            ),
        )

    # ------------------------------------------------------------- sessions
    def _session(self, broker: FakeBroker, body: Any) -> tuple[Session | None, int]:
        key = (broker.node_id, body.member_id)
        epoch = body.share_session_epoch
        if epoch == 0:
            old = self.sessions.get(key)
            if old is not None:  # a new session replaces the old one, which lets go
                self._release(body.member_id, old)
            self.sessions[key] = Session(body.member_id, 0)
            return self.sessions[key], ErrorCode.NONE
        found = self.sessions.get(key)
        if found is None:
            return None, ErrorCode.SHARE_SESSION_NOT_FOUND
        if epoch != -1 and epoch != found.epoch:
            return None, ErrorCode.INVALID_SHARE_SESSION_EPOCH
        return found, ErrorCode.NONE

    def _expire(self) -> None:
        now = self.clock()
        for recs in self.logs.values():
            for r in recs:
                if r.state is St.ACQUIRED and r.expires <= now:
                    self._give_back(r)

    def _give_back(self, r: Rec) -> None:
        r.owner = ""
        r.state = St.ARCHIVED if r.count >= self.max_deliveries else St.AVAILABLE

    def _release(self, member: str, session: Session | None) -> None:
        for key, recs in self.logs.items():
            if session is not None and key not in session.partitions:
                continue
            for r in recs:
                if r.state is St.ACQUIRED and r.owner == member:
                    self._give_back(r)

    def _apply(self, member: str, tp: tuple[str, int], batches: list[Any]) -> int:
        self._expire()
        recs = self.logs[tp]
        for b in batches:
            for i, offset in enumerate(range(b.first_offset, b.last_offset + 1)):
                kind = b.acknowledge_types[0 if len(b.acknowledge_types) == 1 else i]
                r = recs[offset] if offset < len(recs) else None
                if r is None or r.state is not St.ACQUIRED or r.owner != member:
                    self.violations.append(f"{tp} offset {offset}: acknowledged but not held")
                    continue
                if kind == 1:
                    r.state = St.ACKNOWLEDGED
                    key = (*tp, offset)
                    self.accepted[key] = self.accepted.get(key, 0) + 1
                    if self.accepted[key] > 1:
                        self.violations.append(f"{tp} offset {offset}: accepted twice")
                elif kind == 2:
                    self._give_back(r)
                elif kind in (0, 3):
                    r.state = St.ARCHIVED
        return self.ack_error

    def _acquire(self, member: str, tp: tuple[str, int], limit: int) -> fr.PartitionData:
        recs = self.logs[tp]
        taken: list[int] = []
        for offset, r in enumerate(recs):
            if len(taken) >= limit:
                break
            if r.state is St.AVAILABLE:
                r.state, r.owner = St.ACQUIRED, member
                r.count += 1
                r.expires = self.clock() + self.lock_ms / 1000
                taken.append(offset)
        data = fr.PartitionData(partition_index=tp[1], records=b"")
        if not taken:
            return data
        # One batch from the first to the last acquired offset: it may hold
        # records acquired by others in between, which the client must skip.
        builder = RecordBatchBuilder(base_offset=taken[0])
        for offset in range(taken[0], taken[-1] + 1):
            builder.append(recs[offset].value, timestamp=1000 + offset)
        data.records = builder.build()
        data.acquired_records = [
            fr.AcquiredRecords(first_offset=o, last_offset=o, delivery_count=recs[o].count)
            for o in taken
        ]
        return data

    def fetch(self, broker: FakeBroker, body: Any, version: int, session: Any) -> Any:
        found, code = self._session(broker, body)
        if found is None:
            return m.ShareFetchResponse(error_code=code)
        if body.share_session_epoch == 0 and any(
            p.acknowledgement_batches for t in body.topics for p in t.partitions
        ):
            return m.ShareFetchResponse(error_code=ErrorCode.INVALID_REQUEST)
        for t in body.forgotten_topics_data:
            for p in t.partitions:
                found.partitions.discard((self.names[t.topic_id], p))
        ack_codes: dict[tuple[str, int], int] = {}
        for t in body.topics:
            for p in t.partitions:
                tp = (self.names[t.topic_id], p.partition_index)
                found.partitions.add(tp)
                if p.acknowledgement_batches:
                    ack_codes[tp] = self._apply(body.member_id, tp, p.acknowledgement_batches)
        found.epoch += 1
        self._expire()
        budget = body.max_records or 500
        parts: dict[str, list[fr.PartitionData]] = {}
        for tp in sorted(found.partitions | set(ack_codes)):
            data = self._acquire(body.member_id, tp, budget) if tp in found.partitions else None
            data = data or fr.PartitionData(partition_index=tp[1], records=b"")
            budget -= len(data.acquired_records)
            data.acknowledge_error_code = ack_codes.get(tp, 0)
            parts.setdefault(tp[0], []).append(data)
        return m.ShareFetchResponse(
            acquisition_lock_timeout_ms=self.lock_ms,
            responses=[
                fr.ShareFetchableTopicResponse(topic_id=topic_id(t), partitions=ps)
                for t, ps in parts.items()
            ],
        )

    def acknowledge(self, broker: FakeBroker, body: Any, version: int, session: Any) -> Any:
        found, code = self._session(broker, body)
        if found is None or body.share_session_epoch == 0:
            return m.ShareAcknowledgeResponse(error_code=code or ErrorCode.INVALID_REQUEST)
        parts: dict[str, list[ar.PartitionData]] = {}
        for t in body.topics:
            for p in t.partitions:
                tp = (self.names[t.topic_id], p.partition_index)
                err = self._apply(body.member_id, tp, p.acknowledgement_batches)
                parts.setdefault(tp[0], []).append(
                    ar.PartitionData(partition_index=p.partition_index, error_code=err)
                )
        if body.share_session_epoch == -1:
            self._release(body.member_id, found)
            del self.sessions[(broker.node_id, body.member_id)]
        else:
            found.epoch += 1
        return m.ShareAcknowledgeResponse(
            acquisition_lock_timeout_ms=self.lock_ms,
            responses=[
                ar.ShareAcknowledgeTopicResponse(topic_id=topic_id(t), partitions=ps)
                for t, ps in parts.items()
            ],
        )


def boot_share(
    partitions: int = 2,
    *,
    n: int = 1,
    seed: int = 0,
    lock_ms: int = 30000,
    **config: Any,
) -> tuple[ShareConsumerCore, Pump, ShareKafka]:
    """A share consumer core against ``n`` scripted brokers, topic ``t`` subscribed."""
    leaders = {p: p % n for p in range(partitions)}
    cluster, fakes = make_cluster(n, [Topic("t", partitions, leaders=leaders)])
    holder: list[Pump] = []
    kafka = ShareKafka(lambda: holder[0].now, lock_ms=lock_ms)
    for p in range(partitions):
        kafka.logs[("t", p)] = []
    kafka.install(cluster, fakes)
    config.setdefault("group_id", "g")
    core = ShareConsumerCore(
        ClientConfig(bootstrap_servers="127.0.0.1:9092"),
        ShareConsumerConfig(**config),
        now=0.0,
        rng=random.Random(seed),
    )
    pump = Pump(core, fakes)  # type: ignore[arg-type]
    holder.append(pump)
    core.subscribe(["t"], now=0.0)
    pump.run(until=lambda: bool(core.assignment()))
    return core, pump, kafka

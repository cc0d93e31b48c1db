"""Share consumers against a real broker (KIP-932): the three transports in one
group, released and rejected records, and a member killed while holding records.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import trio

from kafkacore.share import AcknowledgeType, ShareRecord
from kafkacore.testing.cluster import LocalKafka
from kafkacore.transports.asyncio import AsyncKafkaShareConsumer
from kafkacore.transports.selector import KafkaAdminClient, KafkaShareConsumer
from kafkacore.transports.trio import TrioKafkaShareConsumer
from tests.share.broker_util import prepare_group, produce

pytestmark = pytest.mark.broker

PARTITIONS = 6
RECORDS = 300


@dataclass
class Tally:
    """What the members did, shared by their threads."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    accepted: list[tuple[int, int]] = field(default_factory=list)
    rejected: list[tuple[int, int]] = field(default_factory=list)
    released: dict[tuple[int, int], int] = field(default_factory=dict)
    counts: dict[tuple[int, int], list[int]] = field(default_factory=dict)
    by_member: dict[str, int] = field(default_factory=dict)
    ack_errors: list[BaseException] = field(default_factory=list)
    assigned: set[str] = field(default_factory=set)
    stop: threading.Event = field(default_factory=threading.Event)

    def decide(self, who: str, rec: ShareRecord) -> AcknowledgeType:
        """Release every 10th+3 record once, reject every 10th+7, accept the rest."""
        i = int(rec.value or b"0")
        key = (rec.partition, rec.offset)
        kind = AcknowledgeType.ACCEPT
        if i % 10 == 3 and rec.delivery_count == 1:
            kind = AcknowledgeType.RELEASE
        elif i % 10 == 7:
            kind = AcknowledgeType.REJECT
        with self.lock:
            self.counts.setdefault(key, []).append(rec.delivery_count)
            self.by_member[who] = self.by_member.get(who, 0) + 1
            if kind is AcknowledgeType.ACCEPT:
                self.accepted.append(key)
            elif kind is AcknowledgeType.REJECT:
                self.rejected.append(key)
            else:
                self.released[key] = rec.delivery_count
        return kind

    def callback(self, offsets: dict[Any, frozenset[int]], error: BaseException | None) -> None:
        if error is not None:
            with self.lock:
                self.ack_errors.append(error)

    def done(self) -> bool:
        with self.lock:
            return len(set(self.accepted) | set(self.rejected)) >= RECORDS


def _options(tally: Tally, kafka: LocalKafka, group: str) -> dict[str, Any]:
    return {
        "group_id": group,
        "bootstrap_servers": kafka.bootstrap,
        "acknowledgement_mode": "explicit",
        "acknowledgement_commit_callback": tally.callback,
        "max_poll_records": 20,
    }


def _selector(tally: Tally, kafka: LocalKafka, topic: str, group: str) -> None:
    with KafkaShareConsumer(topic, **_options(tally, kafka, group)) as consumer:
        while not tally.stop.is_set():
            for rec in consumer.poll(0.2):
                consumer.acknowledge(rec, tally.decide("selector", rec))
            if consumer.assignment():
                tally.assigned.add("selector")


def _asyncio(tally: Tally, kafka: LocalKafka, topic: str, group: str) -> None:
    async def run() -> None:
        async with AsyncKafkaShareConsumer(topic, **_options(tally, kafka, group)) as consumer:
            while not tally.stop.is_set():
                for rec in await consumer.poll(0.2):
                    consumer.acknowledge(rec, tally.decide("asyncio", rec))
                if consumer.assignment():
                    tally.assigned.add("asyncio")

    asyncio.run(run())


def _trio(tally: Tally, kafka: LocalKafka, topic: str, group: str) -> None:
    async def run() -> None:
        async with TrioKafkaShareConsumer(topic, **_options(tally, kafka, group)) as consumer:
            while not tally.stop.is_set():
                for rec in await consumer.poll(0.2):
                    consumer.acknowledge(rec, tally.decide("trio", rec))
                if consumer.assignment():
                    tally.assigned.add("trio")

    trio.run(run)


def _wait(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_three_transports_share_one_group(share_broker: LocalKafka, unique: str) -> None:
    topic, group = f"share3-{unique}", f"g3-{unique}"
    prepare_group(share_broker, topic, PARTITIONS, group, lock_ms=4000)
    tally = Tally()
    errors: list[BaseException] = []

    def guarded(fn: Callable[..., None]) -> Callable[[], None]:
        def run() -> None:
            try:
                fn(tally, share_broker, topic, group)
            except BaseException as exc:  # reported by the test thread
                errors.append(exc)
                tally.stop.set()

        return run

    threads = [threading.Thread(target=guarded(f)) for f in (_selector, _asyncio, _trio)]
    for t in threads:
        t.start()
    try:
        _wait(lambda: len(tally.assigned) == 3 or bool(errors), 60, "three assigned members")
        produce(share_broker, topic, PARTITIONS, RECORDS)
        _wait(lambda: tally.done() or bool(errors), 90, "every record settled")
    finally:
        tally.stop.set()
        for t in threads:
            t.join(30)
    assert errors == []
    # Every record was accepted exactly once or rejected, across the whole group.
    assert len(tally.accepted) == len(set(tally.accepted))
    assert not set(tally.accepted) & set(tally.rejected)
    assert len(set(tally.accepted) | set(tally.rejected)) == RECORDS
    assert len(tally.rejected) == RECORDS // 10
    # Released records came back (to any member) with a higher delivery count.
    assert len(tally.released) == RECORDS // 10
    for key, count in tally.released.items():
        assert max(tally.counts[key]) > count, key
        assert key in tally.accepted
    assert tally.ack_errors == []
    assert set(tally.by_member) == {"selector", "asyncio", "trio"}, tally.by_member
    # The broker agrees: nothing is left to deliver.
    with KafkaAdminClient(bootstrap_servers=share_broker.bootstrap) as admin:
        offsets = admin.list_share_group_offsets(group)
    assert offsets and all(o is not None and o.lag == 0 for o in offsets.values()), offsets


_HOLDER = """
import sys, time
from kafkacore.transports.selector import KafkaShareConsumer
c = KafkaShareConsumer(sys.argv[2], group_id=sys.argv[3], bootstrap_servers=sys.argv[1],
                       acknowledgement_mode="explicit")
held = []
deadline = time.monotonic() + 60
while not held and time.monotonic() < deadline:
    held = c.poll(0.5)
print(" ".join(f"{r.partition}:{r.offset}" for r in held), flush=True)
time.sleep(600)
"""


def test_killed_member_records_come_back_after_the_lock(
    share_broker: LocalKafka, unique: str
) -> None:
    topic, group = f"sharekill-{unique}", f"gk-{unique}"
    lock_ms = 3000
    prepare_group(share_broker, topic, 2, group, lock_ms=lock_ms)
    produce(share_broker, topic, 2, 20)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, share_broker.bootstrap, topic, group],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        line = holder.stdout.readline().split()
        held = {(int(p), int(o)) for p, o in (x.split(":") for x in line)}
        assert held, "the holder got no records"
    finally:
        holder.kill()  # no acknowledgement, no leave: its locks must run out
        holder.wait(10)
    killed_at = time.monotonic()
    seen: dict[tuple[int, int], int] = {}
    with KafkaShareConsumer(
        topic, group_id=group, bootstrap_servers=share_broker.bootstrap
    ) as other:
        deadline = time.monotonic() + 60
        while len(seen) < 20 and time.monotonic() < deadline:
            for rec in other.poll(0.5):
                seen[(rec.partition, rec.offset)] = rec.delivery_count
        other.commit_sync()
    assert held <= set(seen), (held, seen)
    # The killed member's records come back as second deliveries.
    assert all(seen[key] >= 2 for key in held), {k: seen[k] for k in held}
    assert len(seen) == 20
    assert time.monotonic() - killed_at < 30  # session 6 s + lock 3 s, with room for load

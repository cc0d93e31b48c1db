"""One consumer scenario, unchanged, on each transport against a real broker:
assign, headers and keys, positions, lag, offset lookups, commit/committed
round trips, seek, pause/resume, the columnar batch path; plus
read_committed against a real transactional producer, pattern
subscriptions (classic and KIP-848), static membership and auto-commit on
close (seed 003 ``wind_down``)."""

from __future__ import annotations

import asyncio
import inspect
import time
import uuid
from typing import Any

import pytest
import trio

from kafkacore.client import TopicPartition
from kafkacore.consumer import OffsetAndMetadata
from kafkacore.transports._consumer_asyncio import AsyncKafkaConsumer
from kafkacore.transports._consumer_selector import KafkaConsumer
from kafkacore.transports._consumer_trio import TrioKafkaConsumer
from kafkacore.transports.selector import KafkaClient
from tests.consumer.helpers import produce, txn_produce
from tests.consumer.workers import collect, wait_for


class _Blocking:
    """The selector consumer seen through awaitables, so one async scenario runs on all."""

    def __init__(self, consumer: KafkaConsumer) -> None:
        self._c = consumer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._c, name)


async def call(obj: Any, name: str, *args: Any, **kw: Any) -> Any:
    out = getattr(obj, name)(*args, **kw)
    if inspect.isawaitable(out):
        out = await out
    return out


async def consume(c: Any, n: int, fn: str = "poll_records") -> list[Any]:
    got: list[Any] = []
    end = time.monotonic() + 60
    while len(got) < n:
        assert time.monotonic() < end, f"only {len(got)} of {n} records arrived"
        got += await call(c, fn, timeout=0.5)
    return got


async def scenario(c: Any, bootstrap: str, topic: str) -> None:
    p0, p1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    await call(c, "assign", [p0, p1])
    recs = await consume(c, 15)
    by = {
        tp: sorted((r for r in recs if r.partition == tp.partition), key=lambda r: r.offset)
        for tp in (p0, p1)
    }
    assert [r.offset for r in by[p0]] == list(range(10))
    assert by[p0][4].key == b"k4" and by[p0][4].headers == (("trace", b"t4"),)
    assert await call(c, "position", p0) == 10
    assert await call(c, "lag", p0) == 0
    assert await call(c, "end_offsets", [p0, p1]) == {p0: 10, p1: 5}
    assert await call(c, "beginning_offsets", [p0]) == {p0: 0}
    found = await call(c, "offsets_for_times", {p0: 0})
    assert found[p0][0] == 0
    # commit / committed round trips (explicit, then current positions)
    await call(c, "commit", {p0: OffsetAndMetadata(7, "seven")})
    assert await call(c, "committed", [p0]) == {p0: OffsetAndMetadata(7, "seven", None)}
    await call(c, "commit")
    got = await call(c, "committed", [p0, p1])
    assert got[p0].offset == 10 and got[p1].offset == 5
    # seek
    await call(c, "seek", p0, 3)
    again = await consume(c, 7)
    assert [r.offset for r in again] == list(range(3, 10))
    # pause / resume
    await call(c, "pause", p1)
    assert await call(c, "paused") == frozenset({p1})
    with KafkaClient(bootstrap) as client:
        produce(client, topic, 1, [b"late"] * 3)
        produce(client, topic, 0, [b"more"] * 2)
    more = await consume(c, 2)
    assert {r.partition for r in more} == {0}
    await call(c, "resume", p1)
    late = await consume(c, 3)
    assert {r.partition for r in late} == {1} and late[0].offset == 5
    # the batch path
    await call(c, "seek_to_beginning", p1)
    batches = await consume(c, 1, "poll_batches")
    assert batches[0].partition == 1 and list(batches[0].offsets)[:3] == [0, 1, 2]


def _fill(bootstrap: str, topic: str) -> None:
    with KafkaClient(bootstrap) as client:
        produce(
            client,
            topic,
            0,
            [b"v%d" % i for i in range(10)],
            keys=[b"k%d" % i for i in range(10)],
            headers=[(("trace", b"t%d" % i),) for i in range(10)],
        )
        produce(client, topic, 1, [b"w%d" % i for i in range(5)])


@pytest.mark.parametrize("transport", ["selector", "asyncio", "trio"])
def test_consumer_scenario_on_each_transport(kafka_broker: Any, transport: str) -> None:
    topic = f"scen-{transport}-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, 2)
    bootstrap = kafka_broker.bootstrap
    _fill(bootstrap, topic)
    opts = dict(
        bootstrap_servers=bootstrap,
        group_id=f"g-{topic}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    if transport == "selector":
        with KafkaConsumer(**opts) as c:
            asyncio.run(scenario(_Blocking(c), bootstrap, topic))
    elif transport == "asyncio":

        async def main() -> None:
            async with AsyncKafkaConsumer(**opts) as c:
                await scenario(c, bootstrap, topic)

        asyncio.run(main())
    else:

        async def tmain() -> None:
            async with TrioKafkaConsumer(**opts) as c:
                await scenario(c, bootstrap, topic)

        trio.run(tmain)


def test_read_committed_against_a_transactional_producer(kafka_broker: Any) -> None:
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, 1)
    bootstrap = kafka_broker.bootstrap
    txn_produce(
        bootstrap,
        f"tx-{topic}",
        [
            (topic, 0, [b"c1", b"c2"], True),
            (topic, 0, [b"a1", b"a2", b"a3"], False),
            (topic, 0, [b"c3"], True),
        ],
    )
    tp = TopicPartition(topic, 0)
    with KafkaConsumer(
        bootstrap_servers=bootstrap, auto_offset_reset="earliest", isolation_level="read_committed"
    ) as c:
        c.assign([tp])
        got: list[Any] = []
        end = time.monotonic() + 60
        while len(got) < 3 and time.monotonic() < end:
            got += c.poll_records(timeout=0.5)
        assert [r.value for r in got] == [b"c1", b"c2", b"c3"]
        # markers are hidden, the position moves past the last one
        end_offset = c.end_offsets([tp])[tp]
        wait_for(lambda: c.position(tp) == end_offset, "position past the last marker", 30)
    with KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as c:
        c.assign([tp])
        got = []
        end = time.monotonic() + 60
        while len(got) < 6 and time.monotonic() < end:
            got += c.poll_records(timeout=0.5)
        assert [r.value for r in got] == [b"c1", b"c2", b"a1", b"a2", b"a3", b"c3"]


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_pattern_subscription(kafka_broker: Any, protocol: str) -> None:
    base = f"pat{uuid.uuid4().hex[:6]}"
    for name in (f"{base}-a", f"{base}-b", f"other{base}"):
        kafka_broker.create_topic(name, 1)
    extra: dict[str, Any] = {}
    if protocol == "consumer":
        extra["group_remote_assignor"] = "range"  # KIP-848: the broker's assignor, by name
    assigned: list[frozenset[Any]] = []

    class Listener:
        def on_partitions_assigned(self, partitions: frozenset[Any]) -> None:
            assigned.append(partitions)

        def on_partitions_revoked(self, partitions: frozenset[Any]) -> None:
            pass

        def on_partitions_lost(self, partitions: frozenset[Any]) -> None:
            pass

    with KafkaConsumer(
        bootstrap_servers=kafka_broker.bootstrap,
        group_id=f"g-{base}",
        group_protocol=protocol,
        **extra,
    ) as c:
        c.subscribe(pattern=f"{base}-.*", listener=Listener())
        want = {f"{base}-a", f"{base}-b"}
        wait_for(
            lambda: (
                (c.poll_records(timeout=0.1) or True)
                and {tp.topic for tp in c.assignment()} == want
            ),
            "both matching topics assigned, the other not",
        )
        # The rebalance listener ran from poll() with what was assigned.
        assert {tp.topic for batch in assigned for tp in batch} == want


def test_static_member_keeps_its_partitions_across_a_restart(kafka_broker: Any) -> None:
    topic = f"static-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, 4)
    opts = dict(
        bootstrap_servers=kafka_broker.bootstrap, group_id=f"g-{topic}", session_timeout_ms=30000
    )
    a = KafkaConsumer(topic, group_instance_id="static-a", **opts)
    b = KafkaConsumer(topic, group_instance_id="static-b", **opts)
    try:
        wait_for(
            lambda: (
                (a.poll_records(timeout=0.1) or True)
                and (b.poll_records(timeout=0.1) or True)
                and len(a.assignment()) + len(b.assignment()) == 4
                and bool(a.assignment())
                and bool(b.assignment())
            ),
            "two static members split 4 partitions",
        )
        before = a.assignment()
        a.close()  # a static member does not leave (KIP-345)
        a = KafkaConsumer(topic, group_instance_id="static-a", **opts)
        wait_for(
            lambda: (
                (a.poll_records(timeout=0.1) or True)
                and (b.poll_records(timeout=0.1) or True)
                and a.assignment() == before
            ),
            "the restarted static member gets its partitions back",
        )
    finally:
        a.close()
        b.close()


def test_close_commits_and_leaves(kafka_broker: Any) -> None:
    topic = f"close-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, 1)
    tp = TopicPartition(topic, 0)
    with KafkaClient(kafka_broker.bootstrap) as client:
        produce(client, topic, 0, [b"x"] * 20)
    group = f"g-{topic}"
    opts = dict(
        bootstrap_servers=kafka_broker.bootstrap, group_id=group, auto_offset_reset="earliest"
    )
    c = KafkaConsumer(topic, **opts)  # auto-commit on (the default)
    got: list[Any] = []
    wait_for(lambda: collect(c, got, 20), "20 records")
    c.close()
    with KafkaConsumer(**opts) as check:
        assert check.committed([tp]) == {tp: OffsetAndMetadata(20, "", 0)}


def test_listener_commits_revoked_partitions_before_they_move(kafka_broker: Any) -> None:
    """Java's onPartitionsRevoked contract: the listener runs while the partitions
    are still ours, so a manual commit there is accepted and the next owner
    starts exactly where we stopped (no redelivery)."""
    topic = f"lsn-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, 4)
    with KafkaClient(kafka_broker.bootstrap) as client:
        for p in range(4):
            produce(client, topic, p, [b"x"] * 40)
    opts = dict(
        bootstrap_servers=kafka_broker.bootstrap,
        group_id=f"g-{topic}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        heartbeat_interval_ms=500,
    )
    committed_in_listener: list[dict[TopicPartition, OffsetAndMetadata]] = []
    a = KafkaConsumer(**opts)

    class CommitOnRevoke:
        def on_partitions_assigned(self, partitions: frozenset[Any]) -> None:
            pass

        def on_partitions_revoked(self, partitions: frozenset[Any]) -> None:
            offsets = {tp: a.position(tp) for tp in partitions}
            committed_in_listener.append(a.commit(offsets))

        def on_partitions_lost(self, partitions: frozenset[Any]) -> None:
            pass

    got_a: list[Any] = []
    got_b: list[Any] = []
    b: KafkaConsumer | None = None
    try:
        a.subscribe([topic], listener=CommitOnRevoke())
        wait_for(lambda: collect(a, got_a, 160), "the first member reads everything")
        b = KafkaConsumer(topic, **opts)
        member_b = b
        wait_for(
            lambda: (
                (collect(a, got_a, 10**9) or True)
                and (collect(member_b, got_b, 10**9) or True)
                and len(a.assignment()) + len(member_b.assignment()) == 4
                and bool(member_b.assignment())
            ),
            "the second member gets its share",
        )
        assert committed_in_listener, "the listener never ran"
        assert all(o.offset == 40 for c in committed_in_listener for o in c.values())
        assert got_b == [], "records redelivered although the listener committed them"
    finally:
        a.close()
        if b is not None:
            b.close()

"""Issue 10 items 7 and 9 against the real broker, end to end, on every transport.

Item 7: leaving ``for record in consumer`` (or ``async for``) early, by
``break`` or by an exception, must not let the automatic commit (periodic
or on close) cover records the loop never handed out: a restarted member of
the same group must see every one of them.

Item 9: a classic group with cooperative-sticky whose members commit after
every poll must settle: once every member has joined and no membership
changes, no member may be given a new assignment again (the bug: a commit
sent with the old generation during a rebalance, answered ILLEGAL_GENERATION,
made kafkacore rejoin, which started the next rebalance, without end). A
librdkafka member (confluent-kafka) shares the group, as in the report.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import uuid
from typing import Any

import pytest
import trio

from kafkacore.testing import LocalKafka
from tests.campaign.starve import crunch, starve
from tests.faults.drive import FLAVORS

pytestmark = pytest.mark.timeout(300)


def _produce(kafka: LocalKafka, topic: str, count: int) -> None:
    from kafkacore.transports.selector import KafkaProducer

    with KafkaProducer(kafka.bootstrap, linger_ms=0) as producer:
        for i in range(count):
            producer.send(topic, b"v%03d" % i, partition=0)
        producer.flush(60)


class Boom(Exception):
    pass


def _leave_after_one(flavor: str, topic: str, options: dict[str, Any], how: str) -> list[int]:
    """Consume in a loop, leave it after the first record (break or raise), close."""
    got: list[int] = []
    if flavor == "selector":
        from kafkacore.transports.selector import KafkaConsumer

        with KafkaConsumer(topic, **options) as consumer:
            try:
                for record in consumer:
                    got.append(record.offset)
                    time.sleep(0.5)  # a periodic auto-commit falls inside the loop body
                    if how == "break":
                        break
                    raise Boom
            except Boom:
                pass
        return got

    async def main() -> None:
        if flavor == "asyncio":
            from kafkacore.transports.asyncio import AsyncKafkaConsumer as cls
        else:
            from kafkacore.transports.trio import TrioKafkaConsumer as cls  # type: ignore[assignment]
        import anyio

        async with cls(topic, **options) as consumer:
            try:
                async for record in consumer:
                    got.append(record.offset)
                    await anyio.sleep(0.5)
                    if how == "break":
                        break
                    raise Boom
            except Boom:
                pass

    if flavor == "asyncio":
        asyncio.run(main())
    else:
        trio.run(main)
    return got


def _drain(topic: str, options: dict[str, Any], want: int, window_s: float = 20.0) -> list[int]:
    from kafkacore.transports.selector import KafkaConsumer

    got: list[int] = []
    with KafkaConsumer(topic, **options) as consumer:
        end = time.monotonic() + window_s
        while len(got) < want and time.monotonic() < end:
            got.extend(r.offset for r in consumer.poll_records(timeout=0.5))
        # Anything more would be a duplicate.
        got.extend(r.offset for r in consumer.poll_records(timeout=1.0))
    return got


@pytest.mark.parametrize("how", ["break", "raise"])
@pytest.mark.parametrize("flavor", FLAVORS)
def test_7_leaving_the_loop_commits_only_records_handed_out(
    kafka_broker: LocalKafka, flavor: str, how: str
) -> None:
    topic = f"loop7-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic)
    _produce(kafka_broker, topic, 30)
    options = {
        "bootstrap_servers": kafka_broker.bootstrap,
        "group_id": f"g7-{uuid.uuid4().hex[:8]}",
        "auto_offset_reset": "earliest",
        "enable_auto_commit": True,
        "auto_commit_interval_ms": 100,
    }
    handed = _leave_after_one(flavor, topic, options, how)
    assert handed == [0], handed
    rest = _drain(topic, options, 29)
    assert rest == list(range(1, 30)), (
        f"{flavor}/{how}: after handing out offset 0 and leaving, the group resumed at "
        f"{rest[:1]} and saw {len(rest)} records (want offsets 1..29 once)"
    )


# -- item 9 ---------------------------------------------------------------------------


class Counting:
    def __init__(self) -> None:
        self.assigned: list[float] = []
        self.failed: list[float] = []  # when a commit failed (CommitFailedError)
        self.owned: frozenset[Any] = frozenset()  # the assignment after the last poll

    def on_partitions_assigned(self, partitions: frozenset[Any]) -> None:
        self.assigned.append(time.monotonic())

    def on_partitions_revoked(self, partitions: frozenset[Any]) -> None:
        pass

    def on_partitions_lost(self, partitions: frozenset[Any]) -> None:
        pass


@pytest.mark.parametrize("starved", [False, True], ids=["quiet", "starved"])
def test_9_cooperative_sticky_with_per_poll_commits_settles(
    kafka_broker: LocalKafka, starved: bool
) -> None:
    """Once every member joined and no membership changes: no new assignment,
    no failed commit, and every partition owned by one member (issue 25: on a
    starved process a revocation the user's thread finished late made the
    member rejoin claiming what it was giving up, and a partition stayed
    with nobody)."""
    with starve() if starved else contextlib.nullcontext():
        # Starved, the members also crunch each batch before committing: their
        # threads (the selector member's listener runs on it) come back late.
        _settle_9(kafka_broker, crunch_passes=2 if starved else 0)


def _settle_9(kafka_broker: LocalKafka, crunch_passes: int = 0) -> None:
    topic = f"coop9-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, partitions=6)
    group = f"g9-{uuid.uuid4().hex[:8]}"
    stop = threading.Event()
    options = {
        "bootstrap_servers": kafka_broker.bootstrap,
        "group_id": group,
        "group_protocol": "classic",
        "partition_assignment_strategy": ("cooperative-sticky",),
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
        "session_timeout_ms": 10000,
        "heartbeat_interval_ms": 500,
        "max_poll_records": 20,
    }
    listeners = {f: Counting() for f in (*FLAVORS, "librdkafka")}
    errors: list[BaseException] = []

    def member(flavor: str) -> None:
        try:
            if flavor == "librdkafka":
                _librdkafka_member(kafka_broker.bootstrap, group, topic, listeners[flavor], stop)
            else:
                _member(flavor, topic, options, listeners[flavor], stop, crunch_passes)
        except BaseException as exc:
            errors.append(exc)

    producer_stop = threading.Event()

    def trickle() -> None:
        from kafkacore.transports.selector import KafkaProducer

        with KafkaProducer(kafka_broker.bootstrap, linger_ms=5) as producer:
            i = 0
            while not producer_stop.is_set():
                producer.send(topic, b"%06d" % i, b"k%d" % (i % 24))
                i += 1
                time.sleep(0.005)

    threads = [threading.Thread(target=member, args=(f,), daemon=True) for f in listeners]
    feeder = threading.Thread(target=trickle, daemon=True)
    feeder.start()
    for t in threads:
        t.start()
        time.sleep(1.0)  # joins one after another: several real rebalances first
    # Two cooperative rounds after the last join are legitimate; then nothing.
    settle_s, watch_s = 4.0, 15.0
    time.sleep(settle_s)
    steady_from = time.monotonic()
    time.sleep(watch_s)
    # Members leave once stop is set: rebalances after this are real changes.
    steady_until = time.monotonic()
    owned = {f: c.owned for f, c in listeners.items()}
    stop.set()
    producer_stop.set()
    for t in threads:
        t.join(60)
    feeder.join(30)
    assert not errors, errors

    def steady(times: list[float]) -> list[float]:
        return [round(t - steady_from, 1) for t in times if steady_from <= t < steady_until]

    late = {f: steady(c.assigned) for f, c in listeners.items()}
    assert all(not v for v in late.values()), (
        f"rebalances with no membership change (s after the group settled): {late}"
    )
    failed = {f: steady(c.failed) for f, c in listeners.items()}
    assert all(not v for v in failed.values()), (
        f"commits failed with no membership change (s after the group settled): {failed}"
    )
    held = sorted(p for parts in owned.values() for p in parts)
    assert held == list(range(6)), (
        f"partitions owned once the group settled (want each of 0-5 once): {owned}"
    )


def _librdkafka_member(
    bootstrap: str, group: str, topic: str, listener: Counting, stop: threading.Event
) -> None:
    import confluent_kafka

    c = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "partition.assignment.strategy": "cooperative-sticky",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 500,
        }
    )
    c.subscribe([topic])  # its own rounds and commits are librdkafka's; what it owns counts
    try:
        while not stop.is_set():
            msgs = c.consume(20, 0.2)
            listener.owned = frozenset(tp.partition for tp in c.assignment())
            if msgs:
                with contextlib.suppress(confluent_kafka.KafkaException):
                    c.commit(asynchronous=False)
    finally:
        c.close()


def _member(
    flavor: str,
    topic: str,
    options: dict[str, Any],
    listener: Counting,
    stop: threading.Event,
    crunch_passes: int = 0,
) -> None:
    from kafkacore.consumer import CommitFailedError

    if flavor == "selector":
        from kafkacore.transports.selector import KafkaConsumer

        with KafkaConsumer(topic, listener=listener, **options) as consumer:
            while not stop.is_set():
                records = consumer.poll_records(timeout=0.2)
                listener.owned = frozenset(tp.partition for tp in consumer.assignment())
                if records:
                    crunch(crunch_passes)
                    try:
                        consumer.commit()
                    except CommitFailedError:
                        listener.failed.append(time.monotonic())
        return

    async def main() -> None:
        if flavor == "asyncio":
            from kafkacore.transports.asyncio import AsyncKafkaConsumer as cls
        else:
            from kafkacore.transports.trio import TrioKafkaConsumer as cls  # type: ignore[assignment]
        async with cls(topic, listener=listener, **options) as consumer:
            while not stop.is_set():
                records = await consumer.poll_records(timeout=0.2)
                listener.owned = frozenset(tp.partition for tp in consumer.assignment())
                if records:
                    crunch(crunch_passes)
                    try:
                        await consumer.commit()
                    except CommitFailedError:
                        listener.failed.append(time.monotonic())

    if flavor == "asyncio":
        asyncio.run(main())
    else:
        trio.run(main)

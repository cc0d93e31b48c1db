"""Leaving a ``for``/``async for`` loop over a consumer, on each transport,
against a real broker (issue 10, fault 7).

A record counts as consumed once the iterator hands it over (kafka-python's
iterator, Java's ``poll``): the one being processed when the body breaks or
raises is committed, the rest of the fetched batch is not. So: 30 records,
take one and leave the loop, take the next one and leave again (the second
loop continues where the first stopped), close with auto-commit; a new
consumer in the same group then sees exactly the 28 records after them.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import Any

import pytest
import trio

from kafkacore.client import TopicPartition
from kafkacore.consumer import ConsumerRecord
from kafkacore.transports._consumer_asyncio import AsyncKafkaConsumer
from kafkacore.transports._consumer_selector import KafkaConsumer
from kafkacore.transports._consumer_trio import TrioKafkaConsumer
from kafkacore.transports.selector import KafkaClient
from tests.consumer.helpers import produce

TOTAL = 30


class Boom(Exception):
    pass


def options(bootstrap: str, group: str) -> dict[str, Any]:
    # Auto-commit on (the default) with a long interval: the commit that
    # counts is the one close() makes.
    return dict(
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        auto_commit_interval_ms=600000,
    )


BOUND = 30.0  # a loop that gets nothing (records skipped) fails instead of hanging


def leave_sync(consumer: KafkaConsumer, how: str) -> ConsumerRecord:
    got: list[ConsumerRecord] = []
    watchdog = threading.Timer(BOUND, consumer.close)  # closing ends the loop
    watchdog.start()
    try:
        for record in consumer:
            got.append(record)  # being processed when the loop is left
            if how == "break":
                break
            raise Boom
    except Boom:
        pass
    finally:
        watchdog.cancel()
    assert got, f"no record within {BOUND} s: the records were skipped"
    return got[0]


async def leave_async(consumer: Any, how: str) -> ConsumerRecord:
    got: list[ConsumerRecord] = []
    try:
        async for record in consumer:
            got.append(record)
            if how == "break":
                break
            raise Boom
    except Boom:
        pass
    return got[0]


def first_two(transport: str, bootstrap: str, group: str, topic: str, how: str) -> list[int]:
    opts = options(bootstrap, group)
    if transport == "selector":
        with KafkaConsumer(topic, **opts) as c:
            return [leave_sync(c, how).offset, leave_sync(c, how).offset]

    async def run_asyncio() -> list[int]:
        async with AsyncKafkaConsumer(topic, **opts) as c:
            return [(await leave_async(c, how)).offset, (await leave_async(c, how)).offset]

    async def run_trio() -> list[int]:
        async with TrioKafkaConsumer(topic, **opts) as c:
            with trio.fail_after(2 * BOUND):
                return [(await leave_async(c, how)).offset, (await leave_async(c, how)).offset]
        raise AssertionError("unreachable")

    if transport == "asyncio":
        return asyncio.run(asyncio.wait_for(run_asyncio(), 2 * BOUND))
    return trio.run(run_trio)


def the_rest(bootstrap: str, group: str, topic: str) -> list[int]:
    got: list[int] = []
    with KafkaConsumer(topic, **options(bootstrap, group)) as c:
        end = time.monotonic() + 60
        while not got or got[-1] < TOTAL - 1:
            assert time.monotonic() < end, f"saw only {got}"
            got += [r.offset for r in c.poll_records(timeout=0.5)]
        got += [r.offset for r in c.poll_records(timeout=1.0)]  # nothing more may come
        committed = c.committed([TopicPartition(topic, 0)])
        assert committed[TopicPartition(topic, 0)] is not None
    return got


@pytest.mark.parametrize("how", ["break", "raise"])
@pytest.mark.parametrize("transport", ["selector", "asyncio", "trio"])
def test_leaving_the_loop_commits_only_what_was_handed_over(
    kafka_broker: Any, transport: str, how: str
) -> None:
    topic = f"iter-{transport}-{how}-{uuid.uuid4().hex[:6]}"
    kafka_broker.create_topic(topic, 1)
    bootstrap = kafka_broker.bootstrap
    with KafkaClient(bootstrap) as client:
        produce(client, topic, 0, [b"v%d" % i for i in range(TOTAL)])
    group = f"g-{topic}"
    assert first_two(transport, bootstrap, group, topic, how) == [0, 1]
    rest = the_rest(bootstrap, group, topic)
    assert rest == list(range(2, TOTAL)), f"after handing over 2 of {TOTAL}: {rest}"


def test_iterator_hands_out_nothing_of_a_partition_taken_away_mid_batch(
    kafka_broker: Any,
) -> None:
    """A slow ``for`` loop holds a batch of two partitions when a second member
    joins and the cooperative rebalance moves one partition away: from then on
    the loop gets no record of it (the rest of the batch for it is dropped), and
    the new owner starts where the loop's commits left off: nothing lost."""
    topic = f"iter-moved-{uuid.uuid4().hex[:6]}"
    kafka_broker.create_topic(topic, 2)
    bootstrap = kafka_broker.bootstrap
    with KafkaClient(bootstrap) as client:
        for p in (0, 1):  # small record batches: each fetch brings a little of each
            produce(client, topic, p, [b"v%d" % i for i in range(300)], batch_records=10)
    opts = dict(
        options(bootstrap, f"g-{topic}"),
        partition_assignment_strategy=("cooperative-sticky",),
        auto_commit_interval_ms=200,
        heartbeat_interval_ms=300,
        max_partition_fetch_bytes=2048,  # small fetches: each batch mixes both partitions
    )
    stop = threading.Event()
    theirs: list[tuple[int, int]] = []
    late: list[tuple[int, int]] = []
    ours: list[tuple[int, int]] = []
    after = 0  # records handed since the assignment shrank

    def second_member() -> None:
        with KafkaConsumer(topic, **opts) as other:
            while not stop.is_set():
                theirs.extend((r.partition, r.offset) for r in other.poll_records(timeout=0.2))

    joiner = threading.Thread(target=second_member, daemon=True)
    with KafkaConsumer(topic, **opts) as c:
        end = time.monotonic() + 60
        for record in c:
            ours.append((record.partition, record.offset))
            if record.partition not in {tp.partition for tp in c.assignment()}:
                late.append((record.partition, record.offset))
            if len(ours) == 20:
                joiner.start()
            assert time.monotonic() < end, f"no rebalance: {len(ours)} records, {len(theirs)}"
            if len(ours) > 20 and len(c.assignment()) == 1 and theirs:
                # The partition moved and its new owner reads it: go on past the
                # rest of the batch held when it moved (at most 500 records).
                after += 1
                if after == 500 or record.offset == 299:
                    break
                continue
            time.sleep(0.02)  # a slow loop body: the batch outlives the assignment
    try:
        assert not late, f"handed out after their partition moved away: {late[:5]}"
        moved = ({0, 1} - {p for p, _ in ours[-1:]}).pop()
        done = time.monotonic() + 60
        want = {(moved, o) for o in range(300)}
        while not want <= set(ours) | set(theirs):
            assert time.monotonic() < done, "records of the moved partition were lost"
            time.sleep(0.2)
    finally:
        stop.set()
        joiner.join(60)

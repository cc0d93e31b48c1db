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
from tests.consumer.helpers import produce
from transports._consumer_asyncio import AsyncKafkaConsumer
from transports._consumer_selector import KafkaConsumer
from transports._consumer_trio import TrioKafkaConsumer
from transports.selector import KafkaClient

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
            got += [r.offset for r in c.poll(0.5)]
        got += [r.offset for r in c.poll(1.0)]  # nothing more may come
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

"""aiokafka's ``getone(*partitions)`` / ``getmany(*partitions)`` on the asyncio
and trio consumers against a real broker: a group member of a two-partition
topic reads partition 0 alone (waiting for its assignment first, as aiokafka
does), then partition 1's records come from a plain ``getmany`` gapless from
offset 0 (kept, not lost), ``getone(tp1)`` waits for a record produced
later, and commits and positions are right afterwards."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
import trio

from kafkacore.client import TopicPartition
from kafkacore.transports._consumer_asyncio import AsyncKafkaConsumer
from kafkacore.transports._consumer_trio import TrioKafkaConsumer
from kafkacore.transports.selector import KafkaClient
from tests.consumer.helpers import produce


async def scenario(c: Any, bootstrap: str, topic: str) -> None:
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    # Right after start the group is still assigning: no error, records once assigned.
    got0: list[Any] = []
    end = time.monotonic() + 60
    while len(got0) < 6:
        assert time.monotonic() < end, f"only {len(got0)} of partition 0's 6 records arrived"
        batch = await c.getmany(tp0, timeout_ms=500, max_records=4)
        assert set(batch) <= {tp0}, f"getmany(tp0) returned {set(batch)}"
        assert all(len(v) <= 4 for v in batch.values())
        got0 += batch.get(tp0, [])
    assert [r.offset for r in got0] == list(range(6))
    assert await c.position(tp0) == 6
    assert await c.position(tp1) == 0  # untouched by the named reads

    got1: list[Any] = []
    while len(got1) < 4:
        assert time.monotonic() < end, f"only {len(got1)} of partition 1's 4 records arrived"
        batch = await c.getmany(timeout_ms=500)
        assert set(batch) <= {tp1}, "partition 0 was read to its end already"
        got1 += batch.get(tp1, [])
    assert [(r.offset, r.value) for r in got1] == [(i, b"w%d" % i) for i in range(4)]

    with KafkaClient(bootstrap) as client:
        produce(client, topic, 1, [b"late"])
    late = await c.getone(tp1)
    assert (late.partition, late.offset, late.value) == (1, 4, b"late")

    with pytest.raises(ValueError, match=rf"records of {topic}-7 were asked for"):
        await c.getmany(TopicPartition(topic, 7), timeout_ms=10)
    with pytest.raises(TypeError, match="separate arguments"):
        await c.getone([tp0])

    await c.commit()
    committed = await c.committed([tp0, tp1])
    assert (committed[tp0].offset, committed[tp1].offset) == (6, 5)
    assert (await c.position(tp0), await c.position(tp1)) == (6, 5)


@pytest.mark.parametrize("transport", ["asyncio", "trio"])
def test_getmany_and_getone_with_partitions(kafka_broker: Any, transport: str) -> None:
    topic = f"getmany-{transport}-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, 2)
    bootstrap = kafka_broker.bootstrap
    with KafkaClient(bootstrap) as client:
        produce(client, topic, 0, [b"v%d" % i for i in range(6)])
        produce(client, topic, 1, [b"w%d" % i for i in range(4)])
    opts: dict[str, Any] = dict(
        bootstrap_servers=bootstrap,
        group_id=f"g-{topic}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    if transport == "asyncio":

        async def main() -> None:
            async with AsyncKafkaConsumer(topic, **opts) as c:
                await scenario(c, bootstrap, topic)

        asyncio.run(asyncio.wait_for(main(), 120))
    else:

        async def tmain() -> None:
            with trio.fail_after(120):
                async with TrioKafkaConsumer(topic, **opts) as c:
                    await scenario(c, bootstrap, topic)

        trio.run(tmain)

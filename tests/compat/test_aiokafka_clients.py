"""aiokafka 0.14's documented consumer and producer calls, imports pointed at
kafkacore.compat.aiokafka, against a real broker (issue 21).

Written from aiokafka's API reference and docstrings: ``start()`` joins the
group (the assignment is there right after it, ``position()`` answers, a
``session_timeout_ms`` the broker refuses raises at ``start``),
``seek_to_committed``, ``last_stable_offset``, ``last_poll_timestamp``,
``RecordMetadata.topic_partition``, ``loop=`` (deprecated, ignored),
``create_batch``/``send_batch``, ``send``'s own argument order, ``acks=0``
resolving to None, a listener with coroutine methods called while the
consumer is not polling, a member that stops polling for longer than
``max_poll_interval_ms`` leaving the group and rejoining on its next poll,
``getmany`` interrupted by ``stop``, and an unclosed client warning.
"""

from __future__ import annotations

import asyncio
import gc
import time
import uuid
import warnings
from typing import Any

import pytest

from kafkacore.compat.aiokafka import (
    AIOKafkaConsumer,
    AIOKafkaProducer,
    ConsumerRebalanceListener,
    ConsumerStoppedError,
    TopicPartition,
)
from kafkacore.compat.aiokafka.errors import InvalidSessionTimeoutError, OffsetOutOfRangeError
from kafkacore.compat.aiokafka.structs import OffsetAndTimestamp

pytestmark = pytest.mark.broker


def _topic(kafka_broker: Any, partitions: int = 2) -> str:
    name = f"aio-compat-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(name, partitions)
    return name


async def _send(bootstrap: str, topic: str, partition: int, values: list[bytes]) -> list[Any]:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        return [await producer.send_and_wait(topic, value, None, partition) for value in values]
    finally:
        await producer.stop()


def test_start_joins_the_group_and_seek_to_committed(kafka_broker: Any) -> None:
    topic = _topic(kafka_broker)
    group = f"g-{topic}"

    async def main() -> None:
        await _send(kafka_broker.bootstrap, topic, 0, [b"a", b"b", b"c"])
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=kafka_broker.bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await consumer.start()
        try:
            tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
            assert consumer.assignment() == {tp0, tp1}  # right after start, as aiokafka
            assert await consumer.seek_to_committed() == {tp0: None, tp1: None}
            assert await consumer.position(tp0) == 0
            first = await consumer.getone(tp0)
            assert first.value == b"a"
            await consumer.commit({tp0: first.offset + 1})
            assert await consumer.seek_to_committed(tp0) == {tp0: 1}
            assert (await consumer.getone(tp0)).value == b"b"
            assert consumer.last_stable_offset(tp0) is not None
            stamp = consumer.last_poll_timestamp(tp0)
            assert stamp is not None and abs(stamp - time.time() * 1000) < 60_000
            found = await consumer.offsets_for_times({tp0: 0})
            assert found == {tp0: OffsetAndTimestamp(0, found[tp0].timestamp)}
            with pytest.raises(ValueError):  # aiokafka: IllegalStateError, both here
                await consumer.seek_to_committed(TopicPartition(topic, 7))
        finally:
            await consumer.stop()

    asyncio.run(main())


def test_a_refused_session_timeout_raises_at_start(kafka_broker: Any) -> None:
    topic = _topic(kafka_broker)

    async def main() -> None:
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=kafka_broker.bootstrap,
            group_id=f"g-{topic}",
            session_timeout_ms=200,
            heartbeat_interval_ms=100,  # below group.min.session
        )
        try:
            with pytest.raises(InvalidSessionTimeoutError):
                await consumer.start()
        finally:
            await consumer.stop()

    asyncio.run(main())


def test_producer_calls_in_aiokafka_order_batches_and_acks_0(kafka_broker: Any) -> None:
    topic = _topic(kafka_broker)

    async def main() -> None:
        with pytest.deprecated_call():
            producer = AIOKafkaProducer(
                bootstrap_servers=kafka_broker.bootstrap, loop=asyncio.get_running_loop()
            )
        await producer.start()
        try:
            # aiokafka's order: topic, value, key, partition, timestamp_ms, headers
            md = await producer.send_and_wait(
                topic, b"v", b"k", 1, 1_700_000_000_000, [("h", b"1")]
            )
            assert md.topic_partition == TopicPartition(topic, 1)
            assert md.timestamp == 1_700_000_000_000
            batch = producer.create_batch()
            appended = 0
            while batch.append(key=None, value=b"x" * 200, timestamp=None) is not None:
                appended += 1
            assert appended == batch.record_count() > 1
            first = await (await producer.send_batch(batch, topic, partition=0))
            assert first.topic_partition == TopicPartition(topic, 0) and first.offset == 0
        finally:
            await producer.stop()
        noack = AIOKafkaProducer(bootstrap_servers=kafka_broker.bootstrap, acks=0)
        await noack.start()
        try:
            fut = await noack.send(topic, b"fire", partition=0)
            assert await fut is None  # aiokafka: no broker answer to report
        finally:
            await noack.stop()

    asyncio.run(main())


class _Listener(ConsumerRebalanceListener):
    """Coroutine methods, as aiokafka's documentation shows them."""

    def __init__(self) -> None:
        self.assigned: list[frozenset[TopicPartition]] = []
        self.revoked: list[frozenset[TopicPartition]] = []
        self.ready = asyncio.Event()

    async def on_partitions_revoked(self, revoked: Any) -> None:
        self.revoked.append(frozenset(revoked))
        self.ready.clear()

    async def on_partitions_assigned(self, assigned: Any) -> None:
        await asyncio.sleep(0)  # a coroutine, awaited by the consumer
        self.assigned.append(frozenset(assigned))
        self.ready.set()


def test_a_member_that_stops_polling_leaves_and_rejoins_on_its_next_poll(
    kafka_broker: Any,
) -> None:
    topic = _topic(kafka_broker)
    group = f"g-{topic}"

    async def main() -> None:
        common = dict(
            bootstrap_servers=kafka_broker.bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            heartbeat_interval_ms=100,
        )
        slow = AIOKafkaConsumer(max_poll_interval_ms=3000, **common)
        other = AIOKafkaConsumer(**common)
        listeners = _Listener(), _Listener()
        slow.subscribe([topic], listener=listeners[0])
        other.subscribe([topic], listener=listeners[1])
        await slow.start()
        await other.start()
        try:
            # Listener calls arrive while neither consumer polls (aiokafka's way).
            await asyncio.wait_for(listeners[1].ready.wait(), 60)
            while not (slow.assignment() and other.assignment()):
                await asyncio.sleep(0.1)
            # slow stops polling: after max_poll_interval_ms it leaves, other owns all.
            deadline = time.monotonic() + 60
            while len(other.assignment()) < 2:
                await other.getmany(timeout_ms=200)
                assert time.monotonic() < deadline, "the stuck member never left"
            assert listeners[0].revoked and not slow.assignment()
            # Its next poll rejoins; the group splits the partitions again.
            while not slow.assignment():
                await slow.getmany(timeout_ms=200)
                await other.getmany(timeout_ms=0)
                assert time.monotonic() < deadline, "the member did not rejoin on its poll"
        finally:
            await asyncio.gather(slow.stop(), other.stop())

    asyncio.run(main())


def test_getmany_interrupted_by_stop_answers_empty_and_getone_raises(kafka_broker: Any) -> None:
    topic = _topic(kafka_broker, 1)

    async def main() -> None:
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=kafka_broker.bootstrap, group_id=f"g-{topic}"
        )
        await consumer.start()
        waiting = asyncio.create_task(consumer.getmany(timeout_ms=20_000))
        pending = asyncio.create_task(consumer.getone())
        await asyncio.sleep(0.2)
        assert not waiting.done() and not pending.done()
        await consumer.stop()
        assert await waiting == {}
        with pytest.raises(ConsumerStoppedError):
            await pending
        with pytest.raises(ConsumerStoppedError):
            await consumer.getmany()

    asyncio.run(main())


def test_no_reset_policy_out_of_range_raises_offset_out_of_range(kafka_broker: Any) -> None:
    topic = _topic(kafka_broker)

    async def main() -> None:
        await _send(kafka_broker.bootstrap, topic, 0, [b"only"])
        consumer = AIOKafkaConsumer(
            bootstrap_servers=kafka_broker.bootstrap, auto_offset_reset="none"
        )
        await consumer.start()
        try:
            tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
            consumer.assign([tp0, tp1])
            consumer.seek(tp0, 19999)
            # Only tp0 is asked about: tp1's missing position is not its error.
            with pytest.raises(OffsetOutOfRangeError):
                for _ in range(20):
                    await consumer.getmany(tp0, timeout_ms=1000)
        finally:
            await consumer.stop()

    asyncio.run(main())


def test_an_unclosed_consumer_and_producer_warn(kafka_broker: Any) -> None:
    async def main() -> None:
        for make in (
            lambda: AIOKafkaConsumer(bootstrap_servers=kafka_broker.bootstrap),
            lambda: AIOKafkaProducer(bootstrap_servers=kafka_broker.bootstrap),
        ):
            client = make()
            name = type(client).__name__
            await client.start()
            with pytest.warns(ResourceWarning, match=f"Unclosed {name}"):
                del client
                await asyncio.sleep(0)
                gc.collect()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)  # asyncio's own, at loop close
        asyncio.run(main())

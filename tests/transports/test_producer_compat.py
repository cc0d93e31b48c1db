"""kafka-python's and aiokafka's documented producer usage, run against a real broker.

Each snippet is the peer's own example (kafka-python: README and
docs/usage.rst; aiokafka: docs/index.rst, docs/producer.rst) with only the
import changed and the broker address filled in; then the records are read
back. The per-record path's promises are checked here too: ``on_delivery``
without a future, a blocking call inside a delivery callback raising at
once, config mistakes as ValueErrors.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from kafkacore.client import TopicPartition
from kafkacore.errors import LocalProtocolError
from kafkacore.protocol.messages import MetadataRequest
from kafkacore.transports.selector import KafkaClient, KafkaConsumer

log = logging.getLogger(__name__)

TOPICS = ("my-topic", "json-topic", "fizzbuzz", "foobar", "my_topic", "test-topic")


@pytest.fixture(scope="module")
def broker(kafka_broker: Any) -> Iterator[str]:
    with KafkaClient(kafka_broker.bootstrap) as client:
        existing = {t.name for t in client.send(MetadataRequest(topics=None)).topics}
    for topic in TOPICS:
        if topic not in existing:
            kafka_broker.create_topic(topic, partitions=2)
    yield kafka_broker.bootstrap


def _count(bootstrap: str, topic: str) -> int:
    """Offsets taken in ``topic`` so far (end offsets summed; the topics only grow)."""
    with KafkaClient(bootstrap) as client:
        parts = client.metadata([topic]).partitions_for_topic(topic) or set()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in parts])
        return sum(ends.values())
    finally:
        consumer.close()


# -- kafka-python (from kafka import KafkaProducer -> from kafkacore import ...) ---------
def test_kafka_python_usage(broker: str) -> None:
    from kafkacore import KafkaProducer
    from kafkacore.errors import KafkaError

    before = {t: _count(broker, t) for t in ("my-topic", "json-topic", "fizzbuzz", "foobar")}
    seen: list[Any] = []

    # docs/usage.rst, "KafkaProducer"
    producer = KafkaProducer(bootstrap_servers=[broker])

    # Asynchronous by default
    future = producer.send("my-topic", b"raw_bytes")

    # Block for 'synchronous' sends
    try:
        record_metadata = future.get(timeout=10)
    except KafkaError:
        # Decide what to do if produce request failed...
        log.exception("send failed")
        raise

    # Successful result returns assigned partition and offset
    print(record_metadata.topic)
    print(record_metadata.partition)
    print(record_metadata.offset)
    assert record_metadata.topic == "my-topic" and record_metadata.offset >= 0

    # produce keyed messages to enable hashed partitioning
    producer.send("my-topic", key=b"foo", value=b"bar")

    # produce asynchronously
    for _ in range(100):
        producer.send("my-topic", b"msg")

    def on_send_success(record_metadata: Any) -> None:
        print(record_metadata.topic)
        print(record_metadata.partition)
        print(record_metadata.offset)
        seen.append(record_metadata)

    def on_send_error(excp: BaseException) -> None:
        log.error("I am an errback", exc_info=excp)
        seen.append(excp)

    # produce asynchronously with callbacks
    producer.send("my-topic", b"raw_bytes").add_callback(on_send_success).add_errback(on_send_error)

    # block until all async messages are sent
    producer.flush()
    producer.close()

    # configure multiple retries
    producer = KafkaProducer(retries=5, bootstrap_servers=broker)
    producer.close()

    # README: serializers, compression, metrics, headers
    producer = KafkaProducer(key_serializer=str.encode, bootstrap_servers=broker)
    producer.send("fizzbuzz", key="ping", value=b"1234")
    producer.close()
    producer = KafkaProducer(bootstrap_servers=broker)
    for _ in range(100):
        producer.send("foobar", b"some_message_bytes")
    producer.flush()
    producer.close()
    producer = KafkaProducer(compression_type="gzip", bootstrap_servers=broker)
    producer.send("foobar", b"zipped").get(timeout=10)
    metrics = producer.metrics()
    assert metrics["producer-metrics"]["record-send-total"] >= 1
    producer.close()
    producer = KafkaProducer(
        value_serializer=lambda v: json.dumps(v).encode("utf-8"), bootstrap_servers=broker
    )
    producer.send("json-topic", {"foo": "bar"})
    producer.close()
    producer = KafkaProducer(bootstrap_servers=broker)
    # Use a key for hashed-partitioning
    producer.send("foobar", key=b"foo", value=b"bar")
    # Include record headers. The format is list of tuples with string key and bytes value.
    producer.send("foobar", value=b"c29tZSBieXRlcw==", headers=[("content-encoding", b"base64")])
    producer.send("foobar", value=b"at a time", timestamp_ms=1_700_000_000_000).get(timeout=10)
    assert producer.bootstrap_connected()
    assert producer.partitions_for("foobar") == {0, 1}
    producer.flush()
    producer.close()

    assert len(seen) == 1 and seen[0].topic == "my-topic"
    after = {t: _count(broker, t) for t in before}
    assert after["my-topic"] - before["my-topic"] == 103
    assert after["fizzbuzz"] - before["fizzbuzz"] == 1
    assert after["foobar"] - before["foobar"] == 100 + 1 + 3
    assert after["json-topic"] - before["json-topic"] == 1


def test_kafka_python_transactions(broker: str) -> None:
    from kafkacore import KafkaProducer

    before = _count(broker, "test-topic")
    producer = KafkaProducer(bootstrap_servers=broker, transactional_id="compat-kp")
    producer.init_transactions()
    producer.begin_transaction()
    producer.send("test-topic", b"in a transaction")
    producer.commit_transaction()
    producer.close()
    # The commit marker takes an offset too.
    assert _count(broker, "test-topic") - before == 2


# -- aiokafka (from aiokafka import AIOKafkaProducer -> kafkacore.transports.asyncio) --
def test_aiokafka_usage(broker: str) -> None:
    from kafkacore.transports.asyncio import AsyncKafkaProducer as AIOKafkaProducer

    before = _count(broker, "my_topic")
    results: list[Any] = []

    # docs/index.rst, "AIOKafkaProducer"
    async def send_one() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=broker)
        # Get cluster layout and initial topic/partition leadership information
        await producer.start()
        try:
            # Produce message
            await producer.send_and_wait("my_topic", b"Super message")
        finally:
            # Wait for all pending messages to be delivered or expire.
            await producer.stop()

    asyncio.run(send_one())

    # docs/producer.rst: the send future, batches of futures, serializers, partitions
    async def send_many() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker,
            value_serializer=lambda v: json.dumps(v).encode("utf-8"),
            compression_type="gzip",
            max_batch_size=32768,
            linger_ms=10,
        )
        await producer.start()
        try:
            fut = await producer.send("my_topic", {"a": 1}, key=b"k", headers=[("h", b"1")])
            msg = await fut  # RecordMetadata
            results.append(msg)
            batch = []
            for i in range(10):
                batch.append(await producer.send("my_topic", {"i": i}))
            await asyncio.wait(batch)
            results.extend(f.result() for f in batch)
            partitions = await producer.partitions_for("my_topic")
            results.append(partitions)
            await producer.flush()
        finally:
            await producer.stop()

    asyncio.run(send_many())
    assert results[0].topic == "my_topic"
    assert len({(r.partition, r.offset) for r in results[1:11]}) == 10
    assert results[-1] == {0, 1}

    # docs/producer.rst, "Transactional producer"
    async def transactional() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=broker, transactional_id="compat-aio")
        await producer.start()
        try:
            async with producer.transaction():
                await producer.send_and_wait("my_topic", b"Super transactional message")
            with contextlib.suppress(ValueError):
                async with producer.transaction():
                    await producer.send_and_wait("my_topic", b"aborted")
                    raise ValueError()
        finally:
            await producer.stop()

    asyncio.run(transactional())
    # 1 + 11 records, one committed and one aborted record, each with its marker.
    assert _count(broker, "my_topic") - before == 1 + 11 + 2 + 2

    async def batches() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=broker)
        await producer.start()
        try:
            # aiokafka's batch API: fill one batch, send it to one partition.
            batch = producer.create_batch()
            while batch.append(key=None, value=b"x" * 100, timestamp=None) is not None:
                pass
            assert batch.record_count() > 1
            fut = await producer.send_batch(batch, "test-topic", partition=0)
            first = await fut
            assert first.partition == 0 and first.offset >= 0
        finally:
            await producer.stop()

    asyncio.run(batches())


# -- the per-record path's promises, blocking transport ------------------------------
def test_on_delivery_and_blocking_calls_inside_callbacks(broker: str) -> None:
    from kafkacore import KafkaProducer

    delivered: list[Any] = []
    refused: list[BaseException] = []
    threads: set[str] = set()
    with KafkaProducer(bootstrap_servers=broker, linger_ms=1) as producer:
        pending = producer.send("foobar", b"later")

        def on_delivery(md: Any, error: BaseException | None) -> None:
            threads.add(threading.current_thread().name)
            delivered.append((md, error))
            for call in (
                pending.result,
                lambda: pending.get(timeout=5),
                producer.flush,
                producer.close,
            ):
                try:
                    call()
                except LocalProtocolError as exc:
                    refused.append(exc)
            producer.send("foobar", b"sent from a callback")  # room: does not block

        assert producer.send("foobar", b"cb", on_delivery=on_delivery) is None
        producer.flush(timeout=30)
    assert delivered and delivered[0][1] is None and delivered[0][0].topic == "foobar"
    assert threads == {"kafkacore-producer"}
    # pending may have completed first (then result() just returns); flush/close never wait.
    messages = [str(e) for e in refused]
    assert sum("flush" in m for m in messages) == 1
    assert sum("close" in m for m in messages) == 1
    assert all("deadlock" in m for m in messages)


@pytest.mark.parametrize(
    "options",
    [
        {"acks": 2},
        {"batch_size": -1},
        {"compression_type": "brotli"},
        {"partitioner": lambda *args: 0},
        {"socks5_proxy": "socks5://h:1"},
    ],
)
def test_config_mistakes_are_value_errors_naming_the_option(
    broker: str, options: dict[str, Any]
) -> None:
    from kafkacore import KafkaProducer
    from kafkacore.transports.asyncio import AsyncKafkaProducer

    for cls in (KafkaProducer, AsyncKafkaProducer):
        with pytest.raises(ValueError, match=next(iter(options))):
            cls(bootstrap_servers=broker, **options)


def test_send_many_shapes_on_a_broker(broker: str) -> None:
    from kafkacore import KafkaProducer

    with KafkaProducer(bootstrap_servers=broker) as producer:
        result = producer.send_many("foobar", ((b"k1", b"v1"), (b"k2", b"v2"))).result(30)
        assert result.count == 2
        with pytest.raises(TypeError, match=r"records\[0\] is None"):
            producer.send_many("foobar", (None, [b"v1", b"v2"]))
        result = producer.send_many("foobar", values=[b"a", b"b"], keys=[b"x", None]).result(30)
        assert result.count == 2

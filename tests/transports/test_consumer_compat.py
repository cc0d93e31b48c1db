"""kafka-python's and aiokafka's consumer usage, with only the import changed (issue 13).

The snippets follow the two libraries' documented usage (kafka-python's
README and usage page, aiokafka's README and consumer guide); each runs
against a real broker with ``from kafka import ...`` / ``from aiokafka import
...`` replaced by kafkacore's names. The rest pins the argument checks: every
constructor keyword kafka-python documents is taken (or refused by name),
and a wrong argument shape says what is expected.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
import uuid
from typing import Any

import pytest
import trio

from kafkacore import (
    KafkaConsumer,  # was: from kafka import KafkaConsumer
    TopicPartition,  # was: from kafka import TopicPartition
)
from kafkacore.consumer import OffsetAndMetadata
from kafkacore.errors import ConfigError, UnknownOptionError
from kafkacore.transports.asyncio import (
    AsyncKafkaConsumer as AIOKafkaConsumer,  # was: from aiokafka import AIOKafkaConsumer
)
from kafkacore.transports.selector import KafkaClient
from kafkacore.transports.trio import TrioKafkaConsumer
from tests.consumer.helpers import produce

NOWHERE = "127.0.0.1:1"  # nothing listens: the checks below fail before any I/O matters

#: kafka-python 2.x KafkaConsumer's documented keywords with its defaults
#: (kafka/consumer/group.py), minus ``bootstrap_servers`` and the two whose
#: defaults are kafka-python objects (``partition_assignment_strategy``: its
#: assignor classes, kafkacore takes names; ``kafka_client``).
KAFKA_PYTHON_DEFAULTS: dict[str, Any] = {
    "client_id": "kafka-python-2.3.0",
    "client_rack": "",
    "group_id": None,
    "group_instance_id": None,
    "key_deserializer": None,
    "value_deserializer": None,
    "enable_incremental_fetch_sessions": True,
    "fetch_max_wait_ms": 500,
    "fetch_min_bytes": 1,
    "fetch_max_bytes": 52428800,
    "max_partition_fetch_bytes": 1048576,
    "request_timeout_ms": 30000,
    "default_api_timeout_ms": 60000,
    "retry_backoff_ms": 100,
    "reconnect_backoff_ms": 50,
    "reconnect_backoff_max_ms": 30000,
    "max_in_flight_requests_per_connection": 5,
    "auto_offset_reset": "latest",
    "enable_auto_commit": True,
    "auto_commit_interval_ms": 5000,
    "default_offset_commit_callback": lambda offsets, response: True,
    "check_crcs": True,
    "isolation_level": "read_uncommitted",
    "allow_auto_create_topics": True,
    "metadata_max_age_ms": 300000,
    "client_dns_lookup": "use_all_dns_ips",
    "max_poll_records": 500,
    "max_poll_interval_ms": 300000,
    "session_timeout_ms": 45000,
    "heartbeat_interval_ms": 3000,
    "receive_buffer_bytes": None,
    "send_buffer_bytes": None,
    "receive_message_max_bytes": 100_000_000,
    "socket_options": [(6, 1, 1)],
    "consumer_timeout_ms": math.inf,
    "security_protocol": "PLAINTEXT",
    "ssl_context": None,
    "ssl_check_hostname": True,
    "ssl_cafile": None,
    "ssl_certfile": None,
    "ssl_keyfile": None,
    "ssl_crlfile": None,
    "ssl_password": None,
    "ssl_ciphers": None,
    "api_version": None,
    "connections_max_idle_ms": 540000,
    "metric_reporters": [],
    "metrics_enabled": True,
    "metrics_num_samples": 2,
    "metrics_sample_window_ms": 30000,
    "metric_group_prefix": "consumer",
    "selector": None,
    "exclude_internal_topics": True,
    "sasl_mechanism": None,
    "sasl_plain_username": None,
    "sasl_plain_password": None,
    "sasl_kerberos_name": None,
    "sasl_kerberos_service_name": "kafka",
    "sasl_kerberos_domain_name": None,
    "sasl_oauth_token_provider": None,
    "socket_connection_setup_timeout_ms": 10000,
    "proxy_url": None,
    "socks5_proxy": None,
    "net": None,
}
#: Documented by kafka-python, not implemented by kafkacore whatever the value.
REFUSED = {
    "bootstrap_timeout_ms": 30000,
    "socket_connection_setup_timeout_max_ms": 30000,
    "kafka_client": object(),
}


def closed_quickly(consumer: KafkaConsumer) -> None:
    consumer.close(autocommit=False, timeout_ms=100)


# -- the constructor ------------------------------------------------------------------
def test_every_kafka_python_keyword_is_taken_with_its_default() -> None:
    consumer = KafkaConsumer(bootstrap_servers=NOWHERE, **KAFKA_PYTHON_DEFAULTS)
    try:
        assert consumer.config.max_poll_records == 500
        assert consumer.client_config.max_response_bytes == 100_000_000
        assert consumer.client_config.reconnect_backoff_max_ms == 30000
    finally:
        closed_quickly(consumer)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_kafka_python_keyword_kafkacore_lacks_is_refused_by_name(name: str) -> None:
    with pytest.raises(ConfigError, match=rf"^KafkaConsumer: kafka-python's option '{name}'"):
        KafkaConsumer(bootstrap_servers=NOWHERE, **{name: REFUSED[name]})


def test_a_typo_suggests_the_consumers_own_keywords() -> None:
    with pytest.raises(UnknownOptionError, match="did you mean 'value_deserializer'"):
        KafkaConsumer(bootstrap_servers=NOWHERE, value_deserialiser=json.loads)
    with pytest.raises(UnknownOptionError, match="did you mean 'bootstrap_servers'"):
        KafkaConsumer(bootstrap_server=NOWHERE)


def test_topics_are_separate_arguments() -> None:
    with pytest.raises(TypeError, match=r"KafkaConsumer\('a', 'b', \.\.\.\).*not a list"):
        KafkaConsumer(["a", "b"], bootstrap_servers=NOWHERE)
    with pytest.raises(ConfigError, match="consumer_timeout_ms must be 0 or more"):
        KafkaConsumer("a", bootstrap_servers=NOWHERE, consumer_timeout_ms=-1)
    with pytest.raises(ConfigError, match="value_deserializer must be a callable"):
        KafkaConsumer("a", bootstrap_servers=NOWHERE, value_deserializer="json")


# -- argument shapes --------------------------------------------------------------------
def test_a_wrong_argument_shape_says_what_is_expected() -> None:
    consumer = KafkaConsumer(bootstrap_servers=NOWHERE)
    tp = TopicPartition("t", 0)
    try:
        consumer.assign([tp])
        with pytest.raises(TypeError, match=r"seek_to_beginning\(tp1, tp2\).*not a list"):
            consumer.seek_to_beginning([tp])  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"seek_to_end\(\*partitions\)"):
            consumer.seek_to_end({tp})  # type: ignore[arg-type]
        with pytest.raises(
            TypeError, match=r"assign: expected a list of TopicPartition.*assign\(\[tp\]\)"
        ):
            consumer.assign(tp)
        with pytest.raises(TypeError, match=r"write TopicPartition\('topic', 0\)"):
            consumer.committed([("t", "0")])  # type: ignore[list-item]
        with pytest.raises(TypeError, match=r"timeout_ms is milliseconds.*poll\(500\)"):
            consumer.poll(0.5)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="not also timeout"):
            consumer.poll(timeout_ms=5, timeout=1.0)
        with pytest.raises(TypeError, match="autocommit must be True or False"):
            consumer.close(5.0)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="max_records must be an int of 1 or more"):
            consumer.poll(max_records=0)
        # The shapes that are right pass: a (topic, partition) pair is a partition.
        consumer.seek_to_beginning(tp, ("t", 0))  # type: ignore[arg-type]
        consumer.seek_to_end()
        assert consumer.poll(timeout_ms=0) == {}
        assert consumer.poll(timeout=0.0) == {}  # kafkacore's older keyword, seconds
    finally:
        closed_quickly(consumer)


# -- kafka-python's documented usage, against a broker --------------------------------------
def fill(bootstrap: str, topic: str, values: list[bytes], partitions: int = 1) -> None:
    with KafkaClient(bootstrap) as client:
        for p in range(partitions):
            produce(client, topic, p, values, keys=[b"k%d" % i for i in range(len(values))])


@pytest.fixture
def topic(kafka_broker: Any) -> str:
    name = f"compat-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(name, 2)
    fill(kafka_broker.bootstrap, name, [json.dumps({"n": i}).encode() for i in range(10)], 2)
    return name


def test_kafka_python_readme_iteration_ends_with_consumer_timeout_ms(
    kafka_broker: Any, topic: str
) -> None:
    # kafka-python README: "for msg in consumer: print(msg)", with its usage
    # page's "StopIteration if no message after 1sec" (consumer_timeout_ms).
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap,
        auto_offset_reset="earliest",
        consumer_timeout_ms=2000,
        value_deserializer=lambda m: json.loads(m.decode("ascii")),
    )
    seen = []
    started = time.monotonic()
    for message in consumer:
        # kafka-python usage page: message.topic, partition, offset, key, value
        seen.append((message.topic, message.partition, message.offset, message.key, message.value))
    elapsed = time.monotonic() - started
    consumer.close()
    assert len(seen) == 20
    assert {s[3] for s in seen} == {b"k%d" % i for i in range(10)}
    assert sorted(s[4]["n"] for s in seen if s[1] == 0) == list(range(10))
    assert elapsed < 30


def test_kafka_python_manual_assignment_and_next(kafka_broker: Any, topic: str) -> None:
    # kafka-python README: "consumer.assign([TopicPartition('foo', 2)]); msg = next(consumer)"
    consumer = KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap, auto_offset_reset="earliest")
    consumer.assign([TopicPartition(topic, 1)])
    msg = next(consumer)
    assert (msg.partition, msg.offset) == (1, 0)
    assert next(consumer).offset == 1
    assert consumer.assignment() == {TopicPartition(topic, 1)}
    consumer.close()


def test_kafka_python_group_calls(kafka_broker: Any, topic: str) -> None:
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    consumer = KafkaConsumer(
        bootstrap_servers=kafka_broker.bootstrap,
        group_id=f"g-{topic}",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        key_deserializer=lambda k: k.decode(),
    )
    consumer.subscribe([topic])
    assert consumer.subscription() == {topic}
    records: dict[TopicPartition, list[Any]] = {}
    deadline = time.monotonic() + 60
    while sum(len(v) for v in records.values()) < 20:
        assert time.monotonic() < deadline, records
        for tp, batch in consumer.poll(timeout_ms=500, max_records=7).items():
            assert len(batch) <= 7 and all(r.partition == tp.partition for r in batch)
            records.setdefault(tp, []).extend(batch)
    assert set(records) == {tp0, tp1}
    assert records[tp0][0].key == "k0"  # key_deserializer applied

    assert consumer.committed(tp0) is None  # kafka-python: one partition, an offset or None
    consumer.commit()
    assert consumer.committed(tp0) == 10
    meta = consumer.committed(tp0, metadata=True)
    assert isinstance(meta, OffsetAndMetadata) and meta.offset == 10
    consumer.commit({tp1: OffsetAndMetadata(4, "")})
    assert consumer.committed([tp0, tp1])[tp1].offset == 4  # kafkacore's: a dict

    assert consumer.position(tp0) == 10
    assert consumer.highwater(tp0) == 10
    assert consumer.end_offsets([tp0]) == {tp0: 10}
    assert consumer.beginning_offsets([tp0]) == {tp0: 0}
    assert consumer.offsets_for_times({tp0: 0})[tp0] is not None
    assert topic in consumer.topics()
    assert consumer.partitions_for_topic(topic) == {0, 1}
    assert consumer.partitions_for_topic(f"{topic}-absent") is None
    assert consumer.bootstrap_connected() in (True, False)
    metrics = consumer.metrics()
    assert metrics["consumer-metrics"]["requests_sent"] > 0

    consumer.pause(tp0)
    assert consumer.paused() == {tp0}
    consumer.resume(tp0)
    consumer.seek_to_beginning(tp0)
    assert consumer.position(tp0) == 0
    consumer.seek_to_end()
    assert consumer.position(tp1) == 10

    committed: list[Any] = []
    consumer.commit_async(
        {tp0: OffsetAndMetadata(3, "")}, callback=lambda o, r: committed.append(r)
    )
    deadline = time.monotonic() + 30
    while not committed:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert len(committed) == 1 and committed[0][tp0].offset == 3
    consumer.close(autocommit=False)


# -- aiokafka's documented usage -------------------------------------------------------------
def test_aiokafka_readme_and_consumer_guide(kafka_broker: Any, topic: str) -> None:
    bootstrap = kafka_broker.bootstrap

    async def consume() -> list[Any]:
        # aiokafka README: start, "async for msg in consumer", stop in finally.
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=f"g-{topic}", auto_offset_reset="earliest"
        )
        await consumer.start()
        got = []
        try:
            async for msg in consumer:
                got.append((msg.topic, msg.partition, msg.offset, msg.key, msg.value))
                if len(got) == 20:
                    break
            tp = TopicPartition(topic, 0)
            # Consumer guide: getmany by partition, getone, seek_to_beginning awaited.
            await consumer.commit()
            assert await consumer.committed(tp) == 10
            await consumer.seek_to_beginning(tp)
            assert await consumer.position(tp) == 0
            one = await consumer.getone()
            assert one.offset == 0 and one.partition == 0
            batch = await consumer.getmany(timeout_ms=2000, max_records=5)
            assert batch and all(len(v) <= 5 for v in batch.values())
            assert consumer.highwater(tp) == 10
            assert topic in await consumer.topics()
            assert consumer.partitions_for_topic(topic) == {0, 1}
            # With partitions, from those only (more in tests/compat/).
            assert set(await consumer.getmany(tp, timeout_ms=500)) <= {tp}
        finally:
            await consumer.stop()
        return got

    got = asyncio.run(asyncio.wait_for(consume(), 120))
    assert len(got) == 20 and {g[1] for g in got} == {0, 1}


def test_trio_has_the_same_shape(kafka_broker: Any, topic: str) -> None:
    async def main() -> None:
        with trio.fail_after(120):
            async with TrioKafkaConsumer(
                bootstrap_servers=kafka_broker.bootstrap,
                auto_offset_reset="earliest",
                value_deserializer=json.loads,
            ) as consumer:
                tp = TopicPartition(topic, 1)
                consumer.assign([tp])
                first = await consumer.getone()
                assert (first.offset, first.value) == (0, {"n": 0})
                await consumer.seek_to_end(tp)
                assert await consumer.position(tp) == 10
                await consumer.seek_to_beginning(tp)
                batch = await consumer.getmany(timeout_ms=2000)
                assert batch[tp][0].offset == 0

    trio.run(main)

"""kafka-python 3's documented consumer and producer calls, imports pointed at
kafkacore.compat.kafka, against a real broker (issue 21).

Written from kafka-python's API reference and docstrings: Serializer and
Deserializer objects (``serialize(topic, headers, data)``) wherever a
callable goes, ``offsets_for_times`` answering objects with ``.offset`` and
``.timestamp``, ``commit({tp: (offset, "metadata")})``, negative offsets and
timestamps raising ValueError, ``acks=0`` answering a RecordMetadata with
offset -1, ``bootstrap()``, ``group_metadata().state`` with ``MemberState``,
a pattern matched as ``re.match``, and a client dropped unclosed warning
(no socket or thread left by one that was closed).
"""

from __future__ import annotations

import gc
import json
import threading
import time
import uuid
from typing import Any

import kafka.serializer
import pytest

from kafkacore.compat.kafka import (
    KafkaConsumer,
    KafkaProducer,
    OffsetAndMetadata,
    Serializer,
    TopicPartition,
)
from kafkacore.compat.kafka.errors import KafkaTimeoutError
from kafkacore.compat.kafka.serializer import DefaultSerializer, Deserializer, JsonSerializer
from kafkacore.compat.kafka.structs import MemberState

pytestmark = pytest.mark.broker


def _topic(kafka_broker: Any, partitions: int = 1, prefix: str = "kp-compat") -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(name, partitions)
    return name


class UpperKey(Serializer):
    """A Serializer subclass as kafka-python's docs show: topic and headers given."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []
        self.closed = False

    def serialize(self, topic: str, headers: Any, data: Any) -> bytes | None:
        self.seen.append((topic, headers))
        return None if data is None else str(data).upper().encode()

    def close(self) -> None:
        self.closed = True


class Tagged(Deserializer):
    def deserialize(self, topic: str, headers: Any, data: bytes | None) -> Any:
        return (topic, dict(headers or []).get("h"), data)


def test_serializer_and_deserializer_objects(kafka_broker: Any) -> None:
    topic = _topic(kafka_broker)
    key_ser = UpperKey()
    with KafkaProducer(
        bootstrap_servers=kafka_broker.bootstrap,
        key_serializer=key_ser,
        value_serializer=JsonSerializer(),
    ) as producer:
        producer.send(topic, {"n": 1}, key="k1", headers=[("h", b"x")]).get(timeout=30)
        # kafka-python's own classes work as well: any serialize(topic, headers, data).
    assert key_ser.seen == [(topic, [("h", b"x")])] and key_ser.closed
    with KafkaProducer(
        bootstrap_servers=kafka_broker.bootstrap,
        value_serializer=kafka.serializer.DefaultSerializer(),
    ) as producer:
        producer.send(topic, "plain text").get(timeout=30)
    with KafkaConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap,
        auto_offset_reset="earliest",
        key_deserializer=DefaultSerializer(),
        value_deserializer=Tagged(),
        consumer_timeout_ms=10_000,
    ) as consumer:
        got = [(m.key, m.value) for m, _ in zip(consumer, range(2), strict=False)]
    assert got[0] == ("K1", (topic, b"x", json.dumps({"n": 1}).encode()))
    assert got[1] == (None, (topic, None, b"plain text"))


def test_offsets_commits_and_bad_arguments(kafka_broker: Any) -> None:
    topic = _topic(kafka_broker)
    tp = TopicPartition(topic, 0)
    with KafkaProducer(bootstrap_servers=kafka_broker.bootstrap) as producer:
        for i in range(3):
            producer.send(topic, b"v%d" % i, timestamp_ms=1_700_000_000_000 + i).get(timeout=30)
    group = f"g-{topic}"
    with KafkaConsumer(
        bootstrap_servers=kafka_broker.bootstrap, group_id=group, request_timeout_ms=5000
    ) as consumer:
        consumer.assign([tp])
        found = consumer.offsets_for_times({tp: 1_700_000_000_001})[tp]
        assert (found.offset, found.timestamp) == (1, 1_700_000_000_001)
        with pytest.raises(ValueError):
            consumer.offsets_for_times({tp: -1})
        with pytest.raises(ValueError):
            consumer.seek(tp, -5)
        with pytest.raises(ValueError):
            consumer.commit({tp: -1})
        # kafka-python's lookups wait request_timeout_ms (here 5 s), not a minute.
        with pytest.raises(KafkaTimeoutError):
            consumer.offsets_for_times({TopicPartition(topic, 100): 0})
        consumer.commit({tp: (2, "meta-2")})
        assert consumer.committed(tp, metadata=True) == OffsetAndMetadata(2, "meta-2", None)
        consumer.commit({tp: OffsetAndMetadata(1, "meta-1", -1)})
        assert consumer.committed(tp) == 1


def test_acks_0_answers_offset_minus_one(kafka_broker: Any) -> None:
    topic = _topic(kafka_broker)
    with KafkaProducer(bootstrap_servers=kafka_broker.bootstrap, acks=0) as producer:
        md = producer.send(topic, b"fire").get(timeout=30)
    assert (md.topic, md.partition, md.offset) == (topic, 0, -1)


def test_bootstrap_group_state_and_patterns(kafka_broker: Any) -> None:
    base = f"kp-pat-{uuid.uuid4().hex[:6]}"
    for suffix in ("a", "b"):
        kafka_broker.create_topic(f"{base}-{suffix}", 1)
    with KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap, group_id=f"g-{base}") as c:
        c.bootstrap(timeout_ms=30_000)
        assert c.group_metadata().state == MemberState.UNJOINED
        c.subscribe(pattern=f"{base}-")  # re.match: a prefix, as kafka-python matches
        deadline = time.monotonic() + 60
        while c.group_metadata().state != MemberState.STABLE or len(c.assignment()) < 2:
            c.poll(timeout_ms=200)
            assert time.monotonic() < deadline, "the pattern group never settled"
        assert c.subscription() == {f"{base}-a", f"{base}-b"}


def test_a_dropped_client_warns_and_a_closed_one_leaves_no_thread(kafka_broker: Any) -> None:
    def loop_threads() -> set[str]:
        return {t.name for t in threading.enumerate() if t.name.startswith("kafkacore")}

    before = loop_threads()
    for make in (
        lambda: KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap),
        lambda: KafkaProducer(bootstrap_servers=kafka_broker.bootstrap),
    ):
        client = make()
        name = type(client).__name__
        with pytest.warns(ResourceWarning, match=f"Unclosed {name}"):
            del client
            gc.collect()
        closed = make()
        closed.close()
    deadline = time.monotonic() + 10
    while loop_threads() - before:
        assert time.monotonic() < deadline, f"loop threads left: {loop_threads() - before}"
        time.sleep(0.05)

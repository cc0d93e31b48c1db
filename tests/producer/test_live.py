"""The producer against a real Kafka 4.3.1 broker, once per transport.

Every test reads back what it produced through kafkacore's own Fetch
(:mod:`tests.producer.readback`), so "delivered" is checked against the
log itself: each record exactly once, in send order per partition, with
its key, headers and value intact, where its RecordMetadata says.
"""

from __future__ import annotations

import itertools
import subprocess
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kafkacore.client import GroupCoordinator
from kafkacore.errors import KafkaTimeoutError
from kafkacore.partitioner import partition_for_key
from kafkacore.producer import ProducerFencedError, RecordMetadata
from kafkacore.protocol.messages import OffsetFetchRequest
from kafkacore.protocol.messages.offset_fetch_request import (
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)
from kafkacore.transports._producer_common import ManyResult
from kafkacore.transports._producer_selector import KafkaProducer
from kafkacore.transports.selector import KafkaClient
from tests.producer.drivers import FLAVORS, run
from tests.producer.readback import ReadRecord, read_partition

COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")


def _topic(kafka: Any, partitions: int, prefix: str = "p") -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    kafka.create_topic(name, partitions=partitions)
    return name


@pytest.fixture(scope="module")
def reader(kafka_broker: Any) -> Iterator[KafkaClient]:
    with KafkaClient(kafka_broker.bootstrap) as client:
        yield client


def _read_all(
    client: KafkaClient, topic: str, partitions: int, isolation_level: int = 0
) -> dict[int, list[ReadRecord]]:
    return {
        p: read_partition(client, topic, p, isolation_level=isolation_level)
        for p in range(partitions)
    }


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_records_read_back_exactly_once_in_order(
    kafka_broker: Any, reader: KafkaClient, flavor: str, compression: str
) -> None:
    topic = _topic(kafka_broker, 3)
    n = 1500
    steps: list[Any] = []
    for i in range(n):
        key = b"key-%d" % (i % 97) if i % 10 else None
        headers = [("idx", str(i).encode()), ("empty", None)] if i % 3 == 0 else None
        steps.append(("send", topic, b"value-%d" % i, key, headers, None))
    columns = {
        "keys": [b"mk-%d" % i for i in range(3000)],
        "values": [b"many-%d" % i for i in range(3000)],
    }
    steps.append(("send_many", topic, None, columns))
    steps.append(("send_many", topic, [(None, b"pair-%d" % i) for i in range(500)]))
    results = run(flavor, kafka_broker.bootstrap, steps, compression_type=compression)

    errors = [r for r in results if isinstance(r, BaseException)]
    assert not errors, errors[:3]
    logs = _read_all(reader, topic, 3)
    by_value = {r.value: (p, r) for p, recs in logs.items() for r in recs}
    values = [r.value for recs in logs.values() for r in recs]
    assert len(values) == len(set(values)) == n + 3000 + 500  # exactly once

    for i, md in enumerate(results[:n]):
        assert isinstance(md, RecordMetadata)
        part, rec = by_value[b"value-%d" % i]
        assert (md.topic, md.partition, md.offset) == (topic, part, rec.offset)
        assert rec.timestamp == md.timestamp
        key = b"key-%d" % (i % 97) if i % 10 else None
        assert rec.key == key
        if key is not None:
            assert part == partition_for_key(key, 3)
        if i % 3 == 0:
            assert [(h[0], h[1]) for h in rec.headers] == [
                ("idx", str(i).encode()),
                ("empty", None),
            ]
        else:
            assert rec.headers == ()
    many = results[n]
    assert isinstance(many, ManyResult) and many.count == 3000 and many.error is None
    pairs = results[n + 1]
    assert isinstance(pairs, ManyResult) and pairs.count == 500
    for i in range(3000):
        part, rec = by_value[b"many-%d" % i]
        assert rec.key == b"mk-%d" % i and part == partition_for_key(rec.key, 3)
    # Send order is log order within each partition, for each kind of send.
    for recs in logs.values():
        for prefix in (b"value-", b"many-", b"pair-"):
            seq = [int(v[len(prefix) :]) for r in recs if (v := r.value or b"").startswith(prefix)]
            assert seq == sorted(seq)


@pytest.mark.parametrize("flavor", FLAVORS)
def test_keyed_partitions_agree_with_the_java_producer(
    kafka_broker: Any, kafka_libs: Any, reader: KafkaClient, flavor: str
) -> None:
    partitions = 7
    ours = _topic(kafka_broker, partitions, "ours")
    java = _topic(kafka_broker, partitions, "java")
    keys = [f"user-{i}-{i * 7919 % 1000}" for i in range(3000)]
    results = run(
        flavor,
        kafka_broker.bootstrap,
        [("send_many", ours, [(k.encode(), b"v") for k in keys])],
    )
    assert isinstance(results[0], ManyResult) and results[0].count == len(keys)
    lines = "".join(f"{k}\tv\n" for k in keys)
    subprocess.run(
        [
            "java",
            "-cp",
            kafka_broker.classpath,
            "org.apache.kafka.tools.ConsoleProducer",
            "--bootstrap-server",
            kafka_broker.bootstrap,
            "--topic",
            java,
            "--property",
            "parse.key=true",
            "--property",
            "key.separator=\t",
        ],
        input=lines,
        text=True,
        check=True,
        capture_output=True,
        timeout=120,
    )
    placed: list[dict[bytes | None, int]] = []
    for topic in (ours, java):
        logs = _read_all(reader, topic, partitions)
        placed.append({r.key: p for p, recs in logs.items() for r in recs})
    assert len(placed[0]) == len(placed[1]) == len(keys)
    assert placed[0] == placed[1]


@pytest.mark.parametrize("flavor", FLAVORS)
def test_transactions_committed_visible_aborted_not(
    kafka_broker: Any, reader: KafkaClient, flavor: str
) -> None:
    topic = _topic(kafka_broker, 2, "txn")
    tid = f"tx-{uuid.uuid4().hex[:8]}"
    group = f"g-{uuid.uuid4().hex[:8]}"

    def sends(tag: str, n: int) -> list[Any]:
        return [
            ("send", topic, f"{tag}-{i}".encode(), f"k{i}".encode(), None, None) for i in range(n)
        ]

    steps = [
        ("init",),
        ("begin",),
        *sends("c1", 100),
        ("commit",),
        ("begin",),
        *sends("a1", 80),
        ("flush",),  # make sure the aborted records really are in the log
        ("abort",),
        ("begin",),
        *sends("c2", 50),
        ("offsets", {(topic, 0): 42, (topic, 1): 7}, group),
        ("commit",),
        ("begin",),
        ("offsets", {(topic, 0): 99}, group),
        ("abort",),  # aborted offsets are not committed
        ("begin",),
        ("abort",),  # an empty transaction ends locally
    ]
    results = run(flavor, kafka_broker.bootstrap, steps, transactional_id=tid)
    errors = [r for r in results if isinstance(r, BaseException)]
    assert not errors, errors[:3]
    committed = _read_all(reader, topic, 2, isolation_level=1)
    seen = sorted(r.value or b"" for recs in committed.values() for r in recs)
    expected = sorted(
        [f"c1-{i}".encode() for i in range(100)] + [f"c2-{i}".encode() for i in range(50)]
    )
    assert seen == expected
    uncommitted = _read_all(reader, topic, 2, isolation_level=0)
    everything = [r.value or b"" for recs in uncommitted.values() for r in recs]
    assert sum(v.startswith(b"a1-") for v in everything) == 80  # written, then aborted
    assert _committed_offsets(reader, group, topic, 2) == {0: 42, 1: 7}


def test_transactions_v2_on_this_broker(kafka_broker: Any, reader: KafkaClient) -> None:
    """Kafka 4.3 finalizes transaction.version 2: no AddPartitionsToTxn or
    AddOffsetsToTxn is sent, EndTxn v5 bumps the epoch at every end (KIP-890)."""
    topic = _topic(kafka_broker, 2, "tv2")
    tid = f"tv2-{uuid.uuid4().hex[:8]}"
    group = f"g-{uuid.uuid4().hex[:8]}"
    with KafkaProducer(kafka_broker.bootstrap, transactional_id=tid) as p:
        p.init_transactions()
        first = p.run_on_loop(lambda core: core.producer_id)
        epochs: list[tuple[int, int]] = []
        for tag, commit in (("c1", True), ("a1", False), ("c2", True)):
            p.begin_transaction()
            futures = [p.send(topic, f"{tag}-{i}".encode(), key=b"k%d" % i) for i in range(20)]
            p.send_offsets_to_transaction({(topic, 0): len(epochs) + 1}, group)
            if commit:
                p.commit_transaction()
            else:
                p.flush()
                p.abort_transaction()
            for fut in futures:
                fut.exception(timeout=30)
            epochs.append(p.run_on_loop(lambda core: core.producer_id))
        facts = p.run_on_loop(
            lambda core: (
                core.transactions_v2,
                core.client.finalized_features(),
                dict(core.client.metrics().requests_by_api),
                core.client.api_version(26),
                core.client.api_version(0),
            )
        )
    v2, features, by_api, end_txn_version, produce_version = facts
    assert features is not None and features.get("transaction.version", 0) >= 2
    assert v2
    assert 24 not in by_api and 25 not in by_api  # AddPartitionsToTxn, AddOffsetsToTxn
    assert by_api[26] == 3 and end_txn_version >= 5 and produce_version >= 12
    pid, epoch = first
    assert epochs == [(pid, epoch + 1), (pid, epoch + 2), (pid, epoch + 3)]
    committed = _read_all(reader, topic, 2, isolation_level=1)
    seen = sorted(r.value or b"" for recs in committed.values() for r in recs)
    assert seen == sorted(f"{t}-{i}".encode() for t in ("c1", "c2") for i in range(20))
    assert _committed_offsets(reader, group, topic, 2) == {0: 3, 1: -1}


def _committed_offsets(client: KafkaClient, group: str, topic: str, n: int) -> dict[int, int]:
    cluster = client.metadata([topic])
    request = OffsetFetchRequest(
        groups=[
            OffsetFetchRequestGroup(
                group_id=group,
                topics=[
                    OffsetFetchRequestTopics(
                        name=topic,
                        topic_id=cluster.topic_id(topic),
                        partition_indexes=list(range(n)),
                    )
                ],
            )
        ],
        require_stable=True,
    )
    response = client.send(request, target=GroupCoordinator(group), timeout=30)
    (answer,) = response.groups
    assert answer.error_code == 0
    return {p.partition_index: p.committed_offset for t in answer.topics for p in t.partitions}


@pytest.mark.parametrize("flavor", FLAVORS)
def test_second_producer_with_same_transactional_id_fences_the_first(
    kafka_broker: Any, flavor: str
) -> None:
    topic = _topic(kafka_broker, 1, "fence")
    tid = f"fence-{uuid.uuid4().hex[:8]}"
    bootstrap = kafka_broker.bootstrap
    steps = [
        ("init",),
        ("call", lambda: run("selector", bootstrap, [("init",)], transactional_id=tid)),
        ("begin",),
        ("send", topic, b"late", None, None, None),
        ("commit",),
    ]
    results = run(flavor, bootstrap, steps, transactional_id=tid)
    assert results[0] is None
    assert results[1] == [None]  # the new instance initialised
    failures = [r for r in results[3:] if isinstance(r, BaseException)]
    assert failures, results
    assert any(isinstance(r, ProducerFencedError) for r in failures), failures
    fenced = next(r for r in failures if isinstance(r, ProducerFencedError))
    assert tid in str(fenced) and "close this producer" in str(fenced)


@pytest.mark.parametrize("flavor", FLAVORS)
def test_unknown_topic_fails_after_max_block_ms(kafka_broker: Any, flavor: str) -> None:
    # The broker runs with auto.create.topics.enable=false.
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    results = run(
        flavor,
        kafka_broker.bootstrap,
        [("send", missing, b"x", None, None, None)],
        max_block_ms=1500,
    )
    assert isinstance(results[0], KafkaTimeoutError)
    assert missing in str(results[0]) and "max_block_ms=1500" in str(results[0])


@pytest.mark.parametrize("flavor", FLAVORS)
def test_values_must_be_bytes_without_a_serializer(kafka_broker: Any, flavor: str) -> None:
    topic = _topic(kafka_broker, 1, "types")
    results = run(flavor, kafka_broker.bootstrap, [("send", topic, "text", None, None, None)])
    assert isinstance(results[0], TypeError)
    assert "value must be bytes or None, got str" in str(results[0])


@pytest.mark.parametrize(("flavor", "acks"), list(itertools.product(FLAVORS, (0, 1, "all"))))
def test_acks_levels(kafka_broker: Any, reader: KafkaClient, flavor: str, acks: Any) -> None:
    topic = _topic(kafka_broker, 1, "acks")
    steps = [("send", topic, b"a-%d" % i, None, None, None) for i in range(200)]
    results = run(flavor, kafka_broker.bootstrap, steps, acks=acks, enable_idempotence=False)
    assert all(isinstance(r, RecordMetadata) for r in results), results[:3]
    if acks == 0:
        assert {r.offset for r in results} == {-1}
    else:
        assert [r.offset for r in results] == list(range(200))
    want = [b"a-%d" % i for i in range(200)]
    got = [r.value for r in read_partition(reader, topic, 0)]
    # acks=0 reports success once the bytes are written: the broker may append
    # them a little later, so wait for the log (bounded) instead of racing it.
    deadline = time.monotonic() + 15
    while acks == 0 and got != want and time.monotonic() < deadline:
        time.sleep(0.1)
        got = [r.value for r in read_partition(reader, topic, 0)]
    assert got == want

"""Idempotent producer across a broker crash on the 3-node cluster, on each transport.

A long keyed send runs while the leader of partition 0 is SIGKILLed and
later restarted. Every acknowledged record must be in the log exactly once,
and each partition must hold its records in send order: retries after the
crash resend the same batches with the same sequence numbers (KIP-98), so
the new leader drops duplicates and rejects gaps.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest

from kafkacore.partitioner import partition_for_key
from kafkacore.testing import LocalKafka, wire
from kafkacore.transports.selector import KafkaClient
from tests.producer.drivers import FLAVORS, run
from tests.producer.readback import read_partition

PARTITIONS = 3
TOTAL = 30_000


def _leader(kafka: LocalKafka, topic: str, partition: int) -> int:
    for node in kafka.nodes:
        try:
            (t,) = wire.metadata(node.host, node.port, [topic]).topics
        except OSError:
            continue
        return int(t.partitions[partition].leader)
    raise AssertionError("no node answered metadata")


def _key(i: int) -> bytes:
    return b"key-%d" % (i % 60)


@pytest.mark.parametrize("flavor", FLAVORS)
def test_every_acked_record_once_and_in_order_across_a_leader_crash(
    kafka_cluster: LocalKafka, flavor: str
) -> None:
    topic = f"crash-{uuid.uuid4().hex[:8]}"
    kafka_cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
    victim = _leader(kafka_cluster, topic, 0)
    restarter = threading.Thread(target=kafka_cluster.restart, args=(victim,))
    steps: list[Any] = []
    for i in range(TOTAL):
        steps.append(("send", topic, b"%08d" % i, _key(i), None, None))
        if i % 250 == 249:
            steps.append(("sleep", 0.02))  # pace the sends so the crash lands mid-stream
        if i == TOTAL // 4:
            steps.append(("call", lambda: kafka_cluster.kill(victim)))
        if i == TOTAL // 2:
            steps.append(("call", restarter.start))  # restart while sends go on
    steps.append(("flush",))
    steps.append(("call", lambda: restarter.join(120)))
    steps.append(("query", lambda core: core.client.metrics()))
    results = run(
        flavor,
        kafka_cluster.bootstrap,
        steps,
        request_timeout_ms=5000,
        linger_ms=2,
        batch_size=4096,
    )
    stats = results[-1]
    sends = [r for s, r in zip(steps, results, strict=True) if s[0] == "send"]
    failures = [r for r in sends if isinstance(r, BaseException)]
    # The crash was survivable (2 of 3 replicas stay in sync): nothing may fail.
    assert not failures, failures[:3]
    assert len(sends) == TOTAL
    # The crash really hit the stream: connections to the victim were lost.
    assert stats.connections_closed + stats.connection_failures > 0
    with KafkaClient(kafka_cluster.bootstrap) as reader:
        for p in range(PARTITIONS):
            values = [int(r.value or b"") for r in read_partition(reader, topic, p)]
            assert len(values) == len(set(values)), f"partition {p} has duplicates"
            assert values == sorted(values), f"partition {p} is out of order"
            expected = [i for i in range(TOTAL) if partition_for_key(_key(i), PARTITIONS) == p]
            assert values == expected

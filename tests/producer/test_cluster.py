"""Idempotent producer across a broker crash on the 3-node cluster.

A long keyed send runs while the leader of partition 0 is SIGKILLed and
later restarted. Every acknowledged record must be in the log exactly once,
and each partition must hold its records in send order: retries after the
crash resend the same batches with the same sequence numbers (KIP-98), so
the new leader drops duplicates and rejects gaps.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from kafkacore.partitioner import partition_for_key
from localkafka import LocalKafka, wire
from tests.producer.readback import read_partition
from transports._producer_selector import KafkaProducer
from transports.selector import KafkaClient

PARTITIONS = 3
TOTAL = 40_000


def _leader(kafka: LocalKafka, topic: str, partition: int, avoid: int | None = None) -> int:
    for node in kafka.nodes:
        if node.node_id == avoid:
            continue
        try:
            (t,) = wire.metadata(node.host, node.port, [topic]).topics
        except OSError:
            continue
        return int(t.partitions[partition].leader)
    raise AssertionError("no node answered metadata")


def test_every_acked_record_once_and_in_order_across_a_leader_crash(
    kafka_cluster: LocalKafka,
) -> None:
    topic = f"crash-{uuid.uuid4().hex[:8]}"
    kafka_cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
    victim = _leader(kafka_cluster, topic, 0)
    futures: list[Any] = []
    sent = threading.Event()
    progress = threading.Condition()

    with KafkaProducer(
        kafka_cluster.bootstrap, request_timeout_ms=5000, linger_ms=2, batch_size=4096
    ) as producer:

        def send_all() -> None:
            for i in range(TOTAL):
                fut = producer.send(topic, b"%08d" % i, key=b"key-%d" % (i % 60))
                with progress:
                    futures.append(fut)
                    progress.notify_all()
                if i % 250 == 249:
                    time.sleep(0.02)  # pace the sends so the crash lands mid-stream
            sent.set()

        sender = threading.Thread(target=send_all)
        sender.start()
        with progress:
            progress.wait_for(lambda: len(futures) >= TOTAL // 4)
        kafka_cluster.kill(victim)
        with progress:
            progress.wait_for(lambda: len(futures) >= TOTAL // 2)
        kafka_cluster.restart(victim)
        sender.join()
        assert sent.is_set()
        producer.flush(180)
        outcomes = []
        for fut in futures:
            try:
                outcomes.append(fut.result(0))
            except Exception as exc:
                outcomes.append(exc)
        stats = producer.run_on_loop(lambda core: core.client.metrics())

    acked = {i for i, o in enumerate(outcomes) if not isinstance(o, BaseException)}
    failures = [o for o in outcomes if isinstance(o, BaseException)]
    # The crash was survivable (2 of 3 replicas stay in sync): nothing may fail.
    assert not failures, failures[:3]
    assert len(acked) == TOTAL
    with KafkaClient(kafka_cluster.bootstrap) as reader:
        for p in range(PARTITIONS):
            values = [int(r.value or b"") for r in read_partition(reader, topic, p)]
            assert len(values) == len(set(values)), f"partition {p} has duplicates"
            assert values == sorted(values), f"partition {p} is out of order"
            expected = sorted(
                i for i in acked if partition_for_key(b"key-%d" % (i % 60), PARTITIONS) == p
            )
            assert values == expected
    # The crash really hit the stream: connections to the victim were lost.
    assert stats.connections_closed + stats.connection_failures > 0

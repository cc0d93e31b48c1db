"""Consumer groups against a real Kafka 4.3.1 broker (the project's localkafka).

Three kafkacore members on different transports (selector, asyncio, trio)
share a 12-partition topic while members join and leave, with the classic
protocol and with KIP-848; a kafkacore member and a confluent-kafka member
share one group, with both protocols. After every membership change the
group settles with each partition owned by exactly one member; no record is
lost; duplicates stay within the uncommitted window (one poll per change).
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest

from kafkacore.transports.selector import KafkaClient
from tests.consumer.helpers import produce
from tests.consumer.workers import MAX_POLL, Worker, describe, wait_for

PARTITIONS = 12


def settled(workers: list[Worker]) -> bool:
    live = [w for w in workers if not w.closed.is_set()]
    owned = [p for w in live for p in w.assignment]
    return len(owned) == len(set(owned)) == PARTITIONS and all(w.assignment for w in live)


def fill(bootstrap: str, topic: str, per_partition: int, start: int = 0) -> None:
    with KafkaClient(bootstrap) as client:
        for p in range(PARTITIONS):
            produce(
                client, topic, p, [b"%d-%d" % (p, i) for i in range(start, start + per_partition)]
            )


def check_delivery(workers: list[Worker], total: int, changes: int) -> None:
    seen = Counter(r for w in workers for r in w.records)
    assert len(seen) == total, f"lost records: saw {len(seen)} distinct of {total}"
    dups = sum(n - 1 for n in seen.values())
    assert dups <= changes * MAX_POLL * 3, f"{dups} duplicates beyond the uncommitted window"


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_three_transports_share_a_group_while_members_come_and_go(
    kafka_broker: Any, protocol: str
) -> None:
    topic = f"grp-{protocol}-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, PARTITIONS)
    bootstrap = kafka_broker.bootstrap
    group = f"g-{topic}"
    fill(bootstrap, topic, 100)
    workers = [Worker("selector", bootstrap, group, topic, protocol).start()]
    wait_for(
        lambda: settled(workers), "one member owns all partitions", state=lambda: describe(workers)
    )
    workers.append(Worker("asyncio", bootstrap, group, topic, protocol).start())
    wait_for(
        lambda: settled(workers),
        "two members split the partitions",
        state=lambda: describe(workers),
    )
    workers.append(Worker("trio", bootstrap, group, topic, protocol).start())
    wait_for(
        lambda: settled(workers),
        "three members split the partitions",
        state=lambda: describe(workers),
    )
    fill(bootstrap, topic, 100, start=100)
    workers[0].close()  # the selector member leaves
    wait_for(
        lambda: settled(workers),
        "two members take over the leaver's partitions",
        state=lambda: describe(workers),
    )
    workers.append(Worker("selector", bootstrap, group, topic, protocol).start())
    wait_for(
        lambda: settled(workers), "a new selector member joins", state=lambda: describe(workers)
    )
    fill(bootstrap, topic, 100, start=200)
    total = PARTITIONS * 300
    wait_for(
        lambda: len({r for w in workers for r in w.records}) >= total,
        "every record consumed",
        state=lambda: describe(workers),
    )
    for w in workers[1:]:
        w.close()
    check_delivery(workers, total, changes=5)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_kafkacore_and_confluent_kafka_share_a_group(kafka_broker: Any, protocol: str) -> None:
    topic = f"mixed-{protocol}-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, PARTITIONS)
    bootstrap = kafka_broker.bootstrap
    group = f"g-{topic}"
    fill(bootstrap, topic, 50)
    extra: dict[str, Any] = {}
    if protocol == "classic":
        extra["partition_assignment_strategy"] = ("range",)
    ours = Worker("selector", bootstrap, group, topic, protocol, **extra).start()
    wait_for(
        lambda: settled([ours]), "kafkacore owns all partitions", state=lambda: describe([ours])
    )
    theirs = Worker("confluent", bootstrap, group, topic, protocol).start()
    wait_for(
        lambda: settled([ours, theirs]),
        "kafkacore and confluent-kafka split the partitions",
        state=lambda: describe([ours, theirs]),
    )
    assert ours.assignment and theirs.assignment
    fill(bootstrap, topic, 50, start=50)
    wait_for(
        lambda: len({r for w in (ours, theirs) for r in w.records}) >= PARTITIONS * 100,
        "every record consumed by one of the two",
    )
    theirs.close()
    ours.close()
    check_delivery([ours, theirs], PARTITIONS * 100, changes=2)

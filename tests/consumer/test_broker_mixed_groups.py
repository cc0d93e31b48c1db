"""Groups whose members commit after every poll stay stable, against a real
broker (issue 10, fault 9).

Members join one by one while records flow (so commits are in flight during
every rebalance: the interleaving that made kafkacore's cooperative-sticky
members rebalance for ever), the group settles, and then for a stable
period with no membership change:

- no member goes through a rebalance (kafkacore: its generation does not
  move; Java and librdkafka: no assignment callback);
- every record produced in that period is consumed exactly once across the
  group, and no record at all is lost.

Groups: the three kafkacore transports with cooperative-sticky; and
kafkacore members next to a confluent-kafka (librdkafka) member and a Java
KafkaConsumer (kafka-clients 4.3.1, tests/consumer/java/GroupMember.java)
for range, cooperative-sticky and KIP-848 (``group.protocol=consumer``).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from typing import Any

import pytest

from kafkacore.transports.selector import KafkaClient
from tests.consumer.helpers import produce
from tests.consumer.workers import Worker, describe, wait_for

PARTITIONS = 12
STABLE_S = 15.0
GRACE_S = 3.0
BATCH = 5  # records per partition per round


class Feeder:
    """Produces BATCH records to every partition every 100 ms, noting each offset."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.phase = "join"
        self.produced: list[tuple[int, int, str]] = []  # (partition, offset, phase)
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="feeder", daemon=True)

    def start(self) -> Feeder:
        self.thread.start()
        return self

    def close(self) -> None:
        self.stop.set()
        self.thread.join(60)
        if self.error is not None:
            raise self.error

    def _run(self) -> None:
        try:
            with KafkaClient(self.bootstrap) as client:
                n = 0
                while not self.stop.is_set():
                    phase = self.phase
                    for p in range(PARTITIONS):
                        values = [b"%s-%d-%d" % (phase.encode(), n, i) for i in range(BATCH)]
                        first = produce(client, self.topic, p, values)
                        self.produced.extend((p, first + i, phase) for i in range(BATCH))
                    n += 1
                    self.stop.wait(0.1)
        except BaseException as exc:
            self.error = exc


def settled(workers: list[Worker]) -> bool:
    live = [w for w in workers if not w.closed.is_set()]
    owned = [p for w in live for p in w.assignment]
    return len(owned) == len(set(owned)) == PARTITIONS and all(w.assignment for w in live)


def run_group(
    kafka_broker: Any,
    kinds: list[str],
    protocol: str,
    assignor: str,
    java: tuple[str, str] | None = None,
) -> None:
    topic = f"stable-{protocol}-{assignor}-{uuid.uuid4().hex[:6]}"
    kafka_broker.create_topic(topic, PARTITIONS)
    bootstrap = kafka_broker.bootstrap
    group = f"g-{topic}"
    extra: dict[str, Any] = {}
    if protocol == "classic":
        extra["partition_assignment_strategy"] = (assignor,)
    feeder = Feeder(bootstrap, topic).start()
    workers: list[Worker] = []
    try:
        for kind in kinds:
            workers.append(
                Worker(
                    kind, bootstrap, group, topic, protocol, assignor=assignor, java=java, **extra
                ).start()
            )
            wait_for(
                lambda: settled(workers),
                f"{len(workers)} members split the partitions",
                timeout=120,
                state=lambda: describe(workers),
            )
        time.sleep(GRACE_S)  # let the last round's callbacks land
        start = time.monotonic()
        feeder.phase = "stable"
        time.sleep(STABLE_S)
        end = time.monotonic()
        feeder.close()
        produced = {(p, o) for p, o, _ in feeder.produced}
        wait_for(
            lambda: produced <= {r for w in workers for r in w.records},
            "every record consumed",
            timeout=120,
            state=lambda: describe(workers),
        )
        moved = {
            w.kind: [round(t - start, 1) for t in w.rebalances if start <= t <= end]
            for w in workers
        }
        assert not any(moved.values()), (
            f"rebalances during {STABLE_S} s without membership change "
            f"(seconds into the period, per member): {moved}"
        )
        seen = Counter(r for w in workers for r in w.records)
        stable = [(p, o) for p, o, phase in feeder.produced if phase == "stable"]
        assert stable, "nothing was produced in the stable period"
        dups = {r: seen[r] for r in stable if seen[r] != 1}
        assert not dups, f"{len(dups)} of {len(stable)} stable-period records seen twice or more"
        stable_set = set(stable)
        idle = [w.kind for w in workers if not stable_set & set(w.records)]
        assert not idle, f"members that consumed nothing in the stable period: {idle}"
        print(
            f"\n{protocol}/{assignor}: {len(feeder.produced)} records, {len(stable)} in the "
            f"stable period, duplicates overall {sum(n - 1 for n in seen.values())}; "
            + ", ".join(
                f"{w.kind}: {len(w.rebalances)} rebalances, {w.commit_failures} failed commits"
                for w in workers
            )
        )
    finally:
        feeder.stop.set()
        for w in workers:
            w.stop.set()
        for w in workers:
            w.close()


def test_cooperative_sticky_members_committing_every_poll_stay_stable(kafka_broker: Any) -> None:
    run_group(kafka_broker, ["selector", "asyncio", "trio"], "classic", "cooperative-sticky")


@pytest.mark.parametrize(
    ("protocol", "assignor"),
    [("classic", "range"), ("classic", "cooperative-sticky"), ("consumer", "uniform")],
)
def test_mixed_group_with_java_and_librdkafka_stays_stable(
    kafka_broker: Any, java_member: tuple[str, str], protocol: str, assignor: str
) -> None:
    run_group(
        kafka_broker,
        ["selector", "confluent", "java", "asyncio"],
        protocol,
        assignor,
        java=java_member,
    )

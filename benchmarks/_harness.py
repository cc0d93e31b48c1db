"""Shared setup for the client benchmarks: one broker, topics, timing, percentiles.

``broker()`` starts one local Kafka 4.3.1 broker with the BENCHMARK JVM
profile (or yields ``--bootstrap`` when given); ``create_topics()`` makes
topics with kafkacore's own client (one CreateTopics request, no JVM
tool per topic); ``percentile()`` and ``markdown_table()`` format results.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Iterator, Sequence

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

__all__ = ["broker", "create_topics", "markdown_table", "percentile"]


@contextlib.contextmanager
def broker(bootstrap: str | None = None) -> Iterator[str]:
    """A broker's bootstrap address: ``bootstrap`` itself, or a fresh local broker."""
    if bootstrap:
        yield bootstrap
        return
    from localkafka.cluster import LocalKafka
    from localkafka.config import Profile

    with LocalKafka(size=1, profile=Profile.BENCHMARK) as kafka:
        yield kafka.bootstrap


def create_topics(bootstrap: str, names: Sequence[str], partitions: int = 1) -> None:
    """Create ``names`` (replication 1) and wait until each has a leader."""
    from kafkacore.protocol.messages import CreateTopicsRequest
    from kafkacore.protocol.messages.create_topics_request import CreatableTopic
    from transports.selector import KafkaClient

    with KafkaClient(bootstrap) as client:
        request = CreateTopicsRequest(
            topics=[
                CreatableTopic(name=n, num_partitions=partitions, replication_factor=1)
                for n in names
            ],
            timeout_ms=30000,
        )
        response = client.send(request, timeout=60)
        for topic in response.topics:
            if topic.error_code not in (0, 36):  # 36: TOPIC_ALREADY_EXISTS
                raise RuntimeError(f"create topic {topic.name}: error {topic.error_code}")
        deadline = time.monotonic() + 60
        while True:
            cluster = client.metadata(list(names))
            if all(
                len(cluster.available_partitions_for_topic(n) or ()) == partitions for n in names
            ):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"topics {list(names)} got no leaders in 60 s")
            time.sleep(0.2)


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0-100) by nearest rank; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def markdown_table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)

"""A broker tuned for share-group tests: short record locks and heartbeats.

The session broker (``kafka_broker``) keeps Kafka's defaults: a 30 s record
lock whose group-level minimum is 15 s, and 5 s share heartbeats, too slow
for a test that waits for a lock to run out. This module-scoped broker lowers
the minimums so each test's group can set a lock of a few seconds.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkacore.testing.cluster import LocalKafka

#: Broker settings that let a share group use short locks and heartbeats.
SHARE_OVERRIDES = {
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.record.lock.duration.ms": "4000",
    "group.share.min.heartbeat.interval.ms": "500",
    "group.share.heartbeat.interval.ms": "1000",
    # A killed member leaves the assignment after this (its partitions go to the others).
    "group.share.min.session.timeout.ms": "3000",
    "group.share.session.timeout.ms": "6000",
}


@pytest.fixture(scope="module")
def share_broker(kafka_libs: Path) -> Iterator[LocalKafka]:
    with LocalKafka(size=1, overrides=SHARE_OVERRIDES) as kafka:
        yield kafka


@pytest.fixture
def unique() -> str:
    return uuid.uuid4().hex[:10]

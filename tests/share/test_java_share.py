"""kafkacore's share consumer and Java's in one share group (KIP-932)."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from kafkacore.testing.cluster import LocalKafka
from kafkacore.transports.selector import KafkaAdminClient, KafkaShareConsumer
from tests.share.broker_util import prepare_group, produce

pytestmark = pytest.mark.broker

RECORDS = 400
_LINE = re.compile(r"Partition:(\d+)\s+Offset:(\d+)")


def _members(kafka: LocalKafka, group: str) -> int:
    with KafkaAdminClient(bootstrap_servers=kafka.bootstrap) as admin:
        found = admin.describe_share_groups([group])[group]
        return len(found.value.members) if found.value is not None else 0


def test_kafkacore_and_the_java_share_consumer_split_one_group(
    share_broker: LocalKafka, kafka_libs: Path, unique: str
) -> None:
    topic, group = f"sharejava-{unique}", f"gj-{unique}"
    prepare_group(share_broker, topic, 4, group, lock_ms=10000)
    java = subprocess.Popen(
        [
            "java",
            "-cp",
            str(kafka_libs / "*"),
            "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
            "--bootstrap-server",
            share_broker.bootstrap,
            "--topic",
            topic,
            "--group",
            group,
            "--formatter-property",
            "print.partition=true",
            "--formatter-property",
            "print.offset=true",
            "--timeout-ms",
            "15000",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    ours: list[tuple[int, int]] = []
    try:
        with KafkaShareConsumer(
            topic, group_id=group, bootstrap_servers=share_broker.bootstrap, max_poll_records=10
        ) as consumer:
            deadline = time.monotonic() + 60
            while _members(share_broker, group) < 2:
                assert time.monotonic() < deadline, "the Java share consumer never joined"
                consumer.poll(0.5)
            produce(share_broker, topic, 4, RECORDS)
            quiet_since = time.monotonic()
            while time.monotonic() - quiet_since < 8 and time.monotonic() < deadline + 60:
                records = consumer.poll(0.5)
                ours += [(r.partition, r.offset) for r in records]
                if records:
                    quiet_since = time.monotonic()
                    time.sleep(0.02)  # leave the Java member its share
            consumer.commit_sync()
        out, _ = java.communicate(timeout=60)
    finally:
        if java.poll() is None:
            java.kill()
    theirs = [(int(p), int(o)) for p, o in _LINE.findall(out)]
    assert ours and theirs, (len(ours), len(theirs))
    assert len(ours) == len(set(ours)) and len(theirs) == len(set(theirs))
    assert not set(ours) & set(theirs)
    assert len(ours) + len(theirs) == RECORDS

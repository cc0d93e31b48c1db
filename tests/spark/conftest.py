"""One local Spark session per test run (``local[2]``), with both Kafka formats.

Spark allows one JVM per process and takes about 10 s to start, so the
session is session-scoped and every Spark test shares it (and the broker
from ``kafka_broker``). Tests that use it get the ``spark`` marker.
``spark_cluster`` is a standalone cluster (``kafkacore.testing.spark_cluster``),
started once on first use; its tests get the ``spark_cluster`` marker.

``kafka_admin`` does what the source tests do to a topic between queries
(create, add partitions, delete records or the topic, produce with
kafkacore's producer); ``java_records`` writes records with the Java
producer in every codec, once per run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from kafkacore.testing import LocalKafka
    from kafkacore.testing.spark_cluster import LocalSparkCluster
    from kafkacore.transports.selector import KafkaClient

JAVA_DIR = Path(__file__).resolve().parent / "java"
ROOT = Path(__file__).resolve().parents[2]
PIP = ["-m", "pip", "install", "-q", "--disable-pip-version-check"]
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "spark" in names:
            item.add_marker("spark")
        if "spark_cluster" in names:
            # its tests run brokers of their own too: not socket-free
            item.add_marker("spark_cluster")
            item.add_marker("broker")


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from kafkacore.testing.spark import local_spark

    session = local_spark("kafkacore-tests")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def spark_cluster() -> Iterator[LocalSparkCluster]:
    """A standalone cluster (a master, two one-core workers), started on first use."""
    from kafkacore.testing.spark_cluster import LocalSparkCluster

    keep = os.environ.get("LOCALKAFKA_KEEP", "") not in ("", "0")
    with LocalSparkCluster(workers=2, cores=1, memory="1g", keep_workdir=keep) as cluster:
        yield cluster


def venv(path: Path, *packages: str) -> Path:
    """A fresh venv at ``path`` with ``packages`` (pip, as a user would); its python."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=120)
    python = path / "bin" / "python"
    subprocess.run([str(python), *PIP, *packages], check=True, timeout=600)
    return python


@pytest.fixture(scope="session")
def packed_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """docs/spark.md's packed venv (``venv-pack``): kafkacore built from this tree, pyarrow,
    numpy; what a user ships with ``--archives`` or Connect's ``addArtifacts``."""
    work = tmp_path_factory.mktemp("packed")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(work), str(ROOT)],
        check=True,
        timeout=1200,
    )
    (wheel,) = work.glob("kafkacore-*.whl")
    python = venv(work / "kafkacore_env", str(wheel), "pyarrow", "numpy", "venv-pack")
    archive = work / "kafkacore_env.tar.gz"
    subprocess.run(
        [str(python.parent / "venv-pack"), "-q", "-p", str(python.parents[1]), "-o", str(archive)],
        check=True,
        timeout=300,
    )
    return archive


class KafkaAdmin:
    """Topic chores for the source tests, through kafkacore's selector client."""

    def __init__(self, broker: LocalKafka) -> None:
        self.broker = broker
        self.bootstrap = broker.bootstrap
        self._client: KafkaClient | None = None

    @property
    def client(self) -> KafkaClient:
        # Made on first use: a KafkaClient's core starts connecting when it is
        # built, but its loop only with the first call, so a client built long
        # before its first request finds its connect deadline already passed.
        if self._client is None:
            from kafkacore.transports.selector import KafkaClient

            self._client = KafkaClient(self.bootstrap)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def new_topic(
        self, prefix: str, partitions: int = 1, configs: Mapping[str, str] | None = None
    ) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        self.broker.create_topic(name, partitions, configs=configs)
        return name

    def add_partitions(self, topic: str, total: int) -> None:

        from kafkacore.client import Controller
        from kafkacore.protocol.messages import CreatePartitionsRequest
        from kafkacore.protocol.messages.create_partitions_request import CreatePartitionsTopic

        request = CreatePartitionsRequest(
            topics=[CreatePartitionsTopic(name=topic, count=total, assignments=None)],
            timeout_ms=30_000,
        )
        response = self.client.send(request, target=Controller())
        assert [r.error_code for r in response.results] == [0], response
        self.broker.wait_for_topic(topic, total, deadline=time.monotonic() + 60)

    def delete_records(self, topic: str, before: Mapping[int, int]) -> None:
        from kafkacore.client import PartitionLeader
        from kafkacore.protocol.messages import DeleteRecordsRequest
        from kafkacore.protocol.messages.delete_records_request import (
            DeleteRecordsPartition,
            DeleteRecordsTopic,
        )

        for partition, offset in before.items():
            request = DeleteRecordsRequest(
                topics=[
                    DeleteRecordsTopic(
                        name=topic,
                        partitions=[
                            DeleteRecordsPartition(partition_index=partition, offset=offset)
                        ],
                    )
                ],
                timeout_ms=30_000,
            )
            response = self.client.send(request, target=PartitionLeader(topic, partition))
            result = response.topics[0].partitions[0]
            assert result.error_code == 0 and result.low_watermark == offset, response

    def delete_topic(self, topic: str) -> None:
        from kafkacore.client import Controller
        from kafkacore.protocol.messages import DeleteTopicsRequest
        from kafkacore.protocol.messages.delete_topics_request import DeleteTopicState

        request = DeleteTopicsRequest(
            topics=[DeleteTopicState(name=topic)], topic_names=[topic], timeout_ms=30_000
        )
        response = self.client.send(request, target=Controller())
        assert [r.error_code for r in response.responses] == [0], response

    def produce(
        self,
        topic: str,
        records: Iterable[tuple[int, bytes | None, bytes | None]],
        *,
        timestamp: int | None = None,
        headers: Sequence[tuple[str, bytes | None]] | None = None,
    ) -> None:
        """Send ``(partition, key, value)`` records and wait until all are written."""
        from kafkacore.transports.selector import KafkaProducer

        with KafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5) as producer:
            futures = [
                producer.send(
                    topic, value, key, headers=headers, partition=part, timestamp=timestamp
                )
                for part, key, value in records
            ]
            for fut in futures:
                fut.result(30)

    def end_offsets(self, topic: str, partitions: int) -> dict[int, int]:
        from kafkacore.client import TopicPartition
        from kafkacore.transports.selector import KafkaConsumer

        with KafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False) as c:
            got = c.end_offsets([TopicPartition(topic, p) for p in range(partitions)])
        return {tp.partition: off for tp, off in got.items() if off is not None}


@pytest.fixture(scope="session")
def kafka_admin(kafka_broker: LocalKafka) -> Iterator[KafkaAdmin]:
    admin = KafkaAdmin(kafka_broker)
    try:
        yield admin
    finally:
        admin.close()


@dataclass(frozen=True)
class CompactedTopic:
    """A compacted topic whose log has gaps where the cleaner removed records."""

    name: str
    #: records produced: value ``v{i}``, key ``u{i}`` for every 4th record and
    #: ``dup`` for the others (compaction keeps the last ``dup`` only)
    produced: int


@pytest.fixture(scope="session")
def compacted_topic(kafka_admin: KafkaAdmin) -> CompactedTopic:
    """Made early in the run (the first batch test asks for it): the broker's log
    cleaner wakes every 15 s, so compaction happens while other tests run."""
    name = kafka_admin.new_topic(
        "compacted",
        partitions=1,
        configs={
            "cleanup.policy": "compact",
            "segment.ms": "100",
            "min.cleanable.dirty.ratio": "0.01",
            "min.compaction.lag.ms": "0",
            "delete.retention.ms": "0",
        },
    )
    produced = 0
    for _ in range(4):  # several segments: each produce rolls the one before
        kafka_admin.produce(
            name,
            [
                (0, b"u%d" % i if i % 4 == 0 else b"dup", b"v%d" % i)
                for i in range(produced, produced + 10)
            ],
        )
        produced += 10
        time.sleep(0.15)
    kafka_admin.produce(name, [(0, b"last", b"v%d" % produced)])
    return CompactedTopic(name=name, produced=produced + 1)


@dataclass(frozen=True)
class JavaRecords:
    """Topics ``{prefix}-{codec}`` written by the Java producer (SparkSourceRecords.java)."""

    prefix: str
    partitions: int
    count: int
    #: CreateTime of record 0; record i is ``i`` seconds later (a day ago: the
    #: broker's retention must not delete them while the tests run).
    base_timestamp: int

    def topic(self, codec: str) -> str:
        return f"{self.prefix}-{codec}"


@pytest.fixture(scope="session")
def java_records(
    kafka_broker: LocalKafka, kafka_libs: Path, tmp_path_factory: pytest.TempPathFactory
) -> JavaRecords:
    javac, java = shutil.which("javac"), shutil.which("java")
    assert javac and java, "the Spark source tests need a JDK 17+ (javac and java) on PATH"
    out = tmp_path_factory.mktemp("spark-java")
    classpath = str(kafka_libs / "*")
    subprocess.run(
        [javac, "-d", str(out), "-cp", classpath, str(JAVA_DIR / "SparkSourceRecords.java")],
        check=True,
        capture_output=True,
        timeout=120,
    )
    day_ago = (int(time.time()) - 86_400) * 1000
    records = JavaRecords(
        prefix=f"java-{uuid.uuid4().hex[:6]}", partitions=3, count=300, base_timestamp=day_ago
    )
    for codec in CODECS:
        kafka_broker.create_topic(records.topic(codec), records.partitions)
    proc = subprocess.run(
        [
            java,
            "-Xmx256m",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            f"{out}:{classpath}",
            "SparkSourceRecords",
            kafka_broker.bootstrap,
            records.prefix,
            str(records.partitions),
            str(records.count),
            str(records.base_timestamp),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return records


def _plain(value: Any) -> Any:
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, list):
        return tuple(_plain(v) for v in value)
    if hasattr(value, "asDict"):
        return tuple(_plain(v) for v in value)
    return value


def collect_rows(df: DataFrame) -> list[tuple[Any, ...]]:
    """Every row as plain tuples (bytes, tuples), sorted by topic, partition, offset."""
    rows = [tuple(_plain(v) for v in row) for row in df.collect()]
    columns = df.columns
    order = [columns.index(c) for c in ("topic", "partition", "offset") if c in columns]
    return sorted(rows, key=lambda r: tuple(r[i] for i in order))

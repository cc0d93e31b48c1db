"""Spark Connect: a Connect client reads and writes Kafka through ``format("kafkacore")``.

pyspark 4.2's Connect server (``SparkConnectServer``, among pyspark's own
jars) runs as an application of the standalone cluster, with a Python that
has kafkacore installed (the server plans data sources with it). The
client (``connect_client.py``, a child process: a Connect session cannot
live beside this process's classic one) registers ``DefaultSource``, ships
the packed venv to the executors with ``addArtifacts`` for a batch write
and a batch read, then runs a stream on the nodes' Python, all exactly
once. Then a ``read_committed`` reader here checks the topics.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kafkacore.transports.selector import KafkaClient
from tests.spark.test_sink_txn import committed_values

if TYPE_CHECKING:
    from kafkacore.testing import LocalKafka
    from kafkacore.testing.spark_cluster import LocalSparkCluster

CLIENT = Path(__file__).with_name("connect_client.py")
ROWS = 200


@pytest.fixture(scope="module")
def connect_url(spark_cluster: LocalSparkCluster) -> Iterator[str]:
    # The server's host and its nodes (this machine) have kafkacore installed:
    # the server plans data sources with it, stream tasks run it.
    app, url = spark_cluster.connect_server(
        env={"PYSPARK_PYTHON": sys.executable},
        conf={"spark.pyspark.python": sys.executable},
    )
    try:
        yield url
    finally:
        app.stop()


def results(out: str) -> dict[str, Any]:
    found = {}
    for line in out.splitlines():
        if line.startswith("RESULT "):
            _, step, value = line.split(" ", 2)
            found[step] = json.loads(value)
    return found


@pytest.mark.timeout(900)
def test_a_connect_client_registers_the_source_and_reads_and_writes_exactly_once(
    connect_url: str, kafka_broker: LocalKafka, packed_env: Path, tmp_path: Path
) -> None:
    source, sink = "connect-in", "connect-out"
    kafka_broker.create_topic(source, partitions=2)
    kafka_broker.create_topic(sink, partitions=2)
    cfg = {
        "url": connect_url,
        "bootstrap": kafka_broker.bootstrap,
        "archive": str(packed_env),
        "input": source,
        "output": sink,
        "rows": ROWS,
        "checkpoint": str(tmp_path / "checkpoint"),
    }
    proc = subprocess.run(
        [sys.executable, str(CLIENT), json.dumps(cfg)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    log = (proc.stdout + proc.stderr)[-6000:]
    assert proc.returncode == 0, log
    got = results(proc.stdout)
    # the executors ran the shipped venv, not the server's Python
    assert got["where"] and all("/environment/lib/" in w for w in got["where"]), got
    assert got["batch-read"] == {"rows": ROWS}, log
    assert got["stream"]["failure"] is None, got["stream"]
    assert sum(got["stream"]["rows"]) == ROWS and len(got["stream"]["rows"]) >= 2, got
    want = sorted(b"c%d" % i for i in range(ROWS))
    with KafkaClient(kafka_broker.bootstrap) as client:
        assert committed_values(client, source, 2) == want
        assert committed_values(client, sink, 2) == want

"""kafkacore on a Spark standalone cluster, shipped to the executors the documented ways.

The cluster (``spark_cluster``: a master and two one-core workers, separate
JVMs from pyspark's ``spark-class``) runs with a scrubbed environment: its
executors have no Python with kafkacore, so each application below works
only because its ``spark-submit`` command shipped kafkacore as docs/spark.md
("Deploying") says:

* a packed venv (``venv-pack``) through ``--archives ...#environment`` and
  ``PYSPARK_PYTHON=./environment/bin/python``: batch read, exactly-once
  batch write, and an exactly-once stream run to its end, stopped, resumed
  from its checkpoint, while the test SIGKILLs an executor JVM in the middle
  of a write and stops the broker for 20 s in the middle of the stream;
* ``python -m pyspark_kafkacore.pyfiles`` and ``--py-files`` with
  ``KAFKACORE_PURE=1``, on executors whose Python has only pyarrow and the
  compression libraries.

A ``read_committed`` reader then sees every input row exactly once. The
cluster's applications run one at a time (each takes both cores).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kafkacore.transports.selector import KafkaClient, KafkaProducer
from tests.producer.readback import read_partition
from tests.spark.conftest import venv
from tests.spark.test_sink_txn import _fetch, committed_values, describe

if TYPE_CHECKING:
    from kafkacore.testing import LocalKafka
    from kafkacore.testing.spark_cluster import LocalSparkCluster, SparkApp

APP = Path(__file__).with_name("cluster_app.py")
PARTITIONS = 3
#: Each wave of input rows the stream must carry once.
WAVE = 300
#: A spark-submit run: driver start, executors on both workers, the steps.
APP_TIMEOUT_S = 600.0
#: Waits for one observable event (a committed wave, an open transaction).
EVENT_TIMEOUT_S = 180.0


@pytest.fixture(scope="module")
def cluster_broker(kafka_libs: Path) -> Iterator[LocalKafka]:
    """A broker of its own: the stream test stops it for 20 s."""
    from kafkacore.testing import LocalKafka

    with LocalKafka(size=1) as kafka:
        yield kafka


def driver_python(directory: Path) -> Path:
    """This process's Python, runnable only where the driver runs.

    On a real cluster the submit host's Python does not exist on the
    executors; here it would, so this wrapper refuses to start where the
    driver's environment is missing (the workers' scrubbed environment): a
    task that ran the driver's Python instead of the shipped one fails.
    """
    script = directory / "driver-python"
    script.write_text(
        "#!/bin/sh\n"
        '[ -n "$KAFKACORE_ON_DRIVER" ] || { echo "the driver\'s Python ran on an executor" >&2; '
        "exit 97; }\n"
        f'exec {sys.executable} "$@"\n'
    )
    script.chmod(0o755)
    return script


def submit(
    cluster: LocalSparkCluster, cfg: dict[str, Any], options: list[str], env: dict[str, str]
) -> SparkApp:
    conf = {"spark.sql.execution.arrow.maxRecordsPerBatch": "20"}
    return cluster.submit(APP, json.dumps(cfg), options=options, conf=conf, env=env)


def result(app: SparkApp, step: str) -> Any:
    line = app.wait_for_line(f"RESULT {step} ", APP_TIMEOUT_S)
    # The driver's output and Spark's log share a stream: a log line may follow
    # the result on the same line (seen in CI), so read the first JSON value only.
    value, _ = json.JSONDecoder().raw_decode(line.split(f"RESULT {step} ", 1)[1])
    return value


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    with KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5) as producer:
        for i, value in enumerate(values):
            producer.send(topic, value, partition=i % PARTITIONS)
        producer.flush(60)


def wait_until(what: str, check: Callable[[], bool], app: SparkApp, bootstrap: str) -> None:
    deadline = time.monotonic() + EVENT_TIMEOUT_S
    while not check():
        if app.poll() is not None or time.monotonic() > deadline:
            with KafkaClient(bootstrap) as client:
                log = describe(client, "stream-out", PARTITIONS)
            raise AssertionError(f"{what}: not seen; {log}\ndriver log:\n{app.log()[-6000:]}")
        time.sleep(0.05)


def high_watermark(bootstrap: str, topic: str) -> int:
    with KafkaClient(bootstrap) as client:
        return sum(_fetch(client, topic, p).high_watermark for p in range(PARTITIONS))


def keyed_in_log(bootstrap: str, topic: str, key: bytes) -> bool:
    """A record keyed ``key`` is in the log (committed or not: read_uncommitted)."""
    with KafkaClient(bootstrap) as client:
        return any(
            r.key == key
            for p in range(PARTITIONS)
            for r in read_partition(client, topic, p, isolation_level=0)
        )


def grown(bootstrap: str, topic: str) -> Callable[[], bool]:
    """True once ``topic`` holds more than it does now (records written, maybe uncommitted)."""
    since = high_watermark(bootstrap, topic)
    return lambda: high_watermark(bootstrap, topic) > since


def committed(bootstrap: str, topic: str) -> list[bytes]:
    with KafkaClient(bootstrap) as client:
        return committed_values(client, topic, PARTITIONS, settle=False)


def wave(name: str) -> list[bytes]:
    return [b"%s-%d" % (name.encode(), i) for i in range(WAVE)]


@pytest.mark.timeout(900)  # a driver, two executors, a 20 s outage, on a busy machine
def test_packed_venv_batch_and_a_stream_through_a_lost_executor_and_a_broker_stop(
    spark_cluster: LocalSparkCluster,
    cluster_broker: LocalKafka,
    packed_env: Path,
    tmp_path: Path,
) -> None:
    bootstrap = cluster_broker.bootstrap
    names = {"input": "in", "batch_out": "batch-out", "stream_out": "stream-out"}
    for topic in names.values():
        cluster_broker.create_topic(topic, PARTITIONS)
    produce(bootstrap, "in", wave("w0"))
    control = tmp_path / "control"
    control.mkdir()
    cfg = {
        **names,
        "bootstrap": bootstrap,
        "rows": 200,
        "control": str(control),
        "checkpoint": str(tmp_path / "checkpoint"),
        "steps": ["where", "batch", "stream"],
        # batch 0 is the AvailableNow run; the resumed query's first is wave w1
        "kill_batch": 1,
    }
    # docs/spark.md, "Deploying": the submit host's Python plans, the packed
    # venv runs the tasks (RDD workers and SQL's Python workers alike).
    env = {
        "PYSPARK_DRIVER_PYTHON": str(driver_python(tmp_path)),
        "PYSPARK_PYTHON": "./environment/bin/python",
        "KAFKACORE_ON_DRIVER": "1",
    }
    options = [
        "--archives",
        f"{packed_env}#environment",
        "--conf",
        "spark.sql.execution.pyspark.python=./environment/bin/python",
    ]
    app = submit(spark_cluster, cfg, options, env)
    try:
        where = result(app, "where")
        assert all("/environment/lib/" in w[1] for w in where), where
        assert {w[2] for w in where} == {"native"}, where
        assert result(app, "batch-read") == {"rows": WAVE, "distinct": WAVE}
        result(app, "batch-write")
        assert committed(bootstrap, "batch-out") == sorted(b"b%d" % i for i in range(200))
        result(app, "stream-first")
        assert committed(bootstrap, "stream-out") == sorted(wave("w0"))
        result(app, "stream-resumed")

        # The executor JVM of a task killed while its transaction holds records.
        produce(bootstrap, "in", wave("w1"))
        mark = control / "mid-write"
        wait_until("a task mid-write", mark.exists, app, bootstrap)
        in_log = lambda: keyed_in_log(bootstrap, "stream-out", b"mid")  # noqa: E731
        wait_until("its first records in the log", in_log, app, bootstrap)
        spark_cluster.kill_executor(int(mark.read_text()))
        want = sorted(wave("w0") + wave("w1"))
        wait_until(
            "wave w1 committed", lambda: committed(bootstrap, "stream-out") == want, app, bootstrap
        )

        # The broker stopped for 20 s once the next micro-batch is writing.
        arrived = grown(bootstrap, "stream-out")
        produce(bootstrap, "in", wave("w2"))
        wait_until("micro-batch w2 writing", arrived, app, bootstrap)
        cluster_broker.stop_node(1)
        time.sleep(20)
        cluster_broker.restart(1)
        produce(bootstrap, "in", wave("w3"))
        want = sorted(wave("w0") + wave("w1") + wave("w2") + wave("w3"))
        wait_until(
            "waves w2, w3 committed",
            lambda: committed(bootstrap, "stream-out") == want,
            app,
            bootstrap,
        )
        (control / "stop").touch()
        assert result(app, "stream-end") == {"failure": None}
        assert app.wait(APP_TIMEOUT_S) == 0, app.log()[-6000:]
    finally:
        app.stop()
    with KafkaClient(bootstrap) as client:
        assert committed_values(client, "stream-out", PARTITIONS) == want, describe(
            client, "stream-out", PARTITIONS
        )
        # The killed attempt's records are in the log, and none of them committed.
        seen = [r for p in range(PARTITIONS) for r in read_partition(client, "stream-out", p)]
        kept = [
            r
            for p in range(PARTITIONS)
            for r in read_partition(client, "stream-out", p, isolation_level=1)
        ]
    assert any(r.key == b"mid" for r in seen)
    assert not any(r.key == b"mid" for r in kept)


@pytest.fixture(scope="module")
def node_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The executors' own Python for ``--py-files``: what a zip cannot carry, no kafkacore."""
    work = tmp_path_factory.mktemp("nodes")
    return venv(work / "nodes", "pyarrow", "numpy", "lz4", "zstandard", "cramjam")


@pytest.mark.timeout(600)
def test_py_files_pure_build_batch_read_and_exactly_once_write(
    spark_cluster: LocalSparkCluster,
    cluster_broker: LocalKafka,
    node_python: Path,
    tmp_path: Path,
) -> None:
    bootstrap = cluster_broker.bootstrap
    names = {"input": "pure-in", "batch_out": "pure-out"}
    for topic in names.values():
        cluster_broker.create_topic(topic, PARTITIONS)
    produce(bootstrap, "pure-in", wave("p"))
    pure_zip = tmp_path / "kafkacore-pure.zip"
    subprocess.run(
        [sys.executable, "-m", "pyspark_kafkacore.pyfiles", str(pure_zip)], check=True, timeout=60
    )
    cfg = {**names, "bootstrap": bootstrap, "rows": 100, "steps": ["where", "batch"]}
    cfg["register"] = True
    # Driver and executors run the nodes' Python: kafkacore comes from the zip only.
    env = {
        "PYSPARK_DRIVER_PYTHON": str(node_python),
        "PYSPARK_PYTHON": str(node_python),
        "KAFKACORE_PURE": "1",
    }
    options = ["--py-files", str(pure_zip), "--conf", "spark.executorEnv.KAFKACORE_PURE=1"]
    app = submit(spark_cluster, cfg, options, env)
    try:
        where = result(app, "where")
        assert {(w[0], w[2]) for w in where} == {(str(node_python), "python")}, where
        assert all("kafkacore-pure.zip/kafkacore/" in w[1] for w in where), where
        assert result(app, "batch-read") == {"rows": WAVE, "distinct": WAVE}
        result(app, "batch-write")
        assert app.wait(APP_TIMEOUT_S) == 0, app.log()[-6000:]
    finally:
        app.stop()
    assert committed(bootstrap, "pure-out") == sorted(b"b%d" % i for i in range(100))

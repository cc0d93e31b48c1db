"""The exactly-once sink under faults: a task killed mid-write, a driver killed mid-commit.

The faults need a Spark of their own, so one child process runs them
(``python tests/spark/test_sink_faults.py child <json>``, its own process
group, bounded):

* ``local[2,4]``: in local mode Spark retries a failed task only when the
  master says so (plain ``local[2]`` gives up after one failure).
* The writes go through a test-only subclass of the source whose writers
  wrap the real ones (no hook in the sink itself).
* A task killed mid-write: on the first attempt of task partition 0 the
  wrapper hands the real ``write`` two Arrow batches, waits until the log
  holds some of them, then ``os._exit``\\ s the Python worker. Spark retries
  the task; the retry's InitProducerId fences the dead attempt and aborts
  its transaction.
* A driver killed between the Kafka commit and Spark's commit log: the
  stream writer's ``commit`` runs the real commit and then SIGKILLs the
  child's whole process group (Python driver and JVM) at batch 1, so Spark
  never writes ``commits/1``.

The test then restarts the stream from the child's checkpoint in the
session of this process with the plain ``format("kafkacore")``: batch 1 runs
again, its markers show it committed, nothing is written twice; a
``read_committed`` reader sees every input row exactly once, while the log
also holds the killed attempts' aborted records.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_PGID_ENV = "KAFKACORE_SINK_TEST_PGID"
_CRASH_BATCH = 1
_CHILD_TIMEOUT_S = 420.0


def _high_watermark(bootstrap: str, topic: str, partitions: int) -> int:
    from kafkacore.client import TopicPartition
    from kafkacore.transports.selector import KafkaConsumer

    with KafkaConsumer(bootstrap_servers=bootstrap) as c:
        ends = c.end_offsets([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
    return sum(v or 0 for v in ends.values())


def _kill_mid_write(
    batches: Iterator[Any], bootstrap: str, topic: str, others: int
) -> Iterator[Any]:
    """Pass two Arrow batches to the sink, wait until they are in the log, then die.

    ``others``: how many records the other tasks write; the log must hold
    more than that, so some of this task's records are in it.
    """
    for index, batch in enumerate(batches):
        if index == 2:
            deadline = time.monotonic() + 60
            while (
                time.monotonic() < deadline and _high_watermark(bootstrap, topic, 3) < others + 20
            ):
                time.sleep(0.2)
            os._exit(17)  # the Python worker dies; Spark retries the task
        yield batch


def _first_attempt_of_task_0(batch_id: str | None) -> bool:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    assert ctx is not None
    if batch_id is not None and ctx.getLocalProperty("streaming.sql.batchId") != batch_id:
        return False
    return ctx.attemptNumber() == 0 and ctx.partitionId() == 0


def _child(config: dict[str, Any]) -> None:
    from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter

    from kafkacore.testing.spark import local_spark
    from pyspark_kafkacore import DefaultSource

    os.environ[_PGID_ENV] = str(os.getpgrp())  # inherited by the JVM and its Python workers
    bootstrap = config["bootstrap"]

    class KilledTaskWriter(DataSourceArrowWriter):
        def __init__(self, inner: Any, topic: str) -> None:
            self.inner, self.topic = inner, topic

        def write(self, iterator: Any) -> Any:
            if _first_attempt_of_task_0(None):
                iterator = _kill_mid_write(iterator, bootstrap, self.topic, others=100)
            return self.inner.write(iterator)

        def commit(self, messages: Any) -> None:
            self.inner.commit(messages)

        def abort(self, messages: Any) -> None:
            self.inner.abort(messages)

    class FaultyStreamWriter(DataSourceStreamArrowWriter):
        def __init__(self, inner: Any, topic: str) -> None:
            self.inner, self.topic = inner, topic

        def write(self, iterator: Any) -> Any:
            if _first_attempt_of_task_0("0"):
                iterator = _kill_mid_write(iterator, bootstrap, self.topic, others=50)
            return self.inner.write(iterator)

        def commit(self, messages: Any, batchId: int) -> None:
            self.inner.commit(messages, batchId)
            if batchId == _CRASH_BATCH:
                # The transactions are committed in Kafka; Spark has not
                # written commits/<batchId>. Kill the driver right here.
                os.killpg(int(os.environ[_PGID_ENV]), signal.SIGKILL)

        def abort(self, messages: Any, batchId: int) -> None:
            self.inner.abort(messages, batchId)

    class FaultySource(DefaultSource):
        @classmethod
        def name(cls) -> str:
            return "kafkacore_faulty"

        def writer(self, schema: Any, overwrite: bool) -> Any:
            return KilledTaskWriter(super().writer(schema, overwrite), self.options["topic"])

        def streamWriter(self, schema: Any, overwrite: bool) -> Any:
            inner = super().streamWriter(schema, overwrite)
            return FaultyStreamWriter(inner, self.options["topic"])

    spark = local_spark(
        "sink-faults",
        jvm_connector=False,
        conf={
            "spark.master": "local[2,4]",
            "spark.sql.execution.arrow.maxRecordsPerBatch": "20",
        },
    )
    spark.dataSource.register(FaultySource)
    assert spark.sparkContext.master == "local[2,4]"

    # 1. Batch write, exactly once, task partition 0 killed on its first attempt.
    df = spark.range(0, 200, 1, 2).selectExpr(
        "cast(id as string) as key", "cast(id as string) as value"
    )
    (
        df.write.format("kafkacore_faulty")
        .mode("append")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", config["batch_topic"])
        .option("exactlyOnce", "true")
        .save()
    )
    print("batch write done", flush=True)

    # 2. Stream, exactly once: batch 0 loses a task attempt, batch 1 loses the driver.
    rows = spark.readStream.schema("id long").option("maxFilesPerTrigger", 1).json(config["source"])
    out = rows.selectExpr("cast(id as string) as key", "cast(id as string) as value")
    query = (
        out.repartition(2)
        .writeStream.format("kafkacore_faulty")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", config["stream_topic"])
        .option("exactlyOnce", "true")
        .option("checkpointLocation", config["checkpoint"])
        .start()
    )
    query.processAllAvailable()
    print("the stream finished: the driver was never killed", flush=True)
    sys.exit(3)


def _run_child(config: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.Popen(
        [sys.executable, __file__, "child", json.dumps(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: the crash kills only it
    )
    try:
        out, _ = proc.communicate(timeout=_CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, None)


def _json_files(directory: Path, start: int, stop: int, per_file: int) -> None:
    for lo in range(start, stop, per_file):
        rows = "\n".join(json.dumps({"id": i}) for i in range(lo, min(lo + per_file, stop)))
        (directory / f"part-{lo:06d}.json").write_text(rows + "\n")


def test_exactly_once_under_a_killed_task_and_a_killed_driver(
    spark: SparkSession, kafka_broker: Any, tmp_path: Path
) -> None:
    from kafkacore.transports.selector import KafkaClient
    from tests.spark.test_sink import committed
    from tests.spark.test_sink_txn import describe, raw_batches

    batch_topic, stream_topic = "sink-faults-batch", "sink-faults-stream"
    kafka_broker.create_topic(batch_topic, partitions=3)
    kafka_broker.create_topic(stream_topic, partitions=3)
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    source.mkdir()
    _json_files(source, 0, 300, per_file=100)  # batches 0, 1, 2 of 100 rows
    config = {
        "bootstrap": kafka_broker.bootstrap,
        "batch_topic": batch_topic,
        "stream_topic": stream_topic,
        "source": str(source),
        "checkpoint": str(checkpoint),
    }
    result = _run_child(config)
    log = result.stdout or ""
    assert result.returncode == -signal.SIGKILL, (
        f"child ended with {result.returncode}:\n{log[-6000:]}"
    )
    assert "batch write done" in log

    # The driver died after batch 1's Kafka commit and before Spark's commit log.
    assert (checkpoint / "offsets" / str(_CRASH_BATCH)).exists()
    assert (checkpoint / "commits" / str(_CRASH_BATCH - 1)).exists()
    assert not (checkpoint / "commits" / str(_CRASH_BATCH)).exists()

    with KafkaClient(kafka_broker.bootstrap) as client:
        # The batch write: every row once, although the killed attempt's
        # records are in the log too (aborted).
        assert committed(client, batch_topic) == sorted(str(i).encode() for i in range(200)), (
            describe(client, batch_topic, 3)
        )
        logged = sum(
            b.record_count
            for p in range(3)
            for b in raw_batches(client, batch_topic, p)
            if not b.is_control
        )
        assert logged > 200
        # The stream so far: batches 0 and 1 are in Kafka, once each.
        assert committed(client, stream_topic) == sorted(str(i).encode() for i in range(200)), (
            describe(client, stream_topic, 3)
        )

        # Restart from the checkpoint with the plain sink: batch 1 runs again
        # (Spark has no commit for it) and must write nothing; batch 2 is new.
        rows = spark.readStream.schema("id long").option("maxFilesPerTrigger", 1).json(str(source))
        query = (
            rows.selectExpr("cast(id as string) as key", "cast(id as string) as value")
            .repartition(2)
            .writeStream.format("kafkacore")
            .option("kafka.bootstrap.servers", kafka_broker.bootstrap)
            .option("topic", stream_topic)
            .option("exactlyOnce", "true")
            .option("checkpointLocation", str(checkpoint))
            .start()
        )
        try:
            query.processAllAvailable()
            ran = [p["batchId"] for p in query.recentProgress]
        finally:
            query.stop()
        assert _CRASH_BATCH in ran  # the batch was really run again
        assert committed(client, stream_topic) == sorted(str(i).encode() for i in range(300)), (
            describe(client, stream_topic, 3) + f"\nbatches run after the restart: {ran}"
        )
        stream_logged = sum(
            b.record_count
            for p in range(3)
            for b in raw_batches(client, stream_topic, p)
            if not b.is_control
        )
        assert stream_logged > 300  # batch 0's killed attempt left aborted records


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "child":
    _child(json.loads(sys.argv[2]))

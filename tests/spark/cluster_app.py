"""The Spark application the cluster tests submit (``spark-submit ... cluster_app.py <json>``).

It runs on the standalone cluster as a user's job would: the driver here,
tasks on the executors, with kafkacore only where the submit command
shipped it. It imports nothing of the tests. Its config (a JSON argument)
names the broker, the topics, a control directory and the steps to run:

* ``batch``: a batch read of ``input`` (every row), and an exactly-once
  batch write of ``rows`` rows to ``batch_out``;
* ``stream``: the stream ``input`` -> ``stream_out`` (exactly once), first
  with ``Trigger.AvailableNow`` to the end and stopped, then resumed from
  its checkpoint with a processing-time trigger until the test creates
  ``<control>/stop``. Each micro-batch's tasks hand the sink small Arrow
  batches with a pause between them, and one task of micro-batch
  ``kill_batch`` tells the test (``<control>/mid-write``) when its
  transaction holds records, so the test can kill its executor mid-write;
* ``where``: which Python and which kafkacore record path the executors
  run.

With ``register`` it registers ``DefaultSource`` itself (the ``--py-files``
way); otherwise ``format("kafkacore")`` is PySpark's automatic registration.

Each step prints one ``RESULT <step> <json>`` line; the test reads them
from the driver's log.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


def result(step: str, value: object) -> None:
    print(f"RESULT {step} {json.dumps(value)}", flush=True)


def batch(spark: Any, cfg: dict[str, Any]) -> None:
    df = (
        spark.read.format("kafkacore")
        .option("kafka.bootstrap.servers", cfg["bootstrap"])
        .option("subscribe", cfg["input"])
        .load()
    )
    values = sorted(bytes(r.value).decode() for r in df.select("value").collect())
    result("batch-read", {"rows": len(values), "distinct": len(set(values))})
    out = spark.range(0, cfg["rows"], 1, 2).selectExpr(
        "cast(id as string) as key", "cast(concat('b', id) as string) as value"
    )
    (
        out.write.format("kafkacore")
        .mode("append")
        .option("kafka.bootstrap.servers", cfg["bootstrap"])
        .option("topic", cfg["batch_out"])
        .option("exactlyOnce", "true")
        .save()
    )
    result("batch-write", {"rows": cfg["rows"]})


def executor_pid() -> int:
    """The executor JVM this Python worker runs under (its nearest such ancestor)."""
    pid = os.getpid()
    while pid > 1:
        stat = Path(f"/proc/{pid}/stat").read_text()
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        if b"CoarseGrainedExecutorBackend" in Path(f"/proc/{pid}/cmdline").read_bytes():
            return pid
    raise RuntimeError("no executor JVM above this Python worker")


def slow_for(control: str, kill_batch: str) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """Hand the sink Arrow batches a quarter second apart.

    Each batch carries a 64 KiB ``pad`` column (the sink ignores it), so the
    Python worker's 64 KiB output buffer passes every batch on at once
    instead of the task's whole output at its end. In micro-batch
    ``kill_batch`` the first attempt of task 0 keys its records ``mid`` and,
    after two batches, writes its executor's pid to ``<control>/mid-write``
    and pauses: the test kills that executor once ``mid`` records are in the
    log, inside the task's open transaction.
    """

    def slow(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        from pyspark import TaskContext

        ctx = TaskContext.get()
        target = (
            ctx is not None
            and ctx.getLocalProperty("streaming.sql.batchId") == kill_batch
            and ctx.partitionId() == 0
            and ctx.attemptNumber() == 0
        )
        for index, b in enumerate(batches):
            if target and index == 2:
                with contextlib.suppress(FileExistsError):
                    (Path(control) / "mid-write.lock").touch(exist_ok=False)  # once
                    (Path(control) / "mid-write.tmp").write_text(str(executor_pid()))
                    os.rename(Path(control) / "mid-write.tmp", Path(control) / "mid-write")
                    time.sleep(30)  # the test kills the executor meanwhile
            time.sleep(0.25)
            key = pa.array([b"mid"] * b.num_rows) if target else b.column("key")
            pad = pa.array([b"x" * (65536 // max(b.num_rows, 1) + 1)] * b.num_rows)
            yield pa.record_batch([key, b.column("value"), pad], names=["key", "value", "pad"])

    return slow


def stream_query(spark: Any, cfg: dict[str, Any], available_now: bool) -> Any:
    source = (
        spark.readStream.format("kafkacore")
        .option("kafka.bootstrap.servers", cfg["bootstrap"])
        .option("subscribe", cfg["input"])
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "300")
        .load()
        .select("key", "value")
    )
    writer = (
        source.mapInArrow(
            slow_for(cfg["control"], str(cfg["kill_batch"])),
            "key binary, value binary, pad binary",
        )
        .writeStream.format("kafkacore")
        .option("kafka.bootstrap.servers", cfg["bootstrap"])
        .option("topic", cfg["stream_out"])
        .option("exactlyOnce", "true")
        .option("checkpointLocation", cfg["checkpoint"])
    )
    if available_now:
        return writer.trigger(availableNow=True).start()
    return writer.trigger(processingTime="500 milliseconds").start()


def stream(spark: Any, cfg: dict[str, Any]) -> None:
    first = stream_query(spark, cfg, available_now=True)
    first.awaitTermination()
    if first.exception() is not None:
        raise RuntimeError(str(first.exception()))
    result("stream-first", {"batches": len(first.recentProgress)})
    stop = Path(cfg["control"]) / "stop"
    query = stream_query(spark, cfg, available_now=False)
    result("stream-resumed", {"id": query.id})
    while not stop.exists():
        if query.awaitTermination(0.5):
            break
    if query.exception() is None:
        query.processAllAvailable()
    failure = query.exception()
    query.stop()
    result("stream-end", {"failure": None if failure is None else str(failure)[:3000]})


def where(spark: Any, cfg: dict[str, Any]) -> None:
    def probe(_: Iterator[Any]) -> Iterator[tuple[str, str, str]]:
        import kafkacore
        from kafkacore.records import _backend

        yield (sys.executable, kafkacore.__file__ or "", _backend.IMPLEMENTATION)

    seen = spark.sparkContext.parallelize(range(4), 4).mapPartitions(probe).collect()
    result("where", sorted(set(seen)))


def main() -> None:
    cfg = json.loads(sys.argv[1])
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName(cfg.get("name", "kafkacore-cluster")).getOrCreate()
    if cfg.get("register"):
        # --py-files: PySpark's automatic lookup of pyspark_* modules does not
        # search the shipped zip; a source registered here carries it.
        from pyspark_kafkacore import DefaultSource

        spark.dataSource.register(DefaultSource)
    steps = {"batch": batch, "stream": stream, "where": where}
    for step in cfg["steps"]:
        steps[step](spark, cfg)
    spark.stop()


if __name__ == "__main__":
    main()

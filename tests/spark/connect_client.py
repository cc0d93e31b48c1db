"""A Spark Connect client, as a user runs one (``python connect_client.py <json>``).

It talks to the Connect server only through ``sc://``: it registers
``DefaultSource`` and reads and writes through ``format("kafkacore")``: an
exactly-once batch write and a batch read with the packed venv shipped to
the executors from here (``addArtifacts(..., archive=True)`` and
``spark.sql.execution.pyspark.python``), then an exactly-once stream
(``Trigger.AvailableNow``) from the written topic to another on the nodes'
own Python. Each step prints ``RESULT <step> <json>``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any


def result(step: str, value: object) -> None:
    print(f"RESULT {step} {json.dumps(value)}", flush=True)


def where(batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    import kafkacore

    for _ in batches:
        yield pa.record_batch([pa.array([f"{sys.executable} {kafkacore.__file__}"])], names=["w"])


def main() -> None:
    cfg = json.loads(sys.argv[1])
    from pyspark.sql import SparkSession

    from pyspark_kafkacore import DefaultSource

    spark = SparkSession.builder.remote(cfg["url"]).getOrCreate()
    spark.addArtifacts(f"{cfg['archive']}#environment", archive=True)
    spark.conf.set("spark.sql.execution.pyspark.python", "environment/bin/python")
    spark.dataSource.register(DefaultSource)
    kafka = {"kafka.bootstrap.servers": cfg["bootstrap"]}
    seen = spark.range(0, 2, 1, 2).mapInArrow(where, "w string").distinct().collect()
    result("where", sorted(r.w for r in seen))

    rows = spark.range(0, cfg["rows"], 1, 2).selectExpr("cast(concat('c', id) as string) as value")
    writer = rows.write.format("kafkacore").mode("append").options(**kafka)
    writer.option("topic", cfg["input"]).option("exactlyOnce", "true").save()
    result("batch-write", {"rows": cfg["rows"]})

    read = spark.read.format("kafkacore").options(**kafka).option("subscribe", cfg["input"]).load()
    result("batch-read", {"rows": read.count()})

    # A stream's tasks do not find the session's archive (pyspark 4.2.0:
    # "Cannot run program "environment/bin/python""; docs/spark.md): they run
    # the nodes' own Python, the server's spark.pyspark.python.
    spark.conf.unset("spark.sql.execution.pyspark.python")

    query = (
        spark.readStream.format("kafkacore")
        .options(**kafka)
        .option("subscribe", cfg["input"])
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(cfg["rows"] // 2))
        .load()
        .select("key", "value")
        .writeStream.format("kafkacore")
        .options(**kafka)
        .option("topic", cfg["output"])
        .option("exactlyOnce", "true")
        .option("checkpointLocation", cfg["checkpoint"])
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    failure = query.exception()
    batches = [int(p.numInputRows) for p in query.recentProgress]
    result("stream", {"failure": None if failure is None else str(failure)[:2000], "rows": batches})
    spark.stop()


if __name__ == "__main__":
    main()

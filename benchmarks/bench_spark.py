"""Spark through Kafka: ``format("kafkacore")`` beside Spark's JVM ``format("kafka")``.

Run: ``.venv/bin/python benchmarks/bench_spark.py [--records N] [--rounds R] [--bootstrap H:P]
[--cluster] [--quick] [--json OUT.json]``

One broker, one Spark session (both formats loaded): ``local[2]``, or with
``--cluster`` a driver on a standalone cluster of its own (a master and two
one-core workers, ``kafkacore.testing.spark_cluster``; the tasks run in the
workers' executor JVMs and their Python workers, as deployed),
one topic of ``--records`` 100-byte records in 4 partitions written by the
Java ``ProducerPerformance`` tool. Cases, each through both formats:

* ``batch count``: ``spark.read...load().count()``;
* ``batch noop``: the same read written to the ``noop`` sink (every column
  materialized);
* ``stream noop``: ``readStream`` from earliest, ``Trigger.AvailableNow``
  into ``noop`` (query start to its end);
* ``batch write``: a DataFrame of ``--records`` rows with a 100-byte binary
  ``value`` written with ``.option("topic", ...)`` to a fresh 4-partition
  topic. A format that cannot write yet is reported as such, not timed.

Before timing, every case runs once per format on a small topic (JVM JIT,
Python worker start-up). Then ``--rounds`` rounds alternate the two
formats case by case (which goes first alternates too); the table shows
the best (shortest) and the median wall time per case and format,
records/s from the best, and kafkacore's ratio (its rate over the JVM
connector's: above 1.0 is faster) from the best and from the medians. All
rounds' times are printed too. The machine has 2 cores shared with other work: the load average is
printed before and after; read the ratios within one run.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

from _harness import Row, broker, create_topics, markdown_table, with_ratios, write_rows

FORMATS = ("kafka", "kafkacore")
#: The contender each format is in the rows (kafkacore's name first, so it is not a peer).
CONTENDER = {"kafka": "JVM format('kafka')", "kafkacore": "kafkacore format('kafkacore')"}
PARTITIONS = 4


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f}, {five:.2f}, {fifteen:.2f}"


def fill(bootstrap: str, topic: str, records: int) -> None:
    """``records`` 100-byte records from Java's ProducerPerformance (fast and independent)."""
    from kafkacore.testing.libs import ensure_libs

    libs = ensure_libs()
    subprocess.run(
        [
            "java",
            "-Xmx512m",
            "-cp",
            f"{libs}/*",
            "org.apache.kafka.tools.ProducerPerformance",
            "--topic",
            topic,
            "--num-records",
            str(records),
            "--record-size",
            "100",
            "--throughput",
            "-1",
            "--producer-props",
            f"bootstrap.servers={bootstrap}",
            "acks=1",
            "linger.ms=5",
            "batch.size=65536",
        ],
        check=True,
        capture_output=True,
        timeout=900,
    )


class Cases:
    """The timed operations, each taking a format name."""

    def __init__(self, spark: Any, bootstrap: str, topic: str, records: int, work: str) -> None:
        self.spark = spark
        self.bootstrap = bootstrap
        self.topic = topic
        self.records = records
        self.work = work

    def _read(self, fmt: str) -> Any:
        return (
            self.spark.read.format(fmt)
            .option("kafka.bootstrap.servers", self.bootstrap)
            .option("subscribe", self.topic)
            .load()
        )

    def batch_count(self, fmt: str) -> int:
        return int(self._read(fmt).count())

    def batch_noop(self, fmt: str) -> int:
        self._read(fmt).write.format("noop").mode("overwrite").save()
        return self.records

    def stream_noop(self, fmt: str) -> int:
        checkpoint = tempfile.mkdtemp(prefix="bench-spark-", dir=self.work)
        query = (
            self.spark.readStream.format(fmt)
            .option("kafka.bootstrap.servers", self.bootstrap)
            .option("subscribe", self.topic)
            .option("startingOffsets", "earliest")
            .load()
            .writeStream.format("noop")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        progress = query.recentProgress
        return sum(int(p["numInputRows"]) for p in progress)

    def batch_write(self, fmt: str) -> int:
        topic = f"bench-write-{fmt}-{uuid.uuid4().hex[:6]}"
        create_topics(self.bootstrap, [topic], partitions=PARTITIONS)
        df = self.spark.range(0, self.records, numPartitions=PARTITIONS).selectExpr(
            "cast(concat(lpad(cast(id as string), 12, '0'), repeat('x', 88)) as binary) as value"
        )
        (
            df.write.format(fmt)
            .option("kafka.bootstrap.servers", self.bootstrap)
            .option("topic", topic)
            .mode("append")
            .save()
        )
        return self.records


CASES: list[tuple[str, Callable[[Cases, str], int]]] = [
    ("batch read, count()", Cases.batch_count),
    ("batch read, noop sink", Cases.batch_noop),
    ("stream read (AvailableNow), noop sink", Cases.stream_noop),
    ("batch write, 100-byte values", Cases.batch_write),
]


def _kafkacore_path_from_env() -> str:
    """The record path the Python workers run: they inherit this process's environment."""
    pure = os.environ.get("KAFKACORE_PURE", "").strip() not in ("", "0")
    return "pure" if pure else "compiled"


def timed(fn: Callable[[], int]) -> tuple[float, int]:
    start = time.perf_counter()
    count = fn()
    return time.perf_counter() - start, count


def why(exc: BaseException) -> str:
    """The line of a (Python worker's) traceback that says what went wrong."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    named = [line for line in lines if "Error:" in line or "Exception:" in line]
    text = (named or lines or [type(exc).__name__])[-1]
    return text[:200]


def session(cluster: bool, stack: contextlib.ExitStack) -> Any:
    """The Spark session: ``local[2]``, or a driver on a fresh standalone cluster."""
    from kafkacore.testing.spark import cluster_spark, local_spark

    if not cluster:
        return local_spark("bench-spark")
    from kafkacore.testing.spark_cluster import LocalSparkCluster

    nodes = stack.enter_context(LocalSparkCluster(workers=2, cores=1, memory="2g"))
    return cluster_spark(nodes, "bench-spark")


def run_cases(
    cases: Cases, warmup: Cases, rounds: int
) -> tuple[dict[tuple[str, str], list[float]], dict[tuple[str, str], str]]:
    """Warm every case up, then ``rounds`` timed rounds: the times, and what cannot run."""
    broken: dict[tuple[str, str], str] = {}
    for name, fn in CASES:
        for fmt in FORMATS:
            try:
                fn(warmup, fmt)
            except Exception as exc:
                broken[(name, fmt)] = why(exc)
                print(f"warm-up {name} / {fmt}: cannot run: {broken[(name, fmt)]}")
    times: dict[tuple[str, str], list[float]] = {}
    for rnd in range(rounds):
        for name, fn in CASES:
            order = FORMATS if rnd % 2 == 0 else tuple(reversed(FORMATS))
            for fmt in order:
                if (name, fmt) in broken:
                    continue
                elapsed, count = timed(lambda fn=fn, fmt=fmt: fn(cases, fmt))
                if count != cases.records:
                    raise RuntimeError(f"{name} / {fmt}: {count} records, not {cases.records}")
                times.setdefault((name, fmt), []).append(elapsed)
                print(f"round {rnd + 1} {name} / {fmt}: {elapsed:.2f} s")
    return times, broken


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bootstrap")
    ap.add_argument(
        "--cluster",
        action="store_true",
        help="run on a standalone cluster (a master, two 1-core workers) instead of local[2]",
    )
    ap.add_argument("--quick", action="store_true", help="smoke run: 50,000 records, 1 round")
    ap.add_argument("--json", help="also write the rows to this JSON file")
    args = ap.parse_args()
    if args.quick:
        args.records, args.rounds = 50_000, 1
    where = "standalone cluster, 2 workers x 1 core" if args.cluster else "local[2]"
    print(f"# bench_spark: {args.records} records, {args.rounds} rounds, {where}")
    print(f"date {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC")
    print(f"machine {platform.processor() or platform.machine()}, {os.cpu_count()} cores")
    print(f"load average before: {load_average()}")
    work = tempfile.mkdtemp(prefix="bench-spark-")
    try:
        with broker(args.bootstrap) as bootstrap, contextlib.ExitStack() as stack:
            topic = f"bench-read-{uuid.uuid4().hex[:6]}"
            warm = f"bench-warm-{uuid.uuid4().hex[:6]}"
            create_topics(bootstrap, [topic, warm], partitions=PARTITIONS)
            t0 = time.perf_counter()
            fill(bootstrap, topic, args.records)
            fill(bootstrap, warm, 20_000)
            print(f"filled {args.records} records in {time.perf_counter() - t0:.1f} s")
            spark = session(args.cluster, stack)
            import pyspark

            print(f"pyspark {pyspark.__version__}, Python {platform.python_version()}")
            cases = Cases(spark, bootstrap, topic, args.records, work)
            warmup = Cases(spark, bootstrap, warm, 20_000, work)
            times, broken = run_cases(cases, warmup, args.rounds)
            spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average after: {load_average()}")
    rows = []
    for name, _ in CASES:
        cells: list[object] = [name]
        best: dict[str, float] = {}
        middle: dict[str, float] = {}
        for fmt in FORMATS:
            got = times.get((name, fmt))
            if not got:
                cells += ["not run", ""]
                continue
            best[fmt] = min(got)
            middle[fmt] = statistics.median(got)
            cells += [
                f"{best[fmt]:.2f} s / {middle[fmt]:.2f} s",
                f"{args.records / best[fmt]:,.0f}",
            ]
        if len(best) == 2:
            cells.append(f"{best['kafka'] / best['kafkacore']:.2f}x")
            cells.append(f"{middle['kafka'] / middle['kafkacore']:.2f}x")
        else:
            cells += ["n/a", "n/a"]
        rows.append(cells)
    head = [
        "case",
        "JVM kafka best / median",
        "JVM rec/s (best)",
        "kafkacore best / median",
        "kafkacore rec/s (best)",
        "kafkacore / JVM (best)",
        "(median)",
    ]
    print()
    print(markdown_table(head, rows))
    for (name, fmt), reason in sorted(broken.items()):
        print(f"* {name} through format('{fmt}') did not run: {reason}")
    if args.json:
        json_rows = [
            Row(
                harness="spark",
                table=f"{name} (standalone cluster)" if args.cluster else name,
                contender=CONTENDER[fmt],
                rate=args.records / min(times[(name, fmt)]),
                unit="records/s",
                path=(_kafkacore_path_from_env() if fmt == "kafkacore" else None),
                extra={
                    "best_s": min(times[(name, fmt)]),
                    "median_s": statistics.median(times[(name, fmt)]),
                },
            )
            for name, _ in CASES
            for fmt in FORMATS
            if times.get((name, fmt))
        ]
        meta = {
            "harness": "spark",
            "cluster": args.cluster,
            "records": args.records,
            "rounds": args.rounds,
            "failures": [f"{n} / {CONTENDER[f]}: {r}" for (n, f), r in sorted(broken.items())],
        }
        write_rows(args.json, with_ratios(json_rows), meta)
    sys.stdout.flush()


if __name__ == "__main__":
    main()

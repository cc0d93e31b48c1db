"""A small Spark pipeline on kafkacore: orders in, per-user totals out, exactly once.

Run against any broker::

    python examples/spark_pipeline.py --bootstrap 127.0.0.1:9092

What it does:

1. creates the topics (``orders``, 3 partitions; ``order-totals``, compacted)
   if they do not exist, and produces ``--events`` JSON orders with
   kafkacore's blocking producer (``send_many``);
2. runs a Structured Streaming query in a local Spark: read ``orders`` with
   ``format("kafkacore")`` (``--read-format kafka`` uses Spark's JVM
   connector instead), parse the JSON, count the orders and sum the amounts
   per user, and write the table to ``order-totals`` with
   ``format("kafkacore")`` and ``exactlyOnce=true`` (complete output mode,
   ``Trigger.AvailableNow`` in several micro-batches, each one a Kafka
   transaction per task committed by the driver);
3. reads ``order-totals`` back with a ``read_committed`` consumer, keeps the
   last value per user, and checks it against totals computed directly from
   the ``orders`` topic. Exit status 0 when they match.

A fresh checkpoint directory is used unless ``--checkpoint`` names one, so
each run reads ``orders`` from the start and writes a new snapshot.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kafkacore.client import TopicPartition
from kafkacore.protocol.messages import CreateTopicsRequest
from kafkacore.protocol.messages.create_topics_request import CreatableTopic, CreatableTopicConfig
from kafkacore.transports.selector import KafkaClient, KafkaConsumer, KafkaProducer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_TOPIC_ALREADY_EXISTS = 36


def ensure_topics(bootstrap: str, orders: str, totals: str) -> None:
    request = CreateTopicsRequest(
        topics=[
            CreatableTopic(name=orders, num_partitions=3, replication_factor=1),
            CreatableTopic(
                name=totals,
                num_partitions=1,
                replication_factor=1,
                configs=[CreatableTopicConfig(name="cleanup.policy", value="compact")],
            ),
        ],
        timeout_ms=30000,
    )
    with KafkaClient(bootstrap) as client:
        response = client.send(request, timeout=60)
        for topic in response.topics:
            if topic.error_code not in (0, _TOPIC_ALREADY_EXISTS):
                raise SystemExit(f"creating topic {topic.name!r} failed: error {topic.error_code}")
        client.metadata([orders, totals], timeout=30)


def produce_orders(bootstrap: str, topic: str, events: int, users: int, seed: int) -> None:
    rng = random.Random(seed)
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    for i in range(events):
        user = f"user-{rng.randrange(users):02d}"
        order = {"order": i, "user": user, "amount_cents": rng.randrange(100, 20000)}
        keys.append(user.encode())
        values.append(json.dumps(order).encode())
    with KafkaProducer(bootstrap) as producer:
        producer.send_many(topic, keys=keys, values=values).result(timeout=120)


def read_topic(bootstrap: str, topic: str) -> list[Any]:
    """Every record of ``topic`` as a read_committed consumer sees it."""
    with KafkaClient(bootstrap) as client:
        found = client.metadata([topic], timeout=30).partitions_for_topic(topic)
    partitions = [TopicPartition(topic, p) for p in sorted(found or ())]
    with KafkaConsumer(bootstrap_servers=bootstrap) as plain:
        written = plain.end_offsets(partitions, timeout=30)
    with KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed") as consumer:
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        # A commit is answered before its markers reach the partitions; wait
        # (a little) until the last stable offsets caught up with what was written.
        settle_by = time.monotonic() + 30
        ends = consumer.end_offsets(partitions, timeout=30)
        while ends != written and time.monotonic() < settle_by:
            time.sleep(0.1)
            ends = consumer.end_offsets(partitions, timeout=30)
        records: list[Any] = []
        deadline = time.monotonic() + 120
        while any(consumer.position(tp) < (ends[tp] or 0) for tp in partitions):
            if time.monotonic() > deadline:
                raise SystemExit(f"reading {topic!r} back did not finish within 120 s")
            records.extend(consumer.poll_records(timeout=0.5))
    return records


def run_query(
    spark: SparkSession,
    *,
    bootstrap: str,
    orders: str,
    totals: str,
    read_format: str,
    checkpoint: str,
    per_batch: int,
) -> list[dict[str, Any]]:
    """The Spark part; returns the query's progress (one entry per micro-batch)."""
    from pyspark.sql import functions as F

    raw = (
        spark.readStream.format(read_format)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", orders)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(per_batch))
        .load()
    )
    parsed = raw.select(
        F.from_json(
            F.col("value").cast("string"), "order long, user string, amount_cents long"
        ).alias("o")
    ).select("o.*")
    per_user = parsed.groupBy("user").agg(
        F.count("*").alias("orders"), F.sum("amount_cents").alias("total_cents")
    )
    out = per_user.select(
        F.col("user").alias("key"),
        F.to_json(F.struct("user", "orders", "total_cents")).alias("value"),
    )
    query = (
        out.writeStream.format("kafkacore")
        .outputMode("complete")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", totals)
        .option("exactlyOnce", "true")
        .option("transactionalIdPrefix", "spark-pipeline")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return [dict(p) for p in query.recentProgress]


def expected_totals(records: Sequence[Any]) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for record in records:
        order = json.loads(record.value)
        count, cents = out.get(order["user"], (0, 0))
        out[order["user"]] = (count + 1, cents + order["amount_cents"])
    return out


def main(argv: Sequence[str] | None = None, *, spark: SparkSession | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="HOST:PORT of a Kafka broker")
    parser.add_argument("--orders", default="orders", help="input topic")
    parser.add_argument("--totals", default="order-totals", help="output topic")
    parser.add_argument("--events", type=int, default=3000, help="orders to produce (0: none)")
    parser.add_argument("--users", type=int, default=12)
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--read-format", default="kafkacore", choices=["kafkacore", "kafka"])
    parser.add_argument("--checkpoint", default=None, help="checkpoint dir (default: fresh)")
    args = parser.parse_args(argv)

    started = time.monotonic()
    ensure_topics(args.bootstrap, args.orders, args.totals)
    if args.events:
        produce_orders(args.bootstrap, args.orders, args.events, args.users, args.seed)
        print(f"produced {args.events} orders to {args.orders!r}")
    input_records = read_topic(args.bootstrap, args.orders)
    if not input_records:
        print(f"{args.orders!r} is empty: nothing to aggregate")
        return 1

    if spark is None:
        from kafkacore.testing.spark import local_spark

        spark = local_spark("spark-pipeline", jvm_connector=args.read_format == "kafka")
    checkpoint = args.checkpoint or tempfile.mkdtemp(prefix="spark-pipeline-checkpoint-")
    per_batch = max(1, len(input_records) // 3)
    progress = run_query(
        spark,
        bootstrap=args.bootstrap,
        orders=args.orders,
        totals=args.totals,
        read_format=args.read_format,
        checkpoint=checkpoint,
        per_batch=per_batch,
    )
    batches = [(p["batchId"], p["numInputRows"]) for p in progress if p["numInputRows"]]
    print(
        f"Spark read {args.orders!r} with format({args.read_format!r}) in {len(batches)} "
        f"micro-batches (batch id, rows): {batches}"
    )

    output = read_topic(args.bootstrap, args.totals)
    latest = {r.key.decode(): json.loads(r.value) for r in output}
    print(
        f"{args.totals!r} holds {len(output)} committed records (a complete snapshot per "
        f"batch, written exactly once with format('kafkacore')); latest per user:"
    )
    print(f"  {'user':<10} {'orders':>7} {'total':>12}")
    for user in sorted(latest):
        row = latest[user]
        print(f"  {user:<10} {row['orders']:>7} {row['total_cents'] / 100:>12.2f}")

    want = expected_totals(input_records)
    got = {user: (row["orders"], row["total_cents"]) for user, row in latest.items()}
    ok = got == want
    print(
        f"check: totals {'match' if ok else 'DO NOT match'} a direct computation over "
        f"{len(input_records)} orders ({time.monotonic() - started:.1f} s)"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

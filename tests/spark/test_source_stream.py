"""Streaming reads: micro-batches, checkpoints, new partitions and data loss.

Where the JVM connector defines the outcome, the same query runs through
``format("kafka")`` too and must give the same micro-batches. Queries use
``Trigger.AvailableNow`` (they end by themselves) or a processing-time
trigger with ``processAllAvailable()``; nothing sleeps to let time pass
except where ``maxTriggerDelay`` is the thing under test.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .conftest import KafkaAdmin, collect_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Rows = list[tuple[Any, ...]]


def stream(spark: SparkSession, fmt: str, options: dict[str, str]) -> DataFrame:
    return spark.readStream.format(fmt).options(**options).load()


def available_now(
    spark: SparkSession, fmt: str, options: dict[str, str], checkpoint: Path
) -> list[Rows]:
    """Run to the end with Trigger.AvailableNow; the rows of each micro-batch."""
    batches: list[tuple[int, Rows]] = []

    def each(df: DataFrame, batch_id: int) -> None:
        batches.append((batch_id, collect_rows(df)))

    query = (
        stream(spark, fmt, options)
        .writeStream.foreachBatch(each)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(180), "the AvailableNow query did not end"
    finally:
        query.stop()
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    return [rows for _, rows in sorted(batches) if rows]


def checkpoint_offsets(checkpoint: Path) -> list[Any]:
    """The source offsets Spark wrote to the checkpoint's offset log, per batch."""
    out = []
    logs = [p for p in (checkpoint / "offsets").iterdir() if p.name.isdigit()]
    for path in sorted(logs, key=lambda p: int(p.name)):
        out.append(json.loads(path.read_text().splitlines()[-1]))
    return out


def test_micro_batches_match_the_connector(
    spark: SparkSession, kafka_admin: KafkaAdmin, tmp_path: Path
) -> None:
    topic = kafka_admin.new_topic("stream", partitions=3)
    # uneven backlog: 60, 20 and 10 records, with headers on every record
    records: list[tuple[int, bytes | None, bytes | None]] = [
        (0, b"k%d" % i, b"a%d" % i) for i in range(60)
    ]
    records += [(1, None, b"b%d" % i) for i in range(20)]
    records += [(2, b"c", None) for _ in range(10)]
    kafka_admin.produce(topic, records, headers=[("h", b"1"), ("n", None)])
    before = int(time.time() * 1000)
    time.sleep(0.05)  # a strictly later CreateTime for the next records
    kafka_admin.produce(topic, [(p, None, b"late") for p in (0, 1, 2)])
    cases = {
        "earliest, maxOffsetsPerTrigger 25, headers": {
            "startingOffsets": "earliest",
            "maxOffsetsPerTrigger": "25",
            "includeHeaders": "true",
        },
        "offsets json, minPartitions": {
            "startingOffsets": json.dumps({topic: {"0": 50, "1": -2, "2": -1}}),
            "minPartitions": "4",
        },
        "startingTimestamp": {"startingTimestamp": str(before), "groupIdPrefix": "bench"},
        "assign, offsets by timestamp": {
            "assign": json.dumps({topic: [0, 2]}),
            "startingOffsetsByTimestamp": json.dumps({topic: {"0": before, "2": 0}}),
            "kafka.group.id": "stream-conformance",
        },
    }
    for number, (name, extra) in enumerate(cases.items()):
        options = {"kafka.bootstrap.servers": kafka_admin.bootstrap, **extra}
        if "assign" not in extra:
            options["subscribe"] = topic
        jvm = available_now(spark, "kafka", options, tmp_path / f"jvm-{number}")
        ours = available_now(spark, "kafkacore", options, tmp_path / f"ours-{number}")
        assert ours == jvm, name
        if "maxOffsetsPerTrigger" in extra:
            assert len(ours) > 1 and all(len(b) <= 25 for b in ours)
        jvm_offsets = checkpoint_offsets(tmp_path / f"jvm-{number}")
        ours_offsets = checkpoint_offsets(tmp_path / f"ours-{number}")
        assert ours_offsets == jvm_offsets, name
        text = (tmp_path / f"ours-{number}" / "offsets" / "0").read_text().splitlines()[-1]
        partitions = list(json.loads(text)[topic])
        assert partitions == sorted(partitions, key=int)  # in order


def test_restart_from_checkpoint_resumes_exactly_and_commits_to_a_group(
    spark: SparkSession, kafka_admin: KafkaAdmin, tmp_path: Path
) -> None:
    from kafkacore.client import TopicPartition
    from kafkacore.transports.selector import KafkaConsumer

    topic = kafka_admin.new_topic("restart", partitions=2)
    group = f"lag-{uuid.uuid4().hex[:6]}"
    options = {
        "kafka.bootstrap.servers": kafka_admin.bootstrap,
        "subscribe": topic,
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "15",
        "commitOffsetsToGroup": group,
    }
    checkpoint = tmp_path / "restart"
    kafka_admin.produce(topic, [(i % 2, None, b"first-%d" % i) for i in range(20)])
    first = [r for batch in available_now(spark, "kafkacore", options, checkpoint) for r in batch]
    kafka_admin.produce(topic, [(i % 2, None, b"second-%d" % i) for i in range(15)])
    second = [r for batch in available_now(spark, "kafkacore", options, checkpoint) for r in batch]
    assert sorted(r[1] for r in first) == sorted(b"first-%d" % i for i in range(20))
    assert sorted(r[1] for r in second) == sorted(b"second-%d" % i for i in range(15))
    assert {(r[3], r[4]) for r in first}.isdisjoint({(r[3], r[4]) for r in second})
    assert checkpoint_offsets(checkpoint)[-1] == {topic: {"0": 18, "1": 17}}
    # beyond the connector: the group shows the query's progress to lag tools
    with KafkaConsumer(bootstrap_servers=kafka_admin.bootstrap, group_id=group) as c:
        got = c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)])
    assert {tp.partition: oam.offset for tp, oam in got.items() if oam} == {0: 18, 1: 17}


def test_added_partitions_and_new_pattern_topics_are_read(
    spark: SparkSession, kafka_admin: KafkaAdmin, tmp_path: Path
) -> None:
    prefix = f"grow-{uuid.uuid4().hex[:6]}"
    first = kafka_admin.new_topic(prefix, partitions=1)
    kafka_admin.produce(first, [(0, None, b"a%d" % i) for i in range(5)])
    name = f"grow_{uuid.uuid4().hex[:6]}"
    options = {
        "kafka.bootstrap.servers": kafka_admin.bootstrap,
        "subscribePattern": f"^{prefix}-",
        "startingOffsets": "earliest",
    }
    query = (
        stream(spark, "kafkacore", options)
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path / "grow"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        query.processAllAvailable()
        kafka_admin.add_partitions(first, 3)
        kafka_admin.produce(first, [(p, None, b"p%d" % p) for p in (1, 2)])
        second = kafka_admin.new_topic(prefix, partitions=2)
        kafka_admin.produce(second, [(p, None, b"s%d" % p) for p in (0, 1)])
        deadline = time.monotonic() + 60
        while True:
            query.processAllAvailable()
            seen = collect_rows(spark.table(name))
            if len(seen) >= 9 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    finally:
        query.stop()
    assert sorted((r[2], r[3], r[1]) for r in seen) == sorted(
        [(first, 0, b"a%d" % i) for i in range(5)]
        + [(first, 1, b"p1"), (first, 2, b"p2"), (second, 0, b"s0"), (second, 1, b"s1")]
    )


def test_deleted_records_and_topics_per_fail_on_data_loss(
    spark: SparkSession, kafka_admin: KafkaAdmin, tmp_path: Path
) -> None:
    topic = kafka_admin.new_topic("loss", partitions=1)
    other = kafka_admin.new_topic("loss-other", partitions=1)
    kafka_admin.produce(topic, [(0, None, b"%d" % i) for i in range(10)])
    kafka_admin.produce(other, [(0, None, b"o")])

    def options(fail: str, fmt: str) -> dict[str, str]:
        names = topic if fmt == "kafka" else f"{topic},{other}"
        return {
            "kafka.bootstrap.servers": kafka_admin.bootstrap,
            "subscribe": names,
            "startingOffsets": "earliest",
            "failOnDataLoss": fail,
        }

    runs = [("true", "kafkacore"), ("false", "kafkacore"), ("false", "kafka")]
    for fail, fmt in runs:
        assert len(available_now(spark, fmt, options(fail, fmt), tmp_path / f"{fmt}{fail}")[0]) > 1
    # offsets 10..19 arrive, then everything before 15 is deleted
    kafka_admin.produce(topic, [(0, None, b"%d" % i) for i in range(10, 20)])
    kafka_admin.delete_records(topic, {0: 15})
    with pytest.raises(Exception, match=r"offsets \[10, 15\) of loss-.*failOnDataLoss"):
        available_now(spark, "kafkacore", options("true", "kafkacore"), tmp_path / "kafkacoretrue")
    ours = available_now(
        spark, "kafkacore", options("false", "kafkacore"), tmp_path / "kafkacorefalse"
    )
    jvm = available_now(spark, "kafka", options("false", "kafka"), tmp_path / "kafkafalse")
    assert [r[1] for b in ours for r in b] == [b"%d" % i for i in range(15, 20)]
    assert ours == jvm
    # a subscribed topic deleted between micro-batches: data loss on the driver
    strict = {**options("true", "kafkacore"), "subscribe": other}
    assert len(available_now(spark, "kafkacore", strict, tmp_path / "strict")[0]) == 1
    kafka_admin.delete_topic(other)
    kafka_admin.produce(topic, [(0, None, b"after")])
    checkpoint = tmp_path / "kafkacorefalse"
    after = available_now(spark, "kafkacore", options("false", "kafkacore"), checkpoint)
    assert [r[1] for b in after for r in b] == [b"after"]
    with pytest.raises(Exception, match=r"partitions \[loss-other-.*-0\] are gone"):
        available_now(spark, "kafkacore", strict, tmp_path / "strict")


def test_min_offsets_per_trigger_waits_for_enough_or_max_trigger_delay(
    spark: SparkSession, kafka_admin: KafkaAdmin, tmp_path: Path
) -> None:
    topic = kafka_admin.new_topic("min", partitions=2)
    kafka_admin.produce(topic, [(i % 2, None, b"first") for i in range(4)])
    name = f"min_{uuid.uuid4().hex[:6]}"
    options = {
        "kafka.bootstrap.servers": kafka_admin.bootstrap,
        "subscribe": topic,
        "startingOffsets": "earliest",
        "minOffsetsPerTrigger": "10",
        "maxTriggerDelay": "6s",
    }
    started = time.monotonic()
    query = (
        stream(spark, "kafkacore", options)
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path / "min"))
        .trigger(processingTime="100 milliseconds")
        .start()
    )

    def seen() -> int:
        return int(spark.table(name).count())

    def wait_for(count: int, limit: float) -> float:
        start = time.monotonic()
        while seen() < count:
            assert time.monotonic() - start < limit, f"{seen()} rows, want {count}"
            time.sleep(0.1)
        return time.monotonic() - start

    try:
        wait_for(4, 60)  # the first micro-batch never waits
        kafka_admin.produce(topic, [(0, None, b"few")] * 3)
        # 3 records < minOffsetsPerTrigger: held until 6 s after the first batch
        time.sleep(1.0)
        assert seen() == 4
        wait_for(7, 60)
        assert time.monotonic() - started >= 6.0
        kafka_admin.produce(topic, [(1, None, b"many")] * 12)
        wait_for(19, 60)
    finally:
        query.stop()


def test_stream_bad_input_fails_before_reading(
    spark: SparkSession, kafka_admin: KafkaAdmin, tmp_path: Path
) -> None:
    base = {"kafka.bootstrap.servers": kafka_admin.bootstrap, "subscribe": "t"}
    with pytest.raises(Exception, match="'endingOffsets' is not valid in streaming"):
        stream(spark, "kafkacore", {**base, "endingOffsets": "latest"}).writeStream.format(
            "noop"
        ).option("checkpointLocation", str(tmp_path / "bad")).start().awaitTermination(60)
    with pytest.raises(Exception, match="does not accept a user-specified"):
        spark.readStream.format("kafkacore").schema("value binary").options(
            **base
        ).load().writeStream.format("noop").option(
            "checkpointLocation", str(tmp_path / "schema")
        ).start().awaitTermination(60)

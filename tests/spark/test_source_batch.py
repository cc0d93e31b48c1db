"""Batch reads: ``format("kafkacore")`` against Spark's own ``format("kafka")``.

Every query runs through both formats on the same broker, offsets and
options, and must return the same rows (and, where the option decides it,
the same number of Spark partitions). Records come from the Java producer
in every codec, and from kafkacore's transactional producer for aborted
transactions.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import pytest

from .conftest import CODECS, CompactedTopic, JavaRecords, KafkaAdmin, collect_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def load(spark: SparkSession, fmt: str, options: dict[str, str]) -> DataFrame:
    return spark.read.format(fmt).options(**options).load()


def both(
    spark: SparkSession, options: dict[str, str]
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], tuple[int, int]]:
    """Rows of the JVM connector, rows of kafkacore, and their partition counts."""
    jvm = load(spark, "kafka", options)
    ours = load(spark, "kafkacore", options)
    counts = (jvm.rdd.getNumPartitions(), ours.rdd.getNumPartitions())
    return collect_rows(jvm), collect_rows(ours), counts


def test_java_producer_records_in_every_codec_read_identically(
    spark: SparkSession,
    java_records: JavaRecords,
    kafka_broker: Any,
    compacted_topic: CompactedTopic,  # made now: the log cleaner works while tests run
) -> None:
    options = {
        "kafka.bootstrap.servers": kafka_broker.bootstrap,
        "subscribePattern": f"^{java_records.prefix}-",
        "includeHeaders": "true",
        # accepted and behaviour-neutral here; same names as the connector
        "kafkaConsumer.pollTimeoutMs": "30000",
        "fetchOffset.numRetries": "2",
        "fetchOffset.retryIntervalMs": "100",
        "groupIdPrefix": "conformance",
    }
    jvm, ours, counts = both(spark, options)
    assert len(ours) == len(CODECS) * java_records.count
    assert ours == jvm
    assert counts == (len(CODECS) * java_records.partitions,) * 2
    df = load(spark, "kafkacore", options)
    assert df.schema == load(spark, "kafka", options).schema
    assert {r[2] for r in ours} == {java_records.topic(c) for c in CODECS}
    # the Java producer's null keys/values and headers survive every codec
    none_rows = [r for r in ours if r[2] == java_records.topic("zstd")]
    assert sum(r[0] is None for r in none_rows) == len(range(0, java_records.count, 7))
    assert sum(r[1] is None for r in none_rows) == len(range(0, java_records.count, 11))
    assert sum(r[7] is None for r in none_rows) == len(range(0, java_records.count, 3))


def _conformance_cases(records: JavaRecords) -> list[tuple[str, dict[str, str]]]:
    t = records.topic("lz4")
    base = records.base_timestamp
    # record i is in partition i % 3 at offset i // 3, timestamp base + i s
    return [
        ("defaults", {"subscribe": t}),
        (
            "offsets json with -2/-1",
            {
                "subscribe": t,
                "startingOffsets": json.dumps({t: {"0": -2, "1": 10, "2": 20}}),
                "endingOffsets": json.dumps({t: {"0": 50, "1": -1, "2": 30}}),
            },
        ),
        (
            "offsets by timestamp",
            {
                "subscribe": t,
                "startingOffsetsByTimestamp": json.dumps(
                    {t: {"0": base + 30_000, "1": base, "2": base + 200_500}}
                ),
                "endingOffsetsByTimestamp": json.dumps(
                    {t: {"0": base + 90_000, "1": base + 400_000, "2": base + 299_600}}
                ),
            },
        ),
        (
            "global timestamps",
            {
                "subscribe": t,
                "startingTimestamp": str(base + 50_500),
                "endingTimestamp": str(base + 200_000),
            },
        ),
        (
            "start after the last record, strategy latest",
            {
                "subscribe": t,
                "startingTimestamp": str(base + 10_000_000),
                "startingOffsetsByTimestampStrategy": "latest",
            },
        ),
        ("assign", {"assign": json.dumps({t: [0, 2]}), "kafka.group.id": "conformance-group"}),
        ("minPartitions", {"subscribe": t, "minPartitions": "7"}),
        (
            "maxRecordsPerPartition on resolved offsets",
            {
                "subscribe": t,
                "startingOffsets": json.dumps({t: {"0": 0, "1": 5, "2": 0}}),
                "endingOffsets": json.dumps({t: {"0": 100, "1": 100, "2": 33}}),
                "maxRecordsPerPartition": "30",
            },
        ),
        (
            "maxRecordsPerPartition on earliest..latest",
            {"subscribe": t, "maxRecordsPerPartition": "30"},
        ),
        (
            "both split options, mixed bounds",
            {
                "subscribe": t,
                "startingOffsets": json.dumps({t: {"0": -2, "1": 40, "2": 0}}),
                "minPartitions": "8",
                "maxRecordsPerPartition": "45",
            },
        ),
        (
            "ending beyond the log end, failOnDataLoss false",
            {
                "subscribe": t,
                "endingOffsets": json.dumps({t: {"0": 150, "1": -1, "2": 100}}),
                "failOnDataLoss": "false",
                "kafkaConsumer.pollTimeoutMs": "1000",
            },
        ),
    ]


def test_same_rows_and_tasks_as_the_connector_for_offset_options(
    spark: SparkSession, java_records: JavaRecords, kafka_broker: Any
) -> None:
    for name, extra in _conformance_cases(java_records):
        options = {"kafka.bootstrap.servers": kafka_broker.bootstrap, **extra}
        jvm, ours, counts = both(spark, options)
        assert ours == jvm, name
        assert counts[0] == counts[1], f"{name}: Spark partitions {counts}"


def test_no_offset_for_a_starting_timestamp_fails_by_default(
    spark: SparkSession, java_records: JavaRecords, kafka_broker: Any
) -> None:
    options = {
        "kafka.bootstrap.servers": kafka_broker.bootstrap,
        "subscribe": java_records.topic("none"),
        "startingTimestamp": str(java_records.base_timestamp + 10_000_000),
    }
    with pytest.raises(Exception, match="No offset matched"):
        load(spark, "kafka", options).count()
    with pytest.raises(Exception, match="startingOffsetsByTimestampStrategy"):
        load(spark, "kafkacore", options).count()


def test_aborted_transactions_under_read_committed(
    spark: SparkSession, kafka_admin: KafkaAdmin
) -> None:
    from kafkacore.transports.selector import KafkaProducer

    topic = kafka_admin.new_topic("txn", partitions=2)
    with KafkaProducer(
        bootstrap_servers=kafka_admin.bootstrap, transactional_id=f"{topic}-tx", linger_ms=5
    ) as producer:
        producer.init_transactions()
        for n, outcome in enumerate(["commit", "abort", "commit", "abort"]):
            producer.begin_transaction()
            for i in range(10):
                producer.send(topic, f"{outcome}-{n}-{i}".encode(), partition=i % 2)
            producer.flush()
            if outcome == "commit":
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    kafka_admin.produce(topic, [(0, None, b"plain")])  # after the last marker
    for level, want in (("read_committed", 21), ("read_uncommitted", 41)):
        options = {
            "kafka.bootstrap.servers": kafka_admin.bootstrap,
            "subscribe": topic,
            "kafka.isolation.level": level,
        }
        jvm, ours, _ = both(spark, options)
        assert len(ours) == want, level
        assert ours == jvm, level
        if level == "read_committed":
            assert not any(b"abort" in (r[1] or b"") for r in ours)
    # the range ends on a marker (no record after it): the read ends, no data-loss alarm
    options = {
        "kafka.bootstrap.servers": kafka_admin.bootstrap,
        "subscribe": topic,
        "kafka.isolation.level": "read_committed",
        "endingOffsets": json.dumps({topic: {"0": 20, "1": 20}}),
        "kafkaConsumer.pollTimeoutMs": "5000",
    }
    assert len(collect_rows(load(spark, "kafkacore", options))) == 20


def test_log_append_time_topic(spark: SparkSession, kafka_admin: KafkaAdmin) -> None:
    topic = kafka_admin.new_topic(
        "append-time", partitions=2, configs={"message.timestamp.type": "LogAppendTime"}
    )
    kafka_admin.produce(topic, [(i % 2, b"k", b"v%d" % i) for i in range(20)], timestamp=1000)
    options = {"kafka.bootstrap.servers": kafka_admin.bootstrap, "subscribe": topic}
    jvm, ours, _ = both(spark, options)
    assert ours == jvm and len(ours) == 20
    assert {r[6] for r in ours} == {1}  # timestampType LogAppendTime
    assert all(r[5].year >= 2024 for r in ours)  # the broker's time, not the 1000 ms sent


def test_delete_records_fails_or_skips_per_fail_on_data_loss(
    spark: SparkSession, kafka_admin: KafkaAdmin
) -> None:
    topic = kafka_admin.new_topic("deleted", partitions=2)
    kafka_admin.produce(topic, [(i % 2, None, str(i).encode()) for i in range(40)])
    kafka_admin.delete_records(topic, {0: 7})
    options = {
        "kafka.bootstrap.servers": kafka_admin.bootstrap,
        "subscribe": topic,
        "startingOffsets": json.dumps({topic: {"0": 2, "1": 0}}),
    }
    with pytest.raises(Exception, match=r"offsets \[2, 7\) of deleted-.*-0.*failOnDataLoss"):
        load(spark, "kafkacore", options).count()
    options["failOnDataLoss"] = "false"
    jvm, ours, _ = both(spark, options)
    assert len(ours) == 40 - 7
    assert ours == jvm
    # earliest binds to the new log start: nothing is lost, nothing to report
    options = {"kafka.bootstrap.servers": kafka_admin.bootstrap, "subscribe": topic}
    assert len(collect_rows(load(spark, "kafkacore", options))) == 33


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"subscribe": "t", "startingOffsets": '{"t":{"0":1'}, "'startingOffsets'"),
        ({"subscribe": "t", "assign": '{"t":[0]}'}, "only one of the options"),
        ({"subscribe": "t", "kafka.auto.offset.reset": "earliest"}, "'kafka.auto.offset.reset'"),
        ({"subscribe": "t", "kafka.fetch.wait.max": "5"}, "'kafka.fetch.wait.max'"),
        ({"subscribe": "t", "startingOffsets": "latest"}, "cannot start at 'latest'"),
        ({"subscribe": "t", "minPartitions": "0"}, "'minPartitions'"),
    ],
)
def test_bad_input_fails_before_reading_naming_the_option(
    spark: SparkSession, kafka_broker: Any, extra: dict[str, str], message: str
) -> None:
    options = {"kafka.bootstrap.servers": kafka_broker.bootstrap, **extra}
    with pytest.raises(Exception, match=message):
        load(spark, "kafkacore", options).count()


def test_unknown_topic_and_user_schema_are_refused(
    spark: SparkSession, kafka_broker: Any, java_records: JavaRecords
) -> None:
    options = {
        "kafka.bootstrap.servers": kafka_broker.bootstrap,
        "assign": json.dumps({"no-such-topic": [0], java_records.topic("none"): [0]}),
        "fetchOffset.retryIntervalMs": "10",
    }
    with pytest.raises(Exception, match=r"option 'assign': topic\(s\) \['no-such-topic'\]"):
        load(spark, "kafkacore", options).count()
    options = {"kafka.bootstrap.servers": kafka_broker.bootstrap, "subscribe": "t"}
    with pytest.raises(Exception, match="does not accept a user-specified"):
        spark.read.format("kafkacore").schema("value binary").options(**options).load().count()


def test_compaction_gaps_are_no_data_loss(
    spark: SparkSession, kafka_admin: KafkaAdmin, compacted_topic: CompactedTopic
) -> None:
    options = {
        "kafka.bootstrap.servers": kafka_admin.bootstrap,
        "subscribe": compacted_topic.name,
        "failOnDataLoss": "true",
        "kafkaConsumer.pollTimeoutMs": "5000",
    }
    deadline = time.monotonic() + 120
    while True:  # wait for the log cleaner (it wakes every 15 s)
        ours = collect_rows(load(spark, "kafkacore", options))
        if len(ours) < compacted_topic.produced or time.monotonic() > deadline:
            break
        time.sleep(2)
    offsets = [r[4] for r in ours]
    assert len(ours) < compacted_topic.produced, "the cleaner did not compact in 120 s"
    # unique keys stay, so the gaps are inside the read, which reaches the end
    assert offsets[0] == 0 and offsets[-1] == compacted_topic.produced - 1
    assert offsets != list(range(offsets[-1] + 1))
    assert collect_rows(load(spark, "kafka", options)) == ours

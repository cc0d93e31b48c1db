"""``df.write`` / ``writeStream`` with ``format("kafkacore")`` on a local Spark and the real broker.

Few and small: one Spark session for the run (the ``spark`` fixture), a
handful of rows per test. What is read back comes through kafkacore's own
Fetch path (``read_committed`` where it matters), not through the sink.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kafkacore.client import TopicPartition
from kafkacore.records import Compression
from kafkacore.transports.selector import KafkaClient, KafkaConsumer
from tests.producer.readback import ReadRecord, read_partition
from tests.spark.test_sink_txn import describe, raw_batches, wait_settled

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_names = itertools.count()


@pytest.fixture(scope="module")
def client(kafka_broker: Any) -> Iterator[KafkaClient]:
    with KafkaClient(kafka_broker.bootstrap) as c:
        yield c


def new_topic(kafka_broker: Any, partitions: int = 3) -> str:
    name = f"sink-{next(_names)}"
    kafka_broker.create_topic(name, partitions=partitions)
    return name


def read(client: KafkaClient, topic: str, partitions: int = 3) -> dict[int, list[ReadRecord]]:
    return {p: read_partition(client, topic, p, isolation_level=1) for p in range(partitions)}


def committed(client: KafkaClient, topic: str, partitions: int = 3) -> list[bytes]:
    """What read_committed sees once the last transaction's markers are in (see wait_settled)."""
    wait_settled(client, topic, partitions)
    return sorted(r.value or b"" for recs in read(client, topic, partitions).values() for r in recs)


def write(df: DataFrame, kafka_broker: Any, **options: str) -> None:
    writer = df.write.format("kafkacore").mode("append")
    writer = writer.option("kafka.bootstrap.servers", kafka_broker.bootstrap)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save()


def test_every_column_lands_where_it_says(
    spark: SparkSession, kafka_broker: Any, client: KafkaClient
) -> None:
    a, b = new_topic(kafka_broker), new_topic(kafka_broker, partitions=2)
    df = spark.range(40).selectExpr(
        f"if(id % 2 = 0, '{a}', '{b}') as topic",
        "if(id % 4 < 2, cast(id % 2 as int), null) as partition",
        "if(id % 5 = 0, null, concat('k', id)) as key",
        "cast(concat('v', id) as binary) as value",
        "if(id % 3 = 0, array(named_struct('key', 'n', 'value', cast(id as string)),"
        " named_struct('key', 'e', 'value', cast(null as binary))), null) as headers",
        "id as ignored",
    )
    write(df.repartition(2), kafka_broker)
    got: dict[bytes, tuple[str, int, ReadRecord]] = {}
    for topic, parts in ((a, 3), (b, 2)):
        for p, recs in read(client, topic, parts).items():
            for r in recs:
                got[r.value or b""] = (topic, p, r)
    assert len(got) == 40
    for i in range(40):
        topic, p, r = got[b"v%d" % i]
        assert topic == (a if i % 2 == 0 else b)
        if i % 4 < 2:
            assert p == i % 2  # the partition column
        assert r.key == (None if i % 5 == 0 else b"k%d" % i)
        expected = [("n", str(i).encode()), ("e", None)] if i % 3 == 0 else []
        assert [(h[0], h[1]) for h in r.headers] == expected
    # Keyed rows without a partition went where the key hashes (same as Java).
    from kafkacore.partitioner import partition_for_key

    for i in range(40):
        topic, p, r = got[b"v%d" % i]
        if i % 4 >= 2 and r.key is not None:
            assert p == partition_for_key(r.key, 3 if topic == a else 2)
    # At least once by default: no transaction, no control batch in the log.
    logged = [x for t, n in ((a, 3), (b, 2)) for p in range(n) for x in raw_batches(client, t, p)]
    assert logged and not any(x.is_transactional or x.is_control for x in logged)


def test_topic_option_wins_and_binary_or_string_both_work(
    spark: SparkSession, kafka_broker: Any, client: KafkaClient
) -> None:
    topic = new_topic(kafka_broker)
    df = spark.range(6).selectExpr(
        "'no-such-topic' as topic",
        "cast(concat('k', id) as binary) as key",
        "concat('é', id) as value",
    )
    write(df, kafka_broker, topic=topic)
    records = [r for recs in read(client, topic).values() for r in recs]
    assert sorted((r.key, r.value) for r in records) == [
        (b"k%d" % i, f"é{i}".encode()) for i in range(6)
    ]


def test_kafka_options_reach_the_producer(
    spark: SparkSession, kafka_broker: Any, client: KafkaClient
) -> None:
    topic = new_topic(kafka_broker, partitions=1)
    df = spark.range(50).selectExpr("cast(id as string) as value")
    write(
        df.coalesce(1),
        kafka_broker,
        topic=topic,
        **{
            "kafka.compression.type": "zstd",
            "kafka.acks": "1",
            "kafka.enable.idempotence": "false",
            "kafka.linger.ms": "50",
        },
    )
    logged = raw_batches(client, topic, 0)
    assert sum(x.record_count for x in logged) == 50
    assert {x.compression for x in logged} == {Compression.ZSTD}
    assert {x.producer_id for x in logged} == {-1}  # not idempotent, as asked


def test_exactly_once_batch_write_commits_every_task(
    spark: SparkSession, kafka_broker: Any, client: KafkaClient
) -> None:
    topic = new_topic(kafka_broker)
    df = spark.range(300).selectExpr("cast(id as string) as key", "cast(id as string) as value")
    write(
        df.repartition(3),
        kafka_broker,
        topic=topic,
        exactlyOnce="true",
        transactionalIdPrefix="eo-batch",
    )
    assert committed(client, topic) == sorted(str(i).encode() for i in range(300))
    logged = [x for p in range(3) for x in raw_batches(client, topic, p)]
    data = [x for x in logged if not x.is_control]
    assert data and all(x.is_transactional for x in data)
    assert len({x.producer_id for x in data}) == 3  # one transactional id per task
    assert sum(x.is_control for x in logged) >= 3  # each task's COMMIT marker


def _end_offsets(kafka_broker: Any, topic: str) -> dict[TopicPartition, int | None]:
    with KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap) as c:
        return c.end_offsets([TopicPartition(topic, p) for p in range(3)], timeout=30)


@pytest.mark.parametrize(
    ("columns", "mode", "options", "message"),
    [
        (["cast(id as string) as key"], "append", {}, "column 'value' is required"),
        (["id as value"], "append", {}, "column 'value' has type bigint"),
        (["'v' as value", "id as key"], "append", {}, "column 'key' has type bigint"),
        (["'v' as value", "id as partition"], "append", {}, "column 'partition' has type bigint"),
        (["'v' as value"], "overwrite", {}, "cannot overwrite"),
        # Spark refuses the default mode for every Python data source itself.
        (["'v' as value"], "errorifexists", {}, "UNSUPPORTED_DATA_SOURCE_SAVE_MODE"),
        (["'v' as value"], "append", {"kafka.acks": "most"}, "option 'kafka.acks'"),
    ],
)
def test_bad_input_fails_before_any_data_moves(
    spark: SparkSession,
    kafka_broker: Any,
    columns: list[str],
    mode: str,
    options: dict[str, str],
    message: str,
) -> None:
    topic = new_topic(kafka_broker)
    writer = spark.range(5).selectExpr(*columns).write.format("kafkacore").mode(mode)
    writer = writer.option("kafka.bootstrap.servers", kafka_broker.bootstrap).option("topic", topic)
    for key, value in options.items():
        writer = writer.option(key, value)
    with pytest.raises(Exception, match=message):
        writer.save()
    assert set(_end_offsets(kafka_broker, topic).values()) == {0}


def _json_files(directory: Path, start: int, stop: int, per_file: int = 5) -> None:
    for lo in range(start, stop, per_file):
        rows = "\n".join(json.dumps({"id": i}) for i in range(lo, min(lo + per_file, stop)))
        (directory / f"part-{lo:06d}.json").write_text(rows + "\n")


def _marker(kafka_broker: Any, group: str, topic: str) -> int | None:
    with KafkaConsumer(
        bootstrap_servers=kafka_broker.bootstrap, group_id=group, isolation_level="read_committed"
    ) as c:
        found = c.committed([TopicPartition(topic, 0)], timeout=30)
    value = found[TopicPartition(topic, 0)]
    return None if value is None else value.offset


def test_exactly_once_stream_survives_a_restart_from_its_checkpoint(
    spark: SparkSession, kafka_broker: Any, client: KafkaClient, tmp_path: Path
) -> None:
    topic = new_topic(kafka_broker)
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    source.mkdir()
    _json_files(source, 0, 20)

    def start() -> Any:
        rows = spark.readStream.schema("id long").option("maxFilesPerTrigger", 2).json(str(source))
        out = rows.selectExpr("cast(id as string) as key", "cast(id * 10 as string) as value")
        return (
            out.repartition(2)
            .writeStream.format("kafkacore")
            .option("kafka.bootstrap.servers", kafka_broker.bootstrap)
            .option("topic", topic)
            .option("exactlyOnce", "true")
            .option("transactionalIdPrefix", "eo-stream")
            .option("checkpointLocation", str(checkpoint))
            .start()
        )

    query = start()
    try:
        query.processAllAvailable()
        query_id, last = query.id, query.lastProgress["batchId"]
    finally:
        query.stop()
    assert last >= 1  # 4 files, 2 per trigger
    _json_files(source, 20, 30)
    query = start()
    try:
        query.processAllAvailable()
        assert query.id == query_id  # same checkpoint, same query id, same transactional ids
        last = query.lastProgress["batchId"]
    finally:
        query.stop()
    assert committed(client, topic) == sorted(str(i * 10).encode() for i in range(30)), describe(
        client, topic, 3
    )
    # Each task's marker group holds the last batch it committed.
    markers = [_marker(kafka_broker, f"eo-stream-{query_id}-{p}", topic) for p in range(2)]
    assert max(m for m in markers if m is not None) == last


def test_stream_complete_mode_writes_the_whole_result_each_batch(
    spark: SparkSession, kafka_broker: Any, client: KafkaClient, tmp_path: Path
) -> None:
    topic = new_topic(kafka_broker, partitions=1)
    source = tmp_path / "in"
    source.mkdir()
    _json_files(source, 0, 12, per_file=6)
    rows = spark.readStream.schema("id long").option("maxFilesPerTrigger", 1).json(str(source))
    counts = rows.groupBy((rows.id % 3).alias("k")).count()
    out = counts.selectExpr("cast(k as string) as key", "cast(count as string) as value")

    def start(mode: str) -> Any:
        return (
            out.writeStream.format("kafkacore")
            .outputMode(mode)
            .option("kafka.bootstrap.servers", kafka_broker.bootstrap)
            .option("topic", topic)
            .option("checkpointLocation", str(tmp_path / f"checkpoint-{mode}"))
            .start()
        )

    query = start("complete")
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    records = read(client, topic, 1)[0]
    # Two batches (one file each), each writing all 3 groups' running counts.
    assert sorted((r.key, r.value) for r in records) == sorted(
        [(str(k).encode(), b"2") for k in range(3)] + [(str(k).encode(), b"4") for k in range(3)]
    )
    # Update mode with an aggregation: Spark itself refuses it for Python data
    # sources (the JVM connector accepts it); nothing is written.
    query = start("update")
    with pytest.raises(Exception, match="kafkacore does not support Update mode"):
        query.processAllAvailable()
    query.stop()
    assert len(read(client, topic, 1)[0]) == 6

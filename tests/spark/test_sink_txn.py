"""A sink task and the driver's transaction ending against the real broker, without Spark.

``write_task`` is what each Spark task runs and ``_txn`` what the driver runs
on commit/abort; here they are called directly (fast), with the task
partition and batch ids Spark would give.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.types import BinaryType, StringType, StructField, StructType

from kafkacore.client import PartitionLeader
from kafkacore.protocol.messages import FetchRequest
from kafkacore.protocol.messages.fetch_request import FetchPartition, FetchTopic
from kafkacore.records import RecordBatch, iter_batches
from kafkacore.transports.selector import KafkaClient
from pyspark_kafkacore._sink_options import SinkOptions, parse_sink_options
from pyspark_kafkacore._sink_schema import SinkLayout, plan_layout
from pyspark_kafkacore._sink_task import SinkCommit, SinkWriteError, TxnPlan, write_task
from pyspark_kafkacore._txn import (
    TransactionFencedError,
    end_transactions,
    fence_transactional_ids,
)
from tests.producer.readback import read_partition

_names = itertools.count()


@pytest.fixture
def client(kafka_broker: Any) -> Iterator[KafkaClient]:
    with KafkaClient(kafka_broker.bootstrap) as c:
        yield c


def new_topic(kafka_broker: Any, partitions: int = 2) -> str:
    name = f"sink-txn-{next(_names)}"
    kafka_broker.create_topic(name, partitions=partitions)
    return name


def setup(kafka_broker: Any, topic: str, **extra: str) -> tuple[SinkOptions, SinkLayout]:
    options = parse_sink_options(
        {"kafka.bootstrap.servers": kafka_broker.bootstrap, "topic": topic, **extra}
    )
    cols = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    return options, plan_layout(cols, topic)


def batches(start: int, stop: int, size: int = 40) -> Iterator[pa.RecordBatch]:
    for lo in range(start, stop, size):
        ids = range(lo, min(lo + size, stop))
        yield pa.record_batch(
            [pa.array([f"k{i}" for i in ids]), pa.array([b"v%d" % i for i in ids])],
            names=["key", "value"],
        )


def _fetch(client: KafkaClient, topic: str, partition: int) -> Any:
    """One Fetch from offset 0 (read_uncommitted): the partition's answer."""
    cluster = client.metadata([topic])
    request = FetchRequest(
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=16 * 1024 * 1024,
        isolation_level=0,
        topics=[
            FetchTopic(
                topic=topic,
                topic_id=cluster.topic_id(topic),
                partitions=[
                    FetchPartition(
                        partition=partition, fetch_offset=0, partition_max_bytes=8 * 1024 * 1024
                    )
                ],
            )
        ],
    )
    response = client.send(request, target=PartitionLeader(topic, partition), timeout=30)
    return response.responses[0].partitions[0]


def raw_batches(client: KafkaClient, topic: str, partition: int) -> list[RecordBatch]:
    """Every batch in the log (data and control), as the broker stores it."""
    data = bytes(_fetch(client, topic, partition).records or b"")
    return [b for b in iter_batches(data) if isinstance(b, RecordBatch)]


def wait_settled(client: KafkaClient, topic: str, partitions: int, timeout: float = 30) -> None:
    """Wait until no transaction is open in ``topic`` (last stable offset = high watermark).

    EndTxn is answered once the coordinator logged its decision; the COMMIT
    or ABORT markers reach the partitions just after, and only then do
    read_committed readers see the records.
    """
    deadline = time.monotonic() + timeout
    while True:
        parts = [_fetch(client, topic, p) for p in range(partitions)]
        if all(x.last_stable_offset == x.high_watermark for x in parts):
            return
        if time.monotonic() > deadline:
            return  # the caller's assertion shows what is missing
        time.sleep(0.1)


def describe(client: KafkaClient, topic: str, partitions: int) -> str:
    """The log of ``topic`` batch by batch, for assertion messages."""
    lines = []
    for p in range(partitions):
        x = _fetch(client, topic, p)
        lines.append(f"{topic}-{p}: hw={x.high_watermark} lso={x.last_stable_offset}")
        for b in raw_batches(client, topic, p):
            kind = f"control {b.control_record().type.name}" if b.is_control else "data"
            lines.append(
                f"  @{b.base_offset} pid={b.producer_id} epoch={b.producer_epoch} "
                f"n={b.record_count} txn={b.is_transactional} {kind}"
            )
    return "\n".join(lines)


def committed_values(
    client: KafkaClient, topic: str, partitions: int = 2, *, settle: bool = True
) -> list[bytes]:
    """What a read_committed reader sees, once no transaction is open (``settle``)."""
    if settle:
        wait_settled(client, topic, partitions)
    return sorted(
        r.value or b""
        for p in range(partitions)
        for r in read_partition(client, topic, p, isolation_level=1)
    )


def values(n: int, start: int = 0) -> list[bytes]:
    return sorted(b"v%d" % i for i in range(start, start + n))


def test_at_least_once_task_writes_every_row_without_a_transaction(
    kafka_broker: Any, client: KafkaClient
) -> None:
    topic = new_topic(kafka_broker)
    options, layout = setup(kafka_broker, topic)
    msg = write_task(batches(0, 100), options=options, layout=layout, partition=0)
    assert msg == SinkCommit(partition=0, records=100)
    assert committed_values(client, topic) == values(100)
    logged = [b for p in range(2) for b in raw_batches(client, topic, p)]
    assert logged and not any(b.is_transactional or b.is_control for b in logged)


def test_an_empty_task_does_not_touch_kafka(kafka_broker: Any) -> None:
    options, layout = setup(kafka_broker, "never-created-topic", exactlyOnce="true")
    empty = iter(
        [
            pa.record_batch(
                [pa.array([], pa.string()), pa.array([], pa.binary())], names=["key", "value"]
            )
        ]
    )
    got = write_task(empty, options=options, layout=layout, partition=3, txn=TxnPlan(id_base="x"))
    assert got == SinkCommit(partition=3, records=0)


def test_a_failed_send_fails_the_task_naming_it(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker, partitions=1)
    options, layout = setup(kafka_broker, topic, **{"kafka.max.request.size": "200"})
    big = pa.record_batch([pa.array(["k"]), pa.array([b"x" * 1000])], names=["key", "value"])
    with pytest.raises(SinkWriteError, match="task partition 7 could not write its records"):
        write_task(iter([big]), options=options, layout=layout, partition=7)


def test_exactly_once_task_leaves_its_transaction_for_the_driver(
    kafka_broker: Any, client: KafkaClient
) -> None:
    topic = new_topic(kafka_broker)
    options, layout = setup(kafka_broker, topic, exactlyOnce="true")
    plan = TxnPlan(id_base="t-leave")
    msg = write_task(batches(0, 60), options=options, layout=layout, partition=1, txn=plan)
    assert msg.records == 60 and msg.transaction is not None
    assert msg.transaction.transactional_id == "t-leave-1"
    assert msg.transaction.v2  # the 4.3.1 broker runs transactions v2 (KIP-890)
    # The producer is closed, the transaction is still open: nothing is visible yet.
    assert committed_values(client, topic, settle=False) == []
    failed = end_transactions(client, [msg.transaction], commit=True, timeout_s=30, backoff_s=0.1)
    assert failed == {}
    assert committed_values(client, topic) == values(60)
    # A commit retried after its answer was lost is answered NONE again.
    again = end_transactions(client, [msg.transaction], commit=True, timeout_s=30, backoff_s=0.1)
    assert again == {}


def test_driver_abort_drops_the_rows(kafka_broker: Any, client: KafkaClient) -> None:
    topic = new_topic(kafka_broker)
    options, layout = setup(kafka_broker, topic, exactlyOnce="true")
    msg = write_task(
        batches(0, 30), options=options, layout=layout, partition=0, txn=TxnPlan(id_base="t-ab")
    )
    assert msg.transaction is not None
    assert (
        end_transactions(client, [msg.transaction], commit=False, timeout_s=30, backoff_s=0.1) == {}
    )
    assert committed_values(client, topic) == []
    # The aborted records are in the log, ended by an ABORT marker.
    assert any(b.is_control for p in range(2) for b in raw_batches(client, topic, p))


def test_a_retried_attempt_fences_the_earlier_one(kafka_broker: Any, client: KafkaClient) -> None:
    topic = new_topic(kafka_broker)
    options, layout = setup(kafka_broker, topic, exactlyOnce="true")
    plan = TxnPlan(id_base="t-retry")
    first = write_task(batches(0, 50), options=options, layout=layout, partition=0, txn=plan)
    second = write_task(batches(0, 50), options=options, layout=layout, partition=0, txn=plan)
    assert first.transaction is not None and second.transaction is not None
    assert first.transaction.producer_id == second.transaction.producer_id
    assert second.transaction.epoch > first.transaction.epoch
    # The first attempt's transaction was aborted by the second's InitProducerId:
    failed = end_transactions(client, [first.transaction], commit=True, timeout_s=30, backoff_s=0.1)
    assert isinstance(failed["t-retry-0"], TransactionFencedError)
    assert (
        end_transactions(client, [second.transaction], commit=True, timeout_s=30, backoff_s=0.1)
        == {}
    )
    assert committed_values(client, topic) == values(50)  # once, not twice
    # ... while the log holds both attempts' records.
    logged = sum(
        b.record_count for p in range(2) for b in raw_batches(client, topic, p) if not b.is_control
    )
    assert logged == 100


def test_fencing_a_failed_tasks_id_aborts_what_it_left_open(
    kafka_broker: Any, client: KafkaClient
) -> None:
    topic = new_topic(kafka_broker)
    options, layout = setup(kafka_broker, topic, exactlyOnce="true")
    msg = write_task(
        batches(0, 20), options=options, layout=layout, partition=2, txn=TxnPlan(id_base="t-lost")
    )
    assert msg.transaction is not None  # pretend the message never reached the driver
    failed = fence_transactional_ids(
        client, ["t-lost-2"], transaction_timeout_ms=60000, timeout_s=30, backoff_s=0.1
    )
    assert failed == {}
    # The open transaction is aborted: the last stable offset moved past it.
    assert committed_values(client, topic) == []
    end = end_transactions(client, [msg.transaction], commit=True, timeout_s=30, backoff_s=0.1)
    assert isinstance(end["t-lost-2"], TransactionFencedError)


def test_stream_batch_marker_skips_a_committed_batch(
    kafka_broker: Any, client: KafkaClient
) -> None:
    topic = new_topic(kafka_broker)
    options, layout = setup(kafka_broker, topic, exactlyOnce="true")

    def run(batch_id: int, start: int) -> SinkCommit:
        plan = TxnPlan(id_base="t-stream", batch_id=batch_id, marker_topic=topic)
        return write_task(
            batches(start, start + 10), options=options, layout=layout, partition=0, txn=plan
        )

    def commit(msg: SinkCommit) -> None:
        assert msg.transaction is not None
        assert (
            end_transactions(client, [msg.transaction], commit=True, timeout_s=30, backoff_s=0.1)
            == {}
        )

    commit(run(0, 0))
    # Batch 1 is written and committed, then run again (a restart before
    # Spark's commit log): the marker says it is in, so nothing is written.
    commit(run(1, 10))
    again = run(1, 10)
    assert again == SinkCommit(partition=0, records=0, skipped=True)
    # Batch 2 runs once but its commit never happens (driver died before the
    # EndTxn); the re-run aborts the open one and writes again.
    lost = run(2, 20)
    assert lost.transaction is not None and not lost.skipped
    rerun = run(2, 20)
    assert rerun.records == 10
    commit(rerun)
    assert committed_values(client, topic) == values(30)

"""The sink's pure parts, without Spark or a broker: options, columns, chunks, EndTxn outcomes."""

from __future__ import annotations

import concurrent.futures
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from kafkacore.errors import KafkaConnectionError
from pyspark_kafkacore._sink import batch_writer, stream_writer
from pyspark_kafkacore._sink_options import SinkOptionError, parse_sink_options
from pyspark_kafkacore._sink_producers import ProducerPool
from pyspark_kafkacore._sink_rows import chunks
from pyspark_kafkacore._sink_schema import SinkSchemaError, plan_layout
from pyspark_kafkacore._txn import (
    END_TXN_OUTCOMES,
    INIT_PID_OUTCOMES,
    Outcome,
    TransactionFencedError,
    _drive,
    settle,
)

BS = {"kafka.bootstrap.servers": "127.0.0.1:9092"}
HEADERS = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)


def schema(**columns: Any) -> StructType:
    return StructType([StructField(name, dtype) for name, dtype in columns.items()])


# ---------------------------------------------------------------- options
def test_defaults_are_at_least_once_with_producer_options_translated() -> None:
    got = parse_sink_options(
        {
            **BS,
            "topic": "t",
            "kafka.compression.type": "zstd",
            "kafka.linger.ms": "20",
            "kafka.acks": "1",
            "checkpointLocation": "/tmp/x",  # Spark's own options are not the sink's business
        }
    )
    assert got.topic == "t"
    assert not got.exactly_once
    assert got.marker_topic == "t"
    assert got.producer == {
        "bootstrap_servers": "127.0.0.1:9092",
        "compression_type": "zstd",
        "linger_ms": 20,
        "acks": 1,
    }
    assert got.client == {"bootstrap_servers": "127.0.0.1:9092"}


@pytest.mark.parametrize(
    ("acks", "expected"), [("all", "all"), ("ALL", "all"), ("-1", "all"), ("0", 0), ("1", 1)]
)
def test_acks_accepts_the_java_spellings(acks: str, expected: object) -> None:
    assert parse_sink_options({**BS, "kafka.acks": acks}).producer["acks"] == expected


def test_enable_idempotence_becomes_a_bool() -> None:
    got = parse_sink_options({**BS, "kafka.enable.idempotence": "False", "kafka.acks": "1"})
    assert got.producer["enable_idempotence"] is False


def test_exactly_once_options() -> None:
    got = parse_sink_options(
        {
            **BS,
            "topic": "out",
            "exactlyOnce": "TRUE",
            "transactionalIdPrefix": "etl",
            "markerTopic": "markers",
            "kafka.transaction.timeout.ms": "300000",
        }
    )
    assert got.exactly_once
    assert got.transactional_id_prefix == "etl"
    assert got.marker_topic == "markers"
    assert got.transaction_timeout_ms == 300000
    assert parse_sink_options({**BS, "exactlyOnce": "true"}).transactional_id_prefix == (
        "spark-kafkacore"
    )


@pytest.mark.parametrize(
    ("options", "names"),
    [
        ({}, "'kafka.bootstrap.servers' is required"),
        ({**BS, "topic": "  "}, "option 'topic' is empty"),
        ({**BS, "exactlyOnce": "yes"}, "option 'exactlyOnce': expected true or false"),
        ({**BS, "transactionalIdPrefix": "p"}, "'transactionalIdPrefix' only applies"),
        ({**BS, "markerTopic": "m"}, "'markerTopic' only applies"),
        ({**BS, "kafka.acks": "most"}, "option 'kafka.acks'"),
        ({**BS, "kafka.enable.idempotence": "maybe"}, "option 'kafka.enable.idempotence'"),
        ({**BS, "kafka.linger.ms": "soon"}, "option 'kafka.linger.ms'"),
        ({**BS, "kafka.lingr.ms": "5"}, "option 'kafka.lingr.ms'"),
        ({**BS, "kafka.key.serializer": "x"}, "option 'kafka.key.serializer' is not supported"),
        ({**BS, "kafka.transactional.id": "x"}, "transactionalIdPrefix"),
        ({**BS, "kafka.compression.type": "brotli"}, "compression_type 'brotli'"),
        (
            {**BS, "exactlyOnce": "true", "kafka.acks": "1"},
            "'kafka.acks'=1 cannot be used with exactlyOnce",
        ),
        (
            {**BS, "exactlyOnce": "true", "kafka.enable.idempotence": "false"},
            "'kafka.enable.idempotence'=false cannot be used with exactlyOnce",
        ),
    ],
)
def test_bad_options_are_named(options: dict[str, str], names: str) -> None:
    with pytest.raises(SinkOptionError, match=names.replace("(", r"\(")):
        parse_sink_options(options)


def test_batch_overwrite_is_refused_and_streams_accept_complete() -> None:
    cols = schema(value=StringType())
    with pytest.raises(SinkOptionError, match=r"cannot overwrite.*mode\('append'\)"):
        batch_writer({**BS, "topic": "t"}, cols, True)
    assert stream_writer({**BS, "topic": "t"}, cols, True).options.topic == "t"


def test_exactly_once_stream_needs_a_marker_topic_without_the_topic_option() -> None:
    cols = schema(value=StringType(), topic=StringType())
    with pytest.raises(SinkOptionError, match="option 'markerTopic' is required"):
        stream_writer({**BS, "exactlyOnce": "true"}, cols, False)
    got = stream_writer({**BS, "exactlyOnce": "true", "markerTopic": "m"}, cols, False)
    assert got.options.marker_topic == "m"
    # A batch write keeps no marker, so it needs none.
    assert batch_writer({**BS, "exactlyOnce": "true"}, cols, False).options.exactly_once


# ---------------------------------------------------------------- columns
def test_layout_of_every_column_any_order_any_case() -> None:
    got = plan_layout(
        schema(
            extra=LongType(),
            Headers=HEADERS,
            PARTITION=IntegerType(),
            Topic=StringType(),
            Key=BinaryType(),
            Value=StringType(),
        ),
        None,
    )
    assert (got.headers, got.partition, got.topic, got.key, got.value) == (1, 2, 3, 4, 5)
    assert got.value_is_string and not got.key_is_string


def test_topic_option_wins_over_the_topic_column_whatever_its_type() -> None:
    got = plan_layout(schema(value=BinaryType(), topic=LongType()), "t")
    assert got.topic is None and got.key is None and not got.value_is_string


@pytest.mark.parametrize(
    ("columns", "topic", "message"),
    [
        (
            schema(key=StringType(), payload=StringType()),
            "t",
            r"column 'value' is required .* \(its columns: key, payload\)",
        ),
        (schema(value=LongType()), "t", "column 'value' has type bigint; it must be string or"),
        (
            schema(value=StringType(), key=IntegerType()),
            "t",
            "column 'key' has type int; it must be string or binary",
        ),
        (schema(value=StringType(), topic=BinaryType()), None, "column 'topic' has type binary"),
        (schema(value=StringType()), None, "no topic to write to"),
        (
            schema(value=StringType(), partition=LongType()),
            "t",
            "column 'partition' has type bigint; it must be int",
        ),
        (
            schema(value=StringType(), headers=ArrayType(StringType())),
            "t",
            r"column 'headers' has type array<string>; it must be array<struct<key:string,",
        ),
        (
            schema(value=StringType(), VALUE=StringType()),
            "t",
            "column 'value' is ambiguous",
        ),
    ],
)
def test_bad_columns_are_named(columns: StructType, topic: str | None, message: str) -> None:
    with pytest.raises(SinkSchemaError, match=message):
        plan_layout(columns, topic)


# ---------------------------------------------------------------- chunks
def _batch(**columns: pa.Array) -> pa.RecordBatch:
    return pa.record_batch(list(columns.values()), names=list(columns))


def test_one_chunk_with_the_topic_option_and_strings_as_utf8_bytes() -> None:
    batch = _batch(
        value=pa.array(["a", None, "é"], pa.string()), key=pa.array(["k", "k", None], pa.string())
    )
    layout = plan_layout(schema(value=StringType(), key=StringType()), "t")
    (chunk,) = chunks(batch, layout, "t")
    assert (chunk.topic, chunk.partition, chunk.headers) == ("t", None, None)
    assert chunk.values == [b"a", None, "é".encode()]
    assert chunk.keys == [b"k", b"k", None]


def test_large_strings_and_all_null_keys() -> None:
    batch = _batch(value=pa.array(["x"], pa.large_string()), key=pa.array([None], pa.binary()))
    layout = plan_layout(schema(value=StringType(), key=BinaryType()), "t")
    (chunk,) = chunks(batch, layout, "t")
    assert chunk.values == [b"x"] and chunk.keys is None


def test_rows_grouped_per_topic_and_partition_keeping_their_order() -> None:
    batch = _batch(
        value=pa.array([b"0", b"1", b"2", b"3", b"4"]),
        topic=pa.array(["a", "b", "a", "a", "b"]),
        partition=pa.array([1, None, 1, 0, None], pa.int32()),
    )
    layout = plan_layout(
        schema(value=BinaryType(), topic=StringType(), partition=IntegerType()), None
    )
    got = {(c.topic, c.partition): c.values for c in chunks(batch, layout, None)}
    assert got == {("a", 1): [b"0", b"2"], ("b", None): [b"1", b"4"], ("a", 0): [b"3"]}


def test_one_topic_in_the_column_is_one_chunk() -> None:
    batch = _batch(value=pa.array([b"0", b"1"]), topic=pa.array(["a", "a"]))
    layout = plan_layout(schema(value=BinaryType(), topic=StringType()), None)
    assert [(c.topic, len(c)) for c in chunks(batch, layout, None)] == [("a", 2)]


def test_a_null_topic_is_an_error_naming_the_row() -> None:
    batch = _batch(value=pa.array([b"0", b"1"]), topic=pa.array(["a", None]))
    layout = plan_layout(schema(value=BinaryType(), topic=StringType()), None)
    with pytest.raises(ValueError, match="row 1 of a batch has a null 'topic'"):
        list(chunks(batch, layout, None))


def test_headers_ride_along_per_record() -> None:
    headers_type = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    batch = _batch(
        value=pa.array([b"0", b"1", b"2"]),
        headers=pa.array(
            [[{"key": "h", "value": b"v"}, {"key": "n", "value": None}], None, []],
            headers_type,
        ),
    )
    layout = plan_layout(schema(value=BinaryType(), headers=HEADERS), "t")
    (chunk,) = chunks(batch, layout, "t")
    assert chunk.headers == [[("h", b"v"), ("n", None)], None, None]
    no_headers = _batch(value=pa.array([b"0"]), headers=pa.array([[]], headers_type))
    (chunk,) = chunks(no_headers, layout, "t")
    assert chunk.headers is None  # sent with send_many


def test_an_empty_batch_has_no_chunk() -> None:
    layout = plan_layout(schema(value=BinaryType()), "t")
    assert list(chunks(_batch(value=pa.array([], pa.binary())), layout, "t")) == []


# ---------------------------------------------------------------- EndTxn outcomes
@pytest.mark.parametrize(
    ("code", "outcome"),
    [
        (0, Outcome.DONE),
        (7, Outcome.RETRY),
        (14, Outcome.RETRY),
        (15, Outcome.RETRY),
        (16, Outcome.RETRY),
        (51, Outcome.RETRY),
        (47, Outcome.FENCED),
        (90, Outcome.FENCED),
    ],
)
def test_end_txn_outcomes(code: int, outcome: Outcome) -> None:
    assert END_TXN_OUTCOMES[code] is outcome


def test_settle_splits_retries_failures_and_done() -> None:
    retry, failed = settle(
        {
            "done": 0,
            "moving": 16,
            "markers": 51,
            "lost": KafkaConnectionError("connection lost"),
            "fenced": 90,
            "state": 48,  # INVALID_TXN_STATE: not in the table, fails
        },
        END_TXN_OUTCOMES,
    )
    assert retry == {"moving", "markers", "lost"}
    assert set(failed) == {"fenced", "state"}
    assert "a newer producer" in str(failed["fenced"])
    assert type(failed["state"]).__name__ == "InvalidTxnStateError"
    # InitProducerId has no fencing outcome: PRODUCER_FENCED there is a failure.
    _, failed = settle({"x": 90}, INIT_PID_OUTCOMES)
    assert type(failed["x"]).__name__ == "ProducerFencedError"


# ---------------------------------------------------------------- producer pool
class FakeProducer:
    def __init__(self, **options: Any) -> None:
        self.options = options
        self.closed_with: float | None = None

    def close(self, timeout: float | None = None) -> None:
        self.closed_with = timeout


def test_pool_lends_back_a_healthy_producer_for_the_same_options() -> None:
    pool = ProducerPool(FakeProducer)
    first = pool.acquire({"bootstrap_servers": "a:1", "linger_ms": 5})
    pool.release({"linger_ms": 5, "bootstrap_servers": "a:1"}, first, healthy=True)
    assert pool.acquire({"bootstrap_servers": "a:1", "linger_ms": 5}) is first
    other = pool.acquire({"bootstrap_servers": "a:1", "linger_ms": 6})
    assert other is not first and other.options == {"bootstrap_servers": "a:1", "linger_ms": 6}
    assert len(pool) == 0


def test_pool_closes_a_producer_after_a_failed_task() -> None:
    pool = ProducerPool(FakeProducer)
    producer = pool.acquire({"x": 1})
    pool.release({"x": 1}, producer, healthy=False)
    assert producer.closed_with == 0.0 and len(pool) == 0
    assert pool.acquire({"x": 1}) is not producer


def test_pool_closes_idle_and_surplus_producers() -> None:
    now = [0.0]
    pool = ProducerPool(FakeProducer, idle_s=10, max_idle=2, clock=lambda: now[0])
    a, b, c = (pool.acquire({"n": i}) for i in range(3))
    for i, producer in enumerate((a, b, c)):
        pool.release({"n": i}, producer, healthy=True)
    assert a.closed_with == 0.0 and len(pool) == 2  # the oldest made room
    now[0] = 11.0
    fresh = pool.acquire({"n": 1})
    assert fresh is not b and b.closed_with == 0.0 and c.closed_with == 0.0
    assert len(pool) == 0
    pool.release({"n": 1}, fresh, healthy=True)
    pool.close()
    assert fresh.closed_with == 0.0


# ---------------------------------------------------------------- the EndTxn round loop
class ScriptedCoordinator:
    """Answers each request with the next code scripted for its transactional id."""

    def __init__(self, script: dict[str, list[int | BaseException | None]]) -> None:
        self.script = script
        self.sent: list[str] = []

    def submit(self, request: Any, *, target: Any) -> concurrent.futures.Future[Any]:
        tid = target.transactional_id
        self.sent.append(tid)
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()
        answer = self.script[tid].pop(0)
        if isinstance(answer, BaseException):
            fut.set_exception(answer)
        elif answer is not None:  # None: never answers
            fut.set_result(SimpleNamespace(error_code=answer))
        return fut


def test_end_transactions_retries_until_every_answer_settles() -> None:
    coordinator = ScriptedCoordinator(
        {"a": [51, 16, 0], "b": [0], "c": [KafkaConnectionError("lost"), 90]}
    )
    sleeps: list[float] = []
    failed = _drive(
        coordinator,
        {"a": object(), "b": object(), "c": object()},
        END_TXN_OUTCOMES,
        timeout_s=30,
        backoff_s=0.1,
        sleep=sleeps.append,
    )
    assert coordinator.sent == ["a", "b", "c", "a", "c", "a"]
    assert sleeps == [0.1, 0.1]
    assert list(failed) == ["c"] and isinstance(failed["c"], TransactionFencedError)


def test_end_transactions_gives_up_at_the_deadline_naming_the_last_answer() -> None:
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    coordinator = ScriptedCoordinator({"slow": [51] * 100})
    failed = _drive(
        coordinator,
        {"slow": object()},
        END_TXN_OUTCOMES,
        timeout_s=1.0,
        backoff_s=0.25,
        sleep=sleep,
        clock=lambda: now[0],
    )
    assert "not settled within 1.0 s" in str(failed["slow"])
    assert "ConcurrentTransactions" in str(failed["slow"])
    assert coordinator.sent.count("slow") == 4  # at 0, 0.25, 0.5, 0.75


def test_an_unanswered_request_times_out() -> None:
    coordinator = ScriptedCoordinator({"silent": [None]})
    failed = _drive(
        coordinator, {"silent": object()}, END_TXN_OUTCOMES, timeout_s=0.05, backoff_s=0.1
    )
    assert "no answer for 'silent' within 0.05 s" in str(failed["silent"])

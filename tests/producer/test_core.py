"""Core unit tests without sockets: configuration, misuse, back-pressure, expiry."""

from __future__ import annotations

import random

import pytest

from kafkacore.errors import BrokerError, KafkaTimeoutError
from kafkacore.producer import (
    BatchCompleted,
    BufferFreed,
    BufferFull,
    IdState,
    ProducerConfig,
    ProducerCore,
    RecordTooLargeError,
    TransactionStateError,
    TxnState,
)
from kafkacore.producer.batch import stamp
from kafkacore.producer.outcome import Facts, Verdict, decide
from kafkacore.producer.serde import prepare_record
from kafkacore.records import RecordBatch, RecordBatchBuilder
from tests.client.fakebroker import Topic
from tests.producer.scripted import boot_producer


def test_idempotence_defaults_follow_java() -> None:
    assert ProducerConfig().idempotent
    assert not ProducerConfig(acks=1).idempotent  # quietly off: acks contradicts it
    assert not ProducerConfig(enable_idempotence=False).idempotent
    with pytest.raises(ValueError, match="idempotence cannot work with acks=1"):
        ProducerConfig(acks=1, enable_idempotence=True)
    with pytest.raises(ValueError, match="max_in_flight_requests_per_connection=6"):
        ProducerConfig(enable_idempotence=True, client={"max_in_flight_requests_per_connection": 6})
    with pytest.raises(ValueError, match="transactional_id needs enable_idempotence"):
        ProducerConfig(transactional_id="t", enable_idempotence=False)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"acks": 2}, "acks must be 0, 1 or 'all'"),
        ({"batch_size": 0}, "batch_size must be a positive int"),
        ({"linger_ms": -1}, "linger_ms must be an int >= 0"),
        ({"compression_type": "brotli"}, "compression_type 'brotli' is not one of"),
        ({"transactional_id": ""}, "transactional_id must be a non-empty string"),
    ],
)
def test_bad_options_are_named(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ProducerConfig(**options)  # type: ignore[arg-type]


def test_values_must_be_bytes_unless_serialized() -> None:
    with pytest.raises(TypeError, match="value must be bytes or None, got str"):
        prepare_record("x", None, None, key_serializer=None, value_serializer=None)
    with pytest.raises(TypeError, match="key must be bytes or None, got int"):
        prepare_record(b"x", 5, None, key_serializer=None, value_serializer=None)
    with pytest.raises(TypeError, match="header key must be str"):
        prepare_record(
            b"x",
            None,
            [(b"k", b"v")],  # type: ignore[list-item]
            key_serializer=None,
            value_serializer=None,
        )
    rec = prepare_record(
        "x",
        5,
        [("h", bytearray(b"v"))],
        key_serializer=lambda k: b"%d" % k,
        value_serializer=str.encode,
    )
    assert rec == (b"5", b"x", [("h", b"v")])


def test_stamp_rewrites_producer_fields_and_keeps_the_crc_valid() -> None:
    builder = RecordBatchBuilder()
    builder.append(b"v", b"k", timestamp=1)
    data = stamp(
        builder.build(), producer_id=77, producer_epoch=3, base_sequence=41, transactional=True
    )
    batch = RecordBatch(data)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 3, 41)
    assert batch.is_transactional and batch.crc_valid()
    assert [r.value for r in batch] == [b"v"]


def test_transaction_calls_in_the_wrong_state_say_what_to_do() -> None:
    core = ProducerCore(
        ProducerConfig(transactional_id="tx", client={"bootstrap_servers": "127.0.0.1:9092"}),
        now=0.0,
        rng=random.Random(0),
    )
    assert core.transaction_state is TxnState.UNINITIALIZED
    with pytest.raises(TransactionStateError, match="call init_transactions\\(\\) first"):
        core.begin_transaction(now=0.0)
    with pytest.raises(TransactionStateError, match="call begin_transaction\\(\\) first"):
        core.append("t", b"v", timestamp=1, now=0.0)
    plain = ProducerCore(
        ProducerConfig(client={"bootstrap_servers": "127.0.0.1:9092"}),
        now=0.0,
        rng=random.Random(0),
    )
    with pytest.raises(TransactionStateError, match="has no transactional_id"):
        plain.commit_transaction(now=0.0)


def test_buffer_full_refuses_before_queueing_then_frees() -> None:
    core, pump, _log = boot_producer(partitions=1, buffer_memory=4096, linger_ms=1000)
    pump.run(until=lambda: core.id_state is IdState.READY)
    core.append("t", b"x" * 1000, timestamp=1, token=0, now=pump.now)
    pump.run(until=lambda: core.buffer_available < 4096)
    appended = 1
    with pytest.raises(BufferFull):
        for i in range(1, 10):
            core.append("t", b"x" * 1000, timestamp=1, token=i, now=pump.now)
            appended += 1
    assert 2 <= appended < 10
    core.flush(now=pump.now)
    pump.run(until=lambda: any(isinstance(e, BufferFreed) for e in pump.events))
    core.append("t", b"x" * 1000, timestamp=1, token=99, now=pump.now)  # fits again


def test_record_too_large_is_refused_before_anything_is_sent() -> None:
    core, pump, log = boot_producer(partitions=1, max_request_size=1000)
    with pytest.raises(RecordTooLargeError, match="exceeds max_request_size=1000"):
        core.append("t", b"x" * 2000, timestamp=1, now=pump.now)
    pump.run(rounds=50)
    assert log.produce_requests == 0


def test_unknown_topic_fails_after_max_block_ms_by_jumping_time() -> None:
    core, pump, _log = boot_producer(topics=[Topic("t", 1)], max_block_ms=2000)
    core.append("nope", b"v", timestamp=1, token="r", now=pump.now)
    pump.run(until=lambda: any(isinstance(e, BatchCompleted) for e in pump.events))
    (event,) = [e for e in pump.events if isinstance(e, BatchCompleted)]
    assert event.tokens == ["r"]
    assert isinstance(event.error, KafkaTimeoutError)
    assert "topic 'nope' not present in metadata after max_block_ms=2000" in str(event.error)
    assert pump.now >= 2.0  # time was jumped, never slept
    # The cause is the broker's UNKNOWN_TOPIC_OR_PARTITION, naming who answered.
    cause = event.error.__cause__
    assert isinstance(cause, BrokerError) and cause.node_id is not None
    assert cause.node_id == core.client.cluster.topic_errors_from


def test_delivery_timeout_expires_records_a_broker_never_acknowledges() -> None:
    core, pump, log = boot_producer(
        partitions=1, delivery_timeout_ms=5000, client={"request_timeout_ms": 1000}
    )
    log.fault = lambda: ("lose",)  # every reply is lost
    core.append("t", b"v", timestamp=1, token="r", now=pump.now)
    pump.run(until=lambda: any(isinstance(e, BatchCompleted) for e in pump.events), rounds=5000)
    (event,) = [e for e in pump.events if isinstance(e, BatchCompleted)]
    assert isinstance(event.error, KafkaTimeoutError)
    assert "delivery_timeout_ms=5000" in str(event.error)
    assert log.produce_requests >= 2  # retried before giving up


@pytest.mark.parametrize("idempotent", [True, False])
def test_a_batch_refused_as_too_large_is_split_and_delivered_in_order(idempotent: bool) -> None:
    core, pump, log = boot_producer(
        partitions=1, linger_ms=50, enable_idempotence=idempotent, acks="all"
    )
    log.max_batch_records = 3  # the broker refuses bigger batches: MESSAGE_TOO_LARGE
    for i in range(20):
        core.append(
            "t", b"%d" % i, None, [("n", b"%d" % i)], timestamp=100 + i, token=i, now=pump.now
        )
    flush = core.flush(now=pump.now)
    pump.run(until=lambda: flush.done, rounds=5000)
    events = [e for e in pump.events if isinstance(e, BatchCompleted)]
    assert all(e.error is None for e in events)
    assert sorted(int(t) for e in events for t in e.tokens) == list(range(20))  # type: ignore[call-overload]
    assert [v for _, v in log.logs[("t", 0)]] == [b"%d" % i for i in range(20)]
    for e in events:  # offsets reported per record match the log
        for j, t in enumerate(e.tokens):
            assert log.logs[("t", 0)][e.base_offset + j][1] == b"%d" % t  # type: ignore[str-format]
    assert core._acc.used == 0


def test_bad_topic_or_partition_is_refused_without_queueing() -> None:
    core, pump, _log = boot_producer(partitions=1)
    with pytest.raises(TypeError, match="topic must be a non-empty str"):
        core.append("", b"v", timestamp=1, now=pump.now)
    with pytest.raises(ValueError, match="partition must be an int >= 0"):
        core.append("t", b"v", partition=-1, timestamp=1, now=pump.now)
    assert core._acc.used == 0 and core.pending_records == 0


@pytest.mark.parametrize(
    ("code", "transactional", "earlier", "multi", "verdict"),
    [
        (0, False, False, True, Verdict.COMPLETE),
        (46, False, False, True, Verdict.DUPLICATE),
        (90, True, False, True, Verdict.FENCE),
        (47, True, False, True, Verdict.FENCE),
        (47, False, False, True, Verdict.BUMP_AND_RETRY),
        (45, True, True, True, Verdict.ABORTABLE),
        (45, False, True, True, Verdict.RETRY),
        (45, False, False, True, Verdict.BUMP_AND_RETRY),
        (59, False, True, True, Verdict.BUMP_AND_RETRY),
        (10, False, False, True, Verdict.SPLIT),
        (10, False, False, False, Verdict.TOO_LARGE),
        (6, False, False, True, Verdict.RETRY),  # NOT_LEADER_OR_FOLLOWER
        (87, False, False, True, Verdict.FAIL),  # INVALID_RECORD
        (29, False, False, True, Verdict.FAIL),  # TOPIC_AUTHORIZATION_FAILED
    ],
)
def test_partition_answers_map_to_verdicts(
    code: int, transactional: bool, earlier: bool, multi: bool, verdict: Verdict
) -> None:
    facts = Facts(
        code=code,
        transactional=transactional,
        idempotent=True,
        earlier_unfinished=earlier,
        multi_record=multi,
    )
    assert decide(facts) is verdict

"""The producer's state tables (identity, transaction) over every move, and small parts."""

from __future__ import annotations

import pytest

from kafkacore.client import TopicPartition
from kafkacore.errors import BrokerError, LocalProtocolError
from kafkacore.producer import (
    ProducerConfig,
    ProducerFencedError,
    RecordMetadata,
    TransactionStateError,
)
from kafkacore.producer.causes import metadata_timeout
from kafkacore.producer.config import split_options
from kafkacore.producer.idempotence import TRANSITIONS as ID_TRANSITIONS
from kafkacore.producer.idempotence import IdState, ProducerIdentity
from kafkacore.producer.serde import prepare_headers
from kafkacore.producer.transaction import TRANSITIONS as TXN_TRANSITIONS
from kafkacore.producer.transaction import TransactionManager, TxnState
from kafkacore.protocol.enums import ErrorCode

_ID_EVENTS = ("request", "assigned", "failed", "need_bump", "renewed")


@pytest.mark.parametrize("state", list(IdState))
@pytest.mark.parametrize("event", _ID_EVENTS)
def test_identity_moves_only_as_its_table_says(state: IdState, event: str) -> None:
    ident = ProducerIdentity()
    ident.state = state
    expected = ID_TRANSITIONS.get((state, event))
    if expected is None:
        with pytest.raises(LocalProtocolError, match=f"no transition for {event!r}"):
            ident.fire(event)
        assert ident.state is state
    else:
        assert ident.fire(event) is expected and ident.state is expected


@pytest.mark.parametrize("state", list(IdState))
def test_fatal_is_reachable_from_every_identity_state(state: IdState) -> None:
    ident = ProducerIdentity()
    ident.state = state
    assert ident.fire("fatal") is IdState.FATAL


def test_identity_takes_ids_and_renewals() -> None:
    ident = ProducerIdentity()
    ident.fire("request")
    ident.assign(5, 0)
    assert ident.ready and (ident.producer_id, ident.epoch) == (5, 0)
    ident.renew(6, 1)
    assert ident.ready and (ident.producer_id, ident.epoch) == (6, 1)


@pytest.mark.parametrize("state", list(TxnState))
@pytest.mark.parametrize("target", list(TxnState))
def test_transaction_moves_only_as_its_table_says(state: TxnState, target: TxnState) -> None:
    txn = TransactionManager("tx")
    txn.state = state
    if state is TxnState.FATAL_ERROR:
        txn.fence("earlier")
        with pytest.raises(ProducerFencedError, match="close this producer"):
            txn.to(target, "call")
    elif target in TXN_TRANSITIONS[state]:
        txn.to(target, "call")
        assert txn.state is target
    else:
        with pytest.raises(
            TransactionStateError, match=f"call: transaction of 'tx' is {state.value}"
        ):
            txn.to(target, "call")


def test_ready_forgets_the_last_transaction() -> None:
    txn = TransactionManager("tx")
    txn.state = TxnState.COMMITTING
    txn.pending.add(TopicPartition("t", 0))
    txn.adding.add(TopicPartition("t", 1))
    txn.added.add(TopicPartition("t", 2))
    txn.started = True
    txn.to(TxnState.READY, "EndTxn")
    assert not (txn.pending or txn.adding or txn.added or txn.started) and txn.error is None


def test_abortable_only_from_a_running_transaction() -> None:
    txn = TransactionManager("tx")
    txn.abortable(RuntimeError("x"))
    assert txn.state is TxnState.UNINITIALIZED and txn.error is None
    txn.state = TxnState.COMMITTING
    error = RuntimeError("y")
    txn.abortable(error)
    assert txn.state is TxnState.ABORTABLE_ERROR and txn.error is error


def test_need_notes_each_partition_once_per_protocol() -> None:
    tp, other = TopicPartition("t", 0), TopicPartition("t", 1)
    v1 = TransactionManager("tx")
    assert v1.need(tp) and v1.pending == {tp}
    v1.pending.clear()
    v1.adding.add(tp)
    assert v1.need(tp) and not v1.pending  # being added already
    v1.added.add(other)
    assert not v1.need(other)
    v2 = TransactionManager("tx")
    v2.v2 = True
    assert not v2.need(tp) and v2.added == {tp} and not v2.pending
    assert (v1.produce_max, v2.produce_max) == (11, 12)
    assert (v1.end_txn_max, v2.end_txn_max) == (4, 5)
    assert (v1.txn_offset_commit_max, v2.txn_offset_commit_max) == (4, 5)


# ------------------------------------------------------------ small parts
def test_a_topic_error_other_than_unknown_is_named() -> None:
    error = metadata_timeout("t", 500, ErrorCode.LEADER_NOT_AVAILABLE, None, node_id=2)
    assert "topic 't' had no usable metadata after max_block_ms=500: the brokers answered" in str(
        error
    )
    assert isinstance(error.__cause__, BrokerError) and error.__cause__.node_id == 2
    assert "Metadata answer of broker 2 for topic 't'" in str(error.__cause__)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"retries": 0, "enable_idempotence": True}, "idempotence cannot work with retries=0"),
        ({"max_request_size": 99}, "max_request_size must be at least 100 bytes"),
    ],
)
def test_more_bad_options_are_named(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ProducerConfig(**options)  # type: ignore[arg-type]


def test_split_options_names_the_owner() -> None:
    config = split_options("KafkaProducer", {"linger_ms": 7, "request_timeout_ms": 900})
    assert config.linger_ms == 7 and config.client == {"request_timeout_ms": 900}
    assert not config.transactional and ProducerConfig(transactional_id="x").transactional
    with pytest.raises(ValueError, match="KafkaProducer: ProducerConfig: linger_ms"):
        split_options("KafkaProducer", {"linger_ms": -1})


def test_headers_must_be_pairs() -> None:
    assert prepare_headers(None, "send") is None
    with pytest.raises(TypeError, match=r"send: each header must be a \(str, bytes\) pair"):
        prepare_headers([("a", b"1", "extra")], "send")  # type: ignore[list-item]


def test_record_metadata_is_a_value() -> None:
    a = RecordMetadata("t", 1, 5, 99)
    assert a == RecordMetadata("t", 1, 5, 99) and a != RecordMetadata("t", 1, 6, 99)
    assert a != ("t", 1, 5, 99) and hash(a) == hash(RecordMetadata("t", 1, 5, 99))
    assert repr(a) == "RecordMetadata(topic='t', partition=1, offset=5, timestamp=99)"

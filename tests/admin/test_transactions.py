"""Producer and transaction commands (KIP-664) against the scripted cluster."""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.admin import (
    AbortTransactionSpec,
    ProducerState,
    TransactionListing,
    TransactionState,
)
from kafkacore.admin._transactions import _list_builder
from kafkacore.client.metadata import TopicPartition as TP
from kafkacore.errors import NoCommonVersionError
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ApiKey, ErrorCode
from kafkacore.protocol.error_codes import (
    TransactionalIdNotFoundError,
    UnknownTopicOrPartitionError,
)
from tests.admin.fakeadmin import Harness, Txn
from tests.client.fakebroker import FakeBroker


def with_txns(n: int = 2, **kwargs: Any) -> Harness:
    h = Harness(n, **kwargs)
    h.world.add_topic("t", 2, {0: 0, 1: min(1, n - 1)})
    h.world.transactions["tx-a"] = Txn(7, "Ongoing", [TP("t", 0), TP("t", 1)])
    h.world.transactions["tx-b"] = Txn(8, "Empty")
    h.world.cluster.coordinators[(1, "tx-b")] = n - 1
    return h


def test_describe_producers_asks_each_leader() -> None:
    h = with_txns()
    results = h.result(h.core.describe_producers([TP("t", 0), TP("t", 1), TP("zz", 0)], now=h.now))
    state = ProducerState(
        producer_id=7,
        producer_epoch=3,
        last_sequence=9,
        last_timestamp=1234,
        coordinator_epoch=1,
        current_transaction_start_offset=5,
    )
    assert results[TP("t", 0)].result() == (state,) and results[TP("t", 1)].result() == (state,)
    assert isinstance(results[TP("zz", 0)].error, UnknownTopicOrPartitionError)
    nodes = sorted(n for n, api, _, _ in h.world.seen if api == ApiKey.DESCRIBE_PRODUCERS)
    assert nodes == [0, 1]


def test_list_transactions_on_every_coordinator() -> None:
    h = with_txns()
    listing = h.result(h.core.list_transactions(now=h.now))
    assert listing.transactions == (
        TransactionListing(
            transactional_id="tx-a", producer_id=7, state=TransactionState.ONGOING, coordinator=0
        ),
        TransactionListing(
            transactional_id="tx-b", producer_id=8, state=TransactionState.EMPTY, coordinator=1
        ),
    )
    assert listing.all() == listing.transactions
    ongoing = h.result(h.core.list_transactions(states=["ONGOING"], producer_ids=[7], now=h.now))
    assert [t.transactional_id for t in ongoing.transactions] == ["tx-a"]
    body = h.world.requests(ApiKey.LIST_TRANSACTIONS)[-1]
    assert (body.state_filters, body.producer_id_filters) == (["Ongoing"], [7])


def test_list_transactions_filters_need_their_versions() -> None:
    build = _list_builder("list_transactions", [], [], 60000, "tx-.*")
    request = build(2)
    assert (request.duration_filter, request.transactional_id_pattern) == (60000, "tx-.*")
    with pytest.raises(
        NoCommonVersionError, match="transactional_id_pattern needs ListTransactions v2\\+"
    ):
        build(1)
    with pytest.raises(NoCommonVersionError, match="duration_ms needs ListTransactions v1\\+"):
        _list_builder("list_transactions", [], [], 5, None)(0)
    assert _list_builder("list_transactions", [], [], None, None)(0).state_filters == []


def test_list_transactions_broker_errors() -> None:
    h = with_txns()

    def loading_then_refused(code: int) -> Any:
        return lambda b, body, v: (
            m.ListTransactionsResponse(error_code=code) if b.node_id == 1 else None
        )

    h.world.script(
        ApiKey.LIST_TRANSACTIONS,
        loading_then_refused(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
        loading_then_refused(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
        loading_then_refused(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
        loading_then_refused(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    )
    listing = h.result(h.core.list_transactions(now=h.now))
    assert str(listing.errors[1]) == "CLUSTER_AUTHORIZATION_FAILED: ListTransactions (broker 1)"
    with pytest.raises(Exception, match="CLUSTER_AUTHORIZATION_FAILED"):
        listing.all()


def test_list_transactions_without_a_broker_list_fails() -> None:
    h = with_txns(1, api_timeout_ms=500)
    next(iter(h.pump.brokers.values())).hold = True
    op = h.core.list_transactions(now=h.now)
    h.run(op)
    assert op.error is not None and "not done within 500 ms" in str(op.error)


def test_describe_transactions_follows_coordinators() -> None:
    h = with_txns()
    results = h.result(h.core.describe_transactions(["tx-a", "tx-b", "nope"], now=h.now))
    a = results["tx-a"].result()
    assert (a.state, a.producer_id, a.producer_epoch, a.coordinator) == (
        TransactionState.ONGOING,
        7,
        3,
        0,
    )
    assert a.partitions == {TP("t", 0), TP("t", 1)} and a.transaction_start_time_ms == 1000
    b = results["tx-b"].result()
    assert (b.coordinator, b.transaction_start_time_ms, b.partitions) == (1, None, frozenset())
    assert isinstance(results["nope"].error, TransactionalIdNotFoundError)
    h.world.cluster.coordinators[(1, "tx-b")] = 0  # moved: NOT_COORDINATOR, then found
    assert (
        h.result(h.core.describe_transactions(["tx-b"], now=h.now))["tx-b"].result().coordinator
        == 0
    )


def test_a_silent_transaction_coordinator_is_looked_up_again() -> None:
    h = with_txns(request_timeout_ms=1000)
    assert h.result(h.core.describe_transactions(["tx-b"], now=h.now))["tx-b"].ok
    h.pump.brokers[("127.0.0.1", 9093)].hold = True
    h.world.cluster.coordinators[(1, "tx-b")] = 0
    assert (
        h.result(h.core.describe_transactions(["tx-b"], now=h.now))["tx-b"].result().coordinator
        == 0
    )


def test_abort_transaction_writes_the_abort_marker_on_the_leader() -> None:
    h = with_txns()
    spec = AbortTransactionSpec(
        partition=TP("t", 1), producer_id=7, producer_epoch=3, coordinator_epoch=1
    )
    assert h.result(h.core.abort_transaction(spec, now=h.now)) is None
    assert h.world.markers == [(TP("t", 1), 7, 3, False, 1)]
    assert [n for n, api, _, _ in h.world.seen if api == ApiKey.WRITE_TXN_MARKERS] == [1]

    def move(b: FakeBroker, body: Any, v: int) -> None:
        h.world.cluster.topics["t"].leaders[1] = 0  # the leader moved before the marker

    h.world.script(ApiKey.WRITE_TXN_MARKERS, move)
    assert h.result(h.core.abort_transaction(spec, now=h.now)) is None
    assert [n for n, api, _, _ in h.world.seen if api == ApiKey.WRITE_TXN_MARKERS][-2:] == [1, 0]
    op = h.core.abort_transaction(
        AbortTransactionSpec(
            partition=TP("zz", 0), producer_id=1, producer_epoch=0, coordinator_epoch=0
        ),
        now=h.now,
    )
    h.run(op)
    assert isinstance(op.error, UnknownTopicOrPartitionError)


@pytest.mark.parametrize(
    ("call", "error", "text"),
    [
        (lambda c: c.describe_producers([], now=0.0), ValueError, "at least one partition"),
        (
            lambda c: c.list_transactions(states="Ongoing", now=0.0),
            TypeError,
            "states must be a collection",
        ),
        (
            lambda c: c.list_transactions(states=["Bogus"], now=0.0),
            ValueError,
            "unknown transaction state",
        ),
        (lambda c: c.list_transactions(producer_ids=[-1], now=0.0), ValueError, "producer id: -1"),
        (lambda c: c.list_transactions(duration_ms=-5, now=0.0), ValueError, "duration_ms: -5"),
        (
            lambda c: c.list_transactions(transactional_id_pattern=3, now=0.0),
            TypeError,
            "transactional_id_pattern: expected a str",
        ),
        (lambda c: c.describe_transactions("tx", now=0.0), TypeError, "collection of names"),
        (
            lambda c: c.abort_transaction((TP("t", 0), 1, 0, 0), now=0.0),
            TypeError,
            "expected an AbortTransactionSpec",
        ),
        (
            lambda c: AbortTransactionSpec(
                partition="t-0",  # type: ignore[arg-type]
                producer_id=1,
                producer_epoch=0,
                coordinator_epoch=0,
            ),
            TypeError,
            "expected a TopicPartition",
        ),
        (
            lambda c: AbortTransactionSpec(
                partition=TP("t", 0), producer_id=-1, producer_epoch=0, coordinator_epoch=0
            ),
            ValueError,
            "producer_id: -1",
        ),
    ],
)
def test_transaction_commands_refuse_bad_arguments(call: Any, error: type, text: str) -> None:
    h = Harness()
    with pytest.raises(error, match=text):
        call(h.core)


def test_transaction_state_parses_names_and_wire_values() -> None:
    assert TransactionState.parse("PrepareCommit") is TransactionState.PREPARE_COMMIT
    assert TransactionState.parse("COMPLETE_ABORT") is TransactionState.COMPLETE_ABORT
    assert TransactionState.parse("Later") is TransactionState.UNKNOWN
    assert TransactionState.parse(TransactionState.DEAD) is TransactionState.DEAD
    with pytest.raises(TypeError, match="transaction state: expected"):
        TransactionState.parse(1)

"""ProducerCore as a facade: its commands, misuse, close, and the stacking contract."""

from __future__ import annotations

import random

import pytest

from kafkacore.client.stack import StackedMachine
from kafkacore.errors import LocalProtocolError
from kafkacore.producer import (
    BatchCompleted,
    IdState,
    ProducerClosedError,
    ProducerConfig,
    ProducerCore,
    ProducerFencedError,
    RecordTooLargeError,
)
from tests.producer.scripted import boot_producer, drive


def _reports(events: list[object]) -> list[BatchCompleted]:
    return [e for e in events if isinstance(e, BatchCompleted)]


def test_the_producer_is_a_stacked_machine_with_its_config() -> None:
    config = ProducerConfig(client={"bootstrap_servers": "127.0.0.1:9092"})
    core = ProducerCore(config, now=0.0, rng=random.Random(0))
    assert isinstance(core, StackedMachine) and core.config is config
    assert not core.closed and core.producer_id == (-1, -1) and core.transaction_state is None
    assert not core.transactions_v2
    core.close(now=0.0)
    core.close(now=1.0)  # closing twice is harmless
    assert core.closed and core.deadlines.next() is None


def test_append_many_refuses_bad_columns_before_queueing() -> None:
    core, pump, _log = boot_producer(partitions=1, max_request_size=1000, buffer_memory=2000)
    with pytest.raises(ValueError, match="2 keys for 1 values; give one key per value"):
        core.append_many("t", [b"v"], [b"a", b"b"], timestamp=1, now=pump.now)
    with pytest.raises(RecordTooLargeError, match="exceeds max_request_size=1000"):
        core.append_many("t", [b"x" * 2000], timestamp=1, now=pump.now)
    with pytest.raises(RecordTooLargeError, match="exceed buffer_memory=2000; send fewer"):
        core.append_many("t", [b"x" * 500] * 5, timestamp=1, now=pump.now)
    core.append_many("t", [], timestamp=1, now=pump.now)  # nothing to do
    assert core.pending_records == 0 and core.buffer_available == 2000


def test_append_many_before_metadata_waits_then_goes_out_keyed() -> None:
    core, pump, log = boot_producer(partitions=3)
    keys = [b"k%d" % i for i in range(10)]
    core.append_many("t", [b"v%d" % i for i in range(10)], keys, timestamp=1, token="m", now=0.0)
    assert core.pending_records == 10
    flush = core.flush(now=pump.now)
    drive(pump, log, until=lambda: flush.done)
    assert sum(len(r.tokens) for r in _reports(pump.events)) == 10
    assert sum(len(records) for records in log.logs.values()) == 10


def test_a_partition_that_does_not_exist_is_reported_not_queued() -> None:
    core, pump, log = boot_producer(partitions=2)
    core.append("t", b"v", partition=2, timestamp=1, token="one", now=pump.now)
    core.append_many("t", [b"a", b"b"], partition=5, timestamp=2, token="many", now=pump.now)
    drive(pump, log, until=lambda: len(_reports(pump.events)) == 2)  # placed, then refused
    one, many = _reports(pump.events)
    assert isinstance(one.error, LocalProtocolError) and one.tokens == ["one"]
    assert "topic 't' has 2 partitions; partition 2 does not exist" in str(one.error)
    assert many.tokens == ["many", "many"] and many.timestamps == [2, 2]
    assert core.pending_records == 0


def test_commands_after_close_are_refused_or_fail() -> None:
    core, pump, _log = boot_producer(partitions=1)
    core.close(now=pump.now)
    with pytest.raises(ProducerClosedError, match="append: producer is closed; make a new one"):
        core.append("t", b"v", timestamp=1, now=pump.now)
    flush = core.flush(now=pump.now)
    assert flush.done and isinstance(flush.error, ProducerClosedError)
    tx, tpump, _ = boot_producer(partitions=1, transactional_id="tx")
    tx.close(now=tpump.now)
    with pytest.raises(ProducerClosedError, match="init_transactions: producer is closed"):
        tx.init_transactions(now=tpump.now)


def test_a_fenced_producer_refuses_appends_with_its_fatal_error() -> None:
    core, pump, log = boot_producer(partitions=1, transactional_id="tx", tv2=False)
    init = core.init_transactions(now=pump.now)
    drive(pump, log, until=lambda: init.done)
    core.begin_transaction(now=pump.now)
    assert core._txn is not None
    core._txn.fence("a newer instance")
    with pytest.raises(ProducerFencedError, match="was fenced"):
        core.append("t", b"v", timestamp=1, now=pump.now)


def test_client_events_after_close_change_nothing() -> None:
    core, pump, _log = boot_producer(partitions=1)
    pump.run(until=lambda: core.id_state is IdState.READY)
    core.close(now=pump.now)
    core.pull_events()
    for conn_id in list(pump.conns):
        core.connection_lost(conn_id, ConnectionResetError("reset"), now=pump.now)
    assert core.pull_events() == [] and core.deadlines.next() is None

"""Transactions v1 and v2 (KIP-890 part 2) against scripted brokers.

The scripted coordinator advertises ``transaction.version`` 2 or not; the
scripted log enforces what a partition leader enforces about producer
epochs and sequences (a new epoch must start at sequence 0, an old epoch is
refused), so a producer that kept its sequences across an EndTxn v5 epoch
bump would see its next transaction's records refused.
"""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.operation import Operation
from kafkacore.producer import BatchCompleted, ProducerCore
from kafkacore.producer.transaction import TxnState
from tests.client.fakebroker import Pump
from tests.producer.scripted import ScriptedCoordinator, ScriptedLog, boot_producer

ADD_PARTITIONS, ADD_OFFSETS, END_TXN, TXN_OFFSET_COMMIT = 24, 25, 26, 28


def _wait(pump: Pump, op: Operation) -> None:
    pump.run(until=lambda: op.done)
    assert op.error is None, op.error


def _transaction(
    core: ProducerCore, pump: Pump, tag: str, n: int, *, commit: bool, offsets: bool
) -> None:
    core.begin_transaction(now=pump.now)
    for i in range(n):
        core.append(
            "t", f"{tag}-{i}".encode(), key=b"k%d" % i, timestamp=1, token=(tag, i), now=pump.now
        )
    if offsets:
        _wait(pump, core.send_offsets_to_transaction({("t", 0): 5}, "g", now=pump.now))
    if not commit:
        _wait(pump, core.flush(now=pump.now))  # the records reach the log, then abort
    _wait(
        pump,
        core.commit_transaction(now=pump.now) if commit else core.abort_transaction(now=pump.now),
    )


def _boot(tv2: bool) -> tuple[ProducerCore, Pump, ScriptedLog, ScriptedCoordinator]:
    core, pump, log = boot_producer(partitions=2, transactional_id="tx", tv2=tv2)
    assert log.coordinator is not None
    pump.run(until=lambda: core.client.finalized_features() is not None)
    assert core.client.finalized_features() == ({"transaction.version": 2} if tv2 else {})
    _wait(pump, core.init_transactions(now=pump.now))
    return core, pump, log, log.coordinator


def _failures(pump: Pump) -> list[Any]:
    return [e.error for e in pump.events if isinstance(e, BatchCompleted) and e.error]


def test_v2_adds_implicitly_and_bumps_the_epoch_at_every_end() -> None:
    core, pump, log, coord = _boot(tv2=True)
    pid, epoch = core.producer_id
    seen = []
    for tag, commit in (("c1", True), ("a1", False), ("c2", True)):
        _transaction(core, pump, tag, 30, commit=commit, offsets=True)
        assert core.transactions_v2
        assert core.transaction_state is TxnState.READY
        seen.append(core.producer_id)
    assert not _failures(pump)
    assert seen == [(pid, epoch + 1), (pid, epoch + 2), (pid, epoch + 3)]
    apis = {key for key, _ in coord.calls}
    assert ADD_PARTITIONS not in apis and ADD_OFFSETS not in apis
    assert [v for k, v in coord.calls if k == END_TXN] == [5, 5, 5]
    assert {v for k, v in coord.calls if k == TXN_OFFSET_COMMIT} == {5}
    assert set(log.produce_versions) == {12}
    # EndTxn carried the epoch in use; each transaction's records went under it.
    assert [(c, p, e) for c, p, e in coord.ended] == [
        (True, pid, epoch),
        (False, pid, epoch + 1),
        (True, pid, epoch + 2),
    ]
    # Sequences restarted at 0 under every new epoch (the log refuses
    # anything else), so all 90 records are in the log exactly once.
    values = sorted(v or b"" for recs in log.logs.values() for _k, v in recs)
    assert values == sorted(f"{t}-{i}".encode() for t in ("c1", "a1", "c2") for i in range(30))
    for (_topic, _part, producer), state in log.state.items():
        assert (producer, state.epoch) == (pid, epoch + 2)


def test_v2_empty_transaction_ends_locally_without_a_bump() -> None:
    core, pump, _log, coord = _boot(tv2=True)
    before = core.producer_id
    core.begin_transaction(now=pump.now)
    _wait(pump, core.commit_transaction(now=pump.now))
    assert core.producer_id == before
    assert not [c for c in coord.calls if c[0] == END_TXN]


@pytest.mark.parametrize("tv2", [False, True])
def test_offsets_only_transaction_ends_with_end_txn(tv2: bool) -> None:
    core, pump, _log, coord = _boot(tv2=tv2)
    core.begin_transaction(now=pump.now)
    _wait(pump, core.send_offsets_to_transaction({("t", 1): 9}, "g", now=pump.now))
    _wait(pump, core.commit_transaction(now=pump.now))
    calls = [c for c in coord.calls if c[0] != ADD_OFFSETS]
    v = 5 if tv2 else 4
    assert calls == [(TXN_OFFSET_COMMIT, v), (END_TXN, v)]
    # v1 tells the coordinator about the offsets first; v2 lets TxnOffsetCommit do it.
    assert [k for k, _ in coord.calls].count(ADD_OFFSETS) == (0 if tv2 else 1)


def test_v1_without_the_feature_adds_partitions_and_keeps_the_epoch() -> None:
    core, pump, log, coord = _boot(tv2=False)
    pid, epoch = core.producer_id
    for tag, commit in (("c1", True), ("a1", False), ("c2", True)):
        _transaction(core, pump, tag, 30, commit=commit, offsets=True)
        assert not core.transactions_v2
        assert core.producer_id == (pid, epoch)
    assert not _failures(pump)
    assert [v for k, v in coord.calls if k == ADD_PARTITIONS]  # explicit adds
    assert {v for k, v in coord.calls if k == ADD_PARTITIONS} == {3}
    assert [v for k, v in coord.calls if k == END_TXN] == [4, 4, 4]
    assert {v for k, v in coord.calls if k == TXN_OFFSET_COMMIT} == {4}
    assert [k for k, _ in coord.calls].count(ADD_OFFSETS) == 3
    assert set(log.produce_versions) == {11}
    values = sorted(v or b"" for recs in log.logs.values() for _k, v in recs)
    assert values == sorted(f"{t}-{i}".encode() for t in ("c1", "a1", "c2") for i in range(30))


def test_v2_transaction_abortable_then_abort_bumps_and_the_next_one_commits() -> None:
    core, pump, log, coord = _boot(tv2=True)
    pid, epoch = core.producer_id
    faults = iter([("error", 120)])  # TRANSACTION_ABORTABLE (KIP-890) on the first Produce
    log.fault = lambda: next(faults, None)
    core.begin_transaction(now=pump.now)
    core.append("t", b"lost", partition=0, timestamp=1, token="lost", now=pump.now)
    pump.run(until=lambda: core.transaction_state is TxnState.ABORTABLE_ERROR)
    (error,) = _failures(pump)
    assert type(error).__name__ == "TransactionAbortableError"
    _wait(pump, core.abort_transaction(now=pump.now))
    assert core.producer_id == (pid, epoch + 1)  # the abort's EndTxn v5 bumped it
    _transaction(core, pump, "ok", 5, commit=True, offsets=False)
    assert core.producer_id == (pid, epoch + 2)
    assert [c[:1] for c in coord.ended] == [(False,), (True,)]
    values = sorted(v or b"" for recs in log.logs.values() for _k, v in recs)
    assert values == sorted(f"ok-{i}".encode() for i in range(5))

"""ProducerBatch: its states, building once, and stamping only when the stamp changes."""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.client import TopicPartition
from kafkacore.producer import BatchCompleted, IdState
from kafkacore.producer import batch as batch_module
from kafkacore.producer.batch import BatchState, ProducerBatch
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ApiKey, ErrorCode
from kafkacore.records import Compression, RecordBatch
from tests.client.fakebroker import FakeBroker
from tests.producer.scripted import boot_producer, drive

TP = TopicPartition("t", 0)


def _batch(stamp: tuple[int, int, int] | None = None, transactional: bool = False) -> ProducerBatch:
    batch = ProducerBatch(
        1,
        TP,
        now=10.0,
        delivery_timeout_s=2.0,
        batch_size=1024,
        compression=Compression.NONE,
        compression_level=None,
        stamp=stamp,
        transactional=transactional,
    )
    assert batch.builder is not None
    batch.builder.append(b"v1", b"k", timestamp=5)
    batch.builder.append(b"v2", None, timestamp=6)
    batch.tokens += ["a", "b"]
    return batch


def _count_stamps(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = batch_module.stamp

    def counting(data: bytes, **kw: Any) -> bytes:
        calls.append(kw["base_sequence"])
        return real(data, **kw)

    monkeypatch.setattr(batch_module, "stamp", counting)
    return calls


def test_a_new_batch_is_open_with_its_deadline_and_no_stamp() -> None:
    batch = _batch()
    assert batch.state is BatchState.OPEN and batch.deadline == 12.0
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
    assert batch.written == (-1, -1, -1, False)
    assert batch.record_count == 2 and batch.size() > 61
    assert "2 records open seq=-1" in repr(batch)


def test_build_seals_once_and_drops_the_builder() -> None:
    batch = _batch()
    data = batch.build()
    assert batch.state is BatchState.SEALED and batch.builder is None
    assert batch.build() is data and batch.size() == len(data)
    batch.state = BatchState.IN_FLIGHT
    batch.build()
    assert batch.state is BatchState.IN_FLIGHT  # only an OPEN batch is sealed by build


def test_seal_with_the_stamp_the_builder_wrote_does_not_rewrite(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _count_stamps(monkeypatch)
    batch = _batch(stamp=(7, 2, 40), transactional=True)
    data = batch.seal(7, 2, 40, True)
    assert calls == [] and data is batch.build()
    parsed = RecordBatch(data)
    assert (parsed.producer_id, parsed.producer_epoch, parsed.base_sequence) == (7, 2, 40)
    assert parsed.is_transactional and parsed.crc_valid()
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (7, 2, 40)


@pytest.mark.parametrize(
    "stamp", [None, (7, 2, 41), (7, 3, 40), (8, 2, 40)], ids=["unplanned", "seq", "epoch", "pid"]
)
def test_seal_with_another_stamp_rewrites_the_header_once(
    monkeypatch: pytest.MonkeyPatch, stamp: tuple[int, int, int] | None
) -> None:
    calls = _count_stamps(monkeypatch)
    batch = _batch(stamp=stamp)
    data = batch.seal(7, 2, 40, False)
    assert calls == [40]
    parsed = RecordBatch(data)
    assert (parsed.producer_id, parsed.producer_epoch, parsed.base_sequence) == (7, 2, 40)
    assert not parsed.is_transactional and parsed.crc_valid()
    assert [r.value for r in parsed] == [b"v1", b"v2"]
    assert batch.seal(7, 2, 40, False) is data and calls == [40]  # a retry: same bytes
    batch.seal(7, 3, 0, False)  # an epoch bump: stamped again
    assert calls == [40, 0] and batch.written == (7, 3, 0, False)


def test_sealing_without_a_producer_id_leaves_the_bytes_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _count_stamps(monkeypatch)
    batch = _batch()
    batch.seal(-1, -1, -1, False)
    assert calls == []


def test_an_idempotent_producer_writes_each_batch_header_and_crc_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 11: each idempotent batch was checksummed twice and copied three
    times (built, then stamped). Opened with the stamp it is sent with, it is
    built once."""
    core, pump, log = boot_producer(partitions=3, linger_ms=1000, batch_size=200)
    pump.run(until=lambda: core.id_state is IdState.READY)
    calls = _count_stamps(monkeypatch)
    for i in range(60):
        core.append("t", b"v%03d" % i, key=b"k%d" % (i % 5), timestamp=1, token=i, now=pump.now)
    core.flush(now=pump.now)
    drive(pump, log, until=lambda: core.pending_records == 0)
    reported = [t for e in pump.events if isinstance(e, BatchCompleted) for t in e.tokens]
    assert sorted(reported) == list(range(60))  # type: ignore[type-var]
    assert all(e.error is None for e in pump.events if isinstance(e, BatchCompleted))
    assert calls == []
    assert sum(len(records) for records in log.logs.values()) == 60


def test_batches_opened_before_the_producer_id_are_stamped_when_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _count_stamps(monkeypatch)
    core, pump, log = boot_producer(partitions=1, linger_ms=0)
    refusals = [m.InitProducerIdResponse(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)]

    def init_producer_id(broker: FakeBroker, body: Any, version: int, session: Any) -> Any:
        return refusals.pop() if refusals else log.init_producer_id(broker, body, version, session)

    for broker in log.brokers:
        broker.handlers[ApiKey.INIT_PRODUCER_ID] = init_producer_id
    core.append("t", b"early", timestamp=1, token="early", now=pump.now)
    pump.run(until=lambda: bool(core.client.cluster.partitions_for_topic("t")))
    assert core.id_state is IdState.REQUESTING  # the batch opened without an id
    drive(pump, log, until=lambda: core.pending_records == 0)
    assert calls == [0]
    assert [v for _, v in log.logs[("t", 0)]] == [b"early"]

"""ShareConsumerCore and its share sessions against the scripted broker."""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.client.metadata import TopicPartition
from kafkacore.errors import KafkaTimeoutError, LocalProtocolError
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from kafkacore.share import (
    AcknowledgementsCommitted,
    AcknowledgeType,
    AcquisitionLockTimedOut,
    ShareAssignmentChanged,
    ShareConsumerConfig,
    ShareRecordsAvailable,
    ShareSessionLost,
)
from kafkacore.share.fetcher import next_epoch
from tests.share.scripted import St, boot_share

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


def fetch_requests(pump: Any, api: int = 78) -> list[Any]:
    return [body for b in pump.brokers.values() for key, _, body in b.received if key == api]


def poll(core: Any, pump: Any, limit: int | None = None) -> list[Any]:
    core.poll_records(0, now=pump.now)
    pump.run(rounds=30, jump=False)
    return core.poll_records(limit, now=pump.now)


def acked(pump: Any) -> list[AcknowledgementsCommitted]:
    return [e for e in pump.events if isinstance(e, AcknowledgementsCommitted)]


def test_join_fetch_and_implicit_acceptance() -> None:
    core, pump, kafka = boot_share(2)
    assert any(isinstance(e, ShareAssignmentChanged) for e in pump.events)
    kafka.produce("t", 0, [b"a", b"b"])
    recs = poll(core, pump)
    assert [(r.offset, r.value, r.delivery_count) for r in recs] == [(0, b"a", 1), (1, b"b", 1)]
    assert any(isinstance(e, ShareRecordsAvailable) for e in pump.events)
    first = fetch_requests(pump)[0]
    assert first.share_session_epoch == 0 and first.member_id == core.member.member_id
    poll(core, pump)  # implicit mode: this poll accepts the last one's records
    assert kafka.accepted == {("t", 0, 0): 1, ("t", 0, 1): 1}
    carried = [r for r in fetch_requests(pump) if r.topics and r.share_session_epoch > 0]
    assert carried[0].topics[0].partitions[0].acknowledgement_batches[0].acknowledge_types == [1]
    assert acked(pump)[0].offsets == {0, 1} and acked(pump)[0].error is None


def test_session_epochs_count_up_and_wrap() -> None:
    core, pump, _kafka = boot_share(1)
    for _ in range(3):
        poll(core, pump)
    epochs = [r.share_session_epoch for r in fetch_requests(pump)]
    assert epochs[:4] == [0, 1, 2, 3]
    assert next_epoch(2**31 - 1) == 1


def test_explicit_acknowledge_commit_and_per_partition_results() -> None:
    core, pump, kafka = boot_share(2, acknowledgement_mode="explicit")
    kafka.produce("t", 0, [b"a"])
    kafka.produce("t", 1, [b"b", b"c"])
    recs = poll(core, pump)
    assert len(recs) == 3
    with pytest.raises(LocalProtocolError, match="not acknowledged"):
        core.poll_records(now=pump.now)
    core.acknowledge(recs[0], AcknowledgeType.ACCEPT, now=pump.now)
    core.acknowledge(recs[1], AcknowledgeType.RELEASE, now=pump.now)
    core.acknowledge(recs[2], AcknowledgeType.REJECT, now=pump.now)
    with pytest.raises(LocalProtocolError, match="already acknowledged"):
        core.acknowledge(recs[2], AcknowledgeType.REJECT, now=pump.now)
    op = core.commit(now=pump.now)
    pump.run(until=lambda: op.done)
    assert op.result() == {TP0: None, TP1: None}
    logs = kafka.logs
    assert [logs[("t", 0)][0].state, logs[("t", 1)][1].state] == [St.ACKNOWLEDGED, St.ARCHIVED]
    again = poll(core, pump)  # the released record comes back, counted twice
    assert [(r.partition, r.offset, r.delivery_count) for r in again] == [(1, 0, 2)]


def test_commit_with_nothing_to_send_is_done_at_once() -> None:
    core, pump, _ = boot_share(1)
    op = core.commit(now=pump.now)
    assert op.done and op.result() == {}


def test_commit_times_out_when_no_answer_comes() -> None:
    core, pump, kafka = boot_share(1, default_api_timeout_ms=1000)
    kafka.produce("t", 0, [b"a"])
    poll(core, pump)
    for broker in pump.brokers.values():
        broker.hold = True
    op = core.commit(now=pump.now)
    pump.run(until=lambda: op.done, rounds=500)
    assert isinstance(op.error, KafkaTimeoutError)


def test_acknowledgement_errors_reach_the_event_and_the_commit() -> None:
    core, pump, kafka = boot_share(1)
    kafka.produce("t", 0, [b"a"])
    poll(core, pump)
    kafka.ack_error = ErrorCode.INVALID_RECORD_STATE
    op = core.commit(now=pump.now)
    pump.run(until=lambda: op.done)
    assert type(op.result()[TP0]).__name__ == "InvalidRecordStateError"
    assert acked(pump)[-1].error is not None


def test_a_lost_session_fails_its_acknowledgements_and_starts_over() -> None:
    core, pump, kafka = boot_share(1, acknowledgement_mode="explicit")
    kafka.produce("t", 0, [b"a"])
    (rec,) = poll(core, pump)
    kafka.sessions.clear()  # the broker forgot the session
    core.acknowledge(rec, AcknowledgeType.ACCEPT, now=pump.now)
    pump.run(rounds=30)
    assert isinstance(acked(pump)[-1].error, ShareSessionLost)
    assert any(r.share_session_epoch == 0 for r in fetch_requests(pump)[1:])
    assert kafka.violations == []


def test_records_whose_lock_ran_out_are_not_handed_out() -> None:
    core, pump, kafka = boot_share(1, lock_ms=5000)
    kafka.produce("t", 0, [b"a"])
    core.poll_records(0, now=pump.now)
    pump.run(rounds=30)
    assert core.has_buffered()
    pump.now += 6.0
    assert core.poll_records(now=pump.now) == []
    assert core.lock_duration_ms == 5000


def test_acknowledging_after_the_lock_settles_locally() -> None:
    core, pump, kafka = boot_share(1, lock_ms=5000, acknowledgement_mode="explicit")
    kafka.produce("t", 0, [b"a"])
    (rec,) = poll(core, pump)
    pump.now += 6.0
    core.acknowledge(rec, AcknowledgeType.ACCEPT, now=pump.now)
    pump.run(rounds=30)
    assert isinstance(acked(pump)[-1].error, AcquisitionLockTimedOut)
    assert kafka.violations == []


def test_close_sends_final_acknowledgements_and_leaves() -> None:
    core, pump, kafka = boot_share(2)
    kafka.produce("t", 0, [b"a"])
    poll(core, pump)
    op = core.close(now=pump.now)
    assert core.close(now=pump.now) is op
    pump.run(until=lambda: op.done)
    finals = [r for r in fetch_requests(pump, 79) if r.share_session_epoch == -1]
    assert finals and kafka.accepted == {("t", 0, 0): 1}
    beats = fetch_requests(pump, 76)
    assert beats[-1].member_epoch == -1 and core.closed
    with pytest.raises(LocalProtocolError, match="closed"):
        core.poll_records(now=pump.now)
    core.shutdown(now=pump.now)


def test_subscribe_checks_its_arguments() -> None:
    core, _pump, _ = boot_share(1)
    with pytest.raises(LocalProtocolError, match="not one str"):
        core.subscribe("t", now=0.0)
    with pytest.raises(LocalProtocolError, match="at least one topic"):
        core.subscribe([], now=0.0)
    with pytest.raises(TypeError, match="ShareRecord"):
        core.acknowledge(object(), now=0.0)  # type: ignore[arg-type]
    assert core.subscription() == {"t"}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("group_id", "", "non-empty"),
        ("acknowledgement_mode", "auto", "not one of"),
        ("max_poll_records", 0, "more than 0"),
        ("fetch_max_wait_ms", -1, "0 or more"),
        ("retry_backoff_ms", True, "expected an int"),
    ],
)
def test_config_validation(field: str, value: Any, message: str) -> None:
    kwargs: dict[str, Any] = {"group_id": "g", field: value}
    with pytest.raises(LocalProtocolError, match=message):
        ShareConsumerConfig(**kwargs)


def test_a_fatal_heartbeat_fails_the_member_and_poll_raises() -> None:
    core, pump, _kafka = boot_share(1)

    def refuse(broker: Any, body: Any, version: int, session: Any) -> Any:
        return m.ShareGroupHeartbeatResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)

    for broker in pump.brokers.values():
        broker.handlers[76] = refuse
    pump.now += 2.0
    core.handle_timeout(now=pump.now)
    pump.run(rounds=30)
    with pytest.raises(Exception, match="cannot continue"):
        core.poll_records(now=pump.now)

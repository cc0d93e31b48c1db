"""ConsumerCore without sockets: the fake broker of tests/client/fakebroker.py
plus consumer handlers (tests/consumer/fake.py), time jumped, never slept."""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.client.events import ConnectionStateChanged
from kafkacore.client.metadata import TopicPartition
from kafkacore.consumer import (
    CommitFailedError,
    ConsumerRecord,
    FetchState,
    LogTruncationError,
    NoOffsetForPartitionError,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    OperationCompleted,
    PartitionsAssigned,
    PartitionsRevoking,
    TruncationDetected,
)
from kafkacore.errors import KafkaTimeoutError, LocalProtocolError
from kafkacore.records import Compression, ControlRecordType, RecordBatchBuilder, control_batch
from tests.client.fakebroker import Topic
from tests.consumer.fake import boot_consumer

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)


def drain(core: Any, pump: Any, want: int, *, rounds: int = 400) -> list[ConsumerRecord]:
    got: list[ConsumerRecord] = []

    def done() -> bool:
        got.extend(core.poll_records(now=pump.now))
        pump.drain()
        return len(got) >= want

    pump.run(until=done, rounds=rounds)
    return got


def op_result(core: Any, pump: Any, handle: Any, rounds: int = 400) -> Any:
    pump.run(until=lambda: handle.done, rounds=rounds)
    return handle.result()


def test_assign_earliest_reads_everything_in_order_with_headers() -> None:
    core, pump, kafka, _ = boot_consumer(auto_offset_reset="earliest")
    b = RecordBatchBuilder(compression=Compression.LZ4)
    for i in range(5):
        b.append(b"v%d" % i, b"k", timestamp=1000 + i, headers=[("h", b"x%d" % i)])
    kafka.log("t", 0).append_raw(b.build(), 5)
    kafka.log("t", 1).append([b"a", b"b"])
    core.assign([T0, T1], now=pump.now)
    got = drain(core, pump, 7)
    by_tp = {tp: [r for r in got if (r.topic, r.partition) == tp] for tp in (T0, T1)}
    assert [r.offset for r in by_tp[T0]] == list(range(5))
    assert by_tp[T0][3].headers == (("h", b"x3"),) and by_tp[T0][0].key == b"k"
    assert [r.value for r in by_tp[T1]] == [b"a", b"b"]
    assert core.position(T0) == 5 and core.position(T1) == 2
    assert core.lag(T0) == 0


def test_latest_starts_at_the_end_and_none_raises_until_seek() -> None:
    core, pump, kafka, _ = boot_consumer(auto_offset_reset="latest")
    kafka.log("t", 0).append([b"old"] * 3)
    core.assign([T0], now=pump.now)
    pump.run(until=lambda: core.position(T0) is not None)
    assert core.position(T0) == 3

    core2, pump2, kafka2, _ = boot_consumer(auto_offset_reset="none")
    kafka2.log("t", 0).append([b"x"] * 3)
    core2.assign([T0], now=pump2.now)
    pump2.run(until=lambda: bool(core2._subs.awaiting_seek()))
    with pytest.raises(NoOffsetForPartitionError, match="auto_offset_reset is 'none'"):
        core2.poll_records(now=pump2.now)
    core2.seek(T0, 1, now=pump2.now)
    assert [r.value for r in drain(core2, pump2, 2)] == [b"x", b"x"]


def test_no_reset_policy_raises_on_every_poll_until_seek() -> None:
    # Issue 21: raised once, the next polls returned nothing and aiokafka's
    # getone() waited for ever. Java's poll raises on every call instead.
    core, pump, kafka, _ = boot_consumer(auto_offset_reset="none")
    kafka.log("t", 0).append([b"x"] * 3)
    kafka.log("t", 1).append([b"y"])
    core.assign([T0, T1], now=pump.now)
    pump.run(until=lambda: len(core._subs.awaiting_seek()) == 2)
    for _ in range(3):
        with pytest.raises(NoOffsetForPartitionError, match="auto_offset_reset is 'none'"):
            core.poll_records(now=pump.now)
        pump.drain()
    core.seek(T0, 2, now=pump.now)
    with pytest.raises(
        NoOffsetForPartitionError, match=r"t-1 \(no committed offset\): no position"
    ) as raised:
        core.poll_records(now=pump.now)
    assert "t-0" not in str(raised.value)
    core.seek(T1, 0, now=pump.now)
    assert sorted(r.value for r in drain(core, pump, 2)) == [b"x", b"y"]


def test_seek_after_assign_before_the_first_poll_needs_no_reset_policy() -> None:
    # Java's assign -> seek -> poll with auto_offset_reset="none": the poll
    # must not raise NoOffsetForPartitionError for a partition that now has
    # a position (the Spark source's executor does exactly this).
    core, pump, kafka, _ = boot_consumer(auto_offset_reset="none")
    kafka.log("t", 0).append([b"a", b"b", b"c"])
    core.assign([T0], now=pump.now)
    pump.run(until=lambda: bool(core._subs.awaiting_seek()))
    core.seek(T0, 1, now=pump.now)
    assert [r.value for r in drain(core, pump, 2)] == [b"b", b"c"]


def test_fetch_session_goes_incremental_and_forgets_paused_partitions() -> None:
    core, pump, kafka, _ = boot_consumer(auto_offset_reset="earliest")
    kafka.log("t", 0).append([b"a"])
    kafka.log("t", 1).append([b"b"])
    core.assign([T0, T1], now=pump.now)
    drain(core, pump, 2)
    first = kafka.fetches[0]
    assert first.session_id == 0 and first.session_epoch == 0
    assert {p.partition for t in first.topics for p in t.partitions} == {0, 1}
    later = [f for f in kafka.fetches if f.session_id != 0]
    assert later, "no incremental fetch after the session was created"
    assert [f.session_epoch for f in later] == list(range(1, len(later) + 1))
    core.pause([T1], now=pump.now)
    n = len(kafka.fetches)
    pump.run(until=lambda: len(kafka.fetches) > n + 1)
    forgot = [p for f in kafka.fetches[n:] for t in f.forgotten_topics_data for p in t.partitions]
    sent = {p.partition for f in kafka.fetches[n + 1 :] for t in f.topics for p in t.partitions}
    assert 1 in forgot and 1 not in sent
    core.resume([T1], now=pump.now)
    kafka.log("t", 1).append([b"c"])
    assert [r.value for r in drain(core, pump, 1)] == [b"c"]


def test_session_error_falls_back_to_a_full_fetch() -> None:
    core, pump, kafka, _ = boot_consumer(auto_offset_reset="earliest")
    kafka.log("t", 0).append([b"a"])
    core.assign([T0], now=pump.now)
    drain(core, pump, 1)
    kafka.drop_sessions = True
    n = len(kafka.fetches)
    kafka.log("t", 0).append([b"b"])
    assert [r.value for r in drain(core, pump, 1)] == [b"b"]
    after = kafka.fetches[n:]
    assert any(f.session_id == 0 and f.session_epoch == 0 for f in after[1:])


def test_read_committed_hides_aborted_transactions_and_markers() -> None:
    core, pump, kafka, _ = boot_consumer(
        auto_offset_reset="earliest", isolation_level="read_committed"
    )
    log = kafka.log("t", 0)
    log.append([b"plain-0"])  # offset 0
    first_aborted = log.append(
        [b"aborted-1", b"aborted-2"],
        producer_id=7,
        producer_epoch=0,
        base_sequence=0,
        transactional=True,
    )
    log.append(
        [b"committed-3"], producer_id=8, producer_epoch=0, base_sequence=0, transactional=True
    )
    log.append_raw(
        control_batch(
            ControlRecordType.ABORT,
            producer_id=7,
            producer_epoch=0,
            base_offset=log.end,
            timestamp=5,
        ),
        1,
    )
    log.append_raw(
        control_batch(
            ControlRecordType.COMMIT,
            producer_id=8,
            producer_epoch=0,
            base_offset=log.end,
            timestamp=5,
        ),
        1,
    )
    log.append([b"plain-6"])
    log.aborted = [(7, first_aborted)]
    core.assign([T0], now=pump.now)
    got = drain(core, pump, 3)
    assert [r.value for r in got] == [b"plain-0", b"committed-3", b"plain-6"]
    assert core.position(T0) == 7

    core2, pump2, kafka2, _ = boot_consumer(auto_offset_reset="earliest")
    kafka2.logs = kafka.logs
    core2.assign([T0], now=pump2.now)
    got2 = drain(core2, pump2, 5)
    assert [r.value for r in got2][:4] == [b"plain-0", b"aborted-1", b"aborted-2", b"committed-3"]
    assert all(r.value is not None for r in got2)  # control records never surface


def test_leader_epoch_rise_validates_and_detects_truncation() -> None:
    core, pump, kafka, cluster = boot_consumer(auto_offset_reset="earliest")
    log = kafka.log("t", 0)
    log.epoch = 1
    log.append([b"x"] * 10)
    cluster.topics["t"].epoch = 1
    core.assign([T0], now=pump.now)
    drain(core, pump, 10)
    assert core.position(T0) == 10 and core.partition_state(T0).position_epoch == 1
    # A new leader (epoch 2) whose log for epoch 1 ends at 7: KIP-320 truncation.
    cluster.topics["t"].epoch = 2
    kafka.epoch_end[T0] = (1, 7)
    core.client.request_metadata_update(now=pump.now)
    pump.run(until=lambda: any(isinstance(e, TruncationDetected) for e in pump.events))
    event = next(e for e in pump.events if isinstance(e, TruncationDetected))
    assert (event.old_position, event.offset) == (10, 7)
    assert core.position(T0) == 7
    asked = [b for b in kafka.fetches]  # fetches continue from the new position
    assert asked


def test_truncation_with_reset_none_raises_log_truncation() -> None:
    core, pump, kafka, _cluster = boot_consumer(auto_offset_reset="none", group_id="g")
    log = kafka.log("t", 0)
    log.epoch = 1
    log.append([b"x"] * 10)
    kafka.committed[T0] = (10, "")
    core.assign([T0], now=pump.now)
    pump.run(until=lambda: core.position(T0) == 10)
    kafka.diverging[T0] = (0, 4)  # Fetch v12+: the broker says our epoch ended at 4
    pump.run(until=lambda: core._errors.pending is not None)
    with pytest.raises(LogTruncationError) as info:
        core.poll_records(now=pump.now)
    assert info.value.divergent == {T0: 4}


def test_assignment_fetches_committed_offsets_first() -> None:
    core, pump, kafka, _ = boot_consumer(group_id="g", auto_offset_reset="earliest")
    kafka.log("t", 0).append([b"x%d" % i for i in range(6)])
    kafka.committed[T0] = (4, "meta")
    core.assign([T0], now=pump.now)
    assert core.partition_state(T0).state is FetchState.INITIALIZING
    got = drain(core, pump, 2)
    assert [r.offset for r in got] == [4, 5]


def test_commit_retries_with_blank_metadata_when_too_large() -> None:
    core, pump, kafka, _ = boot_consumer(group_id="g")
    core.assign([T0], now=pump.now)
    kafka.commit_errors = [{T0: 12}]  # OFFSET_METADATA_TOO_LARGE
    handle = core.commit({T0: OffsetAndMetadata(3, "m" * 5000)}, now=pump.now)
    result = op_result(core, pump, handle)
    assert result[T0].offset == 3 and result[T0].metadata == ""
    metas = [p.committed_metadata for c in kafka.commits for t in c.topics for p in t.partitions]
    assert metas == ["m" * 5000, ""]
    assert kafka.committed[T0] == (3, "")
    committed = op_result(core, pump, core.committed([T0], now=pump.now))
    assert committed == {T0: OffsetAndMetadata(3, "", None)}


def test_commit_fenced_by_a_rebalance_is_commit_failed() -> None:
    core, pump, kafka, _ = boot_consumer(group_id="g")
    core.assign([T0], now=pump.now)
    kafka.commit_errors = [{T0: 22}]  # ILLEGAL_GENERATION
    handle = core.commit({T0: 1}, now=pump.now)
    with pytest.raises(CommitFailedError, match="rebalanced"):
        op_result(core, pump, handle)


def test_commit_retries_coordinator_moves_until_the_deadline() -> None:
    core, pump, kafka, _ = boot_consumer(group_id="g", default_api_timeout_ms=2000)
    core.assign([T0], now=pump.now)
    core.pause([T0], now=pump.now)  # no fetches: the fake broker does not long-poll
    kafka.commit_errors = [{T0: 16}] * 1000  # NOT_COORDINATOR for ever
    handle = core.commit({T0: 1}, now=pump.now)
    with pytest.raises(BaseException) as info:
        op_result(core, pump, handle, rounds=2000)
    assert "NOT_COORDINATOR" in str(info.value) or isinstance(info.value, KafkaTimeoutError)
    assert pump.now >= 1.8  # it kept retrying until the next try would pass the deadline


def test_coordinator_found_by_asking_brokers_until_one_answers() -> None:
    core, pump, kafka, cluster = boot_consumer(group_id="g", n=3)
    # Two brokers are down; the FindCoordinator lookup moves on to the third.
    down = [addr for addr, b in pump.brokers.items() if b.node_id in (0, 1)]
    pump.refuse.update(down)
    core.client.close(now=pump.now)
    cluster.coordinators[(0, "g")] = 2
    kafka.committed[T0] = (9, "")
    handle = core.committed([T0], now=pump.now)
    assert op_result(core, pump, handle, rounds=3000) == {T0: OffsetAndMetadata(9, "", None)}


def test_prefetch_is_bounded_by_fetch_buffer_bytes() -> None:
    core, pump, kafka, _ = boot_consumer(auto_offset_reset="earliest", fetch_buffer_bytes=1)
    kafka.log("t", 0).append([b"x" * 100] * 10)
    kafka.log("t", 1).append([b"y" * 100] * 10)
    core.assign([T0, T1], now=pump.now)
    pump.run(until=lambda: core.buffered_bytes > 0)
    for _ in range(20):
        pump.step()
    assert len(kafka.fetches) == 1, "fetched again while the buffer was over its bound"
    assert len(drain(core, pump, 20)) == 20


def test_offsets_for_times_and_end_and_beginning_offsets() -> None:
    core, pump, kafka, _ = boot_consumer()
    kafka.log("t", 0).append([b"x"] * 8)
    core.assign([T0], now=pump.now)
    assert op_result(core, pump, core.end_offsets([T0], now=pump.now)) == {T0: 8}
    assert op_result(core, pump, core.beginning_offsets([T0], now=pump.now)) == {T0: 0}
    found = op_result(core, pump, core.offsets_for_times({T0: 1003}, now=pump.now))
    assert found == {T0: OffsetAndTimestamp(3, -1, 0)} and found[T0].offset == 3
    with pytest.raises(ValueError, match="must be an int >= 0"):  # kafka-python's ValueError
        core.offsets_for_times({T0: -5}, now=pump.now)


def test_seek_and_seek_to_beginning_end() -> None:
    core, pump, kafka, _ = boot_consumer(auto_offset_reset="earliest")
    kafka.log("t", 0).append([b"x%d" % i for i in range(5)])
    core.assign([T0], now=pump.now)
    drain(core, pump, 5)
    core.seek(T0, 2, now=pump.now)
    assert [r.offset for r in drain(core, pump, 3)] == [2, 3, 4]
    core.seek_to_beginning([T0], now=pump.now)
    assert drain(core, pump, 5)[0].offset == 0
    core.seek_to_end([T0], now=pump.now)
    pump.run(until=lambda: core.position(T0) == 5)
    with pytest.raises(LocalProtocolError, match="not assigned"):
        core.seek(T1, 0, now=pump.now)
    with pytest.raises(LocalProtocolError, match="must be an int"):
        core.seek(T0, -1, now=pump.now)


def test_poll_batches_gives_columns_per_partition() -> None:
    core, pump, kafka, _ = boot_consumer(auto_offset_reset="earliest")
    kafka.log("t", 0).append([b"v%d" % i for i in range(4)])
    core.assign([T0], now=pump.now)
    batches: list[Any] = []

    def more() -> bool:
        batches.extend(core.poll_batches(now=pump.now))
        return bool(batches)

    pump.run(until=more)
    assert list(batches[0].offsets) == [0, 1, 2, 3] and batches[0].values[2] == b"v2"


def test_subscribe_joins_the_group_and_close_commits_and_leaves() -> None:
    core, pump, kafka, _ = boot_consumer(group_id="g", auto_offset_reset="earliest")
    kafka.log("t", 0).append([b"a", b"b"])
    core.subscribe(["t"], now=pump.now)
    got = drain(core, pump, 2)
    assert {e.partitions for e in pump.events if isinstance(e, PartitionsAssigned)} == {
        frozenset({T0, T1})
    }
    assert len(got) == 2
    handle = core.close(now=pump.now)
    pump.run(until=lambda: handle.done)
    assert handle.error is None
    assert kafka.committed[T0] == (2, "")
    assert not kafka.coord.members, "the member did not leave the group"


def test_autocommit_commits_before_handing_out_more() -> None:
    core, pump, kafka, _ = boot_consumer(
        group_id="g", auto_offset_reset="earliest", auto_commit_interval_ms=1000
    )
    kafka.log("t", 0).append([b"a", b"b"])
    core.assign([T0], now=pump.now)
    drain(core, pump, 2)
    pump.now += 1.5
    core.poll_records(now=pump.now)  # seed 003: commit first when due
    pump.run(until=lambda: T0 in kafka.committed)
    assert kafka.committed[T0] == (2, "")


def test_close_is_bounded_when_the_coordinator_never_answers() -> None:
    core, pump, kafka, _ = boot_consumer(group_id="g", default_api_timeout_ms=3000)
    core.assign([T0], now=pump.now)
    kafka.log("t", 0).append([b"a"])
    kafka.commit_errors = [{T0: 15}] * 10000  # COORDINATOR_NOT_AVAILABLE
    core.seek(T0, 1, now=pump.now)
    core.pause([T0], now=pump.now)  # no fetches: the fake broker does not long-poll
    handle = core.close(now=pump.now)
    pump.run(until=lambda: handle.done, rounds=5000)
    assert pump.now <= 3.5
    assert any(isinstance(e, OperationCompleted) and e.handle is handle for e in pump.events)


def test_bad_calls_get_clear_errors() -> None:
    core, pump, _, _ = boot_consumer()
    with pytest.raises(LocalProtocolError, match="needs a group_id"):
        core.commit(now=pump.now)
    with pytest.raises(LocalProtocolError, match="is invalid"):
        core.subscribe(pattern="(", now=pump.now)
    core2, pump2, _, _ = boot_consumer(group_id="g")
    with pytest.raises(LocalProtocolError, match="not both"):
        core2.subscribe(["t"], pattern="t.*", now=pump2.now)
    core2.assign([T0], now=pump2.now)
    with pytest.raises(LocalProtocolError, match="unsubscribe"):
        core2.subscribe(["t"], now=pump2.now)


def test_groupless_subscription_assigns_every_partition_it_can_see() -> None:
    # kafka-python's and aiokafka's subscribe() without a group_id (issue 21).
    core, pump, _kafka, _ = boot_consumer([Topic("t", 2), Topic("u", 1)])
    core.subscribe(["t", "gone"], now=pump.now)
    pump.run(until=lambda: len(core.assignment()) == 2, rounds=1000)
    assert core.assignment() == {T0, T1} and core.subscription() == {"t", "gone"}
    core.subscribe(pattern="u", now=pump.now)  # re.match: names starting with "u"
    pump.run(until=lambda: core.assignment() == {TopicPartition("u", 0)}, rounds=1000)
    core.unsubscribe(now=pump.now)
    assert core.assignment() == frozenset()


def test_pattern_subscription_matches_listed_topics() -> None:
    core, pump, _kafka, _ = boot_consumer(
        [Topic("orders-a", 1), Topic("orders-b", 1), Topic("other", 1)], group_id="g"
    )
    core.subscribe(pattern=r"orders-.*", now=pump.now)
    pump.run(until=lambda: len(core.assignment()) == 2, rounds=1000)
    assert core.subscription() == frozenset({"orders-a", "orders-b"})


def test_fetch_carries_the_configured_limits_and_uses_its_own_lane() -> None:
    # Seed 003 max_wait_time/min_bytes/max_bytes; seed 002 several connections
    # to one broker so group traffic and fetches interleave.
    core, pump, kafka, _ = boot_consumer(
        group_id="g",
        auto_offset_reset="earliest",
        fetch_max_wait_ms=250,
        fetch_min_bytes=7,
        fetch_max_bytes=123456,
        max_partition_fetch_bytes=4567,
        isolation_level="read_committed",
    )
    kafka.log("t", 0).append([b"a"])
    core.subscribe(["t"], now=pump.now)
    drain(core, pump, 1)
    f = kafka.fetches[0]
    assert (f.max_wait_ms, f.min_bytes, f.max_bytes, f.isolation_level) == (250, 7, 123456, 1)
    assert {p.partition_max_bytes for t in f.topics for p in t.partitions} == {4567}
    lanes = {e.lane for e in pump.events if isinstance(e, ConnectionStateChanged)}
    assert {"fetch", "group"} <= lanes


def test_unsubscribe_commits_under_the_current_generation_then_leaves() -> None:
    core, pump, kafka, _ = boot_consumer(group_id="g", auto_offset_reset="earliest")
    kafka.log("t", 0).append([b"a", b"b", b"c"])
    core.subscribe(["t"], now=pump.now)
    drain(core, pump, 3)
    core.unsubscribe(now=pump.now)
    pump.run(until=lambda: not kafka.coord.members)
    assert kafka.committed[T0] == (3, "")
    assert kafka.commits[-1].generation_id_or_member_epoch == kafka.coord.generation >= 1
    assert core.assignment() == frozenset()
    core.subscribe(["t"], now=pump.now)  # a new membership after the old one ended
    pump.run(until=lambda: len(core.assignment()) == 2)


def test_revocation_waits_for_the_listener_when_asked() -> None:
    core, pump, kafka, _ = boot_consumer([Topic("t", 2), Topic("u", 1)], group_id="g")
    core.await_revocation_ack = True
    core.subscribe(["t"], now=pump.now)
    pump.run(until=lambda: len(core.assignment()) == 2)
    generation = kafka.coord.generation
    core.subscribe(["u"], now=pump.now)  # eager: everything is revoked before rejoining
    pump.run(until=lambda: any(isinstance(e, PartitionsRevoking) for e in pump.events))
    revoking = next(e for e in pump.events if isinstance(e, PartitionsRevoking))
    assert revoking.partitions == frozenset({T0, T1})
    for _ in range(20):
        pump.step()
    # Still ours, and no new join round, until the listener is done.
    assert core.assignment() == frozenset({T0, T1})
    assert kafka.coord.generation == generation
    core.revocation_done(revoking.token, now=pump.now)
    pump.run(until=lambda: core.assignment() == frozenset({TopicPartition("u", 0)}))

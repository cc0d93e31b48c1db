"""The ConsumerCore facade on the fake broker: its own checks (misuse,
closed), the queries it answers from its parts, shutdown, and how the one
step loop of StackedMachine drives the parts (timers due in any step)."""

from __future__ import annotations

import pytest

from kafkacore.client.metadata import TopicPartition
from kafkacore.client.routing import AnyNode
from kafkacore.consumer import OffsetAndMetadata, OperationCompleted
from kafkacore.errors import AuthenticationError, KafkaTimeoutError, LocalProtocolError
from kafkacore.group.kip848 import Kip848Member
from kafkacore.protocol import messages as m
from tests.consumer.fake import boot_consumer

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)


def test_misuse_is_named() -> None:
    core, pump, _, _ = boot_consumer()
    with pytest.raises(LocalProtocolError, match="group_metadata: this consumer has no group_id"):
        core.group_metadata()
    with pytest.raises(LocalProtocolError, match="committed: needs a group_id"):
        core.committed([T0], now=pump.now)
    grouped, pump2, _, _ = boot_consumer(group_id="g")
    with pytest.raises(LocalProtocolError, match="topics must be a list of names"):
        grouped.subscribe("t", now=pump2.now)  # type: ignore[arg-type]
    with pytest.raises(LocalProtocolError, match="pattern '\\(' is invalid"):
        grouped.subscribe(pattern="(", now=pump2.now)
    grouped.subscribe(["t"], now=pump2.now)
    with pytest.raises(LocalProtocolError, match="assign: the consumer is subscribed"):
        grouped.assign([T0], now=pump2.now)


def test_queries_answered_from_the_parts() -> None:
    core, pump, kafka, _ = boot_consumer(group_id="g", auto_offset_reset="earliest")
    assert core.member is None and not core.await_revocation_ack
    core.await_revocation_ack = True
    assert core.await_revocation_ack
    metadata = core.group_metadata()
    assert (metadata.group_id, metadata.generation_id, metadata.member_id) == ("g", -1, "")
    kafka.log("t", 0).append([b"a"])
    core.assign([T0, T1], now=pump.now)
    assert not core.positions_known([T0, T1])
    pump.run(until=lambda: core.positions_known([T0, T1]))
    assert core.subscription() == frozenset() and core.paused() == frozenset()
    assert core.stall_cause() is None and core.hopeless_cause() is None
    assert core.missing_topics() == frozenset()


def test_a_kip848_pattern_goes_to_the_broker() -> None:
    core, pump, _, _ = boot_consumer(group_id="g", group_protocol="consumer")
    core.subscribe(pattern="t.*", now=pump.now)
    member = core.member
    assert isinstance(member, Kip848Member) and member.pattern == "t.*"
    assert core.subscription() == frozenset()


def test_unsubscribe_of_an_assignment_just_drops_it() -> None:
    core, pump, _, _ = boot_consumer(group_id="g")
    core.assign([T0], now=pump.now)
    core.unsubscribe(now=pump.now)
    assert core.assignment() == frozenset() and core.member is None
    core.subscribe(["t"], now=pump.now)  # allowed again


def test_refused_credentials_on_an_answer_fail_what_waits_and_poll_raises() -> None:
    core, pump, _, _ = boot_consumer(group_id="g")
    core.assign([T0], now=pump.now)
    core.pause([T0], now=pump.now)
    handle = core.end_offsets([T0], now=pump.now)
    answers: list[object] = []
    core._send(
        m.MetadataRequest(topics=[]),
        lambda resp, err, t: answers.append(err),
        now=pump.now,
        target=AnyNode(),
    )
    request_id = max(core._responses)
    refused = AuthenticationError("SASL: bad password")
    # What the step loop does with the answer: the answer hook, then the callback.
    core._on_answer(refused, pump.now)
    core._responses.pop(request_id)(None, refused, pump.now)
    assert answers == [refused] and handle.error is refused
    assert core.hopeless_cause() is refused
    with pytest.raises(AuthenticationError):
        core.poll_records(now=pump.now)


def test_close_without_commit_is_bounded_and_shutdown_closes_for_good() -> None:
    core, pump, _, _ = boot_consumer(group_id="g", default_api_timeout_ms=1000)
    core.assign([T0], now=pump.now)
    core.pause([T0], now=pump.now)
    handle = core.close(now=pump.now, autocommit=False)
    pump.run(until=lambda: handle.done)
    assert handle.error is None  # no member: nothing to leave
    core.shutdown(now=pump.now)
    assert len(core.deadlines) == 0 and list(core._sub_deadlines()) == []  # no timer of ours
    again = core.close(now=pump.now)
    assert again.done and again.error is None
    assert OperationCompleted(handle=again) in core.pull_events()
    for call in (
        lambda: core.poll_records(now=pump.now),
        lambda: core.commit(now=pump.now),
        lambda: core.assign([T0], now=pump.now),
    ):
        with pytest.raises(LocalProtocolError, match="the consumer is closed; make a new one"):
            call()
    core.handle_timeout(now=pump.now + 100)  # nothing runs any more
    assert core.pull_events() == []


def test_close_gives_up_waiting_for_the_group_at_the_api_timeout() -> None:
    core, pump, _, _ = boot_consumer(group_id="g", default_api_timeout_ms=1000)
    core.subscribe(["t"], now=pump.now)
    pump.run(until=lambda: len(core.assignment()) == 2)
    for broker in pump.brokers.values():
        broker.hold = True  # the group never answers the LeaveGroup
    handle = core.close(now=pump.now, autocommit=False)
    start = pump.now
    pump.run(until=lambda: handle.done, rounds=2000)
    assert isinstance(handle.error, KafkaTimeoutError) and "closed anyway" in str(handle.error)
    assert pump.now - start == pytest.approx(1.0)


def test_a_retry_due_now_runs_in_a_busy_step() -> None:
    # The fake broker answers fetches at once, so the pump never idles: a
    # retry due "now" must run inside the steps, not wait for handle_timeout.
    core, pump, kafka, _ = boot_consumer(group_id="g", auto_offset_reset="earliest")
    core.assign([T0], now=pump.now)
    warm = core.commit({T0: 0}, now=pump.now)  # the coordinator is found and connected
    pump.run(until=lambda: warm.done and core.position(T0) is not None)
    kafka.commit_errors = [{T0: 12}]  # OFFSET_METADATA_TOO_LARGE: retried at once
    handle = core.commit({T0: OffsetAndMetadata(1, "m" * 100)}, now=pump.now)
    start = pump.now
    pump.run(until=lambda: handle.done, jump=False, rounds=100)
    assert handle.result()[T0].metadata == "" and pump.now == start


def test_work_cancelled_by_shutdown_stays_cancelled() -> None:
    core, pump, kafka, _ = boot_consumer(group_id="g")
    core.assign([T0], now=pump.now)
    core.pause([T0], now=pump.now)
    warm = core.commit({T0: 0}, now=pump.now)
    pump.run(until=lambda: warm.done)
    for broker in pump.brokers.values():
        broker.hold = True
    core.commit({T0: 1}, now=pump.now)
    pump.drain()
    core.shutdown(now=pump.now)  # the commit's request is cancelled: it would retry
    sent = len(kafka.commits)
    core.handle_timeout(now=pump.now + 1.0)
    core.handle_timeout(now=pump.now + 100.0)
    pump.drain()
    assert len(kafka.commits) == sent  # no retry went out


def test_refused_credentials_after_shutdown_change_nothing() -> None:
    core, pump, _, _ = boot_consumer(group_id="g")
    core.shutdown(now=pump.now)
    core._refused(AuthenticationError("late"), pump.now)
    assert core._errors.pending is None


def test_metadata_that_lacks_a_tracked_topic_is_asked_again() -> None:
    core, pump, _, _ = boot_consumer()
    asked: list[float] = []
    core.client.set_topics({"t", "not-described-yet"}, now=pump.now)
    core.client.request_metadata_update = lambda *, now: asked.append(now)  # type: ignore[method-assign]
    core._on_metadata(pump.now)
    assert asked == [pump.now]

"""OperationTable and PollErrors alone: operations complete once and are
announced (internal ones run their continuations instead), callbacks due
later live in the deadlines, retries stop at the deadline or at once when
waiting cannot help; the poll error slot keeps or replaces."""

from __future__ import annotations

import pytest

from kafkacore.consumer.operations import Later
from kafkacore.consumer.poll_errors import PollErrors
from kafkacore.errors import (
    AuthenticationError,
    KafkaConnectionError,
    KafkaTimeoutError,
    LocalProtocolError,
    NoBrokersAvailable,
)
from kafkacore.operation import OperationCompleted
from tests.consumer.units import world


def test_an_operation_completes_once_and_is_announced() -> None:
    w = world()
    op = w.ops.new("commit", 0.0)
    w.ops.complete(op, {"x": 1}, None, 1.0)
    w.ops.complete(op, None, RuntimeError("late"), 2.0)  # ignored
    assert op.result() == {"x": 1}
    assert w.events == [OperationCompleted(handle=op)]


def test_internal_operations_run_their_continuations_instead() -> None:
    w = world()
    op = w.ops.new("auto-commit", 0.0, internal=True)
    ran: list[float] = []
    w.ops.then(op, ran.append)
    w.ops.then(op, lambda t: ran.append(t + 100))
    w.ops.complete(op, None, KafkaConnectionError("x"), 3.0)
    assert ran == [3.0, 103.0] and w.events == []


def test_fail_pending_spares_close() -> None:
    w = world()
    commit, close = w.ops.new("commit", 0.0), w.ops.new("close", 0.0)
    error = AuthenticationError("refused")
    w.ops.fail_pending(error, 1.0)
    assert commit.error is error and not close.done


def test_timeouts_are_checked() -> None:
    w = world(api_timeout_ms=1500)
    assert w.ops.timeout("commit", None) == 1.5
    assert w.ops.timeout("commit", 250) == 0.25
    for bad in (-1, True, 1.5):
        with pytest.raises(LocalProtocolError, match="commit: timeout_ms"):
            w.ops.timeout("commit", bad)  # type: ignore[arg-type]


def test_callbacks_run_once_when_due_and_can_be_cleared() -> None:
    w = world()
    ran: list[float] = []
    w.ops.later(2.0, ran.append)
    assert w.deadlines.get(Later(1)) == 2.0
    w.run_due(1.0)
    assert ran == []
    w.run_due(2.5)
    assert ran == [2.5]
    w.ops.on_deadline(Later(1), 3.0)  # already run: nothing
    assert ran == [2.5]
    w.ops.later(5.0, ran.append)
    w.ops.clear_timers()
    assert len(w.deadlines) == 0
    w.ops.on_deadline(Later(2), 6.0)
    assert ran == [2.5]


def test_retry_waits_the_backoff_then_gives_up_at_the_deadline() -> None:
    w = world(retry_backoff_ms=100)
    op = w.ops.new("commit", 0.0)
    tries: list[float] = []
    w.ops.retry(op, 0.25, 0.0, KafkaConnectionError("x"), tries.append)
    w.run_due(0.1)
    w.ops.retry(op, 0.25, 0.1, KafkaConnectionError("x"), tries.append)
    w.run_due(0.2)
    w.ops.retry(op, 0.25, 0.2, KafkaConnectionError("last"), tries.append)
    assert tries == [0.1, 0.2]
    assert isinstance(op.error, KafkaConnectionError) and str(op.error) == "last"


def test_an_immediate_retry_is_due_at_once() -> None:
    w = world(retry_backoff_ms=100)
    op = w.ops.new("commit", 0.0)
    tries: list[float] = []
    w.ops.retry(op, 1.0, 0.5, KafkaConnectionError("x"), tries.append, immediate=True)
    w.run_due(0.5)
    assert tries == [0.5]


def test_a_retry_for_a_finished_operation_does_nothing() -> None:
    w = world()
    op = w.ops.new("commit", 0.0)
    tries: list[float] = []
    w.ops.retry(op, 1.0, 0.0, KafkaConnectionError("x"), tries.append)
    w.ops.complete(op, {}, None, 0.05)
    w.run_due(0.1)
    assert tries == []


def test_a_timeout_names_the_failure_seen_while_waiting() -> None:
    w = world(retry_backoff_ms=100)
    op = w.ops.new("commit", 1.0)
    refused = KafkaConnectionError("connect refused")
    w.causes.answered(refused, 1.05)
    w.ops.retry(op, 1.1, 1.05, KafkaTimeoutError("commit timed out"), lambda t: None)
    assert isinstance(op.error, KafkaTimeoutError) and op.error.__cause__ is refused
    w2 = world()
    failures: list[BaseException] = []
    w2.ops.retry_or_fail(0.0, 0.0, None, lambda t: None, failures.append)
    assert isinstance(failures[0], KafkaTimeoutError) and "deadline passed" in str(failures[0])


def test_refused_credentials_fail_at_once_a_cluster_never_reached_at_the_deadline() -> None:
    w = world()
    failures: list[BaseException] = []
    refused = AuthenticationError("bad password")
    w.ops.retry_or_fail(100.0, 0.0, refused, lambda t: None, failures.append)
    assert failures == [refused]
    never = NoBrokersAvailable("bootstrap failed")
    never.__cause__ = KafkaConnectionError("refused")
    w.client.unreachable = never
    # Before the deadline: retried (a broker may come up, issue 26).
    w.ops.retry_or_fail(100.0, 0.0, KafkaConnectionError("x"), lambda t: None, failures.append)
    assert len(failures) == 1 and len(w.deadlines) == 1
    # At it: said as a cluster never reached, its cause the connection error.
    w.ops.retry_or_fail(100.0, 100.0, KafkaConnectionError("x"), lambda t: None, failures.append)
    w.ops.retry_or_fail(100.0, 100.0, None, lambda t: None, failures.append)
    assert isinstance(failures[1], NoBrokersAvailable) and failures[1].__cause__ is never.__cause__
    assert str(failures[1]).startswith("x: ")
    assert str(failures[2]).startswith("deadline passed: ")
    expired = NoBrokersAvailable("request #3 not sent within 100 ms: bootstrap failed")
    w.ops.retry_or_fail(100.0, 100.0, expired, lambda t: None, failures.append)
    assert failures[3] is expired  # names itself already


def test_poll_errors_keep_the_first_unless_replaced() -> None:
    slot = PollErrors()
    assert slot.pending is None and slot.take() is None
    first, second = RuntimeError("first"), RuntimeError("second")
    slot.note(first)
    slot.note(second)
    assert slot.pending is first
    slot.replace(second)
    assert slot.take() is second and slot.pending is None
    slot.note(first)
    slot.clear()
    assert slot.pending is None

"""The shared Operation handle and the Deadlines timer helper (stacking contract)."""

from __future__ import annotations

import pytest

from kafkacore.errors import LocalProtocolError
from kafkacore.operation import Operation, OperationCompleted
from kafkacore.timers import Deadlines


def test_operation_is_completed_once_and_reports_value_or_error() -> None:
    op: Operation[int] = Operation(7, "commit")
    assert (op.done, op.value, op.error) == (False, None, None)
    with pytest.raises(LocalProtocolError, match=r"#7 commit pending.*wait for its event"):
        op.result()
    op._complete(3, None)
    assert op.done and op.result() == 3 and repr(op) == "<Operation #7 commit done>"
    with pytest.raises(AssertionError, match="completed twice"):
        op._complete(4, None)


def test_failed_operation_raises_its_error_and_the_event_carries_it() -> None:
    op: Operation[None] = Operation(1, "flush")
    boom = RuntimeError("boom")
    op._complete(None, boom)
    with pytest.raises(RuntimeError, match="boom"):
        op.result()
    assert OperationCompleted(handle=op).error is boom
    assert "failed" in repr(op)


def test_deadlines_answer_the_earliest_and_pop_what_is_due_in_order() -> None:
    d: Deadlines[str] = Deadlines()
    assert d.next() is None and d.pop_due(100.0) == []
    d.set("retry", 5.0)
    d.set("commit", 3.0)
    d.set("poll", 9.0)
    assert d.next() == 3.0 and len(d) == 3 and "retry" in d
    d.set_earliest("retry", 7.0)  # later: ignored
    assert d.get("retry") == 5.0
    d.set_earliest("retry", 4.0)
    assert d.get("retry") == 4.0
    assert d.pop_due(4.0) == ["commit", "retry"]
    assert d.next() == 9.0
    d.cancel("poll")
    d.cancel("absent")
    assert d.next() is None and len(d) == 0

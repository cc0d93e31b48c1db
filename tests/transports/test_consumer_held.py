"""HeldRecords, the iterator's lent batch: what it tells the core, and when not at all."""

from __future__ import annotations

from typing import Any

from kafkacore.consumer import ConsumerRecord
from kafkacore.transports._consumer_held import HeldRecords
from kafkacore.transports._consumer_router import ConsumerRouter


class RecordingCore:
    """Records the commands HeldRecords issues."""

    def __init__(self, batch: list[ConsumerRecord]) -> None:
        self.batch = batch
        self.calls: list[tuple[str, Any]] = []

    def poll_records(self, *, now: float, lend: bool) -> list[ConsumerRecord]:
        self.calls.append(("poll_records", lend))
        return self.batch

    def note_consumed(self, progress: Any, *, now: float, everything: bool = False) -> None:
        self.calls.append(("note_consumed", dict(progress)))

    def return_lent(self, *, now: float) -> None:
        self.calls.append(("return_lent", None))


def _record(offset: int) -> ConsumerRecord:
    return ConsumerRecord("t", 0, offset, 0, 0, None, b"v", (), None)


def test_giving_back_nothing_issues_no_command() -> None:
    """Before the first batch (e.g. the subscribe right after construction) the
    core gets no command, so its first step is the subscription's (issue 12)."""
    held = HeldRecords(ConsumerRouter())
    core = RecordingCore([])
    held.give_back(core, 0.0)  # type: ignore[arg-type]
    assert core.calls == []


def test_giving_back_a_lent_batch_reports_progress_then_returns_the_rest() -> None:
    held = HeldRecords(ConsumerRouter())
    core = RecordingCore([_record(0), _record(1), _record(2)])
    held.fill(core, 0.0)  # type: ignore[arg-type]
    assert next(held.records).offset == 0  # one record handed over
    held.give_back(core, 0.0)  # type: ignore[arg-type]
    assert core.calls == [
        ("poll_records", True),
        ("note_consumed", {("t", 0): (1, None)}),
        ("return_lent", None),
    ]
    assert held.batch == [] and len(held) == 0

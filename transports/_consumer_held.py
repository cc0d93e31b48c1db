"""The record-by-record iterator's batch, for every consumer.

Theory of operation
-------------------
:class:`HeldRecords` is the batch behind ``for record in consumer`` (and
``async for``). The iterator takes a batch from the core as a *loan*
(``poll_records(lend=True)``) and hands it over one record at a time; a
record counts as consumed once the iterator has handed it to the user (as
with kafka-python's iterator, and as with Java's ``poll``, which hands a
whole batch at once). So the record being processed when the loop body
breaks or raises is consumed; the ones after it are not: before a commit,
``position``, ``lag`` or ``close`` the consumer tells the core how far the
user got (``note_consumed``), and before anything that moves positions or
hands out records another way (``poll``, ``seek``, ``pause``, ...) it gives
the rest back (``return_lent``), to be fetched and handed out again.
Records of partitions the core took away (revoked, lost, truncated) are
dropped from the batch before the next one is handed over.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from operator import length_hint
from typing import Any

from kafkacore.consumer import ConsumerCore, ConsumerRecord

from ._consumer_router import ConsumerRouter

__all__ = ["HeldRecords"]


class HeldRecords:
    """The iterator's lent batch; see the module docstring.

    ``records`` walks ``batch``: what it has passed was handed over. The
    iterator pulls from it directly (no bookkeeping per record); how far the
    user got per partition is worked out only when the core must know
    (:meth:`progress`), from the records handed over since the last time.
    Touched only from the user's thread (or task), or from a core command
    while that thread waits for it.
    """

    __slots__ = ("_reported", "_router", "batch", "records")

    def __init__(self, router: ConsumerRouter) -> None:
        self._router = router
        self.batch: list[ConsumerRecord] = []
        self.records: Iterator[ConsumerRecord] = iter(self.batch)
        self._reported = 0  # records before this index were reported to the core

    @property
    def handed(self) -> int:
        """How many records of the batch were handed over."""
        return len(self.batch) - length_hint(self.records)

    def __bool__(self) -> bool:
        return length_hint(self.records) > 0

    def __len__(self) -> int:
        return length_hint(self.records)

    def fill(self, core: ConsumerCore, now: float) -> list[ConsumerRecord]:
        """Borrow the next batch (a core command): everything lent before was handed over."""
        self._router.removed.clear()  # earlier removals concern earlier batches
        self._reset(core.poll_records(now=now, lend=True), 0)
        return self.batch

    def unpull(self) -> None:
        """The last record pulled from ``records`` was not handed over after all."""
        self._reset(self.batch, self.handed - 1)

    def drop(self, partitions: set[Any]) -> None:
        """Forget the unhanded records of ``partitions`` (no longer ours, or moved)."""
        handed = self.handed
        rest = [r for r in self.batch[handed:] if (r.topic, r.partition) not in partitions]
        self._reset(self.batch[:handed] + rest, handed)

    def progress(self) -> tuple[dict[Any, tuple[int, int | None]], bool]:
        """How far the user got since the last call, per partition: (next offset,
        leader epoch of the last record handed); and whether that is all."""
        handed = self.handed
        out: dict[Any, tuple[int, int | None]] = {}
        for record in self.batch[self._reported : handed]:
            out[(record.topic, record.partition)] = (record.offset + 1, record.leader_epoch)
        self._reported = handed
        return out, handed >= len(self.batch)

    def sync(self, core: ConsumerCore, now: float) -> None:
        """Core command: commits from now on cover every record handed over."""
        progress, everything = self.progress()
        core.note_consumed(progress, now=now, everything=everything)

    def give_back(self, core: ConsumerCore, now: float) -> None:
        """Core command: the records not handed over go back to the core."""
        if not self.batch:
            return  # nothing was lent: no command for the core (and no step)
        progress, _ = self.progress()
        self._reset([], 0)
        core.note_consumed(progress, now=now)
        core.return_lent(now=now)

    def look(self, run_listener: Callable[[], None]) -> None:
        """The assignment changed: run the listener (Java runs it in poll) and
        drop records of partitions the core took away since the batch came."""
        router = self._router
        router.changed = False  # before draining: a later change sets it again
        if router.notices:
            run_listener()
        gone: set[Any] = set()
        while router.removed:
            gone.update(router.removed.popleft())
        if gone and self:
            self.drop(gone)

    def _reset(self, batch: list[ConsumerRecord], handed: int) -> None:
        self.batch = batch
        self.records = iter(batch)
        self.records.__setstate__(handed)  # type: ignore[attr-defined]
        self._reported = min(self._reported, handed) if batch else 0
        # An iterator suspended in the middle of the old batch must look again.
        self._router.changed = True

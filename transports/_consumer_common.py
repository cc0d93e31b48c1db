"""What the three consumer facades share: option splitting and event routing.

Theory of operation
-------------------
Each facade takes one flat set of keyword options, Java-style. Those that
:class:`~kafkacore.consumer.ConsumerConfig` knows configure the consumer;
the rest go to :func:`transports._common.make_parts` (the client config).

:class:`ConsumerRouter` receives every event the bridge drains from the
:class:`~kafkacore.consumer.ConsumerCore`: an ``OperationCompleted``
resolves the completion registered for its handle; assignment changes and
truncation notices are queued for the user's rebalance listener, which the
facade calls from ``poll`` (in the user's thread or task, as Java does);
every event bumps ``seq`` and calls ``wake`` so a waiting ``poll`` looks
again. What the user should hear about without an exception (followed topics
that do not exist, a cluster no broker of which answers) is logged as a
warning on the ``kafkacore.consumer`` logger. Kafka logic stays in the core.

:class:`HeldRecords` is the record-by-record iterator's batch (``for record
in consumer``). The iterator takes a batch from the core as a *loan*
(``poll_records(lend=True)``) and hands it over one record at a time; a
record counts as consumed once the iterator has handed it to the user (as
with kafka-python's iterator, and as with Java's ``poll``, which hands a
whole batch at once). So the record being processed when the loop body
breaks or raises is consumed; the ones after it are not: before a commit,
``position``, ``lag`` or ``close`` the facade tells the core how far the
user got (``note_consumed``), and before anything that moves positions or
hands out records another way (``poll``, ``seek``, ``pause``, ...) it gives
the rest back (``return_lent``), to be fetched and handed out again.
Records of partitions the core took away (revoked, lost, truncated) are
dropped from the batch before the next one is handed over.
"""

from __future__ import annotations

import logging
import random
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import fields
from operator import length_hint
from typing import Any, Protocol

from kafkacore.client import TopicPartition
from kafkacore.consumer import (
    ConsumerConfig,
    ConsumerCore,
    ConsumerRecord,
    OperationCompleted,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    PartitionsRevoking,
    TruncationDetected,
)
from kafkacore.consumer.events import BrokersUnreachable, TopicsNotFound
from kafkacore.errors import KafkaTimeoutError

from ._common import Parts, make_parts
from ._sockets import Address

__all__ = [
    "ConsumerRouter",
    "HeldRecords",
    "RebalanceListener",
    "position_timeout",
    "split_options",
    "timeout_ms",
]

log = logging.getLogger("kafkacore.consumer")
log.addHandler(
    logging.NullHandler()
)  # a library stays quiet until the application configures logging

_CONSUMER_FIELDS = frozenset(f.name for f in fields(ConsumerConfig))
Completion = Callable[[Any, BaseException | None], None]


class RebalanceListener(Protocol):
    """Called from ``poll`` with the partitions that changed hands."""

    def on_partitions_assigned(self, partitions: frozenset[Any]) -> None: ...

    def on_partitions_revoked(self, partitions: frozenset[Any]) -> None: ...

    def on_partitions_lost(self, partitions: frozenset[Any]) -> None: ...


def split_options(
    owner: str,
    bootstrap_servers: str | Sequence[str] | None,
    *,
    source_address: Address | None,
    ssl_server_hostname: str | None,
    rng: random.Random | None,
    options: dict[str, Any],
) -> tuple[Parts, ConsumerConfig]:
    consumer = {k: v for k, v in options.items() if k in _CONSUMER_FIELDS}
    client = {k: v for k, v in options.items() if k not in _CONSUMER_FIELDS}
    # The client's own retry backoff is the consumer's too.
    if "retry_backoff_ms" in consumer:
        client["retry_backoff_ms"] = consumer["retry_backoff_ms"]
    if source_address is not None:
        client["source_address"] = source_address
    parts = make_parts(
        owner,
        bootstrap_servers,
        ssl_server_hostname=ssl_server_hostname,
        rng=rng,
        options=client,
    )
    try:
        config = ConsumerConfig(**consumer)
    except TypeError as exc:  # pragma: no cover - names were filtered above
        raise TypeError(f"{owner}: {exc}") from None
    return parts, config


class ConsumerRouter:
    """Routes consumer-core events; see the module docstring."""

    __slots__ = ("_announced", "_ops", "changed", "notices", "removed", "seq", "wake")

    def __init__(self, wake: Callable[[], None] = lambda: None) -> None:
        self._ops: dict[object, Completion] = {}
        self.notices: deque[object] = deque(maxlen=10000)
        #: Partitions the core took away (revoked, lost, truncated), for the
        #: iterator's batch; appended on the loop, drained by the iterator.
        self.removed: deque[frozenset[Any]] = deque(maxlen=10000)
        #: Set (after the append) whenever ``notices`` or ``removed`` grows:
        #: the one flag the iterator reads per record. The reader clears it
        #: before draining both, so nothing appended meanwhile goes unseen.
        self.changed = False
        self.seq = 0
        self.wake = wake
        self._announced: set[object] = set()

    def expect(self, handle: object, done: Completion) -> None:
        if getattr(handle, "done", False):
            done(getattr(handle, "value", None), getattr(handle, "error", None))
            return
        self._ops[handle] = done

    def fail_all(self, error: BaseException) -> None:
        ops, self._ops = self._ops, {}
        for done in ops.values():
            done(None, error)

    def on_event(self, event: object) -> None:
        if isinstance(event, OperationCompleted):
            done = self._ops.pop(event.handle, None)
            if done is not None:
                done(event.handle.value, event.handle.error)
        elif isinstance(
            event,
            PartitionsAssigned
            | PartitionsRevoked
            | PartitionsRevoking
            | PartitionsLost
            | TruncationDetected,
        ):
            self.notices.append(event)
            if isinstance(event, PartitionsRevoked | PartitionsLost):
                self.removed.append(event.partitions)
            elif isinstance(event, TruncationDetected):
                self.removed.append(frozenset({event.partition}))
            self.changed = True
        elif isinstance(event, TopicsNotFound):
            log.warning(
                "topics %s do not exist (UNKNOWN_TOPIC_OR_PARTITION); waiting for them "
                "to be created",
                sorted(event.topics),
            )
        elif isinstance(event, BrokersUnreachable):
            log.warning("%s", event.error)
        self.seq += 1
        self.wake()

    def dispatch(
        self, listener: RebalanceListener | None, ack: Callable[[int], None] | None = None
    ) -> None:
        """Call the listener for queued notices (from the user's thread or task).

        A ``PartitionsRevoking`` is acknowledged with ``ack(token)`` after the
        listener ran, so the core lets the partitions go only then; the
        ``PartitionsRevoked`` that follows is not announced twice.
        """
        while self.notices:
            event = self.notices.popleft()
            if isinstance(event, PartitionsRevoking):
                try:
                    if listener is not None:
                        listener.on_partitions_revoked(event.partitions)
                        self._announced.update(event.partitions)
                finally:
                    if ack is not None:
                        ack(event.token)
                continue
            if listener is None:
                continue
            if isinstance(event, PartitionsAssigned):
                listener.on_partitions_assigned(event.partitions)
            elif isinstance(event, PartitionsRevoked):
                fresh = frozenset(p for p in event.partitions if p not in self._announced)
                self._announced.difference_update(event.partitions)
                if fresh:
                    listener.on_partitions_revoked(fresh)
            elif isinstance(event, PartitionsLost):
                listener.on_partitions_lost(event.partitions)


def timeout_ms(timeout: float | None) -> int | None:
    """A facade's ``timeout`` (seconds, None: the default) for the core."""
    return None if timeout is None else max(int(timeout * 1000), 0)


def position_timeout(
    owner: str, tp: TopicPartition, limit: float, cause: BaseException | None
) -> KafkaTimeoutError:
    """``position`` gave up: say why nothing was known, with the cause attached."""
    why = "" if cause is None else f"; last error: {type(cause).__name__}: {cause}"
    error = KafkaTimeoutError(f"{owner}.position: {tp} unknown after {limit} s{why}")
    error.__cause__ = cause
    return error


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

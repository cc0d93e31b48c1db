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
from collections.abc import Callable, Sequence
from dataclasses import fields
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

    __slots__ = ("_announced", "_ops", "notices", "removed", "seq", "wake")

    def __init__(self, wake: Callable[[], None] = lambda: None) -> None:
        self._ops: dict[object, Completion] = {}
        self.notices: deque[object] = deque(maxlen=10000)
        #: Partitions the core took away (revoked, lost, truncated), for the
        #: iterator's batch; appended on the loop, drained by the iterator.
        self.removed: deque[frozenset[Any]] = deque(maxlen=10000)
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

    Touched only from the user's thread (or task); the core is told through
    :meth:`sync` and :meth:`give_back`, which run as core commands.
    """

    __slots__ = ("_progress", "_queue")

    def __init__(self) -> None:
        self._queue: deque[ConsumerRecord] = deque()
        # (topic, partition) -> (next offset, leader epoch) of what was handed over.
        self._progress: dict[tuple[str, int], tuple[int, int | None]] = {}

    def __bool__(self) -> bool:
        return bool(self._queue)

    def __len__(self) -> int:
        return len(self._queue)

    def fill(self, core: ConsumerCore, router: ConsumerRouter, now: float) -> list[ConsumerRecord]:
        """Borrow the next batch (a core command): everything lent before was handed over."""
        router.removed.clear()  # earlier removals concern earlier batches
        self._progress.clear()
        batch = core.poll_records(now=now, lend=True)
        self._queue.extend(batch)
        return batch

    def pop(self) -> ConsumerRecord:
        """The next record, which from now on counts as consumed."""
        record = self._queue.popleft()
        self._progress[(record.topic, record.partition)] = (record.offset + 1, record.leader_epoch)
        return record

    def drop(self, partitions: set[Any]) -> None:
        """Forget the records of ``partitions`` (no longer ours, or moved)."""
        self._queue = deque(r for r in self._queue if (r.topic, r.partition) not in partitions)

    def progress(self) -> tuple[dict[Any, tuple[int, int | None]], bool]:
        """What was handed over since the last call, and whether that is all."""
        out, self._progress = self._progress, {}
        return out, not self._queue

    def sync(self, core: ConsumerCore, now: float) -> None:
        """Core command: commits from now on cover every record handed over."""
        progress, everything = self.progress()
        core.note_consumed(progress, now=now, everything=everything)

    def give_back(self, core: ConsumerCore, now: float) -> None:
        """Core command: the records not handed over go back to the core."""
        progress, _ = self.progress()
        self._queue.clear()
        core.note_consumed(progress, now=now)
        core.return_lent(now=now)

    def prune(self, router: ConsumerRouter) -> None:
        """Drop records of partitions the core took away since the batch came."""
        gone: set[Any] = set()
        while router.removed:
            gone.update(router.removed.popleft())
        if gone and self._queue:
            self.drop(gone)

"""Records waiting for their topic's metadata, and the metadata asks the producer makes.

Theory of operation
-------------------
An append to a topic whose partitions are not known yet cannot pick a
partition. Its records wait here, per topic and in append order, as one
:class:`WaitingRecords` per append call; the client is told to fetch the
topic. The queue is bounded twice, as the Java producer's ``send`` blocks
on metadata: every waiting record is charged against ``buffer_memory``
like a queued one, and each append waits at most ``max_block_ms``.

On each pass (:meth:`MetadataWait.place`) the topic's state in the
cluster decides, by the rules in :data:`RULES` (first match wins)::

    Metadata answer for the topic        verdict
    a non-retriable error code           FAIL  (authorization, invalid name...)
    no partitions yet                    ASK   (again, backing off)
    partitions known                     PLACE (every waiting append, in order)

Waiting records also fail early when waiting cannot help: the brokers
refused our credentials, the transaction was aborted or the producer
closed. A cluster not reached (yet) is not such a case: the client retries
with the reconnect backoff, and records wait for ``max_block_ms``, then fail
with ``NoBrokersAvailable`` naming each bootstrap server's last error when
no broker was ever reached (issue 26: a broker started a moment after its
producer must be used). A waiting append is reported through
the :class:`~kafkacore.producer.ledger.DeliveryLedger` with partition -1
unless the caller named one.

:class:`MetadataAsks` paces the producer's own metadata requests (for
waiting topics and for partitions without a leader): an ask is not
repeated before a backoff that grows while asks bring nothing (KIP-580).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

from kafkacore.client import KafkaClientCore
from kafkacore.client.pool import unreachable_within
from kafkacore.errors import AuthenticationError
from kafkacore.producer.accumulator import RecordAccumulator
from kafkacore.producer.causes import FailureLog, authentication_failed, metadata_timeout
from kafkacore.producer.causes import topic_error as topic_error_for
from kafkacore.producer.ledger import DeliveryLedger
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.error_codes import error_class
from kafkacore.records import Header

__all__ = ["RULES", "MetadataAsks", "MetadataWait", "TopicVerdict", "WaitingRecords", "verdict"]

#: One append_many call's columns: (values, keys, per-record sizes).
Columns = tuple[Sequence[bytes | None], Sequence[bytes | None] | None, list[int]]


@dataclass(slots=True)
class WaitingRecords:
    """The records of one append call whose topic had no partitions yet."""

    id: int
    topic: str
    partition: int | None
    size: int
    deadline: float
    token: object
    timestamp: int
    value: bytes | None = None
    key: bytes | None = None
    headers: Sequence[Header] | None = None
    many: Columns | None = None

    @property
    def count(self) -> int:
        return len(self.many[0]) if self.many is not None else 1


class TopicVerdict(Enum):
    FAIL = "fail"  # waiting will not help: fail every waiting append
    ASK = "ask"  # ask for the topic's metadata (again)
    PLACE = "place"  # partitions known: place every waiting append


def _fatal_code(code: int, _partitions: int) -> bool:
    cls = error_class(code) if code else None
    return cls is not None and not cls.retriable


#: (condition on (topic error code, partition count), verdict): the first
#: match wins; when none matches, the records are placed (PLACE).
RULES: tuple[tuple[Callable[[int, int], bool], TopicVerdict], ...] = (
    (_fatal_code, TopicVerdict.FAIL),
    (lambda _code, partitions: partitions == 0, TopicVerdict.ASK),
)


def verdict(code: int, partitions: int) -> TopicVerdict:
    """What to do with the records waiting for a topic (see :data:`RULES`)."""
    for condition, outcome in RULES:
        if condition(code, partitions):
            return outcome
    return TopicVerdict.PLACE


class MetadataAsks:
    """Metadata requests of the producer itself, backing off while they bring nothing."""

    __slots__ = ("_backoff_s", "_client", "next_at", "streak")

    def __init__(self, client: KafkaClientCore, backoff_s: Callable[[int], float]) -> None:
        self._client = client
        self._backoff_s = backoff_s
        self.next_at = -math.inf  # no ask before this time
        self.streak = 0  # asks since the last time nothing waited for metadata

    def ask(self, now: float) -> None:
        if now < self.next_at:
            return
        self.streak += 1
        self.next_at = now + self._backoff_s(self.streak)
        self._client.request_metadata_update(now=now)

    def reset(self) -> None:
        """Nothing waits for metadata: the next ask is a first one."""
        self.streak = 0

    def wake(self, now: float) -> float | None:
        """When the next ask may go, if that is still to come."""
        return self.next_at if self.next_at > now else None


#: Places one waiting append whose topic has ``count`` partitions.
Placer = Callable[[WaitingRecords, int, float], None]


class MetadataWait:
    """The waiting queue; see the module docstring."""

    __slots__ = ("_acc", "_asks", "_client", "_failures", "_ledger", "_max_block_ms", "queues")

    def __init__(
        self,
        client: KafkaClientCore,
        acc: RecordAccumulator,
        ledger: DeliveryLedger,
        asks: MetadataAsks,
        failures: FailureLog,
        max_block_ms: int,
    ) -> None:
        self._client = client
        self._acc = acc
        self._ledger = ledger
        self._asks = asks
        self._failures = failures
        self._max_block_ms = max_block_ms
        self.queues: dict[str, deque[WaitingRecords]] = {}

    def __bool__(self) -> bool:
        return bool(self.queues)

    def __contains__(self, topic: object) -> bool:
        return topic in self.queues

    @property
    def record_count(self) -> int:
        return sum(w.count for ws in self.queues.values() for w in ws)

    def add(self, waiting: WaitingRecords, now: float) -> None:
        """Queue ``waiting`` (charged against ``buffer_memory`` while it waits)."""
        queue = self.queues.get(waiting.topic)
        if queue is None:
            queue = self.queues[waiting.topic] = deque()
        queue.append(waiting)
        self._acc.charge(waiting.size)
        self._ledger.track(waiting.id, 0)
        if waiting.topic not in self._client.topics:
            self._client.add_topic(waiting.topic, now=now)

    def place(self, now: float, placer: Placer) -> None:
        """Act on each waiting topic's metadata (see :data:`RULES`)."""
        cluster = self._client.cluster
        for topic in list(self.queues):
            code = cluster.topic_error(topic) or ErrorCode.NONE
            parts = cluster.partitions_for_topic(topic)
            count = len(parts) if parts else 0
            outcome = verdict(code, count)
            if outcome is TopicVerdict.ASK:
                self._asks.ask(now)
                continue
            waiting = self.queues.pop(topic)
            if outcome is TopicVerdict.FAIL:
                # The cluster's failure names the broker that answered (it keeps
                # one for every code that fails here: the fallback is a safety net).
                error = cluster.topic_failure(topic) or topic_error_for(
                    topic, code, node_id=cluster.topic_errors_from
                )
                self._fail(waiting, error)
                continue
            for w in waiting:
                self._acc.release(w.size)  # placing charges it again
                self._ledger.incomplete.pop(w.id, None)
                placer(w, count, now)

    def expire(self, now: float) -> None:
        """Fail the appends that waited ``max_block_ms`` (stop asking for idle topics)."""
        for topic, ws in list(self.queues.items()):
            while ws and ws[0].deadline <= now:
                self._fail_one(ws.popleft(), self._timed_out(topic))
            if not ws:
                del self.queues[topic]

    def _timed_out(self, topic: str) -> BaseException:
        """The error of an append to ``topic`` that waited ``max_block_ms``: a cluster
        never reached is said as such (NoBrokersAvailable, the last connection
        error as its cause), else the topic's last answer or failure."""
        limit = self._max_block_ms
        unreachable = self._client.unreachable_from_the_start()
        if unreachable is not None:
            what = f"no metadata for topic {topic!r} within max_block_ms={limit}"
            return unreachable_within(what, unreachable)
        cluster = self._client.cluster
        return metadata_timeout(
            topic,
            limit,
            cluster.topic_error(topic),
            self._failures.metadata or self._client.unavailable_cause(),
            # The broker whose metadata answer gave the topic's code.
            node_id=cluster.topic_errors_from,
        )

    def wake(self) -> float | None:
        """The earliest deadline of a waiting append."""
        return min((ws[0].deadline for ws in self.queues.values() if ws), default=None)

    # ---------------------------------------------------------- failing
    def fail_all(self, error: BaseException) -> None:
        queues, self.queues = self.queues, {}
        for ws in queues.values():
            self._fail(ws, error)

    def fail_auth(self, error: AuthenticationError) -> None:
        """The brokers refused our credentials: no metadata will come."""
        queues, self.queues = self.queues, {}
        for topic, ws in queues.items():
            self._fail(ws, authentication_failed(f"records for topic {topic!r}", error))

    def _fail(self, ws: deque[WaitingRecords], error: BaseException) -> None:
        for w in ws:
            self._fail_one(w, error)

    def _fail_one(self, w: WaitingRecords, error: BaseException) -> None:
        n = w.count
        partition = -1 if w.partition is None else w.partition
        self._ledger.report(w.topic, partition, [w.token] * n, [w.timestamp] * n, error)
        self._ledger.release(w.id, w.size)

"""Cluster metadata as pure state (seed 001 ``ClusterMetadata``, seed 000 ``Cluster``).

Theory of operation
-------------------
:class:`ClusterMetadata` holds what the last Metadata and FindCoordinator
responses said: brokers, topics with their partitions, leaders and leader
epochs (KIP-320), topic ids (KIP-516), the controller and the cluster id.
It does no I/O and reads no clock: every time-dependent method takes
``now`` (monotonic seconds) and answers in milliseconds as the seed does.

Refresh bookkeeping is two timestamps, a flag and a streak: the last
attempt, the last success, ``need_update`` (someone asked: a waiter, an
error that invalidates metadata, a request with no route), and the number
of consecutive attempts that did not settle the cluster (failed, or
answered with something still missing). :meth:`ttl` is 0 when an update is
due (flagged, or older than ``metadata_max_age_ms``), but never sooner than
the retry backoff after the last attempt: exponential with jitter from
``retry_backoff_ms`` to ``retry_backoff_max_ms`` over that streak (KIP-580),
so a partition without a leader is asked about at 0.1, 0.2, 0.4, 0.8, 1, 1...
seconds, not ten times a second. :meth:`request_update` flags an update and
returns a :class:`~kafkacore.client.handles.MetadataWaiter` that the next
:meth:`update_metadata` completes (or the next :meth:`failed_update` fails);
the owner collects finished waiters with :meth:`take_finished_waiters` to
announce them.

Stale answers are guarded by leader epochs: a partition whose new leader
epoch is older than the one known keeps its old state, as the Java client
does (KIP-320). Such answers, LEADER_NOT_AVAILABLE, and leaders that are
unknown or absent make the answer :attr:`incomplete`: that lengthens the
backoff streak but does not flag a refresh by itself, so an idle client
that nobody waits on refreshes only on age; whoever needs the missing
leader asks (a waiter, a request with no route). An unknown topic is
recorded (``topic_error``); a non-retriable topic error (authorization,
invalid name, an error code kafkacore does not know) is kept as an
exception naming the code, the broker and the topic (:meth:`topic_failure`).
:meth:`rebootstrap` forgets the brokers (KIP-899/KIP-1102).
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from kafkacore.client.backoff import ExponentialBackoff
from kafkacore.client.config import parse_bootstrap_servers
from kafkacore.client.handles import MetadataWaiter
from kafkacore.errors import BrokerError, KafkaConnectionError, LocalProtocolError
from kafkacore.protocol.enums import CoordinatorType, ErrorCode
from kafkacore.protocol.error_codes import UnknownErrorCodeError, error_class

if TYPE_CHECKING:
    from kafkacore.protocol.messages import FindCoordinatorResponse
    from kafkacore.protocol.messages.find_coordinator_response import Coordinator

__all__ = [
    "BrokerMetadata",
    "ClusterMetadata",
    "PartitionMetadata",
    "TopicPartition",
]

_NO_LEADER = -1


class TopicPartition(NamedTuple):
    """A topic name and a partition index."""

    topic: str
    partition: int


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerMetadata:
    """One node: id (negative for bootstrap addresses), host, port, rack."""

    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionMetadata:
    """One partition as the last Metadata response described it."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int = -1
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    offline_replicas: tuple[int, ...] = ()
    error_code: int = 0


@dataclass(slots=True)
class _Topic:
    name: str
    topic_id: Any = None
    internal: bool = False
    partitions: dict[int, PartitionMetadata] = field(default_factory=dict)


Listener = Callable[["ClusterMetadata"], None]


class ClusterMetadata:
    """Pure cluster state; see the module docstring. Not thread-safe (no threads)."""

    def __init__(
        self,
        *,
        retry_backoff_ms: int = 100,
        metadata_max_age_ms: int = 300000,
        bootstrap_servers: str | Sequence[str] | None = "localhost:9092",
        retry_backoff_max_ms: int | None = None,
        rng: random.Random | None = None,
    ) -> None:
        """``retry_backoff_max_ms`` None keeps the backoff flat at ``retry_backoff_ms``;
        ``rng`` (None: no jitter) draws the +-20% jitter of each backoff."""
        max_ms = retry_backoff_ms if retry_backoff_max_ms is None else retry_backoff_max_ms
        if retry_backoff_ms < 0 or metadata_max_age_ms <= 0 or max_ms < retry_backoff_ms:
            raise LocalProtocolError(
                "ClusterMetadata: need 0 <= retry_backoff_ms <= retry_backoff_max_ms and "
                "metadata_max_age_ms > 0"
            )
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_backoff_max_ms = max_ms
        self._backoff = ExponentialBackoff(retry_backoff_ms, max_ms, jitter=0.2 if rng else 0.0)
        self._rng = rng
        #: Consecutive refresh attempts that did not settle the cluster.
        self.refresh_attempts = 0
        self._retry_delay_s = retry_backoff_ms / 1000
        #: The last answer lacked something (a leader, a topic's name): see module docstring.
        self.incomplete = False
        self.metadata_max_age_ms = metadata_max_age_ms
        self._bootstrap = {
            -(i + 1): BrokerMetadata(node_id=-(i + 1), host=host, port=port)
            for i, (host, port) in enumerate(parse_bootstrap_servers(bootstrap_servers))
        }
        self._brokers: dict[int, BrokerMetadata] = {}
        self._topics: dict[str, _Topic] = {}
        self._topic_names_by_id: dict[Any, str] = {}
        self._topic_errors: dict[str, int] = {}
        self._topic_failures: dict[str, BrokerError] = {}
        #: The broker whose answer gave the topic errors held now (:meth:`topic_error`):
        #: an error built from one later names it.
        self.topic_errors_from: int | None = None
        #: The error of the last failed update (None once one succeeds).
        self.last_failure: BaseException | None = None
        self._coordinators: dict[tuple[int, str], int] = {}
        self._coordinator_brokers: dict[int, BrokerMetadata] = {}
        self.cluster_id: str | None = None
        self.controller_id: int | None = None
        self.need_update = True
        self.update_count = 0
        self._last_refresh: float | None = None  # last attempt (success or failure), seconds
        self._last_successful_refresh: float | None = None
        self._waiters: list[MetadataWaiter] = []
        self._finished: list[MetadataWaiter] = []
        self._next_waiter = 0
        # request_update(new_topics=True) calls so far, and what the refresh in
        # flight was built to answer: (that count, how many waiters were queued).
        self._topic_requests = 0
        self._in_flight: tuple[int, int] | None = None
        self._listeners: list[Listener] = []

    # -- seed 000: mapping access over broker ids ---------------------------
    def __getitem__(self, broker_id: int) -> BrokerMetadata:
        broker = self.broker_metadata(broker_id)
        if broker is None:
            raise KeyError(broker_id)
        return broker

    def __contains__(self, broker_id: object) -> bool:
        return broker_id in self._brokers or broker_id in self._coordinator_brokers

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(self._brokers))

    def __len__(self) -> int:
        return len(self._brokers)

    # -- queries --------------------------------------------------------------
    def brokers(self) -> set[BrokerMetadata]:
        """Known brokers; the bootstrap addresses until the first update (as the seed)."""
        return set(self._brokers.values()) or set(self._bootstrap.values())

    def bootstrap_brokers(self) -> list[BrokerMetadata]:
        return list(self._bootstrap.values())

    def broker_metadata(self, broker_id: int) -> BrokerMetadata | None:
        return (
            self._brokers.get(broker_id)
            or self._coordinator_brokers.get(broker_id)
            or self._bootstrap.get(broker_id)
        )

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        """All partitions of ``topic`` (led or not); None if the topic is unknown."""
        info = self._topics.get(topic)
        return None if info is None else set(info.partitions)

    def available_partitions_for_topic(self, topic: str) -> set[int] | None:
        """Partitions of ``topic`` with a known leader; None if the topic is unknown."""
        info = self._topics.get(topic)
        if info is None:
            return None
        return {p for p, meta in info.partitions.items() if meta.leader != _NO_LEADER}

    def partition_metadata(self, partition: TopicPartition) -> PartitionMetadata | None:
        info = self._topics.get(partition.topic)
        return None if info is None else info.partitions.get(partition.partition)

    def leader_for_partition(self, partition: TopicPartition) -> int | None:
        """Leader node id; -1 when leaderless, None when the partition is unknown."""
        meta = self.partition_metadata(TopicPartition(*partition))
        return None if meta is None else meta.leader

    def get_leader(self, topic: str, partition: int) -> int | None:
        """kiel's name for :meth:`leader_for_partition`."""
        return self.leader_for_partition(TopicPartition(topic, partition))

    def leader_epoch_for_partition(self, partition: TopicPartition) -> int | None:
        """KIP-320 leader epoch (-1 when the broker did not say), None if unknown."""
        meta = self.partition_metadata(TopicPartition(*partition))
        return None if meta is None else meta.leader_epoch

    def partitions_for_broker(self, broker_id: int) -> set[TopicPartition] | None:
        """Partitions led by ``broker_id``; None when it leads none (as the seed)."""
        led = {
            TopicPartition(name, p)
            for name, info in self._topics.items()
            for p, meta in info.partitions.items()
            if meta.leader == broker_id
        }
        return led or None

    def topics(self, exclude_internal_topics: bool = True) -> set[str]:
        """Known topics; internal ones (``__consumer_offsets``...) only on request."""
        return {
            name
            for name, info in self._topics.items()
            if not (exclude_internal_topics and info.internal)
        }

    def topic_id(self, topic: str) -> Any:
        """KIP-516 topic id (a UUID as the codec represents it), or None."""
        info = self._topics.get(topic)
        return None if info is None else info.topic_id

    def topic_name(self, topic_id: Any) -> str | None:
        return self._topic_names_by_id.get(topic_id)

    def topic_error(self, topic: str) -> int | None:
        """The error code the last response gave for ``topic`` (None if none)."""
        return self._topic_errors.get(topic)

    def topic_failure(self, topic: str) -> BrokerError | None:
        """The non-retriable error of ``topic`` in the last answer, as an exception.

        Authorization, an invalid name, or a code kafkacore does not know:
        waiting will not make the topic usable, so callers should fail
        promptly with this. Its message names the code, the broker that
        answered and the topic ("unknown error code 32767 from broker 1 for
        topic 't'"). None when the topic had no such error (missing topics,
        UNKNOWN_TOPIC_OR_PARTITION, are retriable: they may be created).
        """
        return self._topic_failures.get(topic)

    @property
    def unauthorized_topics(self) -> set[str]:
        return {
            t for t, c in self._topic_errors.items() if c == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        }

    @property
    def invalid_topics(self) -> set[str]:
        return {t for t, c in self._topic_errors.items() if c == ErrorCode.INVALID_TOPIC_EXCEPTION}

    # -- refresh timing -------------------------------------------------------
    def next_refresh_at(self) -> float:
        """Absolute time (seconds) at which a refresh is due; ``-inf`` for "now".

        Computed in absolute time so that the owner's timer and :meth:`ttl`
        agree exactly (no float drift between "due in 1e-14 ms" and "due").
        """
        if self.need_update or self._last_successful_refresh is None:
            due = -math.inf
        else:
            due = self._last_successful_refresh + self.metadata_max_age_ms / 1000
        if self._last_refresh is not None:
            due = max(due, self._last_refresh + self._retry_delay_s)
        return due

    def ttl(self, *, now: float) -> float:
        """Milliseconds until a refresh is due (0 = now), honouring the retry backoff."""
        due = self.next_refresh_at()
        return 0.0 if now >= due else (due - now) * 1000

    def refresh_backoff(self, *, now: float) -> float:
        """Milliseconds to wait before the next attempt after the last one."""
        if self._last_refresh is None:
            return 0.0
        due = self._last_refresh + self._retry_delay_s
        return 0.0 if now >= due else (due - now) * 1000

    @property
    def retry_delay_ms(self) -> float:
        """The backoff drawn after the last attempt (milliseconds)."""
        return self._retry_delay_s * 1000

    def _attempt_done(self, settled: bool) -> None:
        # KIP-580: each unsettled attempt doubles the wait before the next
        # (jittered); a settled one starts again from retry_backoff_ms.
        # The spacing after a settled refresh is a plain minimum, not a retry:
        # exactly retry_backoff_ms, with no jitter to draw.
        self.refresh_attempts = 0 if settled else self.refresh_attempts + 1
        n = self.refresh_attempts
        rng = self._rng
        if n == 0 or rng is None:
            delay_ms = float(min(self.retry_backoff_ms << max(n - 1, 0), self.retry_backoff_max_ms))
        else:
            delay_ms = self._backoff.delay_ms(n, rng)
        self._retry_delay_s = delay_ms / 1000

    def request_update(self, *, new_topics: bool = False) -> MetadataWaiter:
        """Flag a refresh; the waiter completes with the next update (seed 001).

        With ``new_topics`` (the client tracks more topics than before), an
        answer to a request built earlier (see :meth:`update_started`) cannot
        cover them: it leaves the flag set and this waiter queued for the next
        update, as the Java client's requestUpdateForNewTopics does. A plain
        refresh request is satisfied by the answer already on its way.
        """
        self.need_update = True
        if new_topics:
            self._topic_requests += 1
            # New topics are a new question: the backoff earned by the old
            # one does not apply (Java's requestUpdateForNewTopics).
            self.refresh_attempts = 0
            self._retry_delay_s = self.retry_backoff_ms / 1000
        waiter = self.new_waiter()
        self._waiters.append(waiter)
        return waiter

    def new_waiter(self) -> MetadataWaiter:
        """A waiter with the next id, not queued here (the client's bootstrap waits)."""
        self._next_waiter += 1
        return MetadataWaiter(self._next_waiter)

    @property
    def waiting(self) -> int:
        """Waiters not yet completed (a refresh is wanted while any wait)."""
        return len(self._waiters)

    def update_started(self) -> None:
        """The client built a Metadata request now; its answer covers what was asked so far."""
        self._in_flight = (self._topic_requests, len(self._waiters))

    def update_abandoned(self) -> None:
        """The refresh in flight will give no usable answer (the client went
        back to its bootstrap servers): ask again at once; waiters keep waiting."""
        self._in_flight = None
        self.need_update = True

    def take_finished_waiters(self) -> list[MetadataWaiter]:
        out, self._finished = self._finished, []
        return out

    # -- updates --------------------------------------------------------------
    def failed_update(self, exception: BaseException, *, now: float) -> None:
        """A Metadata request failed: back off (longer each time), fail the waiters."""
        self.last_failure = exception
        self._last_refresh = now
        self._attempt_done(settled=False)
        self._in_flight = None
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter._complete(None, exception)
        self._finished.extend(waiters)

    def update_metadata(
        self, metadata: Any, *, now: float, source: str | None = None, node_id: int | None = None
    ) -> None:
        """Replace the state with a decoded Metadata response (any version).

        ``metadata`` needs the response's attributes (``brokers``, ``topics``,
        ``cluster_id``, ``controller_id``, ...), as the generated
        ``MetadataResponse`` has them. An empty broker list counts as a
        failed update (the broker is not ready to serve metadata).
        ``source`` names the broker that answered (e.g. ``"broker 1"``), for
        the messages of :meth:`topic_failure`, and ``node_id`` is its id (kept
        on those errors).
        """
        if not metadata.brokers:
            self.failed_update(
                KafkaConnectionError(
                    f"{source or 'the broker'} answered Metadata with no brokers "
                    "(it is not ready to serve metadata)"
                ),
                now=now,
            )
            return
        self._brokers = {
            b.node_id: BrokerMetadata(
                node_id=b.node_id, host=b.host, port=b.port, rack=getattr(b, "rack", None)
            )
            for b in metadata.brokers
        }
        self.cluster_id = getattr(metadata, "cluster_id", None)
        controller = getattr(metadata, "controller_id", -1)
        self.controller_id = controller if controller is not None and controller >= 0 else None
        incomplete = False
        topics: dict[str, _Topic] = {}
        errors: dict[str, int] = {}
        failures: dict[str, BrokerError] = {}
        for t in metadata.topics:
            name = t.name
            if name is None:  # v12+ may answer by id only for unknown ids
                incomplete = True
            elif t.error_code:
                errors[name] = t.error_code
                failure = _topic_failure(t.error_code, name, source, node_id)
                if failure is not None:
                    failures[name] = failure
                # A missing topic is not refetched on its own (it may never
                # exist); the client flags a refresh while a request waits for
                # it, and such refreshes back off like any answer still lacking
                # a topic (a consumer following a topic not created yet).
                if t.error_code in (
                    ErrorCode.LEADER_NOT_AVAILABLE,
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                ):
                    incomplete = True
                if t.error_code == ErrorCode.LEADER_NOT_AVAILABLE and name in self._topics:
                    topics[name] = self._topics[name]  # keep what we knew
            else:
                topics[name], partial = self._read_topic(t)
                incomplete = incomplete or partial
        self._topics = topics
        self._topic_errors = errors
        self._topic_failures = failures
        self.topic_errors_from = node_id
        self._topic_names_by_id = {
            info.topic_id: name for name, info in topics.items() if info.topic_id is not None
        }
        self._updated(now, incomplete)

    def _read_topic(self, t: Any) -> tuple[_Topic, bool]:
        """One topic of a Metadata answer, and whether it lacks something."""
        name: str = t.name
        raw_id = getattr(t, "topic_id", None)
        info = _Topic(
            name=name,
            topic_id=None if raw_id is None or getattr(raw_id, "int", 1) == 0 else raw_id,
            internal=bool(getattr(t, "is_internal", False)),
        )
        old = self._topics.get(name)
        incomplete = False
        for p in t.partitions:
            meta = PartitionMetadata(
                topic=name,
                partition=p.partition_index,
                leader=p.leader_id,
                leader_epoch=getattr(p, "leader_epoch", -1),
                replicas=tuple(p.replica_nodes),
                isr=tuple(p.isr_nodes),
                offline_replicas=tuple(getattr(p, "offline_replicas", ()) or ()),
                error_code=p.error_code,
            )
            previous = old.partitions.get(meta.partition) if old is not None else None
            if (
                previous is not None
                and meta.leader_epoch >= 0
                and previous.leader_epoch > meta.leader_epoch
                and _same_topic(old, info)
            ):
                # KIP-320: this broker's view is older than ours; keep ours.
                meta = previous
                incomplete = True
            if meta.leader == _NO_LEADER or meta.leader not in self._brokers:
                incomplete = True
            if meta.error_code in (ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.LISTENER_NOT_FOUND):
                incomplete = True
            info.partitions[meta.partition] = meta
        return info, incomplete

    def _updated(self, now: float, incomplete: bool) -> None:
        """A successful update: reschedule, and complete the waiters it answers."""
        self.update_count += 1
        self.last_failure = None
        self._last_refresh = now
        self._last_successful_refresh = now
        self.incomplete = incomplete
        self._attempt_done(settled=not incomplete)
        need_update = False
        covered = len(self._waiters)
        if self._in_flight is not None and self._topic_requests > self._in_flight[0]:
            # Topics were added while this answer was on its way: it cannot
            # cover them, nor the waiters queued since.
            need_update = True
            covered = self._in_flight[1]
        self._in_flight = None
        self.need_update = need_update
        waiters, self._waiters = self._waiters[:covered], self._waiters[covered:]
        for waiter in waiters:
            waiter._complete(self, None)
        self._finished.extend(waiters)
        for listener in list(self._listeners):
            listener(self)

    def rebootstrap(self) -> None:
        """Forget the brokers, controller and coordinators; start again from the
        bootstrap addresses (KIP-899/KIP-1102). Topics stay known: their leaders
        point at nodes no longer in the metadata until the next update."""
        # New dicts, not clear(): snapshots (with_partitions) share the old ones.
        self._brokers = {}
        self._coordinators = {}
        self._coordinator_brokers = {}
        self.controller_id = None
        self.need_update = True

    # -- coordinators -----------------------------------------------------------
    def add_group_coordinator(self, group: str, response: FindCoordinatorResponse) -> int | None:
        """Record a FindCoordinator answer for ``group``; node id, or None on error."""
        return self.add_coordinator(CoordinatorType.GROUP, group, response)

    def add_transaction_coordinator(
        self, transactional_id: str, response: FindCoordinatorResponse
    ) -> int | None:
        """Record a FindCoordinator (key type 1) answer; node id, or None on error."""
        return self.add_coordinator(CoordinatorType.TRANSACTION, transactional_id, response)

    def add_coordinator(
        self, key_type: int, key: str, response: FindCoordinatorResponse
    ) -> int | None:
        """Record a FindCoordinator answer for ``key`` of ``key_type`` (0 group, 1 txn)."""
        entry: FindCoordinatorResponse | Coordinator = response
        coordinators = response.coordinators
        if coordinators:  # v4+ (KIP-699): one entry per key
            matches = [c for c in coordinators if c.key == key]
            if not matches:
                return None
            entry = matches[0]
        if entry.error_code or entry.node_id < 0:
            self._coordinators.pop((key_type, key), None)
            return None
        node_id: int = entry.node_id
        self._coordinator_brokers[node_id] = BrokerMetadata(
            node_id=node_id, host=entry.host, port=entry.port
        )
        self._coordinators[(key_type, key)] = node_id
        return node_id

    @staticmethod
    def coordinator_error_code(key: str, response: FindCoordinatorResponse) -> int:
        """The error code of ``key``'s entry in a FindCoordinator answer (0: none)."""
        coordinators = response.coordinators
        if coordinators:  # v4+ (KIP-699): one entry per key
            for entry in coordinators:
                if entry.key == key:
                    return int(entry.error_code)
            return 0
        return int(getattr(response, "error_code", ErrorCode.NONE) or ErrorCode.NONE)

    def coordinator_for_group(self, group: str) -> int | None:
        return self._coordinators.get((CoordinatorType.GROUP, group))

    def coordinator_for_transaction(self, transactional_id: str) -> int | None:
        return self._coordinators.get((CoordinatorType.TRANSACTION, transactional_id))

    def is_coordinator(self, node_id: int) -> bool:
        return node_id in self._coordinators.values()

    def mark_coordinator_unknown(self, key_type: int, key: str) -> None:
        """Forget a coordinator (after NOT_COORDINATOR and friends)."""
        self._coordinators.pop((key_type, key), None)

    # -- listeners and copies -----------------------------------------------------
    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(cluster)`` after every successful update."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        try:
            self._listeners.remove(listener)
        except ValueError:
            raise LocalProtocolError("remove_listener: that listener was never added") from None

    def with_partitions(self, partitions_to_add: Iterable[PartitionMetadata]) -> ClusterMetadata:
        """A copy with extra partitions (e.g. for a partitioner to test against)."""
        clone = copy.copy(self)
        clone._topics = {
            name: _Topic(info.name, info.topic_id, info.internal, dict(info.partitions))
            for name, info in self._topics.items()
        }
        clone._listeners = []
        clone._rng = None  # a snapshot never draws from its owner's rng
        clone._waiters = []
        clone._in_flight = None
        clone._finished = []
        for meta in partitions_to_add:
            info = clone._topics.setdefault(meta.topic, _Topic(name=meta.topic))
            info.partitions[meta.partition] = meta
        return clone

    def __repr__(self) -> str:
        return (
            f"ClusterMetadata(brokers={len(self._brokers)}, topics={len(self._topics)}, "
            f"cluster_id={self.cluster_id!r}, controller={self.controller_id})"
        )


def _same_topic(old: _Topic | None, new: _Topic) -> bool:
    # A recreated topic (new id, KIP-516) restarts its epochs: never compare across ids.
    if old is None:
        return False
    return old.topic_id is None or new.topic_id is None or old.topic_id == new.topic_id


def _topic_failure(
    code: int, topic: str, source: str | None, node_id: int | None = None
) -> BrokerError | None:
    """A non-retriable topic error as an exception naming code, broker and topic."""
    cls = error_class(code)
    if cls is None or cls.retriable:
        return None
    sender = source or "the broker"
    unknown = "unknown " if issubclass(cls, UnknownErrorCodeError) else ""
    error = cls(f"{unknown}error code {code} from {sender} for topic {topic!r}")
    error.node_id = node_id
    return error

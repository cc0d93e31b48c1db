"""What the consumer knows about topics: cluster metadata plus a full listing.

Theory of operation
-------------------
:class:`TopicView` answers the consumer's questions about topics from the
client core's metadata: a partition's leader and leader epoch, a topic's id
(OffsetCommit/OffsetFetch v10 and Fetch v13 name topics by id) or name,
partition counts for a classic group leader's assignment. What metadata
does not know yet is asked for (the client tracks the topic from then on)
and the answer is "not yet" (None).

A pattern subscription needs every topic of the cluster, which tracked
metadata does not give: :class:`PatternListing` sends a Metadata request
for all topics, keeps the answer in :attr:`TopicView.listing` (ids and
partition counts of topics not tracked yet) and hands the matching names
to its owner (``re.match``: a name matches when the pattern matches from
its start, as kafka-python and aiokafka match; end it with ``$`` for the
whole name, as Java's ``matches()``); it lists again every ``metadata_max_age_ms``
(``retry_backoff_ms`` after a failure). Its timer is the ``LISTING`` key in
the owner's deadlines.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Protocol

from kafkacore.client.core import DEFAULT_LANE
from kafkacore.client.metadata import ClusterMetadata, TopicPartition
from kafkacore.client.routing import AnyNode
from kafkacore.client.stack import Answer, Send
from kafkacore.errors import InvalidArgumentError
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.error_codes import error_class
from kafkacore.timers import Deadlines

__all__ = ["LISTING", "MetadataClient", "PatternListing", "TopicView", "compile_pattern"]

_NO_ID = uuid.UUID(int=0)

#: Deadline key of the next full topic listing (pattern subscriptions).
LISTING = "listing"


class MetadataClient(Protocol):
    """The part of :class:`~kafkacore.client.core.KafkaClientCore` topics need."""

    cluster: ClusterMetadata

    @property
    def topics(self) -> frozenset[str]: ...

    def set_topics(self, topics: Iterable[str], *, now: float) -> Any: ...

    def request_metadata_update(self, *, now: float) -> Any: ...


class TopicView:
    """Topic and partition facts for the consumer's machines."""

    def __init__(self, client: MetadataClient) -> None:
        self._client = client
        #: The last full listing: name -> (topic id, partition count, internal).
        self.listing: dict[str, tuple[uuid.UUID, int, bool]] = {}

    @property
    def cluster(self) -> ClusterMetadata:
        return self._client.cluster

    def refresh(self, now: float) -> None:
        """Ask for fresh metadata (a leader moved, an answer was incomplete)."""
        self._client.request_metadata_update(now=now)

    def track(self, topics: Iterable[str], now: float) -> None:
        """Make sure metadata covers ``topics``."""
        missing = set(topics) - self._client.topics
        if missing:
            self._client.set_topics(self._client.topics | missing, now=now)

    def unknown_tracked(self) -> bool:
        """True while a tracked topic is neither described nor known to fail."""
        cluster = self.cluster
        return any(
            cluster.partitions_for_topic(t) is None and cluster.topic_error(t) is None
            for t in self._client.topics
        )

    def undescribed(self, topics: Iterable[str]) -> bool:
        """True while one of ``topics`` has no partitions in metadata (not created
        yet, being created: LEADER_NOT_AVAILABLE, or gone)."""
        cluster = self.cluster
        return any(not cluster.partitions_for_topic(t) for t in topics)

    def leader(self, tp: TopicPartition) -> int | None:
        """The leader's node id, None while unknown."""
        leader = self.cluster.leader_for_partition(tp)
        return leader if leader is not None and leader >= 0 else None

    def leader_epoch(self, tp: TopicPartition) -> int | None:
        return self.cluster.leader_epoch_for_partition(tp)

    def by_leader(
        self, query: dict[TopicPartition, int]
    ) -> dict[int | None, dict[TopicPartition, int]]:
        """``query`` split by leader; None holds the partitions without one."""
        out: dict[int | None, dict[TopicPartition, int]] = {}
        for tp, value in query.items():
            out.setdefault(self.leader(tp), {})[tp] = value
        return out

    def ids_ready(self, topics: Iterable[str], now: float) -> bool:
        """True when every topic's id is known (requests that name topics by id
        can be built) or the topic is known not to exist; else ask metadata."""
        cluster = self.cluster
        missing = {
            t
            for t in topics
            if self.topic_id(t) is None
            and cluster.partitions_for_topic(t) is None
            and cluster.topic_error(t) is None
        }
        if missing:
            self.track(missing, now)
        return not missing

    def topic_id(self, topic: str) -> uuid.UUID | None:
        tid = self.cluster.topic_id(topic)
        if tid is None or tid == _NO_ID:
            known = self.listing.get(topic)
            return None if known is None else known[0]
        return tid  # type: ignore[no-any-return]

    def topic_id_or_zero(self, topic: str) -> uuid.UUID:
        """The id, or the zero id of requests that name the topic instead."""
        return self.topic_id(topic) or _NO_ID

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        name = self.cluster.topic_name(topic_id)
        if name is None:
            for n, (tid, _, _) in self.listing.items():
                if tid == topic_id:
                    return n
        return name

    def partition_counts(self, topics: frozenset[str], now: float) -> dict[str, int] | None:
        """Partitions per topic for a group leader's assignment; None (and a
        metadata request) while a topic is unknown. A failed topic counts 0."""
        counts: dict[str, int] = {}
        unknown = set()
        for t in topics:
            parts = self.cluster.partitions_for_topic(t)
            if parts is not None:
                counts[t] = len(parts)
            elif t in self.listing:
                counts[t] = self.listing[t][1]
            elif self.cluster.topic_error(t) is not None:
                counts[t] = 0
            else:
                unknown.add(t)
        if unknown:
            self.track(unknown, now)
            return None
        return counts

    def problems(self, topics: Iterable[str]) -> str:
        """What metadata says is wrong with ``topics``, for error messages."""
        found = []
        for topic in sorted(topics):
            code = self.cluster.topic_error(topic)
            if code:
                # Words for a message, not an error: the metadata keeps a
                # topic's code, not which broker answered it.
                cls = error_class(code)
                found.append(f"{topic}: {cls.name if cls is not None else code}")
        return f" (metadata: {'; '.join(found)})" if found else ""


class PatternListing:
    """Lists every topic for a pattern subscription; see the module docstring."""

    def __init__(
        self,
        topics: TopicView,
        *,
        send: Send,
        deadlines: Deadlines[Hashable],
        exclude_internal: bool,
        metadata_max_age_ms: int,
        retry_backoff_ms: int,
        on_matched: Callable[[frozenset[str], float], None],
    ) -> None:
        self._topics = topics
        self._send = send
        self._deadlines = deadlines
        self._exclude_internal = exclude_internal
        self._max_age = metadata_max_age_ms / 1000
        self._backoff = retry_backoff_ms / 1000
        self._on_matched = on_matched
        self.pattern: re.Pattern[str] | None = None
        self.in_flight = False

    def follow(self, pattern: re.Pattern[str] | None, now: float) -> None:
        """List for ``pattern`` now (None: stop listing)."""
        self.pattern = pattern
        if pattern is None:
            self._deadlines.cancel(LISTING)
        else:
            self._deadlines.set(LISTING, now)

    def maybe_list(self, now: float) -> bool:
        """Send the listing when due; True if it went out."""
        at = self._deadlines.get(LISTING)
        if at is None or now < at:
            return False
        return self.on_due(now)

    def on_due(self, now: float) -> bool:
        """The ``LISTING`` deadline came; a listing in flight makes this one moot."""
        self._deadlines.cancel(LISTING)
        if self.in_flight:
            return False
        self.in_flight = True
        request = m.MetadataRequest(topics=None, allow_auto_topic_creation=False)
        self._send(request, self._on_response, now=now, target=AnyNode(), lane=DEFAULT_LANE)
        return True

    def _on_response(self, resp: Answer[m.MetadataResponse], now: float) -> None:
        self.in_flight = False
        pattern = self.pattern
        if pattern is None:
            return
        if isinstance(resp, BaseException):
            self._deadlines.set(LISTING, now + self._backoff)
            return
        self._deadlines.set(LISTING, now + self._max_age)
        listing: dict[str, tuple[uuid.UUID, int, bool]] = {}
        for topic in resp.topics:
            if topic.error_code == ErrorCode.NONE and topic.name:
                listing[topic.name] = (topic.topic_id, len(topic.partitions), topic.is_internal)
        self._topics.listing = listing
        matched = frozenset(
            name
            for name, (_, _, internal) in listing.items()
            if pattern.match(name) and not (internal and self._exclude_internal)
        )
        if matched:
            self._topics.track(matched, now)
        self._on_matched(matched, now)


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """A subscription pattern, compiled; LocalProtocolError naming a bad one."""
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise InvalidArgumentError(f"subscribe: pattern {pattern!r} is invalid: {exc}") from None

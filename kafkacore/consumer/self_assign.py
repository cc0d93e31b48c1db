"""A subscription without a group: the consumer assigns itself every partition.

Theory of operation
-------------------
kafka-python and aiokafka let a consumer with ``group_id=None`` subscribe
to topics or to a pattern (the Java client does not). No coordinator hands
out partitions, so :class:`SelfAssignment` does: the consumer follows every
partition of each subscribed topic that cluster metadata describes, and
works the set out again whenever something could change it:

* a metadata answer (the consumer tracks the subscribed topics, so their
  partition counts come with every refresh): a topic created after the
  subscription is picked up, a partition added is followed, a topic
  deleted is dropped;
* a pattern's topic listing (:class:`~kafkacore.consumer.topics.PatternListing`,
  every ``metadata_max_age_ms``): the matching names become the
  subscribed topics (``subscription()``).

New partitions start from the reset policy (``auto_offset_reset``);
partitions kept keep their positions; nothing is committed (no group).
While a subscribed topic is missing from metadata, a refresh is asked for
after each answer, which the client core spaces out with its retry backoff
(``retry_backoff_ms`` doubling up to ``retry_backoff_max_ms``), so a topic
created later is found within about a second (issue 21: it never was).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kafkacore.client.metadata import TopicPartition
from kafkacore.consumer.positions import SubscriptionMode, SubscriptionState
from kafkacore.consumer.topics import PatternListing, TopicView

__all__ = ["SelfAssignment"]


class SelfAssignment:
    """See the module docstring."""

    __slots__ = ("_group", "_listing", "_subs", "_topics", "active")

    def __init__(
        self,
        *,
        subs: SubscriptionState,
        topics: TopicView,
        listing: PatternListing,
        group: Callable[[frozenset[str], float], None],
    ) -> None:
        self._subs = subs
        self._topics = topics
        self._listing = listing
        #: Where a listing's names go when the subscription is a group's.
        self._group = group
        #: True while the consumer's subscription is group-less.
        self.active = False

    def subscribe(
        self, topics: frozenset[str] | None, pattern: re.Pattern[str] | None, now: float
    ) -> None:
        """Follow ``topics`` (or whatever ``pattern`` matches) from now on."""
        self.active = True
        self._subs.mode = SubscriptionMode.SUBSCRIBED
        self._listing.follow(pattern, now)
        self._set_topics(frozenset() if topics is None else topics, now)

    def stop(self) -> None:
        """The subscription ended (unsubscribe, assign): nothing more to do here."""
        self.active = False

    def pattern_matched(self, matched: frozenset[str], now: float) -> None:
        """A listing found ``matched`` for the pattern (a group's member takes the
        names when the subscription is a group's)."""
        if self.active:
            self._set_topics(matched, now)
        else:
            self._group(matched, now)

    def on_metadata(self, now: float) -> None:
        """Metadata changed: follow the partitions it now describes."""
        if not self.active:
            return
        self._follow(now)

    def _set_topics(self, topics: frozenset[str], now: float) -> None:
        self._subs.topics = topics
        self._topics.track(topics, now)
        self._follow(now)

    def _follow(self, now: float) -> None:
        cluster = self._topics.cluster
        wanted: set[TopicPartition] = set()
        missing = False
        for topic in self._subs.topics:
            parts = cluster.partitions_for_topic(topic)
            if not parts:  # unknown, or known only by its error
                missing = True
                continue
            wanted.update(TopicPartition(topic, p) for p in parts)
        for tp in [tp for tp in self._subs.parts if tp not in wanted]:
            self._subs.remove(tp)
        for tp in sorted(wanted):
            self._subs.add(tp)
        if missing:
            self._topics.refresh(now)

"""Driver-side lookups of a query: which partitions it reads, and their offsets.

Theory of operation
-------------------
:class:`SourceAdmin` answers what the JVM connector asks its ``Admin``
client (``KafkaOffsetReaderAdmin``), through kafkacore's selector transport:

* partitions: one Metadata request (``allow_auto_topic_creation`` off) per
  question, sent with a :class:`~kafkacore.transports.selector.KafkaClient`. ``subscribe``
  reads the named topics, ``subscribePattern`` every non-internal topic whose
  name contains a match, ``assign`` the named partitions that exist;
* offsets: earliest, latest (the high watermark, or the last stable offset
  under ``read_committed``) and by timestamp, through the public lookups of
  a :class:`~kafkacore.transports.selector.KafkaConsumer` (ListOffsets to each
  leader, retried across leader moves by the consumer core).

Each question is retried as the connector does (``fetchOffset.numRetries``
attempts, ``fetchOffset.retryIntervalMs`` apart, with fresh clients after a
failure). Brokers that stop answering a query that has reached them (a
restart) are waited for up to ``kafka.default.api.timeout.ms`` per attempt,
as a Java admin call waits; a bootstrap address that never answered fails
after one ``kafka.request.timeout.ms`` (30 s by default: the client waits
that long for a cluster starting up, issue 26), where the connector waits
minutes. A
topic that does not exist fails the first question with an error naming
the option, after those retries (a topic being created may be
unknown to one broker for a moment). Later, in a stream, a topic that
disappeared is data loss, decided by the caller.

The clients are made on first use and closed by :meth:`close`; nothing here
survives pickling (the reader objects that hold a ``SourceAdmin`` drop it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from kafkacore.client import AnyNode, ClientConfig, TopicPartition
from kafkacore.errors import KafkaConnectionError, KafkaTimeoutError, NoBrokersAvailable
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.error_codes import error_for_code
from kafkacore.protocol.messages import MetadataRequest
from kafkacore.protocol.messages.metadata_request import MetadataRequestTopic
from kafkacore.transports.selector import KafkaClient, KafkaConsumer

from ._offsets import (
    EARLIEST,
    LATEST,
    Earliest,
    GlobalTimestamp,
    Latest,
    NoMatchStrategy,
    OffsetLimit,
    SourceOptionError,
    SpecificOffsets,
    SpecificTimestamps,
)
from ._source_options import Assign, SourceOptions, Subscribe, SubscribePattern

__all__ = ["SourceAdmin", "UnknownTopicError"]

_log = logging.getLogger("pyspark_kafkacore")
T = TypeVar("T")

_CLIENT_FIELDS = frozenset(ClientConfig.__dataclass_fields__)


class UnknownTopicError(SourceOptionError):
    """A topic named by ``subscribe`` or ``assign`` does not exist."""


def _name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def _names(tps: Iterable[TopicPartition]) -> str:
    return "[" + ", ".join(_name(tp) for tp in sorted(tps)) + "]"


class SourceAdmin:
    """Partition and offset lookups for one query (see the module docstring)."""

    def __init__(self, options: SourceOptions, *, client_id: str | None = None) -> None:
        self.options = options
        self._client_id = client_id
        self._client: KafkaClient | None = None
        self._consumer: KafkaConsumer | None = None
        #: A lookup of this query has been answered (see _retrying).
        self._reached = False
        self._api_timeout_s = int(options.kafka.get("default_api_timeout_ms", 60_000)) / 1000

    # -- life -------------------------------------------------------------
    def _kafka(self) -> dict[str, Any]:
        kafka = dict(self.options.kafka)
        if self._client_id is not None and "client_id" not in kafka:
            kafka["client_id"] = self._client_id
        return kafka

    def client(self) -> KafkaClient:
        if self._client is None:
            kafka = {k: v for k, v in self._kafka().items() if k in _CLIENT_FIELDS}
            self._client = KafkaClient(**kafka)
        return self._client

    def consumer(self) -> KafkaConsumer:
        if self._consumer is None:
            kafka = self._kafka()
            # Metadata of every topic from the bootstrap request on (one consumer
            # per query, on the driver): see start_lookups().
            kafka.setdefault("metadata_all_topics", True)
            self._consumer = KafkaConsumer(
                **kafka, enable_auto_commit=False, auto_offset_reset="none"
            )
        return self._consumer

    def start_lookups(self) -> None:
        """Make the lookup consumer now, so it bootstraps while the partitions are
        listed: a kafkacore lookup that finds no leader yet waits ``retry_backoff_ms``
        (100 ms) before trying again, twice on a new consumer, instead of going on
        when the metadata arrives."""
        self.consumer()

    def close(self) -> None:
        client, consumer = self._client, self._consumer
        self._client = self._consumer = None
        if consumer is not None:
            consumer.close(timeout=5.0, autocommit=False)
        if client is not None:
            client.close()

    def _retrying(self, what: str, fn: Callable[[], T]) -> T:
        """The connector's ``withRetries``: a few attempts, fresh clients between them.

        Once this query has reached the cluster, an attempt that finds no broker
        (a restart, a network cut) keeps trying for ``kafka.default.api.timeout.ms``
        before it counts, as a Java admin call waits that long; a cluster never
        reached (a wrong address) fails after the attempts alone.
        """
        attempts = self.options.fetch_offset_num_retries
        attempt, outage_since = 1, None
        while True:
            try:
                out = fn()
            except SourceOptionError as exc:
                if not isinstance(exc, UnknownTopicError) or attempt == attempts:
                    raise
                error: BaseException = exc
            except Exception as exc:
                error = exc
                if not self._reached and isinstance(exc, NoBrokersAvailable):
                    # Never reached in a whole request timeout (issue 26: the client
                    # waited that long for the cluster to come up): a wrong address.
                    raise
                if self._reached and isinstance(exc, KafkaConnectionError | KafkaTimeoutError):
                    now = time.monotonic()
                    outage_since = now if outage_since is None else outage_since
                    if now - outage_since < self._api_timeout_s:
                        _log.warning("%s: no broker answers, trying again: %s", what, exc)
                        self._pause()
                        continue
                if attempt == attempts:
                    raise
            else:
                self._reached = True
                return out
            _log.warning("%s failed (attempt %d of %d): %s", what, attempt, attempts, error)
            attempt, outage_since = attempt + 1, None
            self._pause()

    def _pause(self) -> None:
        time.sleep(self.options.fetch_offset_retry_interval_ms / 1000)
        self.close()

    # -- partitions ------------------------------------------------------------
    def _metadata(self, topics: list[str] | None) -> dict[str, set[int] | None]:
        """``{topic: partitions}`` (None: unknown); raises on other topic errors."""
        request = MetadataRequest(
            topics=None if topics is None else [MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=False,
        )
        response = self.client().send(request, target=AnyNode())
        out: dict[str, set[int] | None] = {}
        for topic in response.topics:
            if topic.name is None or (topic.is_internal and topics is None):
                continue
            if topic.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                out[topic.name] = None
                continue
            if topic.error_code != ErrorCode.NONE:
                error = error_for_code(topic.error_code)
                raise RuntimeError(f"metadata of topic {topic.name!r}: {error}")
            if topic.is_internal:
                continue
            out[topic.name] = {p.partition_index for p in topic.partitions}
        return out

    def partitions(self, *, missing_ok: bool = False) -> set[TopicPartition]:
        """The partitions the query reads now.

        With ``missing_ok`` a topic that does not exist reads nothing;
        without it, it raises :class:`UnknownTopicError` naming the option.
        """
        return self._retrying("listing partitions", lambda: self._partitions(missing_ok))

    def _partitions(self, missing_ok: bool) -> set[TopicPartition]:
        strategy = self.options.strategy
        if isinstance(strategy, SubscribePattern):
            listing = self._metadata(None)
            return {
                TopicPartition(topic, p)
                for topic, parts in listing.items()
                if parts is not None and strategy.matches(topic)
                for p in parts
            }
        if isinstance(strategy, Subscribe):
            wanted = list(strategy.topics)
            option = "subscribe"
        else:
            assert isinstance(strategy, Assign)
            wanted = sorted({tp.topic for tp in strategy.partitions})
            option = "assign"
        listing = self._metadata(wanted)
        missing = sorted(t for t in wanted if listing.get(t) is None)
        if missing and not missing_ok:
            raise UnknownTopicError(
                f"option {option!r}: topic(s) {missing} do not exist on "
                f"{self.options.kafka.get('bootstrap_servers')}; create them or fix the name"
            )
        found = {TopicPartition(topic, p) for topic in wanted for p in (listing.get(topic) or ())}
        if isinstance(strategy, Assign):
            # Like the connector: assigned partitions that do not exist (yet) are left out.
            return found & set(strategy.partitions)
        return found

    # -- offsets -----------------------------------------------------------------
    def earliest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        wanted = sorted(set(tps))
        if not wanted:
            return {}
        got = self._retrying("earliest offsets", lambda: self.consumer().beginning_offsets(wanted))
        return {tp: off for tp, off in got.items() if off is not None}

    def _latest_once(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        got = self.consumer().end_offsets(tps)
        return {tp: off for tp, off in got.items() if off is not None}

    def latest(
        self,
        tps: Iterable[TopicPartition],
        known: Mapping[TopicPartition, int] | None = None,
    ) -> dict[TopicPartition, int]:
        """Latest offsets; when one is below ``known`` (KAFKA-7703, or a topic made
        again), ask again up to ``fetchOffset.numRetries`` times and keep the last."""
        wanted = sorted(set(tps))
        if not wanted:
            return {}
        attempts = self.options.fetch_offset_num_retries
        for attempt in range(1, attempts + 1):
            got = self._retrying("latest offsets", lambda: self._latest_once(wanted))
            behind = [
                (tp, known[tp], off) for tp, off in got.items() if known and known.get(tp, -1) > off
            ]
            if not behind or attempt == attempts:
                if behind:
                    _log.warning("latest offsets below known ones: %s", behind)
                return got
            time.sleep(self.options.fetch_offset_retry_interval_ms / 1000)
        raise AssertionError("unreachable")  # pragma: no cover

    def for_times(
        self,
        timestamps: Mapping[TopicPartition, int],
        *,
        starting: bool,
        no_match: NoMatchStrategy,
    ) -> dict[TopicPartition, int]:
        """First offset at or after each timestamp; no such offset: -1 (latest) at the
        end of a read, and at its start as ``startingOffsetsByTimestampStrategy`` says."""
        query = dict(timestamps)
        got = self._retrying(
            "offsets for timestamps", lambda: self.consumer().offsets_for_times(query)
        )
        out: dict[TopicPartition, int] = {}
        for tp, ts in sorted(query.items()):
            found = got.get(tp)
            if found is not None:
                out[tp] = found[0]
            elif starting and no_match == "error":
                raise SourceOptionError(
                    f"no offset matched timestamp {ts} in {_name(tp)}; set the option "
                    "'startingOffsetsByTimestampStrategy' to 'latest' to start at the end instead"
                )
            else:
                out[tp] = LATEST
        return out

    def resolve(self, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Bind -2/-1 to the current earliest/latest offsets; others stay as they are."""
        early = [tp for tp, off in offsets.items() if off == EARLIEST]
        late = [tp for tp, off in offsets.items() if off == LATEST]
        firsts = self.earliest(early)
        lasts = self.latest(late)
        out: dict[TopicPartition, int] = {}
        for tp, off in offsets.items():
            value = firsts.get(tp) if off == EARLIEST else lasts.get(tp) if off == LATEST else off
            if value is None:
                raise RuntimeError(f"no offset for {_name(tp)}: was the partition deleted?")
            out[tp] = value
        return out

    def bounds(
        self, limit: OffsetLimit, partitions: set[TopicPartition], *, starting: bool, option: str
    ) -> dict[TopicPartition, int]:
        """Per-partition offsets of a read boundary; earliest/latest stay -2/-1
        (``fetchPartitionOffsets``), timestamps are looked up."""
        if isinstance(limit, Earliest):
            return dict.fromkeys(partitions, EARLIEST)
        if isinstance(limit, Latest):
            return dict.fromkeys(partitions, LATEST)
        if isinstance(limit, SpecificOffsets):
            if set(limit.offsets) != partitions:
                raise SourceOptionError(
                    f"option {option!r} must give an offset for exactly the partitions read "
                    f"(-2 earliest, -1 latest): it names {_names(limit.offsets)}, the query "
                    f"reads {_names(partitions)}"
                )
            return dict(limit.offsets)
        if isinstance(limit, SpecificTimestamps):
            if set(limit.timestamps) != partitions:
                raise SourceOptionError(
                    f"option {option!r} must give a timestamp for exactly the partitions read: "
                    f"it names {_names(limit.timestamps)}, the query reads {_names(partitions)}"
                )
            return self.resolve(
                self.for_times(limit.timestamps, starting=starting, no_match=limit.no_match)
            )
        assert isinstance(limit, GlobalTimestamp)
        query = dict.fromkeys(partitions, limit.timestamp)
        return self.resolve(self.for_times(query, starting=starting, no_match=limit.no_match))

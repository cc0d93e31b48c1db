"""The fetcher: one Fetch per leader, fetch sessions, into the buffer.

Theory of operation
-------------------
Each step, :meth:`Fetcher.send_fetches` groups the fetchable partitions
(FETCHING, not paused, position known, nothing waiting in the buffer) by
leader and sends one Fetch to each leader that has none in flight and is
not backing off. Nothing is sent while the buffer is at its bound
(``fetch_buffer_bytes``). A partition whose leader or broker metadata does
not know yet triggers a metadata request. A leader whose fetchable
partitions were all caught up at their last answer (position at the high
watermark) while others of its partitions wait in the buffer is not asked
yet: that Fetch would long-poll ``fetch_max_wait_ms`` and, one Fetch being
in flight per leader, hold back the buffered partitions' next one. They go
out together once the buffer releases a partition.

Every leader has a :class:`~kafkacore.consumer.fetch_session.FetchSession`
(KIP-227): after the first full Fetch, requests name only what changed and
what to forget; a session error falls back to a full Fetch. Fetches use
their own lane (:data:`FETCH_LANE`): a broker answers one connection's
requests in order, and a long-polling Fetch must not hold up ListOffsets.

An answer is applied per partition, only if the partition still wants it
(same position, still FETCHING, nothing buffered): records go into the
buffer (and ``RecordsAvailable`` is emitted when it was empty), high
watermark and LSO are kept for ``lag``. OFFSET_OUT_OF_RANGE resets the
position, a diverging epoch (Fetch v12+, KIP-320) truncates it, a leader
that moved refreshes metadata and backs the leader off
(``retry_backoff_ms``, the :class:`NodeBackoff` deadline), and a
non-retriable error is raised by the next poll.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from functools import partial

from kafkacore.client.metadata import TopicPartition
from kafkacore.client.response_errors import broker_error
from kafkacore.client.routing import Node
from kafkacore.client.stack import Answer, Send
from kafkacore.consumer.buffer import FetchBuffer
from kafkacore.consumer.completed import CompletedFetch
from kafkacore.consumer.config import ConsumerConfig
from kafkacore.consumer.events import RecordsAvailable
from kafkacore.consumer.fetch_session import SESSION_ERRORS, FetchSession, PartitionFetch
from kafkacore.consumer.poll_errors import PollErrors
from kafkacore.consumer.positions import FetchState, PartitionState, SubscriptionState
from kafkacore.consumer.topics import TopicView
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import LEADER_MOVED, ErrorCode
from kafkacore.protocol.messages.fetch_request import FetchPartition, FetchTopic, ForgottenTopic
from kafkacore.protocol.messages.fetch_response import PartitionData
from kafkacore.timers import Deadlines

__all__ = ["FETCH_LANE", "Fetcher", "NodeBackoff"]

#: Fetches get their own connection: a broker answers one connection's
#: requests in order, and a long-polling Fetch must not hold up ListOffsets.
FETCH_LANE = "fetch"

Wanted = dict[TopicPartition, PartitionFetch]


@dataclass(frozen=True, slots=True)
class NodeBackoff:
    """Deadline key: no Fetch to ``node`` before it (its answer failed)."""

    node: int


class Fetcher:
    """Fetch requests per leader and their answers; see the module docstring."""

    def __init__(
        self,
        config: ConsumerConfig,
        *,
        subs: SubscriptionState,
        buffer: FetchBuffer,
        topics: TopicView,
        send: Send,
        deadlines: Deadlines[Hashable],
        errors: PollErrors,
        emit: Callable[[object], None],
        request_timeout_ms: int,
    ) -> None:
        self._config = config
        self._subs = subs
        self._buffer = buffer
        self._topics = topics
        self._send = send
        self._deadlines = deadlines
        self._errors = errors
        self._emit = emit
        self._timeout_ms = request_timeout_ms + config.fetch_max_wait_ms
        self._backoff = config.retry_backoff_ms / 1000
        self.sessions: dict[int, FetchSession] = {}
        #: Leaders with a Fetch in flight.
        self.in_flight: set[int] = set()

    # ------------------------------------------------------------- sending
    def send_fetches(self, now: float) -> bool:
        """One Fetch per ready leader; True if any went out."""
        if self._buffer.full:
            return False  # the prefetch bound: wait for poll to drain the buffer
        sent = False
        for node, parts in self._plan(now).items():
            if node in self.in_flight:
                continue
            at = self._deadlines.get(NodeBackoff(node))
            if at is not None and at > now:
                continue
            self._deadlines.cancel(NodeBackoff(node))
            self._fetch(node, parts, now)
            sent = True
        return sent

    def _plan(self, now: float) -> dict[int, Wanted]:
        """What to fetch from which leader (metadata asked for what lacks one)."""
        cluster = self._topics.cluster
        wanted: dict[int, Wanted] = {}
        need_metadata = False
        holding: set[int] = set()  # leaders with partitions waiting in the buffer
        news: set[int] = set()  # leaders with a partition that may have data now
        for tp, st in self._subs.fetchable():
            leader = self._topics.leader(tp)
            if self._buffer.holds(tp):
                if leader is not None and self._buffer.read_next(tp):
                    holding.add(leader)
                continue
            if leader is None or cluster.broker_metadata(leader) is None:
                need_metadata = True
                continue
            assert st.position is not None
            epoch = self._topics.leader_epoch(tp)
            wanted.setdefault(leader, {})[tp] = PartitionFetch(
                fetch_offset=st.position,
                current_leader_epoch=-1 if epoch is None else epoch,
                last_fetched_epoch=-1 if st.position_epoch is None else st.position_epoch,
                max_bytes=self._config.max_partition_fetch_bytes,
            )
            if st.high_watermark is None or st.position < st.high_watermark:
                news.add(leader)
        for leader in holding - news:
            # Every partition we could fetch from this leader was caught up at
            # its last answer, and others wait in the buffer: a Fetch now would
            # long-poll fetch_max_wait_ms and hold back the buffered partitions'
            # next Fetch (one in flight per leader). They go out together once
            # the buffer releases one (issue 12: the stall at a topic's end).
            wanted.pop(leader, None)
        if need_metadata:
            self._topics.track({tp.topic for tp in self._subs.parts}, now)
            if cluster.ttl(now=now) > 0:
                self._topics.refresh(now)
        return wanted

    def _fetch(self, node: int, parts: Wanted, now: float) -> None:
        cfg = self._config
        session = self.sessions.get(node)
        if session is None:
            session = self.sessions[node] = FetchSession(node)
        session_id, epoch, to_send, forgotten = session.build(parts)
        request = m.FetchRequest(
            replica_id=-1,
            max_wait_ms=cfg.fetch_max_wait_ms,
            min_bytes=cfg.fetch_min_bytes,
            max_bytes=cfg.fetch_max_bytes,
            isolation_level=1 if cfg.read_committed else 0,
            session_id=session_id,
            session_epoch=epoch,
            topics=self._topics_of(to_send),
            forgotten_topics_data=self._forgotten(forgotten),
            rack_id=cfg.client_rack or "",
        )
        self.in_flight.add(node)
        # A partial, not a closure: no Python frame between the client's
        # completion and _on_response on every Fetch answer (issue 12).
        done = partial(self._on_response, node, session, parts)
        self._send(
            request, done, now=now, target=Node(node), lane=FETCH_LANE, timeout_ms=self._timeout_ms
        )

    def _topics_of(self, to_send: Wanted) -> list[FetchTopic]:
        topics: dict[str, list[FetchPartition]] = {}
        for tp, pf in to_send.items():
            topics.setdefault(tp.topic, []).append(
                FetchPartition(
                    partition=tp.partition,
                    current_leader_epoch=pf.current_leader_epoch,
                    fetch_offset=pf.fetch_offset,
                    last_fetched_epoch=pf.last_fetched_epoch,
                    partition_max_bytes=pf.max_bytes,
                )
            )
        return [
            FetchTopic(topic=t, topic_id=self._topics.topic_id_or_zero(t), partitions=ps)
            for t, ps in topics.items()
        ]

    def _forgotten(self, forgotten: Iterable[TopicPartition]) -> list[ForgottenTopic]:
        gone: dict[str, list[int]] = {}
        for tp in forgotten:
            gone.setdefault(tp.topic, []).append(tp.partition)
        return [
            ForgottenTopic(topic=t, topic_id=self._topics.topic_id_or_zero(t), partitions=ps)
            for t, ps in gone.items()
        ]

    # ------------------------------------------------------------- answers
    def _on_response(
        self,
        node: int,
        session: FetchSession,
        parts: Wanted,
        resp: Answer[m.FetchResponse],
        now: float,
    ) -> None:
        self.in_flight.discard(node)
        if isinstance(resp, BaseException):
            session.reset()
            self._back_off(node, now)
            self._topics.refresh(now)
            return
        top = resp.error_code
        session.on_response(top, resp.session_id)
        if top != ErrorCode.NONE:
            if top not in SESSION_ERRORS:
                self._back_off(node, now)
            return
        was_empty = not self._buffer
        refresh = False
        for topic in resp.responses:
            name = topic.topic or self._topics.topic_name(topic.topic_id)
            if name is None:
                refresh = True
                continue
            for pd in topic.partitions:
                tp = TopicPartition(name, pd.partition_index)
                st = self._wanting(tp, parts.get(tp))
                if st is None:
                    continue
                if pd.error_code == ErrorCode.NONE:
                    st.fetched_at = now
                    self._on_data(tp, st, pd)  # the common case, straight to the buffer
                else:
                    refresh = self._on_partition_error(tp, pd.error_code, session, node) or refresh
        if refresh:
            self._topics.refresh(now)
            self._back_off(node, now)
        if was_empty and self._buffer:
            self._emit(RecordsAvailable())

    def _wanting(self, tp: TopicPartition, asked: PartitionFetch | None) -> PartitionState | None:
        """The partition's state if it still wants this answer (None: stale)."""
        st = self._subs.parts.get(tp)
        if (
            asked is None
            or st is None
            or st.state is not FetchState.FETCHING
            or st.position != asked.fetch_offset
            or self._buffer.holds(tp)
        ):
            return None  # seeked, revoked or paused meanwhile
        return st

    def _on_partition_error(
        self, tp: TopicPartition, code: int, session: FetchSession, node: int
    ) -> bool:
        """Apply one partition's error code; True if metadata must be refreshed."""
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            self._subs.out_of_range(tp)
        elif code in LEADER_MOVED:
            if code == ErrorCode.FENCED_LEADER_EPOCH:
                session.reset()
            return True
        else:
            cause = broker_error(code, f"fetching {tp}", node_id=node)
            if cause is not None and not cause.retriable:
                self._errors.note(cause)
        return False

    def _on_data(self, tp: TopicPartition, st: PartitionState, pd: PartitionData) -> None:
        st.high_watermark = pd.high_watermark
        if pd.last_stable_offset >= 0:
            st.last_stable_offset = pd.last_stable_offset
        if pd.log_start_offset >= 0:
            st.log_start_offset = pd.log_start_offset
        div = pd.diverging_epoch
        if div is not None and div.epoch >= 0 and div.end_offset >= 0:
            # KIP-320 through Fetch v12+: our last fetched epoch ended earlier.
            self._subs.truncated(tp, div.end_offset, div.epoch)
            return
        if not pd.records:
            return
        cfg = self._config
        aborted = None
        if cfg.read_committed and pd.aborted_transactions:
            aborted = [(a.producer_id, a.first_offset) for a in pd.aborted_transactions]
        assert st.position is not None
        self._buffer.add(
            CompletedFetch(
                tp,
                st.position,
                pd.records,
                aborted=aborted,
                read_committed=cfg.read_committed,
                check_crc=cfg.check_crcs,
            )
        )

    def _back_off(self, node: int, now: float) -> None:
        self._deadlines.set(NodeBackoff(node), now + self._backoff)

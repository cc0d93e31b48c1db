"""Share sessions and their requests: ShareFetch and ShareAcknowledge (KIP-932).

Theory of operation
-------------------
A share consumer keeps one *share session* per partition leader. The first
ShareFetch (session epoch 0) opens it with every assigned partition the
leader leads; each answered request moves the epoch on by one (wrapping to
1), and later requests only name what changed: partitions added, partitions
to forget, and partitions whose acknowledgements ride along. Only one
request per session is in flight, so the epochs stay in order.

Acknowledgements leave in one of two ways: piggy-backed on the next
ShareFetch to that leader, or in a standalone ShareAcknowledge when no
fetch is about to go (the user is not polling, the buffer still holds that
leader's records, or a commit asked for them now). A session at epoch 0
cannot carry acknowledgements, so acknowledgements of a session that was
lost (an error, a lost connection) fail with the cause: the broker takes
those records back when their locks run out and delivers them again.

Each answer says how long the broker locks acquired records
(``acquisition_lock_timeout_ms``); the buffer (:mod:`kafkacore.share.buffer`)
drops records whose lock ran out before ``poll`` got to them.

Closing sends each open session a final ShareAcknowledge (epoch -1) with
the acknowledgements left, which also lets the broker release everything
the session still holds at once.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeGuard, TypeVar

from kafkacore.client.metadata import TopicPartition
from kafkacore.client.response_errors import broker_error
from kafkacore.client.routing import Node
from kafkacore.client.stack import Answer, R, Send
from kafkacore.errors import KafkaError, RemoteProtocolError
from kafkacore.group.base import answered_from
from kafkacore.protocol import messages as m
from kafkacore.protocol._base import Request
from kafkacore.protocol.enums import LEADER_MOVED, ErrorCode
from kafkacore.protocol.messages import share_acknowledge_request as ack_req
from kafkacore.protocol.messages import share_fetch_request as fetch_req
from kafkacore.share.acks import Acknowledgements, AckRange, AcquisitionLockTimedOut
from kafkacore.share.buffer import AcquiredBatch, ShareBuffer, acquired_records
from kafkacore.share.config import ShareConsumerConfig
from kafkacore.timers import Deadlines

__all__ = ["FINAL_EPOCH", "SHARE_LANE", "ShareFetcher", "ShareSession", "ShareSessionLost"]

#: The two answers a share session gets: fetches and acknowledgements.
_Top = TypeVar("_Top", m.ShareFetchResponse, m.ShareAcknowledgeResponse)

SHARE_LANE = "share-fetch"
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_MAX_EPOCH = 2**31 - 1


class ShareSessionLost(KafkaError):
    """The share session that acquired these records is gone; the broker
    delivers them again once their locks run out."""


class Topics(Protocol):
    """The metadata the fetcher needs (the consumer's :class:`TopicView`)."""

    def leader(self, tp: TopicPartition) -> int | None: ...
    def topic_id(self, topic: str) -> uuid.UUID | None: ...
    def topic_name(self, topic_id: uuid.UUID) -> str | None: ...
    def refresh(self, now: float) -> None: ...


#: Told (partition, offsets, error, now) when acknowledgements are answered.
Settled = Callable[[TopicPartition, frozenset[int], BaseException | None, float], None]


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= _MAX_EPOCH else epoch + 1


@dataclass(slots=True)
class ShareSession:
    """One leader's session: its epoch and the partitions it holds."""

    node: int
    epoch: int = INITIAL_EPOCH
    partitions: set[TopicPartition] = field(default_factory=set)
    in_flight: bool = False


@dataclass(slots=True)
class _Sent:
    """What one request carried, to read its answer with."""

    session: ShareSession
    epoch: int
    at: float
    acks: dict[TopicPartition, frozenset[int]]
    added: frozenset[TopicPartition] = frozenset()
    forgotten: frozenset[TopicPartition] = frozenset()


class ShareFetcher:
    """Share sessions per leader; see the module docstring."""

    def __init__(
        self,
        config: ShareConsumerConfig,
        *,
        send: Send,
        topics: Topics,
        acks: Acknowledgements,
        buffer: ShareBuffer,
        member_id: Callable[[], str],
        on_settled: Settled,
        request_timeout_ms: int,
    ) -> None:
        self._cfg = config
        self._send = send
        self._topics = topics
        self._acks = acks
        self._buffer = buffer
        self._member_id = member_id
        self._on_settled = on_settled
        self._timeout_ms = request_timeout_ms + config.fetch_max_wait_ms
        self.sessions: dict[int, ShareSession] = {}
        #: Which session acquired a partition's records (its acknowledgements go there).
        self.owner: dict[TopicPartition, int] = {}
        #: Per-leader backoff after a failed request.
        self.deadlines: Deadlines[int] = Deadlines()
        self.lock_ms: int | None = None
        self.closing = False

    @property
    def closed(self) -> bool:
        return self.closing and not self.sessions

    def in_flight(self) -> bool:
        return any(s.in_flight for s in self.sessions.values())

    # ------------------------------------------------------------------- work
    def work(self, assigned: frozenset[TopicPartition], *, want_records: bool, now: float) -> bool:
        """Send what is due: fetches, acknowledgements, final acknowledgements."""
        self._expire_backoffs(now)
        self._fail_orphan_acks(now)
        wanted: dict[int, set[TopicPartition]] = {}
        for tp in assigned:
            node = self._topics.leader(tp)
            if node is not None:
                wanted.setdefault(node, set()).add(tp)
        sent = False
        for node in sorted(set(wanted) | set(self.sessions)):
            if node in self.deadlines:
                continue
            session = self.sessions.setdefault(node, ShareSession(node))
            if session.in_flight:
                continue
            desired = wanted.get(node, set())
            if self.closing:
                sent |= self._close_session(session, now)
            elif want_records and desired and not self._buffer.holds_from(node):
                self._fetch(session, desired, now)
                sent = True
            elif session.epoch > 0 and self._ack_tps(session):
                self._acknowledge(session, session.epoch, now)
                sent = True
        return sent

    def _expire_backoffs(self, now: float) -> None:
        self.deadlines.pop_due(now)  # a leader whose backoff is over may be asked again

    def _ack_tps(self, session: ShareSession) -> list[TopicPartition]:
        return [
            tp
            for tp, node in self.owner.items()
            if node == session.node and self._acks.has_pending((tp,))
        ]

    def _take_acks(
        self, tps: Iterable[TopicPartition], now: float
    ) -> tuple[dict[TopicPartition, list[AckRange]], dict[TopicPartition, frozenset[int]]]:
        """Pending acknowledgements of ``tps`` for one request; those whose lock
        ran out are settled at once instead (the broker would refuse them)."""
        ranges: dict[TopicPartition, list[AckRange]] = {}
        offsets: dict[TopicPartition, frozenset[int]] = {}
        for tp in tps:
            batch, taken, expired = self._acks.part(tp).take(now)
            if batch:
                ranges[tp], offsets[tp] = batch, taken
            if expired:
                self._settle(tp, expired, _timed_out(tp, expired), now)
        return ranges, offsets

    def _fail_orphan_acks(self, now: float) -> None:
        """Acknowledgements whose session is gone cannot be sent (see the docstring)."""
        for part in self._acks:
            if not part.pending:
                continue
            session = self.sessions.get(self.owner.get(part.tp, -(2**31)))
            if session is None or (session.epoch == INITIAL_EPOCH and not session.in_flight):
                _, taken, expired = part.take(now)
                self._settle(part.tp, taken | expired, _lost(part.tp), now)

    # ---------------------------------------------------------------- requests
    def _fetch(self, session: ShareSession, desired: set[TopicPartition], now: float) -> None:
        opening = session.epoch == INITIAL_EPOCH
        if opening:
            session.partitions.clear()
        ranges, offsets = ({}, {}) if opening else self._take_acks(self._ack_tps(session), now)
        added = frozenset(desired - session.partitions)
        forgotten = frozenset(session.partitions - desired - set(ranges))
        by_topic: dict[str, list[fetch_req.FetchPartition]] = {}
        for tp in sorted(added | set(ranges)):
            by_topic.setdefault(tp.topic, []).append(
                fetch_req.FetchPartition(
                    partition_index=tp.partition,
                    acknowledgement_batches=[_fetch_batch(r) for r in ranges.get(tp, ())],
                )
            )
        gone: dict[str, list[int]] = {}
        for tp in sorted(forgotten):
            gone.setdefault(tp.topic, []).append(tp.partition)
        cfg = self._cfg
        request = m.ShareFetchRequest(
            group_id=self._cfg.group_id,
            member_id=self._member_id(),
            share_session_epoch=session.epoch,
            max_wait_ms=cfg.fetch_max_wait_ms,
            min_bytes=cfg.fetch_min_bytes,
            max_bytes=cfg.fetch_max_bytes,
            max_records=cfg.max_poll_records,
            batch_size=cfg.max_poll_records,
            topics=[
                fetch_req.FetchTopic(topic_id=self._id(t), partitions=ps)
                for t, ps in by_topic.items()
            ],
            forgotten_topics_data=[
                fetch_req.ForgottenTopic(topic_id=self._id(t), partitions=ps)
                for t, ps in gone.items()
            ],
        )
        for tp in added:
            self.owner[tp] = session.node
        sent = _Sent(session, session.epoch, now, offsets, added, forgotten)
        self._go(session, request, sent, self._on_fetch, now)

    def _acknowledge(self, session: ShareSession, epoch: int, now: float) -> None:
        ranges, offsets = self._take_acks(self._ack_tps(session), now)
        by_topic: dict[str, list[ack_req.AcknowledgePartition]] = {}
        for tp in sorted(ranges):
            by_topic.setdefault(tp.topic, []).append(
                ack_req.AcknowledgePartition(
                    partition_index=tp.partition,
                    acknowledgement_batches=[_ack_batch(r) for r in ranges[tp]],
                )
            )
        request = m.ShareAcknowledgeRequest(
            group_id=self._cfg.group_id,
            member_id=self._member_id(),
            share_session_epoch=epoch,
            topics=[
                ack_req.AcknowledgeTopic(topic_id=self._id(t), partitions=ps)
                for t, ps in by_topic.items()
            ],
        )
        self._go(session, request, _Sent(session, epoch, now, offsets), self._on_ack, now)

    def _close_session(self, session: ShareSession, now: float) -> bool:
        if session.epoch == INITIAL_EPOCH:
            del self.sessions[session.node]  # nothing open on the broker
            return False
        self._acknowledge(session, FINAL_EPOCH, now)
        return True

    def _go(
        self,
        session: ShareSession,
        request: Request[R],
        sent: _Sent,
        on_answer: Callable[[_Sent, Answer[R], float], None],
        now: float,
    ) -> None:
        session.in_flight = True
        self._send(
            request,
            lambda answer, t: on_answer(sent, answer, t),
            now=now,
            target=Node(session.node),
            lane=SHARE_LANE,
            timeout_ms=self._timeout_ms,
        )

    def _id(self, topic: str) -> uuid.UUID:
        tid = self._topics.topic_id(topic)
        # Assigned partitions come from ids, so their topic's id is known.
        assert tid is not None, topic
        return tid

    # ----------------------------------------------------------------- answers
    def _failed(self, sent: _Sent, error: BaseException, now: float) -> None:
        """The request or the whole session failed: the session starts over."""
        session = sent.session
        session.epoch = INITIAL_EPOCH
        session.partitions.clear()
        for tp, offsets in sent.acks.items():
            self._settle(tp, offsets, error, now)
        if sent.epoch == FINAL_EPOCH or self.closing:
            self.sessions.pop(session.node, None)
            return
        self.deadlines.set(session.node, now + self._cfg.retry_backoff_ms / 1000)
        self._topics.refresh(now)

    def _usable(self, resp: Answer[_Top], sent: _Sent, now: float) -> TypeGuard[_Top]:
        """Handle a request failure or a top-level error; True if the answer is usable."""
        sent.session.in_flight = False
        if isinstance(resp, BaseException):
            self._failed(sent, resp, now)
            return False
        if resp.error_code != ErrorCode.NONE:
            node = sent.session.node
            err = broker_error(
                resp.error_code, answered_from(node, resp.error_message), node_id=node
            )
            if err is not None:
                self._failed(sent, err, now)
                return False
        if resp.acquisition_lock_timeout_ms > 0:
            self.lock_ms = resp.acquisition_lock_timeout_ms
        return True

    def _on_fetch(self, sent: _Sent, resp: Answer[m.ShareFetchResponse], now: float) -> None:
        if not self._usable(resp, sent, now):
            return
        session = sent.session
        session.epoch = next_epoch(sent.epoch)
        session.partitions |= sent.added
        session.partitions -= sent.forgotten
        expires = sent.at + (self.lock_ms or 0) / 1000
        answered: set[TopicPartition] = set()
        for topic in resp.responses:
            name = self._topics.topic_name(topic.topic_id)
            for p in topic.partitions:
                if name is None:
                    continue
                tp = TopicPartition(name, p.partition_index)
                answered.add(tp)
                self._partition(sent, tp, p, p.acknowledge_error_code, now)
                if p.error_code == ErrorCode.NONE:
                    self._acquired(tp, session.node, p, expires)
        self._unanswered(sent, answered, now)

    def _on_ack(self, sent: _Sent, resp: Answer[m.ShareAcknowledgeResponse], now: float) -> None:
        if not self._usable(resp, sent, now):
            return
        session = sent.session
        if sent.epoch == FINAL_EPOCH:
            self.sessions.pop(session.node, None)
        else:
            session.epoch = next_epoch(sent.epoch)
        answered: set[TopicPartition] = set()
        for topic in resp.responses:
            name = self._topics.topic_name(topic.topic_id)
            for p in topic.partitions:
                if name is not None:
                    tp = TopicPartition(name, p.partition_index)
                    answered.add(tp)
                    self._partition(sent, tp, p, p.error_code, now)
        self._unanswered(sent, answered, now)

    def _acquired(self, tp: TopicPartition, node: int, p: Any, expires: float) -> None:
        """The records this answer acquired for ``tp`` go to the buffer; gaps are acknowledged."""
        ranges = [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records]
        recs, gaps = acquired_records(tp, p.records, ranges, check_crc=self._cfg.check_crcs)
        for offset in gaps:
            self._acks.gap(tp, offset, expires)
        self._buffer.add(AcquiredBatch(tp, node, recs, expires))

    def _partition(
        self, sent: _Sent, tp: TopicPartition, p: Any, ack_code: int, now: float
    ) -> None:
        """One partition's answer: its acknowledgement outcome and leader news."""
        offsets = sent.acks.get(tp)
        if offsets is not None:
            message = getattr(p, "acknowledge_error_message", None) or p.error_message
            node = sent.session.node
            error = (
                broker_error(ack_code, answered_from(node, message), node_id=node)
                if ack_code
                else None
            )
            self._settle(tp, offsets, error, now)
        if p.error_code in LEADER_MOVED:
            # The partition leaves this session; the next fetch adds it where it now lives.
            sent.session.partitions.discard(tp)
            self._topics.refresh(now)

    def _unanswered(self, sent: _Sent, answered: set[TopicPartition], now: float) -> None:
        for tp in set(sent.acks) - answered:
            error = RemoteProtocolError(
                f"share session on node {sent.session.node}: the answer left out {tp} "
                "whose acknowledgements the request carried"
            )
            self._settle(tp, sent.acks[tp], error, now)

    def _settle(
        self, tp: TopicPartition, offsets: frozenset[int], error: BaseException | None, now: float
    ) -> None:
        """Answered acknowledgements leave the books; the owner hears of the user's."""
        settled = self._acks.part(tp).settle(offsets)
        # GAP acknowledgements are ours, not the user's: nothing to report for them.
        self._on_settled(tp, frozenset(settled), error if settled else None, now)


def _timed_out(tp: TopicPartition, offsets: frozenset[int]) -> AcquisitionLockTimedOut:
    return AcquisitionLockTimedOut(
        f"acknowledgements of {tp} offsets {sorted(offsets)[:5]}...: the acquisition lock "
        "ran out before they could be sent; the broker delivers the records again"
    )


def _lost(tp: TopicPartition) -> ShareSessionLost:
    return ShareSessionLost(
        f"acknowledgements of {tp}: the share session that acquired the records is gone; "
        "they will be delivered again after their lock times out"
    )


def _fetch_batch(r: AckRange) -> fetch_req.AcknowledgementBatch:
    return fetch_req.AcknowledgementBatch(
        first_offset=r.first, last_offset=r.last, acknowledge_types=list(r.types)
    )


def _ack_batch(r: AckRange) -> ack_req.AcknowledgementBatch:
    return ack_req.AcknowledgementBatch(
        first_offset=r.first, last_offset=r.last, acknowledge_types=list(r.types)
    )

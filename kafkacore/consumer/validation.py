"""Position validation after a leader change: OffsetForLeaderEpoch (KIP-320).

Theory of operation
-------------------
When metadata names a higher leader epoch for a partition being fetched,
the new leader's log may be shorter than the old one's: records the
consumer read may have been truncated away. The partition goes to
AWAIT_VALIDATION (:meth:`~kafkacore.consumer.positions.SubscriptionState.leader_epoch_seen`)
and :class:`PositionValidator` asks the leader, in one
OffsetForLeaderEpoch per leader, where the epoch of the last consumed
record ends:

- at or past the position: the position stands (FETCHING again);
- before it: the log was truncated; the position moves to the end of that
  epoch (TruncationDetected), or LogTruncationError with no reset policy;
- an epoch the leader does not know: out of range, reset by the policy.

An error answer (leader moved, epoch fenced) waits ``retry_backoff_ms``
(with a metadata refresh when the leader moved). Answers for partitions
that moved meanwhile (seek, revocation) are ignored.
"""

from __future__ import annotations

from kafkacore.client.core import DEFAULT_LANE
from kafkacore.client.metadata import TopicPartition
from kafkacore.client.routing import Node
from kafkacore.client.stack import Answer, Send
from kafkacore.consumer.positions import FetchState, SubscriptionState
from kafkacore.consumer.topics import TopicView
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import LEADER_MOVED, ErrorCode
from kafkacore.protocol.messages.offset_for_leader_epoch_request import (
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from kafkacore.protocol.messages.offset_for_leader_epoch_response import EpochEndOffset

__all__ = ["PositionValidator"]

#: ``{tp: (position asked about, leader epoch asked under)}``
Asked = dict[TopicPartition, tuple[int, int]]


class PositionValidator:
    """OffsetForLeaderEpoch for partitions in AWAIT_VALIDATION; see the module docstring."""

    def __init__(self, *, subs: SubscriptionState, topics: TopicView, send: Send) -> None:
        self._subs = subs
        self._topics = topics
        self._send = send

    def validate(self, tps: list[TopicPartition], now: float) -> None:
        groups = self._topics.by_leader({tp: 0 for tp in tps})
        if groups.pop(None, None):
            self._topics.refresh(now)
        for node, query in groups.items():
            assert node is not None
            self._ask(node, sorted(query), now)

    def _ask(self, node: int, tps: list[TopicPartition], now: float) -> None:
        topics: dict[str, list[OffsetForLeaderPartition]] = {}
        asked: Asked = {}
        self._subs.begin_lookup(tps)
        for tp in tps:
            st = self._subs.parts[tp]
            assert st.position is not None and st.position_epoch is not None
            current = self._topics.leader_epoch(tp)
            asked[tp] = (st.position, current if current is not None else -1)
            topics.setdefault(tp.topic, []).append(
                OffsetForLeaderPartition(
                    partition=tp.partition,
                    current_leader_epoch=asked[tp][1],
                    leader_epoch=st.position_epoch,
                )
            )
        request = m.OffsetForLeaderEpochRequest(
            replica_id=-1,  # a consumer, not a follower
            topics=[OffsetForLeaderTopic(topic=t, partitions=ps) for t, ps in topics.items()],
        )

        def done(answer: Answer[m.OffsetForLeaderEpochResponse], t: float) -> None:
            self._on_response(asked, answer, t)

        self._send(request, done, now=now, target=Node(node), lane=DEFAULT_LANE)

    def _on_response(
        self, asked: Asked, resp: Answer[m.OffsetForLeaderEpochResponse], now: float
    ) -> None:
        answers: dict[TopicPartition, EpochEndOffset] = {}
        if not isinstance(resp, BaseException):
            for topic in resp.topics:
                for end in topic.partitions:
                    answers[TopicPartition(topic.topic, end.partition)] = end
        for tp, (position, leader_epoch) in asked.items():
            st = self._subs.parts.get(tp)
            if st is None or st.state is not FetchState.AWAIT_VALIDATION or st.position != position:
                continue  # moved meanwhile
            p = answers.get(tp)
            if p is None or p.error_code != ErrorCode.NONE:
                self._subs.backoff(tp, st, now)
                if p is not None and p.error_code in LEADER_MOVED:
                    self._topics.refresh(now)
                continue
            self._subs.validated(tp, leader_epoch, p.end_offset, p.leader_epoch)

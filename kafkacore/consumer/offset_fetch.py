"""Committed offsets: OffsetFetch for ``committed()`` and for new partitions.

Theory of operation
-------------------
:class:`CommittedOffsets` asks the group coordinator for committed offsets
in two cases: the user's ``committed()`` (an operation completed with
``{tp: OffsetAndMetadata | None}``) and a newly assigned partition in
INITIALIZING (seed 003's ``determine_offsets``: the position starts at the
committed offset; without one, the reset policy decides). One
on-assignment fetch runs at a time; partitions assigned meanwhile wait for
the next.

The request shape depends on the version negotiated on the coordinator's
connection, so it is made by ``build=`` when that connection is known:
before v8 one group and topics by name (``require_stable`` from v7); from
v8 a list of groups (KIP-709), topics also by id (v10), the KIP-848 member
id and epoch, and ``require_stable`` (KIP-447: wait for pending
transactional offsets rather than read stale ones).

A coordinator that moved or is loading, UNSTABLE_OFFSET_COMMIT and a
partition answered UNKNOWN_TOPIC_ID (the coordinator's metadata has not
caught up with a topic just created; metadata is refreshed too) are
retried until the deadline; any other error fails the fetch.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kafkacore.client.metadata import TopicPartition
from kafkacore.client.response_errors import broker_error
from kafkacore.client.routing import GroupCoordinator
from kafkacore.client.stack import Answer, Send
from kafkacore.consumer.config import ConsumerConfig
from kafkacore.consumer.events import OffsetAndMetadata
from kafkacore.consumer.operations import OperationTable
from kafkacore.consumer.positions import FetchState, SubscriptionState
from kafkacore.consumer.topics import TopicView
from kafkacore.errors import KafkaTimeoutError
from kafkacore.group.base import GROUP_LANE
from kafkacore.group.classic import ClassicMember
from kafkacore.group.kip848 import Kip848Member
from kafkacore.operation import Operation
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import COORDINATOR_MOVED, ErrorCode
from kafkacore.protocol.messages.offset_fetch_request import (
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from kafkacore.protocol.messages.offset_fetch_response import OffsetFetchResponseTopics

__all__ = ["Committed", "CommittedOffsets", "offset_fetch_builder"]

#: ``{tp: the committed offset, or None}``
Committed = dict[TopicPartition, OffsetAndMetadata | None]
Finish = Callable[[Committed | None, BaseException | None, float], None]

#: Partition errors retried until the deadline (see the module docstring).
_RETRIED = frozenset({ErrorCode.UNSTABLE_OFFSET_COMMIT, ErrorCode.UNKNOWN_TOPIC_ID})

#: The first OffsetFetch version that batches groups (KIP-709).
_GROUPS_VERSION = 8
#: The first OffsetFetch version with require_stable (KIP-447).
_STABLE_VERSION = 7


def offset_fetch_builder(
    group_id: str,
    by_topic: dict[str, list[int]],
    topic_id: Callable[[str], uuid.UUID],
    member: tuple[str | None, int],
) -> Callable[[int], m.OffsetFetchRequest]:
    """The OffsetFetch for ``by_topic`` as the negotiated version wants it.

    ``member`` is the KIP-848 (member id, member epoch), or (None, -1).
    """

    def build(version: int) -> m.OffsetFetchRequest:
        if version < _GROUPS_VERSION:
            return m.OffsetFetchRequest(
                group_id=group_id,
                topics=[
                    OffsetFetchRequestTopic(name=t, partition_indexes=ps)
                    for t, ps in by_topic.items()
                ],
                require_stable=version >= _STABLE_VERSION,
            )
        topics = [
            OffsetFetchRequestTopics(name=t, topic_id=topic_id(t), partition_indexes=ps)
            for t, ps in by_topic.items()
        ]
        group = OffsetFetchRequestGroup(
            group_id=group_id, member_id=member[0], member_epoch=member[1], topics=topics
        )
        return m.OffsetFetchRequest(groups=[group], require_stable=True)

    return build


@dataclass(slots=True)
class _Fetch:
    """One OffsetFetch until it is answered for good (retries included)."""

    tps: list[TopicPartition]
    deadline: float
    finish: Finish
    handle: Operation[Any] | None

    @property
    def over(self) -> bool:
        return self.handle is not None and self.handle.done


class CommittedOffsets:
    """OffsetFetch for ``committed()`` and for new partitions; see the module docstring."""

    def __init__(
        self,
        config: ConsumerConfig,
        *,
        subs: SubscriptionState,
        topics: TopicView,
        ops: OperationTable,
        send: Send,
        member: Callable[[], ClassicMember | Kip848Member | None],
        answered_by: Callable[[], int | None] = lambda: None,
    ) -> None:
        self._config = config
        self._subs = subs
        self._topics = topics
        self._ops = ops
        self._send = send
        self._member = member
        #: The broker whose answer is being handled (the owner's ``answered_by``).
        self._answered_by = answered_by
        #: An on-assignment fetch is in flight.
        self.busy = False

    def committed(
        self, partitions: Iterable[TopicPartition], now: float, timeout_ms: int | None
    ) -> Operation[Any]:
        """The user's ``committed()``: handle value ``{tp: OffsetAndMetadata | None}``."""
        deadline = now + self._ops.timeout("committed", timeout_ms)
        handle = self._ops.new("committed", now)

        def finish(result: Committed | None, err: BaseException | None, t: float) -> None:
            self._ops.complete(handle, result, err, t)

        tps = sorted({TopicPartition(*tp) for tp in partitions})
        self.fetch(_Fetch(tps, deadline, finish, handle), now)
        return handle

    def initialize(self, tps: list[TopicPartition], now: float) -> None:
        """New partitions start at their committed offsets (or reset without one)."""
        self.busy = True
        self._subs.begin_lookup(tps)
        deadline = now + self._config.default_api_timeout_ms / 1000

        def finish(result: Committed | None, err: BaseException | None, t: float) -> None:
            self._initialized(tps, result, t)

        self.fetch(_Fetch(sorted(tps), deadline, finish, None), now)

    def _initialized(self, tps: list[TopicPartition], result: Committed | None, now: float) -> None:
        self.busy = False
        for tp in tps:
            st = self._subs.parts.get(tp)
            if st is None or st.state is not FetchState.INITIALIZING:
                continue
            if result is None:
                self._subs.backoff(tp, st, now)
            else:
                self._subs.committed_found(tp, result.get(tp), self._topics.leader_epoch(tp))

    # --------------------------------------------------------------- fetch
    def fetch(self, job: _Fetch, now: float) -> None:
        group_id = self._config.group_id
        assert group_id is not None
        by_topic: dict[str, list[int]] = {}
        for tp in job.tps:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        if not self._topics.ids_ready(by_topic, now):
            error = KafkaTimeoutError(f"committed: no metadata for {sorted(by_topic)}")
            self._retry(job, now, error)
            return
        member = self._member()
        identity: tuple[str | None, int] = (None, -1)
        if isinstance(member, Kip848Member) and member.member_epoch > 0:
            identity = (member.member_id, member.member_epoch)
        build = offset_fetch_builder(group_id, by_topic, self._topics.topic_id_or_zero, identity)
        # The ids the request names its topics by (v10+), for reading the answer
        # even when metadata has moved on since.
        names = {self._topics.topic_id_or_zero(t): t for t in by_topic}

        def done(answer: Answer[m.OffsetFetchResponse], t: float) -> None:
            self._on_response(job, answer, t, names)

        self._send(
            build(_GROUPS_VERSION),
            done,
            now=now,
            target=GroupCoordinator(group_id),
            lane=GROUP_LANE,
            build=build,
        )

    def _retry(self, job: _Fetch, now: float, error: BaseException | None) -> None:
        def again(t: float) -> None:
            if not job.over:
                self.fetch(job, t)

        self._ops.retry_or_fail(job.deadline, now, error, again, lambda e: job.finish(None, e, now))

    def _on_response(
        self,
        job: _Fetch,
        resp: Answer[m.OffsetFetchResponse],
        now: float,
        names: dict[uuid.UUID, str],
    ) -> None:
        if isinstance(resp, BaseException):
            self._retry(job, now, resp)
            return
        groups = resp.groups if resp.groups else [resp]
        code = groups[0].error_code if groups else ErrorCode.NONE
        if code in COORDINATOR_MOVED or code == ErrorCode.UNSTABLE_OFFSET_COMMIT:
            self._retry(job, now, broker_error(code, node_id=self._answered_by()))
            return
        if code:
            group_id = self._config.group_id
            job.finish(
                None,
                broker_error(
                    code, f"OffsetFetch for group {group_id!r}", node_id=self._answered_by()
                ),
                now,
            )
            return
        result: Committed = {tp: None for tp in job.tps}
        for topic in groups[0].topics:
            name = topic.name
            if not name and isinstance(topic, OffsetFetchResponseTopics):
                name = names.get(topic.topic_id) or self._topics.topic_name(topic.topic_id) or ""
            for p in topic.partitions:
                tp = TopicPartition(name, p.partition_index)
                if p.error_code in _RETRIED:
                    # A coordinator whose metadata has not caught up with a topic
                    # just created (UNKNOWN_TOPIC_ID) answers again in a moment.
                    if p.error_code == ErrorCode.UNKNOWN_TOPIC_ID:
                        self._topics.refresh(now)
                    error = broker_error(
                        p.error_code, f"OffsetFetch for {tp}", node_id=self._answered_by()
                    )
                    self._retry(job, now, error)
                    return
                if p.error_code:
                    job.finish(
                        None,
                        broker_error(
                            p.error_code, f"OffsetFetch for {tp}", node_id=self._answered_by()
                        ),
                        now,
                    )
                    return
                if p.committed_offset >= 0:
                    epoch = p.committed_leader_epoch
                    result[tp] = OffsetAndMetadata(
                        p.committed_offset, p.metadata or "", epoch if epoch >= 0 else None
                    )
        job.finish(result, None, now)

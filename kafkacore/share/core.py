"""The share consumer machine (KIP-932 "Queues for Kafka").

Theory of operation
-------------------
:class:`ShareConsumerCore` is stacked on a
:class:`~kafkacore.client.KafkaClientCore` through
:class:`~kafkacore.client.stack.StackedMachine` (``docs/stacking.md``), like
the consumer, so every transport drives it with the driver contract. Its
parts, each a small machine of :mod:`kafkacore.share`:

- :mod:`~kafkacore.share.member`: ShareGroupHeartbeat membership and the
  assignment;
- :mod:`~kafkacore.share.fetcher` and :mod:`~kafkacore.share.buffer`: one
  share session per leader, acquired records with their delivery counts
  and lock expiry;
- :mod:`~kafkacore.share.acks`: each delivery's acknowledgement, implicit
  or explicit.

``poll_records`` first settles the previous poll (implicit mode accepts
it; explicit mode insists every record was acknowledged), then hands out
buffered records. A fetch goes to a leader only while none of its records
wait in the buffer, so at most one answer per leader is acquired ahead.
Acknowledgements ride on the next fetch or leave in a ShareAcknowledge;
every answer becomes an :class:`AcknowledgementsCommitted` event (Java's
acknowledgement-commit callback). :meth:`commit` returns an
:class:`~kafkacore.operation.Operation` completed when every
acknowledgement made before it is answered, with each partition's outcome.
:meth:`close` sends what is left, closes the sessions (the broker releases
what they still hold) and leaves the group.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kafkacore.client.config import ClientConfig
from kafkacore.client.core import KafkaClientCore
from kafkacore.client.events import MetadataUpdated
from kafkacore.client.metadata import TopicPartition
from kafkacore.client.stack import StackedMachine
from kafkacore.consumer.topics import TopicView
from kafkacore.errors import KafkaTimeoutError, LocalProtocolError
from kafkacore.operation import Operation, OperationCompleted
from kafkacore.share.acks import Acknowledgements, AcknowledgeType
from kafkacore.share.buffer import ShareBuffer
from kafkacore.share.config import ShareConsumerConfig
from kafkacore.share.events import (
    SHARE_EVENTS,
    AcknowledgementsCommitted,
    ShareAssignmentChanged,
    ShareEvent,
    ShareGroupFailed,
    ShareRecord,
    ShareRecordsAvailable,
)
from kafkacore.share.fetcher import ShareFetcher
from kafkacore.share.member import ShareMember, ShareMemberState

__all__ = ["CommitResult", "ShareConsumerCore"]

#: A commit's outcome: each partition's error, None where every acknowledgement was applied.
CommitResult = dict[TopicPartition, BaseException | None]
_CLOSE = "close"


@dataclass(slots=True)
class _Commit:
    op: Operation[CommitResult]
    upto: int
    tps: frozenset[TopicPartition]
    results: CommitResult = field(default_factory=dict)


class ShareConsumerCore(StackedMachine[ShareEvent]):
    """Sans-IO share consumer; see the module docstring."""

    EVENT_TYPES = SHARE_EVENTS

    def __init__(
        self,
        client_config: ClientConfig | None,
        config: ShareConsumerConfig,
        *,
        now: float,
        rng: random.Random,
    ) -> None:
        super().__init__(KafkaClientCore(client_config, now=now, rng=rng))
        self.config = config
        self._topics = TopicView(self.client)
        self._acks = Acknowledgements(config.mode)
        self._buffer = ShareBuffer()
        self._member = ShareMember(
            self._request,
            group_id=config.group_id,
            rng=rng,
            topic_names=self._topics.topic_name,
            rack=config.client_rack,
            retry_backoff_ms=config.retry_backoff_ms,
            answered_by=lambda: self.answered_by,
        )
        self._fetcher = ShareFetcher(
            config,
            send=self._request,
            topics=self._topics,
            acks=self._acks,
            buffer=self._buffer,
            member_id=lambda: self._member.member_id,
            on_settled=self._on_settled,
            request_timeout_ms=self.client.config.request_timeout_ms,
        )
        self._next_op = 0
        self._commits: dict[int, _Commit] = {}
        self._close_op: Operation[None] | None = None
        self._closed = False
        self._polled = False
        self._had_records = False
        self._failure_told = False
        self._step(now)

    # ================================================================ queries
    @property
    def member(self) -> ShareMember:
        return self._member

    @property
    def closed(self) -> bool:
        return self._closed

    def assignment(self) -> frozenset[TopicPartition]:
        return self._member.assignment

    def subscription(self) -> frozenset[str]:
        return self._member.subscription

    def has_buffered(self) -> bool:
        return bool(self._buffer)

    @property
    def lock_duration_ms(self) -> int | None:
        """The record lock duration the broker last reported (None before any fetch)."""
        return self._fetcher.lock_ms

    # =============================================================== commands
    def subscribe(self, topics: Iterable[str], *, now: float) -> None:
        """Join the share group for ``topics`` (the whole new subscription)."""
        self._check_open("subscribe")
        if isinstance(topics, str):
            raise LocalProtocolError("subscribe: topics must be a list of names, not one str")
        names = frozenset(topics)
        if not names or not all(isinstance(t, str) and t for t in names):
            raise LocalProtocolError(f"subscribe: {sorted(names)!r} must name at least one topic")
        self._topics.track(names, now)
        self._member.subscribe(names, now=now)
        self._step(now)

    def poll_records(self, max_records: int | None = None, *, now: float) -> list[ShareRecord]:
        """Settle the previous poll, then hand out up to ``max_records`` records (never blocks)."""
        self._check_open("poll")
        if self._member.error is not None:
            raise self._member.error
        self._acks.before_poll()
        limit = self.config.max_poll_records if max_records is None else max_records
        out = self._buffer.take(limit, now=now)
        for rec, expires in out:
            tp = TopicPartition(rec.topic, rec.partition)
            self._acks.deliver(tp, rec.offset, rec.delivery_count, expires)
        self._polled = True
        self._had_records = bool(self._buffer)
        self._step(now)
        return [rec for rec, _ in out]

    def acknowledge(
        self, record: ShareRecord, kind: AcknowledgeType = AcknowledgeType.ACCEPT, *, now: float
    ) -> None:
        """Acknowledge one record of the last poll (explicit mode)."""
        self._check_open("acknowledge")
        if not isinstance(record, ShareRecord):
            raise TypeError(f"acknowledge: expected a ShareRecord from poll(), got {record!r}")
        tp = TopicPartition(record.topic, record.partition)
        self._acks.acknowledge(tp, record.offset, record.delivery_count, AcknowledgeType(kind))
        self._step(now)

    def commit(self, *, now: float) -> Operation[CommitResult]:
        """Send every acknowledgement made so far; the operation ends with their outcomes."""
        self._check_open("commit")
        self._acks.accept_delivered()
        op: Operation[CommitResult] = self._new_op("commit")
        upto = self._acks.seq
        tps = self._acks.unsettled_through(upto)
        if not tps:
            self._finish(op, {}, None)
        else:
            self._commits[op.id] = _Commit(op, upto, tps)
            self.deadlines.set(("commit", op.id), now + self.config.default_api_timeout_ms / 1000)
        self._step(now)
        return op

    def close(self, *, now: float, timeout_ms: int | None = None) -> Operation[None]:
        """Send what is acknowledged, close the share sessions and leave the group."""
        if self._close_op is not None:
            return self._close_op
        self._acks.accept_delivered()
        op: Operation[None] = self._new_op("close")
        self._close_op = op
        wait = self.config.default_api_timeout_ms if timeout_ms is None else timeout_ms
        self.deadlines.set(_CLOSE, now + wait / 1000)
        self._fetcher.closing = True
        self._step(now)
        return op

    def shutdown(self, *, now: float) -> None:
        """Drop everything at once (after :meth:`close`, or instead of it)."""
        if self._close_op is None:
            self._close_op = self._new_op("close")
        self._closed_now(now)
        self.client.shutdown(now=now)
        self.deadlines.pop_due(float("inf"))
        self._member.deadlines.pop_due(float("inf"))
        self._fetcher.deadlines.pop_due(float("inf"))
        self._step(now)

    # ================================================================ helpers
    def _new_op(self, kind: str) -> Operation[Any]:
        self._next_op += 1
        return Operation(self._next_op, kind)

    def _finish(self, op: Operation[Any], value: Any, error: BaseException | None) -> None:
        if not op.done:
            op._complete(value, error)
            self._emit(OperationCompleted(handle=op))

    def _check_open(self, what: str) -> None:
        if self._close_op is not None:
            raise LocalProtocolError(f"{what}: the share consumer is closed; make a new one")

    def _on_settled(
        self, tp: TopicPartition, offsets: frozenset[int], error: BaseException | None, now: float
    ) -> None:
        if offsets:
            self._emit(AcknowledgementsCommitted(partition=tp, offsets=offsets, error=error))
        for commit in list(self._commits.values()):
            if tp in commit.tps and commit.results.get(tp) is None:
                commit.results[tp] = error  # the first failure of a partition stays
            unsettled = self._acks.unsettled_through(commit.upto) & commit.tps
            if not unsettled:
                del self._commits[commit.op.id]
                self.deadlines.cancel(("commit", commit.op.id))
                results = {t: commit.results.get(t) for t in commit.tps}
                self._finish(commit.op, results, None)

    # ==================================================== StackedMachine hooks
    def _on_client_event(self, event: object, now: float) -> None:
        if isinstance(event, MetadataUpdated):
            self._member.on_metadata(now=now)
        self._emit(event)

    def _sub_deadlines(self) -> Iterable[float | None]:
        return (self._member.next_deadline(), self._fetcher.deadlines.next())

    def _stopped(self) -> bool:
        return self._closed

    def _on_deadline(self, key: Hashable, now: float) -> None:
        if key == _CLOSE:
            self._closed_now(now)
        elif isinstance(key, tuple) and key[0] == "commit":
            commit = self._commits.pop(key[1], None)
            if commit is not None:
                error = KafkaTimeoutError(
                    f"commit: acknowledgements of {sorted(commit.tps)} not answered within "
                    f"default_api_timeout_ms={self.config.default_api_timeout_ms}"
                )
                self._finish(commit.op, None, error)

    def _work(self, now: float) -> bool:
        self._member.handle_timeout(now=now)
        for assigned in self._member.pull_assignments():
            self._emit(ShareAssignmentChanged(partitions=assigned))
        if self._member.state is ShareMemberState.FAILED and not self._failure_told:
            self._failure_told = True
            assert self._member.error is not None
            self._emit(ShareGroupFailed(error=self._member.error))
        stable = self._member.state is ShareMemberState.STABLE
        assigned = self._member.assignment if stable else frozenset()
        worked = self._fetcher.work(assigned, want_records=self._polled, now=now)
        if self._buffer and not self._had_records:
            self._had_records = True
            self._emit(ShareRecordsAvailable())
        if (
            self._close_op is not None
            and self._fetcher.closed
            and self._member.state
            not in (
                ShareMemberState.LEAVING,
                ShareMemberState.CLOSED,
            )
        ):
            self._member.leave(now=now, done=self._closed_now)
            worked = True
        return worked

    def _closed_now(self, now: float) -> None:
        if self._closed:
            return
        self._closed = True
        self.deadlines.cancel(_CLOSE)
        for commit in self._commits.values():
            self._finish(commit.op, None, LocalProtocolError("commit: the consumer closed first"))
        self._commits.clear()
        assert self._close_op is not None
        self._finish(self._close_op, None, None)

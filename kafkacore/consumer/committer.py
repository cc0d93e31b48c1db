"""The committer: OffsetCommit for explicit commits, auto-commit, and the
commits made before partitions are given up.

Theory of operation
-------------------
Four paths lead to one OffsetCommit sender (:meth:`Committer.send`):

- **explicit**: :meth:`Committer.commit` with the given offsets, or what
  the user was handed so far; the operation completes with the committed
  map or the error;
- **auto** (``enable_auto_commit``): every ``auto_commit_interval_ms``
  (the ``AUTO_COMMIT`` deadline) and before a poll hands out more (seed
  003), what was handed out; not while the group rebalances or an
  auto-commit is in flight (then it looks again after ``retry_backoff_ms``);
- **before revoke / leave / close**: :meth:`Committer.commit_then` commits
  what changed since the last commit, then continues (whatever the outcome:
  a failed commit must not keep the group waiting);
- all three skip partitions whose last committed offset is already current.

A commit carries the member's fencing identity (classic generation or
KIP-848 member epoch, member id, instance id). While a classic member
rebalances the commit is refused locally
(:class:`~kafkacore.consumer.events.RebalanceInProgressCommitError`,
retriable) instead of being sent with a generation about to be replaced.

Answers, per partition: coordinator moved, timeout or a record the broker
would not take are retried until the operation's deadline;
OFFSET_METADATA_TOO_LARGE is retried at once with blank metadata (seed
003); a **fenced** answer (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
REBALANCE_IN_PROGRESS, FENCED_*/STALE_MEMBER_EPOCH) fails the commit with
CommitFailedError, or with RebalanceInProgressCommitError when it is about
a membership the member has already left; the member rejoins only when the
answer is about the membership it still holds (``on_commit_fenced``;
REBALANCE_IN_PROGRESS: at once, keeping its partitions, as Java's
ConsumerCoordinator). Other errors fail the commit as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from kafkacore.client.metadata import TopicPartition
from kafkacore.client.response_errors import broker_error
from kafkacore.client.routing import GroupCoordinator
from kafkacore.client.stack import Answer, Send
from kafkacore.consumer.config import ConsumerConfig
from kafkacore.consumer.events import (
    CommitFailedError,
    OffsetAndMetadata,
    RebalanceInProgressCommitError,
)
from kafkacore.consumer.offset_args import OffsetsArg, commit_offsets
from kafkacore.consumer.operations import OperationTable, Then
from kafkacore.consumer.positions import SubscriptionState
from kafkacore.consumer.topics import TopicView
from kafkacore.errors import KafkaTimeoutError, LocalProtocolError
from kafkacore.group.base import GROUP_LANE
from kafkacore.group.classic import ClassicMember
from kafkacore.group.kip848 import Kip848Member
from kafkacore.operation import Operation
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import COORDINATOR_MOVED, ErrorCode
from kafkacore.protocol.messages.offset_commit_request import (
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kafkacore.timers import Deadlines

__all__ = ["AUTO_COMMIT", "FENCED_COMMIT", "RETRY_COMMIT", "Committer"]

#: Deadline key of the next auto-commit.
AUTO_COMMIT = "auto-commit"

#: Answers retried until the deadline.
RETRY_COMMIT = COORDINATOR_MOVED | {ErrorCode.REQUEST_TIMED_OUT, ErrorCode.INVALID_RECORD}
#: Answers that mean a rebalance (or a newer member) fenced the commit.
FENCED_COMMIT = frozenset(
    {
        ErrorCode.ILLEGAL_GENERATION,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.REBALANCE_IN_PROGRESS,
        ErrorCode.FENCED_INSTANCE_ID,
        ErrorCode.FENCED_MEMBER_EPOCH,
        ErrorCode.STALE_MEMBER_EPOCH,
    }
)
# Fenced answers the member hears of: its own membership may be gone, or
# (REBALANCE_IN_PROGRESS) the group rebalances and the member joins at once.
_MEMBERSHIP_FENCED = frozenset(
    {
        ErrorCode.ILLEGAL_GENERATION,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.FENCED_MEMBER_EPOCH,
        ErrorCode.REBALANCE_IN_PROGRESS,
    }
)

Member = ClassicMember | Kip848Member
Todo = dict[TopicPartition, OffsetAndMetadata]


class Committer:
    """Sends and answers OffsetCommits; see the module docstring."""

    def __init__(
        self,
        config: ConsumerConfig,
        *,
        subs: SubscriptionState,
        topics: TopicView,
        ops: OperationTable,
        send: Send,
        deadlines: Deadlines[Hashable],
        member: Callable[[], Member | None],
        answered_by: Callable[[], int | None] = lambda: None,
    ) -> None:
        self._config = config
        self._subs = subs
        self._topics = topics
        self._ops = ops
        self._send = send
        self._deadlines = deadlines
        self._member = member
        #: The broker whose answer is being handled (the owner's ``answered_by``).
        self._answered_by = answered_by
        self._auto_busy = False

    # ------------------------------------------------------------ identity
    def identity(self) -> tuple[int, str, str | None]:
        """(generation or member epoch, member id, instance id) that fence a commit."""
        member = self._member()
        if member is not None:
            return member.commit_identity()
        return -1, "", self._config.group_instance_id

    # ------------------------------------------------------------ explicit
    def commit(
        self,
        offsets: OffsetsArg | None,
        now: float,
        timeout_ms: int | None,
    ) -> Operation[Any]:
        """Commit ``offsets`` (default: every position handed out so far)."""
        if self._config.group_id is None:
            raise LocalProtocolError("commit: needs a group_id; set it in the consumer config")
        # Checked before the operation exists: a bad offset fails the call itself.
        todo = (
            self._subs.current_offsets() if offsets is None else commit_offsets("commit", offsets)
        )
        deadline = now + self._ops.timeout("commit", timeout_ms)
        handle = self._ops.new("commit", now)
        self.send(todo, handle, deadline, now)
        return handle

    # ------------------------------------------------ before revoke / auto
    def commit_then(self, now: float, then: Then) -> None:
        """With auto-commit, commit what was handed out, then ``then(now)``."""
        if not self._config.enable_auto_commit or self._config.group_id is None:
            then(now)
            return
        self.commit_offsets_then(self._subs.current_offsets(), now, then)

    def commit_offsets_then(self, offsets: Todo, now: float, then: Then) -> None:
        """Commit what changed in ``offsets``; ``then(now)`` once answered (either way)."""
        parts = self._subs.parts
        offsets = {
            tp: oam
            for tp, oam in offsets.items()
            if tp not in parts or parts[tp].committed_position != oam.offset
        }
        if not offsets:
            then(now)
            return
        handle = self._ops.new("auto-commit", now, internal=True)
        self._ops.then(handle, then)
        deadline = now + self._config.default_api_timeout_ms / 1000
        self.send(offsets, handle, deadline, now)

    def arm_auto_commit(self, now: float) -> None:
        """Start the auto-commit interval (a group member or an assignment)."""
        if self._config.group_id is not None and self._config.enable_auto_commit:
            self._deadlines.set(AUTO_COMMIT, now + self._config.auto_commit_interval_ms / 1000)

    def maybe_auto_commit(self, now: float) -> None:
        """Auto-commit if it is due (a poll asks before handing out more)."""
        at = self._deadlines.get(AUTO_COMMIT)
        if at is not None and now >= at:
            self.on_auto_commit_due(now)

    def on_auto_commit_due(self, now: float) -> None:
        member = self._member()
        if self._auto_busy or (member is not None and not member.stable):
            # Not now (a commit is running, or the group is rebalancing): look again soon.
            self._deadlines.set(AUTO_COMMIT, now + self._config.retry_backoff_ms / 1000)
            return
        self._deadlines.set(AUTO_COMMIT, now + self._config.auto_commit_interval_ms / 1000)
        self._auto_busy = True
        self.commit_offsets_then(self._subs.current_offsets(), now, self._auto_done)

    def _auto_done(self, now: float) -> None:
        self._auto_busy = False

    # --------------------------------------------------------------- send
    def send(self, todo: Todo, handle: Operation[Any], deadline: float, now: float) -> None:
        """One OffsetCommit for ``todo`` (or the reason it cannot go now)."""
        if not todo:
            self._ops.complete(handle, {}, None, now)
            return
        group_id = self._config.group_id
        assert group_id is not None
        topics = {tp.topic for tp in todo}
        if not self._topics.ids_ready(topics, now):
            self._ops.retry(
                handle,
                deadline,
                now,
                KafkaTimeoutError(f"commit: no metadata for {sorted(topics)}"),
                lambda t: self.send(todo, handle, deadline, t),
            )
            return
        member = self._member()
        refusal = member.commit_refusal() if member is not None else None
        if refusal is not None:
            # Java refuses locally too: sent now, the commit would carry a
            # generation about to be replaced and come back ILLEGAL_GENERATION.
            error = RebalanceInProgressCommitError(
                f"commit not sent: {refusal}; poll() to finish the rebalance, "
                "then commit what you then own"
            )
            self._ops.complete(handle, None, error, now)
            return
        generation, member_id, instance_id = self.identity()
        request = m.OffsetCommitRequest(
            group_id=group_id,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            group_instance_id=instance_id,
            topics=self._topics_of(todo),
        )

        def done(answer: Answer[m.OffsetCommitResponse], t: float) -> None:
            self._on_response(todo, handle, deadline, answer, t, (generation, member_id))

        self._send(request, done, now=now, target=GroupCoordinator(group_id), lane=GROUP_LANE)

    def _topics_of(self, todo: Todo) -> list[OffsetCommitRequestTopic]:
        topics: dict[str, list[OffsetCommitRequestPartition]] = {}
        for tp, oam in sorted(todo.items()):
            topics.setdefault(tp.topic, []).append(
                OffsetCommitRequestPartition(
                    partition_index=tp.partition,
                    committed_offset=oam.offset,
                    committed_leader_epoch=-1 if oam.leader_epoch is None else oam.leader_epoch,
                    committed_metadata=oam.metadata,
                )
            )
        return [
            OffsetCommitRequestTopic(
                name=t, topic_id=self._topics.topic_id_or_zero(t), partitions=ps
            )
            for t, ps in topics.items()
        ]

    # ------------------------------------------------------------ answers
    def _on_response(
        self,
        todo: Todo,
        handle: Operation[Any],
        deadline: float,
        answer: Answer[m.OffsetCommitResponse],
        now: float,
        sent_as: tuple[int, str],
    ) -> None:
        if handle.done:
            return
        if isinstance(answer, BaseException):
            self._ops.retry(
                handle, deadline, now, answer, lambda t: self.send(todo, handle, deadline, t)
            )
            return
        retry, fatal = self._sort_answers(todo, answer, now, sent_as)
        if fatal is not None:
            self._ops.complete(handle, None, fatal, now)
            return
        if retry:
            self._ops.retry(
                handle,
                deadline,
                now,
                KafkaTimeoutError("commit kept failing with retriable errors"),
                lambda t: self.send(retry, handle, deadline, t),
                immediate=all(todo[tp].metadata and not retry[tp].metadata for tp in retry),
            )
            return
        for tp, oam in todo.items():
            st = self._subs.parts.get(tp)
            if st is not None:
                st.committed_position = oam.offset
        self._ops.complete(handle, dict(todo), None, now)

    def _sort_answers(
        self, todo: Todo, resp: m.OffsetCommitResponse, now: float, sent_as: tuple[int, str]
    ) -> tuple[Todo, BaseException | None]:
        """(what to send again, the error that fails the commit) from an answer."""
        retry: Todo = {}
        fatal: BaseException | None = None
        for topic in resp.topics:
            name = topic.name or self._topics.topic_name(topic.topic_id) or ""
            for p in topic.partitions:
                tp = TopicPartition(name, p.partition_index)
                code = p.error_code
                oam = todo.get(tp)
                if code == ErrorCode.NONE or oam is None:
                    continue
                if code == ErrorCode.OFFSET_METADATA_TOO_LARGE:
                    # Seed 003: retry with blank metadata rather than losing the offset.
                    retry[tp] = OffsetAndMetadata(oam.offset, "", oam.leader_epoch)
                elif code in RETRY_COMMIT:
                    retry[tp] = oam
                elif code in FENCED_COMMIT:
                    fatal = self._fenced(code, sent_as, now) if fatal is None else fatal
                else:
                    fatal = broker_error(code, f"committing {tp}", node_id=self._answered_by())
        return retry, fatal

    def _fenced(self, code: int, sent_as: tuple[int, str], now: float) -> CommitFailedError:
        """The error for a fenced commit; the member rejoins only if the answer
        is about the membership it still holds (see ClassicMember.on_commit_fenced)."""
        member = self._member()
        stale = False
        if code in _MEMBERSHIP_FENCED and member is not None:
            generation, member_id = sent_as
            stale = not member.on_commit_fenced(
                generation=generation, member_id=member_id, code=code, now=now
            )
        group = self._config.group_id
        code_error = broker_error(code, node_id=self._answered_by())
        if code == ErrorCode.REBALANCE_IN_PROGRESS or stale:
            why = (
                "the group is rebalancing"
                if code == ErrorCode.REBALANCE_IN_PROGRESS
                else f"sent for generation {sent_as[0]}, which this member has since left"
            )
            refused = RebalanceInProgressCommitError(
                f"commit for group {group!r} was not made ({code_error}: {why}); "
                "poll() to finish the rebalance, then commit what you then own"
            )
            refused.node_id = self._answered_by()
            return refused
        return CommitFailedError(
            f"commit for group {group!r} was fenced ({code_error}): the group "
            "rebalanced; the partitions may now belong to another member, poll again and "
            "commit what you then own"
        )

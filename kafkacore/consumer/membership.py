"""Group membership as the consumer sees it: the member, its events, revocations.

Theory of operation
-------------------
:class:`Membership` creates the group member on ``subscribe``
(:class:`~kafkacore.group.classic.ClassicMember`, or
:class:`~kafkacore.group.kip848.Kip848Member` with
``group_protocol="consumer"``) and replaces it only after the old one left,
closed or failed. The member sends through the consumer (its
:class:`~kafkacore.group.base.Requester`); its events change the
assignment in :class:`~kafkacore.consumer.positions.SubscriptionState`
(:meth:`Membership.drain`) and go on to the transport.

Before the member gives partitions up it calls the revoke hook: with
auto-commit their positions are committed first (Java's ``onJoinPrepare``),
then, when a transport's user registered a rebalance listener
(``await_revocation_ack``), :class:`~kafkacore.consumer.events.PartitionsRevoking`
is emitted and the member waits for :meth:`Membership.revocation_done`,
at most ``max_poll_interval_ms`` (KIP-62's bound on a user who stopped
polling).

The member's own timers (heartbeats, session, rejoin, poll interval) are
its deadlines; the consumer reports :meth:`Membership.next_deadline` and
runs :meth:`Membership.run_due` in its step.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from kafkacore.client.metadata import TopicPartition
from kafkacore.consumer.committer import Committer
from kafkacore.consumer.config import ConsumerConfig
from kafkacore.consumer.events import PartitionsRevoking
from kafkacore.consumer.operations import OperationTable, Then
from kafkacore.consumer.poll_errors import PollErrors
from kafkacore.consumer.positions import SubscriptionMode, SubscriptionState
from kafkacore.consumer.topics import TopicView
from kafkacore.group.base import (
    GroupFailed,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    Requester,
)
from kafkacore.group.classic import ClassicMember
from kafkacore.group.kip848 import Kip848Member

__all__ = ["Member", "Membership"]

Member = ClassicMember | Kip848Member

# Member states after which a new member is made (the old one is done).
_ENDED = frozenset({"leaving", "closed", "failed"})
# Member states outside the group (neither in it nor joining it).
_OUTSIDE = _ENDED | {"unjoined", "unsubscribed"}


class Membership:
    """The consumer's group member and what its events mean; see the module docstring."""

    def __init__(
        self,
        config: ConsumerConfig,
        *,
        requester: Requester,
        rng: random.Random,
        subs: SubscriptionState,
        topics: TopicView,
        committer: Committer,
        ops: OperationTable,
        errors: PollErrors,
        emit: Callable[[object], None],
    ) -> None:
        self._config = config
        self._requester = requester
        self._rng = rng
        self._subs = subs
        self._topics = topics
        self._committer = committer
        self._ops = ops
        self._errors = errors
        self._emit = emit
        self.member: Member | None = None
        #: Set by a transport whose user registered a rebalance listener:
        #: revocations then wait for revocation_done() (see PartitionsRevoking).
        self.await_revocation_ack = False
        self.closed = False
        self._revoking: dict[int, Then] = {}
        self._next_token = 1

    # ------------------------------------------------------------- lifecycle
    def ensure(self, now: float) -> Member:
        """The live member, made now if there is none (or the last one ended)."""
        old = self.member
        if old is not None and old.state.value not in _ENDED:
            return old
        cfg = self._config
        assert cfg.group_id is not None
        member: Member
        if cfg.group_protocol == "consumer":
            member = Kip848Member(
                self._requester,
                group_id=cfg.group_id,
                now=now,
                rng=self._rng,
                topic_names=self._topics.topic_name,
                topic_ids=self._topics.topic_id,
                group_instance_id=cfg.group_instance_id,
                rack=cfg.client_rack,
                rebalance_timeout_ms=cfg.max_poll_interval_ms,
                server_assignor=cfg.group_remote_assignor,
                retry_backoff_ms=cfg.retry_backoff_ms,
                revoke_hook=self._revoke_hook,
            )
        else:
            member = ClassicMember(
                self._requester,
                group_id=cfg.group_id,
                now=now,
                assignors=cfg.partition_assignment_strategy,
                group_instance_id=cfg.group_instance_id,
                rack=cfg.client_rack,
                session_timeout_ms=cfg.session_timeout_ms,
                rebalance_timeout_ms=cfg.max_poll_interval_ms,
                heartbeat_interval_ms=cfg.heartbeat_interval_ms,
                retry_backoff_ms=cfg.retry_backoff_ms,
                partition_counts=self._topics.partition_counts,
                revoke_hook=self._revoke_hook,
            )
        self.member = member
        self._committer.arm_auto_commit(now)
        return member

    def leave(self, now: float, done: Then | None = None) -> None:
        """Leave the group (``done(now)`` when answered); without a member, done now."""
        member = self.member
        if member is None:
            if done is not None:
                done(now)
            return
        member.leave(now=now, done=done)

    def state_name(self) -> str:
        """ "stable", "rebalancing" or "unjoined" (see ConsumerGroupMetadata.state)."""
        member = self.member
        if member is None:
            return "unjoined"
        if member.stable:
            return "stable"
        return "unjoined" if member.state.value in _OUTSIDE else "rebalancing"

    def pattern_matched(self, matched: frozenset[str], now: float) -> None:
        """A topic listing found ``matched`` for the pattern subscription."""
        member = self.member
        if isinstance(member, ClassicMember):
            self._subs.topics = matched
            member.subscribe(matched, now=now)
        elif member is not None:
            member.on_metadata(now=now)  # KIP-848: the broker resolves the pattern

    # ---------------------------------------------------------------- timers
    def next_deadline(self) -> float | None:
        return None if self.member is None else self.member.next_deadline()

    def run_due(self, now: float) -> None:
        """Let the member act on its timers that are due."""
        member = self.member
        if member is None:
            return
        at = member.next_deadline()
        if at is not None and at <= now:
            member.handle_timeout(now=now)

    # ---------------------------------------------------------------- events
    def drain(self, now: float) -> bool:
        """Apply the member's events to the assignment; True if there were any."""
        if self.member is None:
            return False
        events = self.member.pull_events()
        for event in events:
            self._on_event(event, now)
        return bool(events)

    def _on_event(self, event: object, now: float) -> None:
        # A member left by unsubscribe() may answer after the user assigned
        # partitions by hand: its events no longer move that assignment.
        grouped = self._subs.mode is SubscriptionMode.SUBSCRIBED
        if isinstance(event, PartitionsAssigned) and grouped:
            for tp in event.partitions:
                self._subs.add(tp)
            self._topics.track({tp.topic for tp in event.partitions}, now)
        elif isinstance(event, PartitionsRevoked | PartitionsLost) and grouped:
            for tp in event.partitions:
                self._subs.remove(tp)
        elif isinstance(event, GroupFailed):
            self._errors.replace(event.error)
        self._emit(event)

    # ------------------------------------------------------------ revocation
    def _revoke_hook(self, partitions: frozenset[TopicPartition], now: float, done: Then) -> None:
        def ask_user(t: float) -> None:
            if not self.await_revocation_ack or self.closed:
                done(t)
                return
            token = self._next_token
            self._next_token += 1
            self._revoking[token] = done
            self._emit(PartitionsRevoking(partitions=partitions, token=token))
            # A user who stops polling must not hold the group up for ever (KIP-62 bound).
            limit = t + self._config.max_poll_interval_ms / 1000
            self._ops.later(limit, lambda t2: self.revocation_done(token, t2))

        if not self._config.enable_auto_commit:
            ask_user(now)
            return
        current = self._subs.current_offsets()
        offsets = {tp: oam for tp, oam in current.items() if tp in partitions}
        self._committer.commit_offsets_then(offsets, now, ask_user)

    def revocation_done(self, token: int, now: float) -> None:
        """The user's listener has handled :class:`PartitionsRevoking` ``token``."""
        done = self._revoking.pop(token, None)
        if done is not None:
            done(now)

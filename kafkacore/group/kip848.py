"""The KIP-848 consumer group member (``group_protocol="consumer"``).

Theory of operation
-------------------
With the new protocol the coordinator computes assignments itself (the
``server_assignor``) and the member only heartbeats: every
ConsumerGroupHeartbeat says what the member subscribes to (topic names or a
regex, resolved on the broker) and what it owns; the answer carries the
member epoch and, when it changed, the member's *target* assignment. The
member reconciles towards the target: it revokes what is no longer in it
(committing first, through the revoke hook), adds what is new, and
acknowledges by heartbeating its new owned set at once.

States (:class:`Kip848State`; every move, by trigger, in
:data:`~kafkacore.group.transitions.KIP848`)::

    UNSUBSCRIBED --subscribe--> JOINING (epoch 0 heartbeat in flight)
    JOINING / STABLE --answer with assignment--> RECONCILING --hook done--> STABLE
    any --FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID--> partitions lost, JOINING (epoch 0)
    any --leave()--> LEAVING (epoch -1, or -2 for a static member) --> CLOSED
    any --fatal error--> FAILED

Since KIP-1082 the member id is made by the client: a UUID drawn from the
injected ``random.Random`` (the core draws no randomness of its own). Topic
ids in assignments are turned into names through ``topic_names`` (the
consumer core's metadata); an assignment naming an id not known yet waits
for :meth:`Kip848Member.on_metadata`.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable

from kafkacore.client.metadata import TopicPartition
from kafkacore.client.response_errors import broker_error
from kafkacore.client.routing import GroupCoordinator
from kafkacore.client.stack import Answer
from kafkacore.errors import BrokerError, RemoteProtocolError
from kafkacore.group.base import (
    GROUP_LANE,
    GroupEvent,
    GroupFailed,
    GroupFatalError,
    MemberTimer,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    Requester,
    RevokeHook,
    answered_from,
    group_fatal,
    immediate_revoke,
    is_due,
    member_deadline,
)
from kafkacore.group.transitions import KIP848, Kip848State, Kip848Trigger, advance
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.messages.consumer_group_heartbeat_request import TopicPartitions
from kafkacore.timers import Deadlines

__all__ = ["Kip848Member", "Kip848State"]

# Answers that retrying or rejoining will not fix: the member fails with them.
_FATAL = frozenset(
    {
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.UNSUPPORTED_VERSION,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        ErrorCode.UNRELEASED_INSTANCE_ID,
        ErrorCode.UNSUPPORTED_ASSIGNOR,
        ErrorCode.FENCED_INSTANCE_ID,
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.INVALID_REGULAR_EXPRESSION,
    }
)
_LEAVE_EPOCH = -1
_STATIC_LEAVE_EPOCH = -2


TopicNames = Callable[[uuid.UUID], str | None]
TopicIds = Callable[[str], uuid.UUID | None]


class Kip848Member:
    """One member of a KIP-848 consumer group; see the module docstring."""

    def __init__(
        self,
        requester: Requester,
        *,
        group_id: str,
        now: float,
        rng: random.Random,
        topic_names: TopicNames,
        topic_ids: TopicIds,
        group_instance_id: str | None = None,
        rack: str | None = None,
        rebalance_timeout_ms: int = 300000,
        server_assignor: str | None = None,
        retry_backoff_ms: int = 100,
        revoke_hook: RevokeHook = immediate_revoke,
    ) -> None:
        self._req = requester
        self.group_id = group_id
        self.group_instance_id = group_instance_id
        self._rack = rack
        self._rebalance_ms = rebalance_timeout_ms
        self._assignor = server_assignor
        self._backoff = retry_backoff_ms / 1000
        self._names = topic_names
        self._ids = topic_ids
        self.revoke_hook = revoke_hook
        self._target = GroupCoordinator(group_id)
        self.member_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))

        self.state = Kip848State.UNSUBSCRIBED
        self.member_epoch = 0
        self.subscription: frozenset[str] = frozenset()
        self.pattern: str | None = None
        self.owned: frozenset[TopicPartition] = frozenset()
        self.error: BaseException | None = None
        self._events: list[GroupEvent] = []
        self._interval = 3.0
        #: Heartbeat and poll-interval timers.
        self.deadlines: Deadlines[MemberTimer] = Deadlines()
        self._in_flight = False
        self._round = 0
        self._target_ids: frozenset[tuple[uuid.UUID, int]] | None = None
        self._announced = False
        self._leave_done: Callable[[float], None] | None = None

    # ------------------------------------------------------------------ queries
    @property
    def stable(self) -> bool:
        return self.state is Kip848State.STABLE

    @property
    def generation(self) -> int:
        return self.member_epoch

    def commit_identity(self) -> tuple[int, str, str | None]:
        """(member epoch, member id, instance id) that fence an OffsetCommit (KIP-848)."""
        if self.member_epoch > 0:
            return self.member_epoch, self.member_id, self.group_instance_id
        return -1, "", self.group_instance_id

    def commit_refusal(self) -> str | None:
        """Never refused locally: a KIP-848 commit carries the member epoch, and
        the coordinator takes commits from any epoch the member still holds."""
        return None

    def on_commit_fenced(self, *, generation: int, member_id: str, code: int, now: float) -> bool:
        """An OffsetCommit sent with member epoch ``generation`` was fenced
        (FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID): heartbeat at once to learn
        the member's fate, unless the epoch has moved on since (a stale answer).
        """
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            return False  # a classic group's answer: the heartbeat says what the epoch is
        if generation != self.member_epoch or member_id != self.member_id:
            return False
        self.request_rejoin(now=now, reason="commit fenced")
        return True

    def pull_events(self) -> list[GroupEvent]:
        out, self._events = self._events, []
        return out

    def next_deadline(self) -> float | None:
        return member_deadline(self.deadlines, self._in_flight)

    # ----------------------------------------------------------------- commands
    def subscribe(self, topics: frozenset[str], *, now: float, pattern: str | None = None) -> None:
        """Follow ``topics`` or, with ``pattern``, a broker-side regex (KIP-848)."""
        self._check_alive("subscribe")
        self.subscription = frozenset(topics)
        self.pattern = pattern
        if not topics and pattern is None:
            self.leave(now=now)
            return
        if self.state is Kip848State.UNSUBSCRIBED:
            self._move(Kip848Trigger.SUBSCRIBE)
            self.member_epoch = 0
        self.deadlines.set(MemberTimer.HEARTBEAT, now)  # tell the coordinator now

    def request_rejoin(self, *, now: float, reason: str = "") -> None:
        if self.state in (Kip848State.STABLE, Kip848State.RECONCILING, Kip848State.JOINING):
            self.deadlines.set(MemberTimer.HEARTBEAT, now)

    def poll(self, *, now: float) -> None:
        self.deadlines.set(MemberTimer.POLL, now + self._rebalance_ms / 1000)
        if self.state is Kip848State.UNSUBSCRIBED and (self.subscription or self.pattern):
            self._move(Kip848Trigger.SUBSCRIBE)
            self.member_epoch = 0
            self.deadlines.set(MemberTimer.HEARTBEAT, now)

    def on_metadata(self, *, now: float) -> None:
        if self._target_ids is not None and self.state is not Kip848State.RECONCILING:
            self._reconcile(now)

    def leave(self, *, now: float, done: Callable[[float], None] | None = None) -> None:
        if self.state in (Kip848State.CLOSED, Kip848State.FAILED, Kip848State.LEAVING):
            if done is not None:
                done(now)
            return
        self._round += 1
        self._target_ids = None  # a target waiting for topic names is moot now
        if self.owned:
            self._events.append(
                PartitionsRevoked(partitions=self.owned, generation=self.member_epoch)
            )
            self.owned = frozenset()
        if self.state is Kip848State.UNSUBSCRIBED or self.member_epoch <= 0:
            self._move(Kip848Trigger.LEAVE_QUIETLY)
            if done is not None:
                done(now)
            return
        self._move(Kip848Trigger.LEAVE)
        self._leave_done = done
        self.deadlines.cancel(MemberTimer.HEARTBEAT)
        epoch = _STATIC_LEAVE_EPOCH if self.group_instance_id is not None else _LEAVE_EPOCH
        request = m.ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=epoch,
            instance_id=self.group_instance_id,
        )
        self._req.request(request, self._on_leave, target=self._target, now=now, lane=GROUP_LANE)

    def handle_timeout(self, *, now: float) -> None:
        if self.state in (
            Kip848State.CLOSED,
            Kip848State.FAILED,
            Kip848State.LEAVING,
            Kip848State.UNSUBSCRIBED,
        ):
            return
        if is_due(self.deadlines, MemberTimer.POLL, now):
            # KIP-62 kept by KIP-848: stop polling, lose the membership; poll() rejoins.
            self.deadlines.cancel(MemberTimer.POLL)
            self._lose()
            self.leave_for_poll(now)
            return
        if not self._in_flight and is_due(self.deadlines, MemberTimer.HEARTBEAT, now):
            self._heartbeat(now)

    def leave_for_poll(self, now: float) -> None:
        epoch = _STATIC_LEAVE_EPOCH if self.group_instance_id is not None else _LEAVE_EPOCH
        request = m.ConsumerGroupHeartbeatRequest(
            group_id=self.group_id, member_id=self.member_id, member_epoch=epoch
        )
        self._req.request(request, _ignore, target=self._target, now=now, lane=GROUP_LANE)
        self._move(Kip848Trigger.POLL_EXPIRED)
        self.member_epoch = 0
        self.deadlines.cancel(MemberTimer.HEARTBEAT)

    # ---------------------------------------------------------------- heartbeat
    def _heartbeat(self, now: float) -> None:
        self._in_flight = True
        self.deadlines.set(MemberTimer.HEARTBEAT, now + self._interval)
        round_ = self._round
        owned: dict[uuid.UUID, list[int]] = {}
        for tp in self.owned:
            tid = self._ids(tp.topic)
            if tid is not None:
                owned.setdefault(tid, []).append(tp.partition)
        # A full heartbeat every time: simple, and the coordinator treats
        # repeated fields as "unchanged".
        request = m.ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=self.member_epoch,
            instance_id=self.group_instance_id,
            rack_id=self._rack,
            rebalance_timeout_ms=self._rebalance_ms,
            subscribed_topic_names=None if self.pattern is not None else sorted(self.subscription),
            subscribed_topic_regex=self.pattern,
            server_assignor=self._assignor,
            topic_partitions=[
                TopicPartitions(topic_id=t, partitions=sorted(ps))
                for t, ps in sorted(owned.items())
            ],
        )
        self._req.request(
            request,
            target=self._target,
            now=now,
            lane=GROUP_LANE,
            on_done=lambda answer, t: self._on_heartbeat(round_, answer, t),
        )

    def _on_heartbeat(
        self, round_: int, resp: Answer[m.ConsumerGroupHeartbeatResponse], now: float
    ) -> None:
        if round_ != self._round:
            return
        self._in_flight = False
        if self.state not in (Kip848State.JOINING, Kip848State.STABLE, Kip848State.RECONCILING):
            return
        if isinstance(resp, BaseException):
            if isinstance(resp, BrokerError) and resp.code in _FATAL:
                # FindCoordinator refused the group (GROUP_AUTHORIZATION_FAILED).
                self._fail_with(resp, "FindCoordinator")
                return
            self.deadlines.set(MemberTimer.HEARTBEAT, now + self._backoff)
            return
        code = resp.error_code
        if code in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            self._lose()
            self._move(Kip848Trigger.FENCED)
            self.member_epoch = 0
            self.deadlines.set(MemberTimer.HEARTBEAT, now)
            return
        if code in _FATAL:
            self._fail(code, resp.error_message)
            return
        if code != ErrorCode.NONE:
            self.deadlines.set(MemberTimer.HEARTBEAT, now + self._backoff)
            return
        if resp.member_id:
            self.member_id = resp.member_id
        self.member_epoch = resp.member_epoch
        if resp.heartbeat_interval_ms > 0:
            self._interval = resp.heartbeat_interval_ms / 1000
        self.deadlines.set(MemberTimer.HEARTBEAT, now + self._interval)
        if self.state is Kip848State.JOINING:
            self._move(Kip848Trigger.JOINED)
        if resp.assignment is not None:
            self._target_ids = frozenset(
                (t.topic_id, p) for t in resp.assignment.topic_partitions for p in t.partitions
            )
            if self.state is not Kip848State.RECONCILING:
                self._reconcile(now)

    def _reconcile(self, now: float) -> None:
        target_ids = self._target_ids
        assert target_ids is not None
        target: set[TopicPartition] = set()
        for tid, p in target_ids:
            name = self._names(tid)
            if name is None:
                return  # on_metadata() comes back when the id is known
            target.add(TopicPartition(name, p))
        self._target_ids = None
        new = frozenset(target)
        revoked = self.owned - new
        added = new - self.owned
        round_ = self._round
        epoch = self.member_epoch

        def finish(t: float) -> None:
            # Runs at once or from revoked_done, which checked the round.
            self._move(Kip848Trigger.RECONCILED)
            if added or not self._announced:
                # The first answer is announced even when empty: "you are in".
                self._announced = True
                self.owned = self.owned | added
                self._events.append(PartitionsAssigned(partitions=added, generation=epoch))
            if added or revoked:
                self.deadlines.set(MemberTimer.HEARTBEAT, t)  # acknowledge the new owned set now
            if self._target_ids is not None:
                self._reconcile(t)

        self._move(Kip848Trigger.TARGET)
        if revoked:

            def revoked_done(t: float) -> None:
                if round_ != self._round:
                    return
                self.owned = self.owned - revoked
                self._events.append(PartitionsRevoked(partitions=revoked, generation=epoch))
                finish(t)

            self.revoke_hook(revoked, now, revoked_done)
        else:
            finish(now)

    def _on_leave(self, answer: Answer[m.ConsumerGroupHeartbeatResponse], now: float) -> None:
        self._move(Kip848Trigger.LEFT)
        self.member_epoch = 0
        done, self._leave_done = self._leave_done, None
        if done is not None:
            done(now)

    def _lose(self) -> None:
        self._round += 1
        self._announced = False
        self._in_flight = False
        self._target_ids = None
        if self.owned:
            self._events.append(PartitionsLost(partitions=self.owned, generation=self.member_epoch))
            self.owned = frozenset()

    def _fail(self, code: int, message: str | None) -> None:
        node = self._req.answered_by
        cause = broker_error(code, answered_from(node, message), node_id=node)
        self._fail_with(
            cause or RemoteProtocolError(f"error code {code}"), "ConsumerGroupHeartbeat"
        )

    def _fail_with(self, cause: BaseException, api: str) -> None:
        error = group_fatal(
            f"group {self.group_id!r}: {api} answered {cause}; "
            "this member cannot continue, close the consumer",
            cause,
        )
        self._lose()
        self._move(Kip848Trigger.FATAL)
        self.error = error
        self.deadlines.cancel(MemberTimer.HEARTBEAT)
        self._events.append(GroupFailed(error=error))

    def _move(self, trigger: Kip848Trigger) -> None:
        self.state = advance(KIP848, f"group {self.group_id!r} (KIP-848)", self.state, trigger)

    def _check_alive(self, what: str) -> None:
        if self.state in (Kip848State.CLOSED, Kip848State.LEAVING):
            raise GroupFatalError(f"Kip848Member.{what}: the member is {self.state.value}")
        if self.state is Kip848State.FAILED:
            raise GroupFatalError(f"Kip848Member.{what}: the member failed: {self.error}")


def _ignore(answer: Answer[m.ConsumerGroupHeartbeatResponse], now: float) -> None:
    """The answer of a leave nobody waits for (the poll interval passed)."""

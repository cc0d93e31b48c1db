"""The classic group membership machine (JoinGroup / SyncGroup / Heartbeat / LeaveGroup).

Theory of operation
-------------------
One :class:`ClassicMember` per consumer with a ``group_id``. It talks to the
group coordinator through a :class:`~kafkacore.group.base.Requester` (the
client core finds the coordinator with FindCoordinator, asking broker after
broker until one answers, and forgets it on NOT_COORDINATOR), so here the
coordinator is just the ``GroupCoordinator(group_id)`` target.

States (:class:`ClassicState`; every move, by trigger, in
:data:`~kafkacore.group.transitions.CLASSIC`)::

    UNJOINED --subscribe/retry due--> PREPARING --revoke done--> JOINING
    JOINING --JoinGroup ok--> SYNCING --SyncGroup ok--> STABLE
    STABLE --heartbeat REBALANCE_IN_PROGRESS / subscription change--> PREPARING
    any --ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID / session expiry--> lost, UNJOINED
    any --leave()--> LEAVING --LeaveGroup answered or failed--> CLOSED
    any --fatal broker error--> FAILED

Commits (as Java's ConsumerCoordinator): an OffsetCommit is fenced by the
generation, and the generation is only worth something in STABLE and in
PREPARING (JoinGroup not sent yet: the broker still accepts it, which is
what lets the revocation commit of an eager rebalance through). Once the
JoinGroup is out the generation is about to be replaced, so
:meth:`ClassicMember.commit_refusal` refuses the commit locally (the owner
answers a retriable error) instead of sending it and reading a late
ILLEGAL_GENERATION. A fenced answer makes the member rejoin only when it
is about the generation the member still holds
(:meth:`ClassicMember.on_commit_fenced`): an answer about an older
generation says nothing new, and acting on it would drop the SyncGroup in
flight and start one more rebalance. A REBALANCE_IN_PROGRESS answer about
that generation rejoins at once, keeping generation and partitions (as
Java's ConsumerCoordinator does; KIP-429), rather than waiting for the next
heartbeat to say the same.

Rebalancing is eager or cooperative (KIP-429), the protocol the configured
assignors have in common. Eager: everything owned is revoked in PREPARING,
before JoinGroup. Cooperative: the member keeps what it owns, reports it in
its subscription, revokes only what SyncGroup takes away and then rejoins
at once so the freed partitions can move in a second round. While that
revocation runs (a listener on the user's thread, late on a starved
process: issue 25) a rejoin asked for meanwhile (a heartbeat answered
REBALANCE_IN_PROGRESS) waits for its end: joining earlier would claim the
partitions being given up and drop the round's assignment, leaving them to
nobody. Every
successful SyncGroup ends in one PartitionsAssigned with what was added,
the empty set included (Java and librdkafka call ``onPartitionsAssigned``
after every rebalance), after the revocation it brings.

Every request carries the round it belongs to; an answer from an older
round (a heartbeat answered after a new join began) is dropped. Recoverable
answers (coordinator moved or loading, rebalance in progress) become a
retry after ``retry_backoff_ms``, never an error at the user.

Timers: the next heartbeat (``heartbeat_interval_ms`` after the last one
was sent), the session (no successful heartbeat for ``session_timeout_ms``
while STABLE: the coordinator has expelled us, so our partitions are lost
and we rejoin; the coordinator does not expire a member whose JoinGroup or
SyncGroup it holds, so the timer does not run then),
the poll interval (no ``poll()`` for ``max_poll_interval_ms``: leave the
group, rejoin on the next poll; KIP-62) and a retry time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kafkacore.assignors import Member, RebalanceProtocol, common_protocol, get_assignor
from kafkacore.assignors import TopicPartition as AssignorTP
from kafkacore.client.metadata import TopicPartition
from kafkacore.client.response_errors import broker_error
from kafkacore.client.routing import GroupCoordinator
from kafkacore.client.stack import Answer, OnAnswer
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
from kafkacore.group.transitions import CLASSIC, ClassicState, ClassicTrigger, advance
from kafkacore.protocol import messages as m
from kafkacore.protocol.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.messages.consumer_protocol_assignment import (
    ConsumerProtocolAssignment,
)
from kafkacore.protocol.messages.consumer_protocol_assignment import (
    TopicPartition as AssignmentTP,
)
from kafkacore.protocol.messages.consumer_protocol_subscription import (
    ConsumerProtocolSubscription,
)
from kafkacore.protocol.messages.consumer_protocol_subscription import (
    TopicPartition as SubscriptionTP,
)
from kafkacore.protocol.messages.join_group_request import JoinGroupRequestProtocol
from kafkacore.protocol.messages.leave_group_request import MemberIdentity
from kafkacore.protocol.messages.sync_group_request import SyncGroupRequestAssignment
from kafkacore.timers import Deadlines

__all__ = ["ClassicMember", "ClassicState"]

# Answers that retrying or rejoining will not fix: the member fails with them.
_FATAL = frozenset(
    {
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
        ErrorCode.INVALID_GROUP_ID,
        ErrorCode.INVALID_SESSION_TIMEOUT,
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.UNSUPPORTED_VERSION,
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        ErrorCode.FENCED_INSTANCE_ID,
        ErrorCode.GROUP_ID_NOT_FOUND,
    }
)


#: ``partition_counts(topics, now)``: each topic's partition count, or None
#: while metadata does not know them yet (the owner asks for it at ``now``).
PartitionCounts = Callable[[frozenset[str], float], Mapping[str, int] | None]


class ClassicMember:
    """One member of a classic consumer group; see the module docstring."""

    def __init__(
        self,
        requester: Requester,
        *,
        group_id: str,
        now: float,
        assignors: tuple[str, ...] = ("range", "cooperative-sticky"),
        group_instance_id: str | None = None,
        rack: str | None = None,
        session_timeout_ms: int = 45000,
        rebalance_timeout_ms: int = 300000,
        heartbeat_interval_ms: int = 3000,
        retry_backoff_ms: int = 100,
        partition_counts: PartitionCounts | None = None,
        revoke_hook: RevokeHook = immediate_revoke,
    ) -> None:
        self._req = requester
        self.group_id = group_id
        self._assignors = [get_assignor(name) for name in assignors]
        self.protocol = common_protocol(self._assignors)
        self.group_instance_id = group_instance_id
        self._rack = rack
        self._session_ms = session_timeout_ms
        self._rebalance_ms = rebalance_timeout_ms
        self._heartbeat_ms = heartbeat_interval_ms
        self._backoff = retry_backoff_ms / 1000
        self._counts = partition_counts if partition_counts is not None else _no_counts
        self.revoke_hook = revoke_hook
        self._target = GroupCoordinator(group_id)

        self.state = ClassicState.UNJOINED
        self.member_id = ""
        self.generation = -1
        self.protocol_name: str | None = None
        self.leader_id = ""
        self.subscription: frozenset[str] = frozenset()
        self.owned: frozenset[TopicPartition] = frozenset()
        # The last assignment received (None before the first). Eager sticky
        # user data carries it: by the time an eager member rejoins it has
        # revoked everything, so ``owned`` is empty (as Java's onAssignment
        # keeps its own copy for the same reason).
        self._last_assignment: frozenset[TopicPartition] | None = None
        self.error: BaseException | None = None
        self._events: list[GroupEvent] = []
        self._round = 0  # bumped at every (re)join; answers of older rounds are dropped
        #: Rejoin, heartbeat, session and poll-interval timers (see the module docstring).
        self.deadlines: Deadlines[MemberTimer] = Deadlines()
        self._heartbeat_in_flight = False
        self._left_for_poll = False
        # JoinGroup answer of a leader waiting for metadata
        self._pending_join: m.JoinGroupResponse | None = None
        self._join_sent_at: float | None = None  # when the JoinGroup in flight went out
        # A rejoin asked for while a SyncGroup is in flight waits for its answer:
        # abandoning the SyncGroup would start yet another round (seen with
        # members that commit after every poll).
        self._rejoin_after_sync = False
        # A cooperative revocation after SyncGroup is running: its end rejoins.
        self._revoking = False
        self._leave_done: Callable[[float], None] | None = None
        # The partition count of each of the group's topics the leader last
        # assigned with: a change (a topic created, partitions added) rebalances.
        self._assigned_counts: dict[str, int] = {}

    # ------------------------------------------------------------------ queries
    @property
    def stable(self) -> bool:
        return self.state is ClassicState.STABLE

    @property
    def is_leader(self) -> bool:
        return bool(self.member_id) and self.member_id == self.leader_id

    def commit_identity(self) -> tuple[int, str, str | None]:
        """(generation, member id, instance id) that fence an OffsetCommit."""
        if self.state is ClassicState.STABLE or self.generation >= 0:
            return self.generation, self.member_id, self.group_instance_id
        return -1, "", self.group_instance_id

    def commit_refusal(self) -> str | None:
        """Why an OffsetCommit must not be sent now; None when it may go.

        While the member rebalances (JoinGroup or SyncGroup in flight, or a
        rejoin pending) its generation is about to be replaced: a commit sent
        with it is answered ILLEGAL_GENERATION once the round completes.
        Java's ConsumerCoordinator refuses such commits locally with a
        retriable RebalanceInProgressException; so do we.
        """
        rebalancing = self.state in (ClassicState.JOINING, ClassicState.SYNCING) or (
            self.state is ClassicState.UNJOINED and bool(self.subscription)
        )
        if not rebalancing:
            return None
        return (
            f"group {self.group_id!r} is rebalancing (member {self.state.value}, "
            f"generation {self.generation} is being replaced)"
        )

    def on_commit_fenced(self, *, generation: int, member_id: str, code: int, now: float) -> bool:
        """An OffsetCommit sent as (``generation``, ``member_id``) was answered
        ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID or REBALANCE_IN_PROGRESS (``code``).

        Returns True when the answer is about the membership the member still
        holds: the coordinator has moved on without it, so its partitions are
        lost and it rejoins (as a fenced heartbeat does; REBALANCE_IN_PROGRESS:
        it rejoins keeping them). Returns False, and
        does nothing, when the member has moved on itself (a newer generation,
        a new member id, or a rebalance under way): the answer refers to the
        old generation, and rejoining would abandon the SyncGroup in flight.
        """
        if (
            generation != self.generation
            or member_id != self.member_id
            or self.state not in (ClassicState.STABLE, ClassicState.PREPARING)
        ):
            return False
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            # The group rebalances without us so far: join now, keeping what we
            # own (KIP-429), instead of failing every commit until a heartbeat.
            self.request_rejoin(now=now, reason="OffsetCommit: the group is rebalancing")
            return True
        if code == ErrorCode.UNKNOWN_MEMBER_ID:
            self.member_id = ""
        self._lose(now, "OffsetCommit: generation is gone")
        self.deadlines.set(MemberTimer.REJOIN, now)
        return True

    def pull_events(self) -> list[GroupEvent]:
        out, self._events = self._events, []
        return out

    def next_deadline(self) -> float | None:
        return member_deadline(self.deadlines, self._heartbeat_in_flight)

    # ----------------------------------------------------------------- commands
    def subscribe(self, topics: frozenset[str], *, now: float) -> None:
        """Follow ``topics`` (an empty set leaves the group's assignment)."""
        self._check_alive("subscribe")
        if topics == self.subscription and self.state is not ClassicState.UNJOINED:
            return
        self.subscription = frozenset(topics)
        gone = frozenset(tp for tp in self.owned if tp.topic not in self.subscription)
        if gone and self.protocol is RebalanceProtocol.COOPERATIVE:
            self._revoke(gone, now, lambda t: self.request_rejoin(now=t, reason="subscription"))
            return
        self.request_rejoin(now=now, reason="subscription changed")

    def request_rejoin(self, *, now: float, reason: str = "") -> None:
        """Start a new join round (keeps a join already under way)."""
        if self.state in (ClassicState.LEAVING, ClassicState.CLOSED, ClassicState.FAILED):
            return
        if self.state in (ClassicState.PREPARING, ClassicState.JOINING) or self._revoking:
            return  # a join is under way, or the revocation's end starts one
        if self.state is ClassicState.SYNCING:
            self._rejoin_after_sync = True
            return
        if not self.subscription:
            if self.owned:
                self._revoke(self.owned, now, lambda t: None)
            self._move(ClassicTrigger.UNSUBSCRIBED)
            return
        self._prepare(now)

    def poll(self, *, now: float) -> None:
        """The user polled: restart the poll-interval timer (KIP-62), rejoin if we left."""
        self.deadlines.set(MemberTimer.POLL, now + self._rebalance_ms / 1000)
        if self._left_for_poll and self.state is ClassicState.UNJOINED:
            self._left_for_poll = False
            self.request_rejoin(now=now, reason="polled again")

    def on_metadata(self, *, now: float) -> None:
        """Metadata changed: a leader waiting for partition counts may go on; a
        stable leader whose group's topics changed partition counts since it
        assigned (a topic created, partitions added) starts a rebalance, as
        Java's leader does, so the new partitions get an owner."""
        if self._pending_join is not None and self.state is ClassicState.SYNCING:
            join, self._pending_join = self._pending_join, None
            self._sync(join, now)
            return
        snapshot = self._assigned_counts
        if snapshot and self.is_leader and self.state is ClassicState.STABLE:
            counts = self._counts(frozenset(snapshot), now)
            if counts is not None and {t: counts.get(t, 0) for t in snapshot} != snapshot:
                self.request_rejoin(now=now, reason="the group's topics changed partitions")

    def leave(self, *, now: float, done: Callable[[float], None] | None = None) -> None:
        """Leave the group (static members just stop: KIP-345), then CLOSED."""
        if self.state in (ClassicState.CLOSED, ClassicState.FAILED, ClassicState.LEAVING):
            if done is not None:
                done(now)
            return
        self._round += 1
        self._clear_timers()
        joined = bool(self.member_id)
        if self.owned:
            self._events.append(
                PartitionsRevoked(partitions=self.owned, generation=self.generation)
            )
            self.owned = frozenset()
        if not joined or self.group_instance_id is not None:
            self._move(ClassicTrigger.LEAVE_QUIETLY)
            if done is not None:
                done(now)
            return
        self._move(ClassicTrigger.LEAVE)
        self._leave_done = done
        self._send_leave(now, "the consumer is closing", self._on_leave)

    def handle_timeout(self, *, now: float) -> None:
        if self.state in (ClassicState.CLOSED, ClassicState.FAILED, ClassicState.LEAVING):
            return
        if is_due(self.deadlines, MemberTimer.POLL, now):
            self.deadlines.cancel(MemberTimer.POLL)
            if self.member_id and self.state is not ClassicState.UNJOINED:
                # KIP-62: a consumer that stopped polling must give its partitions up.
                self._left_for_poll = True
                self._leave_for_poll(now)
                return
        if is_due(self.deadlines, MemberTimer.SESSION, now):
            self.deadlines.cancel(MemberTimer.SESSION)
            self._lose(now, "session timed out without a successful heartbeat")
            self.deadlines.set(MemberTimer.REJOIN, now)
        if is_due(self.deadlines, MemberTimer.REJOIN, now):
            self.deadlines.cancel(MemberTimer.REJOIN)
            if self.state is ClassicState.UNJOINED or self.state is ClassicState.STABLE:
                self._prepare(now)
        if (
            self.state is ClassicState.STABLE
            and not self._heartbeat_in_flight
            and is_due(self.deadlines, MemberTimer.HEARTBEAT, now)
        ):
            self._heartbeat(now)

    # ------------------------------------------------------------------- rounds
    def _prepare(self, now: float) -> None:
        self._round += 1
        self.deadlines.cancel(MemberTimer.HEARTBEAT)
        self._heartbeat_in_flight = False
        self._pending_join = None
        self._rejoin_after_sync = False
        self._move(ClassicTrigger.REJOIN)
        round_ = self._round
        if self.protocol is RebalanceProtocol.EAGER and self.owned:
            self._revoke(self.owned, now, lambda t: self._join_if(round_, t))
        else:
            self._join_if(round_, now)

    def _join_if(self, round_: int, now: float) -> None:
        if round_ == self._round and self.state is ClassicState.PREPARING:
            self._join(now)

    def _join(self, now: float) -> None:
        self._move(ClassicTrigger.SEND_JOIN)
        # The coordinator keeps a member alive while it holds its JoinGroup
        # (and then its SyncGroup): no local session expiry meanwhile.
        self.deadlines.cancel(MemberTimer.SESSION)
        self._join_sent_at = now
        round_ = self._round
        protocols = []
        owned = sorted(self.owned)
        last = None
        if self._last_assignment is not None:
            last = [AssignorTP(tp.topic, tp.partition) for tp in sorted(self._last_assignment)]
        for assignor in self._assignors:
            sub = ConsumerProtocolSubscription(
                topics=sorted(self.subscription),
                user_data=assignor.user_data(last, self.generation),
                owned_partitions=_grouped(owned, SubscriptionTP),
                generation_id=self.generation,
                rack_id=self._rack,
            )
            protocols.append(
                JoinGroupRequestProtocol(name=assignor.name, metadata=encode_subscription(sub))
            )
        request = m.JoinGroupRequest(
            group_id=self.group_id,
            session_timeout_ms=self._session_ms,
            rebalance_timeout_ms=self._rebalance_ms,
            member_id=self.member_id,
            group_instance_id=self.group_instance_id,
            protocol_type="consumer",
            protocols=protocols,
            reason="joining" if self.generation < 0 else "rejoining",
        )
        self._req.request(
            request,
            target=self._target,
            now=now,
            lane=GROUP_LANE,
            timeout_ms=self._rebalance_ms + 5000,  # the coordinator holds it for the rebalance
            on_done=lambda answer, t: self._on_join(round_, answer, t),
        )

    def _on_join(self, round_: int, resp: Answer[m.JoinGroupResponse], now: float) -> None:
        if round_ != self._round or self.state is not ClassicState.JOINING:
            return
        if isinstance(resp, BaseException):
            if isinstance(resp, BrokerError) and resp.code in _FATAL:
                # Refused before it reached the coordinator (FindCoordinator
                # answered GROUP_AUTHORIZATION_FAILED): retrying will not help.
                self._fail_with(resp, "FindCoordinator")
                return
            self._retry_join(now)
            return
        code = resp.error_code
        if code == ErrorCode.NONE:
            self.member_id = resp.member_id
            self.generation = resp.generation_id
            self.protocol_name = resp.protocol_name
            self.leader_id = resp.leader
            self._move(ClassicTrigger.JOINED)
            self._sync(resp, now)
        elif code == ErrorCode.MEMBER_ID_REQUIRED:
            # KIP-394: the coordinator hands out the id and wants it back in a second join.
            self.member_id = resp.member_id
            self._join(now)
        elif code == ErrorCode.UNKNOWN_MEMBER_ID:
            # The coordinator dropped this member: what it owned may be another
            # member's already, so it is lost before joining afresh (Java's
            # onPartitionsLost on a reset generation).
            self.member_id = ""
            self._lose(now, "JoinGroup: member is unknown")
            self.deadlines.set(MemberTimer.REJOIN, now)
        elif code in _FATAL:
            self._fail(code, "JoinGroup")
        else:
            self._retry_join(now)

    def _retry_join(self, now: float) -> None:
        self._move(ClassicTrigger.ROUND_FAILED)
        self.deadlines.set(MemberTimer.REJOIN, now + self._backoff)
        if self.owned and self._join_sent_at is not None:
            # Cooperative members keep their partitions across a failed round;
            # the coordinator last heard from us when that JoinGroup went out.
            self.deadlines.set(MemberTimer.SESSION, self._join_sent_at + self._session_ms / 1000)

    def _sync(self, join: m.JoinGroupResponse, now: float) -> None:
        assignments: list[SyncGroupRequestAssignment] = []
        if self.is_leader and not join.skip_assignment:
            plan = self._assign(join, now)
            if plan is None:
                self._pending_join = join  # on_metadata() resumes
                return
            assignments = [
                SyncGroupRequestAssignment(
                    member_id=member,
                    assignment=encode_assignment(
                        ConsumerProtocolAssignment(
                            assigned_partitions=_grouped(
                                sorted(TopicPartition(tp.topic, tp.partition) for tp in tps),
                                AssignmentTP,
                            )
                        )
                    ),
                )
                for member, tps in sorted(plan.items())
            ]
        round_ = self._round
        request = m.SyncGroupRequest(
            group_id=self.group_id,
            generation_id=self.generation,
            member_id=self.member_id,
            group_instance_id=self.group_instance_id,
            protocol_type="consumer",
            protocol_name=self.protocol_name,
            assignments=assignments,
        )
        self._req.request(
            request,
            target=self._target,
            now=now,
            lane=GROUP_LANE,
            timeout_ms=self._rebalance_ms + 5000,
            on_done=lambda answer, t: self._on_sync(round_, answer, t),
        )

    def _assign(self, join: m.JoinGroupResponse, now: float) -> dict[str, list[AssignorTP]] | None:
        assignor = next(a for a in self._assignors if a.name == join.protocol_name)
        members = []
        topics: set[str] = set()
        for entry in join.members:
            _, sub = decode_subscription(entry.metadata)
            owned = tuple(
                AssignorTP(t.topic, p) for t in sub.owned_partitions for p in t.partitions
            )
            members.append(
                Member(
                    member_id=entry.member_id,
                    topics=frozenset(sub.topics),
                    group_instance_id=entry.group_instance_id,
                    owned_partitions=owned,
                    generation=sub.generation_id,
                    rack=sub.rack_id,
                    user_data=None if sub.user_data is None else bytes(sub.user_data),
                )
            )
            topics.update(sub.topics)
        counts = self._counts(frozenset(topics), now)
        if counts is None:
            return None
        self._assigned_counts = {t: counts.get(t, 0) for t in topics}
        return assignor.assign(members, self._assigned_counts)

    def _on_sync(self, round_: int, resp: Answer[m.SyncGroupResponse], now: float) -> None:
        if round_ != self._round or self.state is not ClassicState.SYNCING:
            return
        if isinstance(resp, BaseException):
            self._retry_join(now)
            return
        code = resp.error_code
        if code == ErrorCode.NONE:
            _, assignment = decode_assignment(resp.assignment) if resp.assignment else (0, None)
            new = frozenset(
                TopicPartition(t.topic, p)
                for t in (assignment.assigned_partitions if assignment is not None else [])
                for p in t.partitions
            )
            self._install(new, now)
        elif code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            if code == ErrorCode.UNKNOWN_MEMBER_ID:
                self.member_id = ""
            self._lose(now, "SyncGroup: generation is gone")
            self.deadlines.set(MemberTimer.REJOIN, now)
        elif code in _FATAL:
            self._fail(code, "SyncGroup")
        else:  # REBALANCE_IN_PROGRESS, coordinator moved, ...
            self._retry_join(now)
            if code == ErrorCode.REBALANCE_IN_PROGRESS:
                self.deadlines.set(MemberTimer.REJOIN, now)

    def _install(self, new: frozenset[TopicPartition], now: float) -> None:
        self._move(ClassicTrigger.SYNCED)
        self._last_assignment = new
        self.deadlines.set(MemberTimer.SESSION, now + self._session_ms / 1000)
        self.deadlines.set(MemberTimer.HEARTBEAT, now + self._heartbeat_ms / 1000)
        revoked = self.owned - new
        added = new - self.owned
        rejoin, self._rejoin_after_sync = self._rejoin_after_sync, False
        if not revoked:
            self._assigned(added)
            if rejoin:
                self._prepare(now)
            return
        # KIP-429: give up what moved first (Java calls onPartitionsRevoked
        # before onPartitionsAssigned), then rejoin at once so it can be
        # handed over in the next round.
        round_ = self._round

        def revoked_done(t: float) -> None:
            if round_ == self._round and self.state is ClassicState.STABLE:
                self._revoking = False
                self._assigned(added)
                self._prepare(t)

        self._revoking = True
        self._revoke(revoked, now, revoked_done)

    def _assigned(self, added: frozenset[TopicPartition]) -> None:
        # Emitted after every successful SyncGroup, even when nothing was
        # added: the user's on_partitions_assigned runs once per rebalance.
        self.owned = self.owned | added
        self._events.append(PartitionsAssigned(partitions=added, generation=self.generation))

    # ---------------------------------------------------------------- heartbeat
    def _heartbeat(self, now: float) -> None:
        self._heartbeat_in_flight = True
        self.deadlines.set(MemberTimer.HEARTBEAT, now + self._heartbeat_ms / 1000)
        round_ = self._round
        request = m.HeartbeatRequest(
            group_id=self.group_id,
            generation_id=self.generation,
            member_id=self.member_id,
            group_instance_id=self.group_instance_id,
        )
        self._req.request(
            request,
            target=self._target,
            now=now,
            lane=GROUP_LANE,
            on_done=lambda answer, t: self._on_heartbeat(round_, answer, t),
        )

    def _on_heartbeat(self, round_: int, resp: Answer[m.HeartbeatResponse], now: float) -> None:
        if round_ != self._round or self.state is not ClassicState.STABLE:
            return
        self._heartbeat_in_flight = False
        if isinstance(resp, BaseException):
            self.deadlines.set(MemberTimer.HEARTBEAT, now + self._backoff)
            return
        code = resp.error_code
        if code == ErrorCode.NONE:
            self.deadlines.set(MemberTimer.SESSION, now + self._session_ms / 1000)
        elif code == ErrorCode.REBALANCE_IN_PROGRESS:
            # While a revocation runs, its end rejoins (see the module docstring);
            # the heartbeats go on meanwhile, keeping the session alive.
            self.request_rejoin(now=now, reason="heartbeat: the group is rebalancing")
        elif code in (ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID):
            if code == ErrorCode.UNKNOWN_MEMBER_ID:
                self.member_id = ""
            self._lose(now, "heartbeat: generation is gone")
            self.deadlines.set(MemberTimer.REJOIN, now)
        elif code in _FATAL:
            self._fail(code, "Heartbeat")
        else:
            self.deadlines.set(MemberTimer.HEARTBEAT, now + self._backoff)

    # -------------------------------------------------------------------- leave
    def _on_leave(self, answer: Answer[m.LeaveGroupResponse], now: float) -> None:
        self._move(ClassicTrigger.LEFT)
        self.member_id = ""
        self.generation = -1
        done, self._leave_done = self._leave_done, None
        if done is not None:
            done(now)

    def _leave_for_poll(self, now: float) -> None:
        self._round += 1
        self._clear_timers()
        if self.owned:
            self._events.append(PartitionsLost(partitions=self.owned, generation=self.generation))
            self.owned = frozenset()
        if self.group_instance_id is None and self.member_id:
            self._send_leave(now, "poll interval passed", _ignore)
        self.member_id = "" if self.group_instance_id is None else self.member_id
        self.generation = -1
        self._move(ClassicTrigger.POLL_EXPIRED)

    # ------------------------------------------------------------------ helpers
    def _send_leave(self, now: float, reason: str, on_done: OnAnswer[m.LeaveGroupResponse]) -> None:
        group_id, member_id, instance_id = self.group_id, self.member_id, self.group_instance_id

        def build(version: int) -> m.LeaveGroupRequest:
            # LeaveGroup v3 (KIP-345) names members in a batch; before it, one member_id.
            if version < 3:
                return m.LeaveGroupRequest(group_id=group_id, member_id=member_id)
            identity = MemberIdentity(
                member_id=member_id, group_instance_id=instance_id, reason=reason
            )
            return m.LeaveGroupRequest(group_id=group_id, members=[identity])

        self._req.request(
            build(3), on_done, target=self._target, now=now, lane=GROUP_LANE, build=build
        )

    def _revoke(
        self, partitions: frozenset[TopicPartition], now: float, then: Callable[[float], None]
    ) -> None:
        def done(t: float) -> None:
            # Partitions lost while the hook ran were announced as lost already.
            still = partitions & self.owned
            self.owned = self.owned - still
            if still:
                self._events.append(PartitionsRevoked(partitions=still, generation=self.generation))
            then(t)

        self.revoke_hook(partitions, now, done)

    def _lose(self, now: float, why: str) -> None:
        self._round += 1
        self._clear_timers()
        if self.owned:
            self._events.append(PartitionsLost(partitions=self.owned, generation=self.generation))
            self.owned = frozenset()
        self.generation = -1
        self._move(ClassicTrigger.LOST)

    def _clear_timers(self) -> None:
        # The poll-interval timer survives: it watches the user, not the group.
        for timer in (MemberTimer.HEARTBEAT, MemberTimer.SESSION, MemberTimer.REJOIN):
            self.deadlines.cancel(timer)
        self._heartbeat_in_flight = False
        self._pending_join = None
        self._rejoin_after_sync = False
        self._revoking = False

    def _fail(self, code: int, api: str) -> None:
        node = self._req.answered_by
        cause = broker_error(code, answered_from(node), node_id=node)
        self._fail_with(cause or RemoteProtocolError(f"error code {code}"), api)

    def _fail_with(self, cause: BaseException, api: str) -> None:
        error = group_fatal(
            f"group {self.group_id!r}: {api} answered {cause}; this member cannot continue "
            "(check the group configuration and ACLs), close the consumer",
            cause,
        )
        self._round += 1
        self._clear_timers()
        if self.owned:
            self._events.append(PartitionsLost(partitions=self.owned, generation=self.generation))
            self.owned = frozenset()
        self._move(ClassicTrigger.FATAL)
        self.error = error
        self._events.append(GroupFailed(error=error))

    def _move(self, trigger: ClassicTrigger) -> None:
        self.state = advance(CLASSIC, f"group {self.group_id!r} (classic)", self.state, trigger)

    def _check_alive(self, what: str) -> None:
        if self.state in (ClassicState.CLOSED, ClassicState.LEAVING):
            raise GroupFatalError(f"ClassicMember.{what}: the member is {self.state.value}")
        if self.state is ClassicState.FAILED:
            raise GroupFatalError(f"ClassicMember.{what}: the member failed: {self.error}")


def _grouped(tps: list[TopicPartition], cls: Any) -> list[Any]:
    out: dict[str, list[int]] = {}
    for tp in tps:
        out.setdefault(tp.topic, []).append(tp.partition)
    return [cls(topic=t, partitions=sorted(ps)) for t, ps in sorted(out.items())]


def _ignore(answer: Answer[m.LeaveGroupResponse], now: float) -> None:
    """The answer of a LeaveGroup nobody waits for."""


def _no_counts(topics: frozenset[str], now: float) -> Mapping[str, int] | None:
    return None

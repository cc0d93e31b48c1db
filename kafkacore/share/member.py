"""The share-group member: ShareGroupHeartbeat membership (KIP-932).

Theory of operation
-------------------
A share group's coordinator assigns partitions itself (several members may
share one partition); the member only heartbeats. It joins with member
epoch 0 and a member id it made (KIP-1082: a Kafka ``Uuid`` drawn from the
injected ``random.Random``), names the topics it subscribes to, and learns
its epoch, the heartbeat interval and, when it changed, its assignment.
There is no revocation handshake: records of a partition taken away simply
stop coming, and their locks are released by the broker. Leaving is a
heartbeat with epoch -1.

States (:class:`ShareMemberState`), transitions in :data:`TRANSITIONS`::

    UNSUBSCRIBED --subscribe--> JOINING --answer--> STABLE
    JOINING / STABLE --FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID--> JOINING (epoch 0)
    any live --leave--> LEAVING --answer or failure--> CLOSED
    any live --fatal answer--> FAILED

A move the table does not list raises ``AssertionError`` (h11's rule: the
table is the automaton, nothing outside it happens quietly).

Topic ids in assignments become names through ``topic_names`` (metadata);
an assignment naming an unknown id waits for :meth:`ShareMember.on_metadata`.
"""

from __future__ import annotations

import base64
import enum
import random
import uuid
from collections.abc import Callable

from kafkacore.client.metadata import TopicPartition
from kafkacore.client.response_errors import broker_error
from kafkacore.client.routing import GroupCoordinator
from kafkacore.client.stack import Answer, Send
from kafkacore.errors import BrokerError, RemoteProtocolError
from kafkacore.group.base import GROUP_LANE, GroupFatalError, answered_from, group_fatal
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from kafkacore.timers import Deadlines

__all__ = ["HEARTBEAT", "TRANSITIONS", "ShareMember", "ShareMemberState", "kafka_uuid"]

#: Deadline key of the next heartbeat.
HEARTBEAT = "share-heartbeat"
_LEAVE_EPOCH = -1
_REJOIN = frozenset({ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID})
# Answers that no retry fixes: the member fails with them.
_FATAL = frozenset(
    {
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.UNSUPPORTED_VERSION,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
    }
)


class ShareMemberState(enum.Enum):
    UNSUBSCRIBED = "unsubscribed"
    JOINING = "joining"
    STABLE = "stable"
    LEAVING = "leaving"
    CLOSED = "closed"
    FAILED = "failed"


class Input(enum.Enum):
    SUBSCRIBE = "subscribe"
    JOINED = "heartbeat answered"
    FENCED = "fenced or unknown"
    FATAL = "fatal answer"
    LEAVE = "leave"
    LEFT = "leave answered"


_S = ShareMemberState
_LIVE = (_S.JOINING, _S.STABLE)
#: (state, input) -> next state: every move the member makes, self-moves too
#: (a new subscription while joined, a second leave). A pair not listed is
#: a bug in this module and raises (the commands and answer handlers check
#: the state first): no input is silently ignored.
TRANSITIONS: dict[tuple[ShareMemberState, Input], ShareMemberState] = {
    (_S.UNSUBSCRIBED, Input.SUBSCRIBE): _S.JOINING,
    (_S.UNSUBSCRIBED, Input.LEAVE): _S.CLOSED,
    **{(s, Input.SUBSCRIBE): s for s in _LIVE},
    **{(s, Input.JOINED): _S.STABLE for s in _LIVE},
    **{(s, Input.FENCED): _S.JOINING for s in _LIVE},
    **{(s, Input.FATAL): _S.FAILED for s in _LIVE},
    **{(s, Input.LEAVE): _S.LEAVING for s in _LIVE},
    (_S.LEAVING, Input.LEAVE): _S.LEAVING,
    (_S.LEAVING, Input.LEFT): _S.CLOSED,
    (_S.CLOSED, Input.LEAVE): _S.CLOSED,
    (_S.FAILED, Input.LEAVE): _S.FAILED,
}


def kafka_uuid(rng: random.Random) -> str:
    """A random Kafka ``Uuid`` in its string form (URL-safe base64, 22 chars),
    which the broker parses from a share member id. Like Java's
    ``Uuid.randomUuid``, never one that starts with '-' (it reads as an option)."""
    while True:
        raw = uuid.UUID(int=rng.getrandbits(128), version=4).bytes
        text = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        if not text.startswith("-"):
            return text


TopicNames = Callable[[uuid.UUID], str | None]


class ShareMember:
    """One member of a share group; see the module docstring."""

    def __init__(
        self,
        send: Send,
        *,
        group_id: str,
        rng: random.Random,
        topic_names: TopicNames,
        rack: str | None = None,
        retry_backoff_ms: int = 100,
        answered_by: Callable[[], int | None] = lambda: None,
    ) -> None:
        self._send = send
        #: The broker whose answer is being handled (the owner's ``answered_by``):
        #: the errors built from an answer carry its id (issue 13).
        self._answered_by = answered_by
        self.group_id = group_id
        self.member_id = kafka_uuid(rng)
        self._rack = rack
        self._backoff = retry_backoff_ms / 1000
        self._names = topic_names
        self._target = GroupCoordinator(group_id)
        self.state = ShareMemberState.UNSUBSCRIBED
        self.member_epoch = 0
        self.subscription: frozenset[str] = frozenset()
        self.assignment: frozenset[TopicPartition] = frozenset()
        self.error: BaseException | None = None
        self.deadlines: Deadlines[str] = Deadlines()
        self._interval = 5.0
        self._in_flight = False
        self._round = 0
        self._target_ids: frozenset[tuple[uuid.UUID, int]] | None = None
        self._changes: list[frozenset[TopicPartition]] = []
        self._leave_done: Callable[[float], None] | None = None

    def _go(self, event: Input) -> None:
        after = TRANSITIONS.get((self.state, event))
        if after is None:
            raise AssertionError(
                f"share group {self.group_id!r}: {event.value!r} is not a move from "
                f"{self.state.value}; the share member's state machine is broken"
            )
        self.state = after

    # ---------------------------------------------------------------- queries
    def next_deadline(self) -> float | None:
        return None if self._in_flight else self.deadlines.get(HEARTBEAT)

    def pull_assignments(self) -> list[frozenset[TopicPartition]]:
        """The assignments that took effect since the last call, oldest first."""
        out, self._changes = self._changes, []
        return out

    # --------------------------------------------------------------- commands
    def subscribe(self, topics: frozenset[str], *, now: float) -> None:
        if self.state in (_S.LEAVING, _S.CLOSED, _S.FAILED):
            raise GroupFatalError(
                f"share group {self.group_id!r}: subscribe while the member is "
                f"{self.state.value}; make a new consumer"
            )
        self.subscription = topics
        self._go(Input.SUBSCRIBE)
        self.deadlines.set(HEARTBEAT, now)  # tell the coordinator now

    def on_metadata(self, *, now: float) -> None:
        if self._target_ids is not None:
            self._resolve()

    def leave(self, *, now: float, done: Callable[[float], None]) -> None:
        """Heartbeat with epoch -1 (when joined) and call ``done`` once left."""
        if self.state not in _LIVE or self.member_epoch <= 0:
            self._go(Input.LEAVE)
            if self.state is _S.LEAVING:
                self._go(Input.LEFT)  # never joined: nothing to tell the coordinator
            self._set_assignment(frozenset())
            done(now)
            return
        self._go(Input.LEAVE)
        self._round += 1
        self._in_flight = False
        self._leave_done = done
        self.deadlines.cancel(HEARTBEAT)
        self._set_assignment(frozenset())
        request = m.ShareGroupHeartbeatRequest(
            group_id=self.group_id, member_id=self.member_id, member_epoch=_LEAVE_EPOCH
        )
        self._send(request, self._on_leave, target=self._target, now=now, lane=GROUP_LANE)

    def handle_timeout(self, *, now: float) -> None:
        at = self.deadlines.get(HEARTBEAT)
        if self.state in _LIVE and not self._in_flight and at is not None and now >= at:
            self._heartbeat(now)

    # -------------------------------------------------------------- heartbeat
    def _heartbeat(self, now: float) -> None:
        self._in_flight = True
        self.deadlines.set(HEARTBEAT, now + self._interval)
        round_ = self._round
        joining = self.member_epoch == 0
        request = m.ShareGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=self.member_epoch,
            # Rack and topics: sent when joining or after a change; null means "unchanged".
            rack_id=self._rack if joining else None,
            subscribed_topic_names=sorted(self.subscription),
        )
        self._send(
            request,
            lambda answer, t: self._on_heartbeat(round_, answer, t),
            target=self._target,
            now=now,
            lane=GROUP_LANE,
        )

    def _on_heartbeat(
        self, round_: int, resp: Answer[m.ShareGroupHeartbeatResponse], now: float
    ) -> None:
        if round_ != self._round or self.state not in _LIVE:
            return
        self._in_flight = False
        if isinstance(resp, BaseException):
            if isinstance(resp, BrokerError) and resp.code in _FATAL:
                self._fail(resp, "FindCoordinator")
            else:
                self.deadlines.set(HEARTBEAT, now + self._backoff)
            return
        code = resp.error_code
        if code in _REJOIN:
            self._go(Input.FENCED)
            self.member_epoch = 0
            self._target_ids = None
            self._set_assignment(frozenset())
            self.deadlines.set(HEARTBEAT, now)
        elif code in _FATAL:
            node = self._answered_by()
            cause = broker_error(code, answered_from(node, resp.error_message), node_id=node)
            self._fail(cause or RemoteProtocolError(f"error code {code}"), "ShareGroupHeartbeat")
        elif code != ErrorCode.NONE:
            self.deadlines.set(HEARTBEAT, now + self._backoff)  # coordinator moved, loading
        else:
            self._joined(resp, now)

    def _joined(self, resp: m.ShareGroupHeartbeatResponse, now: float) -> None:
        self._go(Input.JOINED)
        if resp.member_id:
            self.member_id = resp.member_id
        self.member_epoch = resp.member_epoch
        if resp.heartbeat_interval_ms > 0:
            self._interval = resp.heartbeat_interval_ms / 1000
        self.deadlines.set(HEARTBEAT, now + self._interval)
        if resp.assignment is not None:
            self._target_ids = frozenset(
                (t.topic_id, p) for t in resp.assignment.topic_partitions for p in t.partitions
            )
            self._resolve()

    def _resolve(self) -> None:
        ids = self._target_ids
        assert ids is not None
        names = {tid: self._names(tid) for tid, _ in ids}
        if any(n is None for n in names.values()):
            return  # on_metadata() comes back when every id is known
        self._target_ids = None
        self._set_assignment(frozenset(TopicPartition(names[t] or "", p) for t, p in ids))

    def _set_assignment(self, new: frozenset[TopicPartition]) -> None:
        if new != self.assignment:
            self.assignment = new
            self._changes.append(new)

    def _on_leave(self, answer: Answer[m.ShareGroupHeartbeatResponse], now: float) -> None:
        self._go(Input.LEFT)
        self.member_epoch = 0
        done, self._leave_done = self._leave_done, None
        if done is not None:
            done(now)

    def _fail(self, cause: BaseException, api: str) -> None:
        error = group_fatal(
            f"share group {self.group_id!r}: {api} answered {cause}; "
            "this member cannot continue, close the consumer",
            cause,
        )
        self._go(Input.FATAL)
        self.error = error
        self.deadlines.cancel(HEARTBEAT)
        self._set_assignment(frozenset())

"""What both group membership machines share: the requester they send
through, the events they emit, and the errors they end in.

Theory of operation
-------------------
A membership machine (:mod:`kafkacore.group.classic`,
:mod:`kafkacore.group.kip848`) is stacked on a :class:`Requester`: it asks
for a request to be sent to the group coordinator and is called back with
the answer (the response, or the error) and the time: the typed seam of
:mod:`kafkacore.client.stack` (:class:`~kafkacore.client.stack.Send`). It never sees bytes or
connections; the consumer core provides the requester on top of
:class:`~kafkacore.client.KafkaClientCore`, tests provide a scripted one.
A request whose shape depends on the version passes ``build=``, called with
the version negotiated on the connection that carries it (the stacking
contract, ``docs/stacking.md``): the machine never guesses a version.

Time arrives as ``now`` on every call; a machine keeps its timers in one
:class:`~kafkacore.timers.Deadlines` keyed by :class:`MemberTimer` and
never stores the time of a call for later.

Assignment changes leave the machine as events (:class:`PartitionsAssigned`,
:class:`PartitionsRevoked`, :class:`PartitionsLost`). Before a machine gives
partitions up it calls its ``revoke_hook(partitions, now, done)``, so the
owner can commit their offsets first (Java's ``onJoinPrepare`` commit),
and continues when ``done(now)`` is called.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeAlias

from kafkacore.client.metadata import TopicPartition
from kafkacore.client.stack import Send
from kafkacore.errors import BrokerError, KafkaError
from kafkacore.timers import Deadlines

__all__ = [
    "GROUP_EVENTS",
    "GROUP_LANE",
    "GroupEvent",
    "GroupFailed",
    "GroupFatalError",
    "MemberTimer",
    "PartitionsAssigned",
    "PartitionsLost",
    "PartitionsRevoked",
    "Requester",
    "RevokeHook",
    "answered_from",
    "group_fatal",
]

#: Group traffic gets its own connection so it never queues behind fetches.
GROUP_LANE = "group"

#: ``revoke_hook(partitions, now, done)``: call ``done(now)`` when ready to let go.
RevokeHook = Callable[[frozenset[TopicPartition], float, Callable[[float], None]], None]


def answered_from(node_id: int | None, message: str | None = None) -> str | None:
    """The message of an error a coordinator answered, naming that broker."""
    if node_id is None:
        return message
    who = f"from broker {node_id}" if node_id >= 0 else "from a bootstrap server"
    return f"{message} ({who})" if message else who


class Requester(Protocol):
    """What a member sends through: a :class:`~kafkacore.client.stack.Send`
    (``request``) and who answered. A member passes ``lane=GROUP_LANE``."""

    #: While ``on_done`` runs: the id of the broker that answered (None
    #: otherwise); the errors a machine builds from the answer carry it
    #: (``BrokerError.node_id``, issue 13). A StackedMachine has it.
    answered_by: int | None

    @property
    def request(self) -> Send:
        """Sends one request for the member (the consumer core's ``_send``)."""
        ...


class MemberTimer(enum.Enum):
    """Why a membership machine wakes: its keys in ``deadlines``."""

    #: Start the next join round (classic: after a backoff, or at once).
    REJOIN = "rejoin"
    #: Send the next heartbeat (not while one is in flight).
    HEARTBEAT = "heartbeat"
    #: Classic: no successful heartbeat for ``session_timeout_ms`` while STABLE.
    SESSION = "session"
    #: KIP-62: no ``poll()`` for ``max_poll_interval_ms``.
    POLL = "poll"


def is_due(deadlines: Deadlines[MemberTimer], timer: MemberTimer, now: float) -> bool:
    """True when ``timer`` is armed and its time has come."""
    at = deadlines.get(timer)
    return at is not None and now >= at


def member_deadline(deadlines: Deadlines[MemberTimer], heartbeat_in_flight: bool) -> float | None:
    """The earliest timer of a member; a heartbeat waits while one is in flight."""
    times = [
        at
        for timer in MemberTimer
        if (at := deadlines.get(timer)) is not None
        and not (heartbeat_in_flight and timer is MemberTimer.HEARTBEAT)
    ]
    return min(times) if times else None


class GroupFatalError(KafkaError):
    """The group refused this member for good (authorization, fencing, bad config).

    Made by :func:`group_fatal`: when the coordinator answered an error code,
    the error is also an instance of that code's class, so ``except
    InvalidSessionTimeoutError`` or ``except GroupAuthorizationFailedError``
    catches it, as Java's ``poll`` throws the broker's exception itself.
    """


#: Per broker error class: the GroupFatalError subclass that is also that class.
_FATAL_OF: dict[type[BrokerError], type[GroupFatalError]] = {}


def group_fatal(message: str, cause: BaseException) -> GroupFatalError:
    """The GroupFatalError for ``cause`` (its ``__cause__``; see the class)."""
    if isinstance(cause, BrokerError):
        kind = type(cause)
        cls = _FATAL_OF.get(kind)
        if cls is None:
            cls = type(f"GroupFatal{kind.__name__}", (GroupFatalError, kind), {"__slots__": ()})
            _FATAL_OF[kind] = cls
        error: GroupFatalError = cls(message, node_id=cause.node_id)  # type: ignore[call-arg]
    else:
        error = GroupFatalError(message)
    error.__cause__ = cause
    return error


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionsAssigned:
    """The member now owns ``partitions`` in addition to what it owned."""

    partitions: frozenset[TopicPartition]
    generation: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionsRevoked:
    """The member gave ``partitions`` up in an orderly rebalance (offsets committed first)."""

    partitions: frozenset[TopicPartition]
    generation: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionsLost:
    """The member lost ``partitions`` without a handover (fenced, session expired)."""

    partitions: frozenset[TopicPartition]
    generation: int


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupFailed:
    """The membership ended with a fatal error; the consumer must be closed."""

    error: BaseException


def immediate_revoke(
    partitions: frozenset[TopicPartition], now: float, done: Callable[[float], None]
) -> None:
    """The default hook: nothing to commit, let go at once."""
    done(now)


#: Everything a group member's ``pull_events()`` can return: a closed union.
GroupEvent: TypeAlias = PartitionsAssigned | PartitionsRevoked | PartitionsLost | GroupFailed

#: The classes of :data:`GroupEvent`, for ``isinstance`` checks.
GROUP_EVENTS: tuple[type, ...] = (
    PartitionsAssigned,
    PartitionsRevoked,
    PartitionsLost,
    GroupFailed,
)

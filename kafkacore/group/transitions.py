"""The group members' states and every move between them, as data.

Each member machine (:class:`~kafkacore.group.classic.ClassicMember`,
:class:`~kafkacore.group.kip848.Kip848Member`) changes its state only
through :func:`advance`, naming the trigger; the tables below are then the
whole automaton (h11's rule). A pair a table does not list is a bug in the
machine, which checks its state before acting, so it raises
``AssertionError`` instead of being ignored or half-applied.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, TypeVar

__all__ = [
    "CLASSIC",
    "KIP848",
    "ClassicState",
    "ClassicTrigger",
    "Kip848State",
    "Kip848Trigger",
    "advance",
]


class ClassicState(enum.Enum):
    UNJOINED = "unjoined"
    PREPARING = "preparing"
    JOINING = "joining"
    SYNCING = "syncing"
    STABLE = "stable"
    LEAVING = "leaving"
    CLOSED = "closed"
    FAILED = "failed"


class ClassicTrigger(enum.Enum):
    UNSUBSCRIBED = "subscription emptied"
    REJOIN = "a new round begins"
    SEND_JOIN = "JoinGroup sent"
    JOINED = "JoinGroup answered"
    SYNCED = "SyncGroup answered"
    ROUND_FAILED = "JoinGroup or SyncGroup failed, retry later"
    LOST = "generation gone (fenced, session expired)"
    POLL_EXPIRED = "max_poll_interval_ms passed (KIP-62)"
    LEAVE = "LeaveGroup sent"
    LEAVE_QUIETLY = "closed without a LeaveGroup (never joined, or static: KIP-345)"
    LEFT = "LeaveGroup answered"
    FATAL = "fatal answer"


class Kip848State(enum.Enum):
    UNSUBSCRIBED = "unsubscribed"
    JOINING = "joining"
    RECONCILING = "reconciling"
    STABLE = "stable"
    LEAVING = "leaving"
    CLOSED = "closed"
    FAILED = "failed"


class Kip848Trigger(enum.Enum):
    SUBSCRIBE = "subscribed (or polled after leaving)"
    JOINED = "heartbeat answered"
    TARGET = "a new target assignment to reconcile"
    RECONCILED = "target reached"
    FENCED = "fenced or unknown member: rejoin with epoch 0"
    POLL_EXPIRED = "max_poll_interval_ms passed (KIP-62)"
    LEAVE = "leave heartbeat sent"
    LEAVE_QUIETLY = "closed never having joined"
    LEFT = "leave heartbeat answered"
    FATAL = "fatal answer"


_C, _CT = ClassicState, ClassicTrigger
# A member that has not left or failed: a new round, a loss or a close may come.
_C_LIVE = (_C.UNJOINED, _C.PREPARING, _C.JOINING, _C.SYNCING, _C.STABLE)

#: (state, trigger) -> next state of the classic member.
CLASSIC: Final[Mapping[tuple[ClassicState, ClassicTrigger], ClassicState]] = MappingProxyType(
    {
        (_C.UNJOINED, _CT.UNSUBSCRIBED): _C.UNJOINED,
        (_C.STABLE, _CT.UNSUBSCRIBED): _C.UNJOINED,
        (_C.UNJOINED, _CT.REJOIN): _C.PREPARING,
        (_C.STABLE, _CT.REJOIN): _C.PREPARING,
        (_C.PREPARING, _CT.SEND_JOIN): _C.JOINING,
        (_C.JOINING, _CT.SEND_JOIN): _C.JOINING,  # MEMBER_ID_REQUIRED (KIP-394)
        (_C.JOINING, _CT.JOINED): _C.SYNCING,
        (_C.SYNCING, _CT.SYNCED): _C.STABLE,
        (_C.JOINING, _CT.ROUND_FAILED): _C.UNJOINED,
        (_C.SYNCING, _CT.ROUND_FAILED): _C.UNJOINED,
        **{(s, _CT.POLL_EXPIRED): _C.UNJOINED for s in _C_LIVE if s is not _C.UNJOINED},
        **{(s, _CT.LOST): _C.UNJOINED for s in _C_LIVE},
        **{(s, _CT.LEAVE): _C.LEAVING for s in _C_LIVE},
        **{(s, _CT.LEAVE_QUIETLY): _C.CLOSED for s in _C_LIVE},
        (_C.LEAVING, _CT.LEFT): _C.CLOSED,
        **{(s, _CT.FATAL): _C.FAILED for s in _C_LIVE},
    }
)

_K, _KT = Kip848State, Kip848Trigger
# Subscribed and heartbeating.
_K_IN = (_K.JOINING, _K.STABLE, _K.RECONCILING)

#: (state, trigger) -> next state of the KIP-848 member.
KIP848: Final[Mapping[tuple[Kip848State, Kip848Trigger], Kip848State]] = MappingProxyType(
    {
        (_K.UNSUBSCRIBED, _KT.SUBSCRIBE): _K.JOINING,
        (_K.JOINING, _KT.JOINED): _K.STABLE,
        (_K.STABLE, _KT.TARGET): _K.RECONCILING,
        (_K.RECONCILING, _KT.RECONCILED): _K.STABLE,
        **{(s, _KT.FENCED): _K.JOINING for s in _K_IN},
        **{(s, _KT.POLL_EXPIRED): _K.UNSUBSCRIBED for s in _K_IN},
        **{(s, _KT.LEAVE): _K.LEAVING for s in _K_IN},
        **{(s, _KT.LEAVE_QUIETLY): _K.CLOSED for s in (_K.UNSUBSCRIBED, *_K_IN)},
        (_K.LEAVING, _KT.LEFT): _K.CLOSED,
        **{(s, _KT.FATAL): _K.FAILED for s in _K_IN},
    }
)

S = TypeVar("S", bound=enum.Enum)
T = TypeVar("T", bound=enum.Enum)


def advance(table: Mapping[tuple[S, T], S], machine: str, state: S, trigger: T) -> S:
    """The state after ``trigger`` in ``state``; AssertionError when the table
    has no such move (``machine`` names the member in the message)."""
    after = table.get((state, trigger))
    if after is None:
        raise AssertionError(
            f"{machine}: {trigger.value!r} is not a move from {state.value}; "
            "the member's state machine is broken"
        )
    return after

"""What both group membership machines share: the requester they send
through, the events they emit, and the errors they end in.

Theory of operation
-------------------
A membership machine (:mod:`kafkacore.group.classic`,
:mod:`kafkacore.group.kip848`) is stacked on a :class:`Requester`: it asks
for a request to be sent to the group coordinator and is called back with
the response (or the error) and the time. It never sees bytes or
connections; the consumer core provides the requester on top of
:class:`~kafkacore.client.KafkaClientCore`, tests provide a scripted one.

Assignment changes leave the machine as events (:class:`PartitionsAssigned`,
:class:`PartitionsRevoked`, :class:`PartitionsLost`). Before a machine gives
partitions up it calls its ``revoke_hook(partitions, now, done)``, so the
owner can commit their offsets first (Java's ``onJoinPrepare`` commit),
and continues when ``done(now)`` is called.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kafkacore.client.metadata import TopicPartition
from kafkacore.client.routing import Target
from kafkacore.errors import KafkaError

__all__ = [
    "GROUP_LANE",
    "GroupFailed",
    "GroupFatalError",
    "PartitionsAssigned",
    "PartitionsLost",
    "PartitionsRevoked",
    "Requester",
    "RevokeHook",
]

#: Group traffic gets its own connection so it never queues behind fetches.
GROUP_LANE = "group"

OnDone = Callable[[Any, BaseException | None, float], None]
#: ``revoke_hook(partitions, now, done)``: call ``done(now)`` when ready to let go.
RevokeHook = Callable[[frozenset[TopicPartition], float, Callable[[float], None]], None]


class Requester(Protocol):
    """Sends one request for a machine and calls ``on_done(response, error, now)``."""

    def request(
        self,
        request: Any,
        *,
        target: Target,
        now: float,
        on_done: OnDone,
        lane: str = GROUP_LANE,
        timeout_ms: int | None = None,
    ) -> None: ...

    def negotiated_version(self, api_key: int) -> int | None:
        """The version a connection agreed for ``api_key`` (None before any did)."""
        ...


class GroupFatalError(KafkaError):
    """The group refused this member for good (authorization, fencing, bad config)."""


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

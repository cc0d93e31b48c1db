"""Records and events of the share consumer (KIP-932).

Events are frozen, slotted, keyword-only dataclasses named in the past
tense; :data:`SHARE_EVENTS` is the closed union
:class:`~kafkacore.share.core.ShareConsumerCore` emits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, TypeAlias

from kafkacore.client.events import CLIENT_EVENTS, ClientEvent
from kafkacore.client.metadata import TopicPartition
from kafkacore.operation import OperationCompleted
from kafkacore.records.model import Header

__all__ = [
    "SHARE_EVENTS",
    "AcknowledgementsCommitted",
    "ShareAssignmentChanged",
    "ShareEvent",
    "ShareGroupFailed",
    "ShareRecord",
    "ShareRecordsAvailable",
]


class ShareRecord(NamedTuple):
    """One record as a share consumer's ``poll()`` returns it.

    ``delivery_count`` is how many times the broker has handed this record
    out (1 the first time); a released or timed-out record comes back higher.
    """

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    leader_epoch: int | None
    delivery_count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareRecordsAvailable:
    """Acquired records are buffered and ``poll`` would return some."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AcknowledgementsCommitted:
    """The broker answered the acknowledgements of ``offsets`` in ``partition``
    (Java's ``AcknowledgementCommitCallback.onComplete``); ``error`` is None
    when they were all applied."""

    partition: TopicPartition
    offsets: frozenset[int]
    error: BaseException | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareAssignmentChanged:
    """The share group assigned this member ``partitions`` (the whole new set)."""

    partitions: frozenset[TopicPartition]


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupFailed:
    """The membership failed for good (``error`` says why); close the consumer."""

    error: BaseException


ShareEvent: TypeAlias = (
    ShareRecordsAvailable
    | AcknowledgementsCommitted
    | ShareAssignmentChanged
    | ShareGroupFailed
    | OperationCompleted
    | ClientEvent
)

#: The classes of :data:`ShareEvent`, for ``isinstance`` checks.
SHARE_EVENTS: tuple[type, ...] = (
    ShareRecordsAvailable,
    AcknowledgementsCommitted,
    ShareAssignmentChanged,
    ShareGroupFailed,
    OperationCompleted,
    *CLIENT_EVENTS,
)

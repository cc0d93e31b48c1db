"""Events the producer core emits through ``pull_events()``.

Frozen, slotted, keyword-only dataclasses named in the past tense. Every
record handed to :meth:`ProducerCore.append` is reported in exactly one
:class:`BatchCompleted`; every :class:`~kafkacore.operation.Operation` in exactly one
:class:`~kafkacore.operation.OperationCompleted`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from kafkacore.client.events import CredentialsNeeded
from kafkacore.operation import OperationCompleted

__all__ = ["PRODUCER_EVENTS", "BatchCompleted", "BufferFreed", "ProducerEvent"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchCompleted:
    """One batch of records finished: written (``error`` None) or failed.

    ``tokens[i]`` is the token given with the i-th record of the batch (the
    same token repeats for records of one ``append_many`` call);
    ``timestamps[i]`` its timestamp. ``base_offset`` is -1 when the broker
    did not say (``acks=0``, or a duplicate the broker had already written);
    ``log_append_time`` is -1 unless the topic uses LogAppendTime, in which
    case it replaces every record's timestamp.
    """

    topic: str
    partition: int
    base_offset: int
    log_append_time: int
    tokens: list[object]
    timestamps: list[int]
    error: BaseException | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BufferFreed:
    """``buffer_memory`` has room again after an append was refused."""

    available: int


#: Everything :meth:`ProducerCore.pull_events` can return: a closed union
#: (``CredentialsNeeded`` is the client's, passed through to the transport).
ProducerEvent: TypeAlias = BatchCompleted | BufferFreed | OperationCompleted | CredentialsNeeded

#: The classes of :data:`ProducerEvent`, for ``isinstance`` checks.
PRODUCER_EVENTS: tuple[type, ...] = (
    BatchCompleted,
    BufferFreed,
    OperationCompleted,
    CredentialsNeeded,
)

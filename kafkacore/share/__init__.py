"""Share groups (KIP-932, "Queues for Kafka"): the sans-IO share consumer.

See ``docs/share-groups.md`` for the model and :mod:`kafkacore.share.core`
for how the machines stack.
"""

from kafkacore.share.acks import AcknowledgementMode, AcknowledgeType, AcquisitionLockTimedOut
from kafkacore.share.config import ShareConsumerConfig
from kafkacore.share.core import CommitResult, ShareConsumerCore
from kafkacore.share.events import (
    SHARE_EVENTS,
    AcknowledgementsCommitted,
    ShareAssignmentChanged,
    ShareEvent,
    ShareGroupFailed,
    ShareRecord,
    ShareRecordsAvailable,
)
from kafkacore.share.fetcher import ShareSessionLost

__all__ = [
    "SHARE_EVENTS",
    "AcknowledgeType",
    "AcknowledgementMode",
    "AcknowledgementsCommitted",
    "AcquisitionLockTimedOut",
    "CommitResult",
    "ShareAssignmentChanged",
    "ShareConsumerConfig",
    "ShareConsumerCore",
    "ShareEvent",
    "ShareGroupFailed",
    "ShareRecord",
    "ShareRecordsAvailable",
    "ShareSessionLost",
]

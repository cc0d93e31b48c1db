"""kafka-python 3's ``kafka.admin``, over kafkacore (see :mod:`kafkacore.compat`).

``from kafka.admin import KafkaAdminClient, NewTopic`` becomes ``from
kafkacore.compat.kafka.admin import KafkaAdminClient, NewTopic``. The client
answers in kafka-python 3's shapes (dicts, lists, its response objects);
kafkacore's own :class:`kafkacore.KafkaAdminClient` keeps kafkacore's typed
results (``ItemResults``, dataclasses) for the same calls. ``docs/admin.md``
maps each call; ``docs/compat.md`` lists what differs and why.
"""

from kafkacore.transports._admin_acls import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)

from ._client import KafkaAdminClient
from ._types import (
    AbortTransactionSpec,
    AlterConfigOp,
    ConfigFilterType,
    ConfigResource,
    ConfigResourceType,
    ConfigSourceType,
    ConfigType,
    GroupState,
    GroupType,
    MemberToRemove,
    OffsetSpec,
    OffsetTimestamp,
    PartitionProducerState,
    ProducerState,
    ScramMechanism,
    TransactionDescription,
    TransactionListing,
    TransactionState,
    UpdateFeatureType,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from ._types import NewPartitions as NewPartitions
from ._types import NewTopic as NewTopic

# kafka-python's own __all__ (NewTopic and NewPartitions are deprecated there
# and left out of it, yet importable, as here).
__all__ = [
    "ACL",
    "ACLFilter",
    "ACLOperation",
    "ACLPermissionType",
    "ACLResourcePatternType",
    "AbortTransactionSpec",
    "AlterConfigOp",
    "ConfigFilterType",
    "ConfigResource",
    "ConfigResourceType",
    "ConfigSourceType",
    "ConfigType",
    "GroupState",
    "GroupType",
    "KafkaAdminClient",
    "MemberToRemove",
    "OffsetSpec",
    "OffsetTimestamp",
    "PartitionProducerState",
    "ProducerState",
    "ResourcePattern",
    "ResourcePatternFilter",
    "ResourceType",
    "ScramMechanism",
    "TransactionDescription",
    "TransactionListing",
    "TransactionState",
    "UpdateFeatureType",
    "UserScramCredentialDeletion",
    "UserScramCredentialUpsertion",
]

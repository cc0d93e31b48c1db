"""The sans-IO admin client: topics, configs, groups, offsets, records, ACLs.

Entry point: :class:`AdminCore` (a :class:`~kafkacore.client.driver.Driven`
stacked on the client core). See ``docs/admin.md``.
"""

from kafkacore.admin.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kafkacore.admin.config import AdminConfig
from kafkacore.admin.core import AdminCore
from kafkacore.admin.group_types import (
    ConsumerGroupDescription,
    GroupListing,
    GroupListings,
    GroupState,
    GroupType,
    MemberDescription,
    ShareGroupDescription,
    ShareMemberDescription,
    SharePartitionOffset,
)
from kafkacore.admin.results import ItemResult, ItemResults
from kafkacore.admin.types import (
    AlterConfigOp,
    AlterConfigOpType,
    BrokerNode,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
    CreatedTopic,
    DeletedRecords,
    ListedOffset,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    TopicDescription,
    TopicListing,
    TopicPartitionInfo,
)

__all__ = [
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "AdminConfig",
    "AdminCore",
    "AlterConfigOp",
    "AlterConfigOpType",
    "BrokerNode",
    "ClusterDescription",
    "ConfigEntry",
    "ConfigResource",
    "ConfigResourceType",
    "ConfigSource",
    "ConfigSynonym",
    "ConfigType",
    "ConsumerGroupDescription",
    "CreatedTopic",
    "DeletedRecords",
    "GroupListing",
    "GroupListings",
    "GroupState",
    "GroupType",
    "ItemResult",
    "ItemResults",
    "ListedOffset",
    "MemberDescription",
    "NewPartitions",
    "NewTopic",
    "OffsetSpec",
    "PatternType",
    "ResourceType",
    "ShareGroupDescription",
    "ShareMemberDescription",
    "SharePartitionOffset",
    "TopicDescription",
    "TopicListing",
    "TopicPartitionInfo",
]

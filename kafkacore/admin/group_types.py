"""Results of the group commands: listings and descriptions of consumer groups
(classic and KIP-848) and share groups (KIP-932)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from kafkacore.admin.acl import AclOperation
from kafkacore.client.metadata import TopicPartition

__all__ = [
    "ConsumerGroupDescription",
    "GroupListing",
    "GroupListings",
    "GroupState",
    "GroupType",
    "MemberDescription",
    "ShareGroupDescription",
    "ShareMemberDescription",
    "SharePartitionOffset",
]


class GroupType(enum.Enum):
    """The group protocol (ListGroups v5+, KIP-848): values as the broker spells them."""

    UNKNOWN = "unknown"
    CLASSIC = "classic"
    CONSUMER = "consumer"
    SHARE = "share"
    STREAMS = "streams"

    @classmethod
    def parse(cls, value: object) -> GroupType:
        """A member, or its name or wire value in any case; unknown strings are UNKNOWN."""
        if isinstance(value, cls):
            return value
        if not isinstance(value, str):
            raise TypeError(f"group type: expected a GroupType or str, got {value!r}")
        return _BY_KEY_TYPE.get(value.lower().replace("_", ""), cls.UNKNOWN)


class GroupState(enum.Enum):
    """A group's state, as the broker spells it (classic, consumer and share groups)."""

    UNKNOWN = "Unknown"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    NOT_READY = "NotReady"

    @classmethod
    def parse(cls, value: object) -> GroupState:
        """A member, or its name or wire value in any case; unknown strings are UNKNOWN."""
        if isinstance(value, cls):
            return value
        if not isinstance(value, str):
            raise TypeError(f"group state: expected a GroupState or str, got {value!r}")
        return _BY_KEY_STATE.get(value.lower().replace("_", ""), cls.UNKNOWN)


_BY_KEY_TYPE = {m.value: m for m in GroupType}
_BY_KEY_STATE = {m.value.lower(): m for m in GroupState}


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupListing:
    """One group as ListGroups lists it; ``state`` needs v4+, ``type`` v5+."""

    group_id: str
    protocol_type: str
    state: GroupState | None
    type: GroupType | None
    #: The broker that listed it (its coordinator).
    coordinator: int

    @property
    def is_simple_consumer_group(self) -> bool:
        """A group that only stores offsets (no member ever joined it)."""
        return self.protocol_type == ""


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupListings:
    """Groups listed by every broker; ``errors`` names the brokers that failed."""

    groups: tuple[GroupListing, ...]
    errors: Mapping[int, BaseException] = field(default_factory=dict)

    def all(self) -> tuple[GroupListing, ...]:
        """The groups; raises the first broker's error when any broker failed."""
        for error in self.errors.values():
            raise error
        return self.groups


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberDescription:
    """A consumer group member. ``assignment`` is what it owns; KIP-848 groups
    also report the ``target_assignment`` it moves to and its epoch."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: frozenset[TopicPartition]
    target_assignment: frozenset[TopicPartition] | None = None
    member_epoch: int | None = None
    subscribed_topics: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    rack_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupDescription:
    """A consumer group: ``type`` CLASSIC (JoinGroup/SyncGroup) or CONSUMER (KIP-848)."""

    group_id: str
    type: GroupType
    state: GroupState
    is_simple_consumer_group: bool
    #: The classic protocol name, or the KIP-848 server-side assignor.
    partition_assignor: str
    members: tuple[MemberDescription, ...]
    coordinator: int | None
    authorized_operations: frozenset[AclOperation] | None = None
    group_epoch: int | None = None
    target_assignment_epoch: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareMemberDescription:
    member_id: str
    client_id: str
    host: str
    rack_id: str | None
    member_epoch: int
    subscribed_topics: tuple[str, ...]
    assignment: frozenset[TopicPartition]


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupDescription:
    """A share group (KIP-932), from ShareGroupDescribe."""

    group_id: str
    state: GroupState
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[ShareMemberDescription, ...]
    coordinator: int | None
    authorized_operations: frozenset[AclOperation] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SharePartitionOffset:
    """A share group's start offset on one partition (DescribeShareGroupOffsets)."""

    start_offset: int
    leader_epoch: int | None
    #: Records not yet delivered (DescribeShareGroupOffsets v1+); None when unknown.
    lag: int | None = None

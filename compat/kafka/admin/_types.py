"""kafka-python 3's ``kafka.admin`` argument and result types, in its shapes.

Where kafka-python's type is kafkacore's own (same members and values: the
ACL enums, ``ConfigResourceType``, ``ConfigType``, ``ScramMechanism``; the
kafka-python-shaped ``NewTopic`` and ``NewPartitions`` kafkacore's own
clients take, which check their fields when built), the name is bound to
kafkacore's class; the others are written here in
kafka-python's shape (its enums' member names, its named tuples' fields)
and converted to kafkacore's arguments by the client.
"""

from __future__ import annotations

import enum
import hashlib
import os
from typing import Any, NamedTuple, TypeVar

from kafkacore.admin import AlterConfigOpType, ConfigResourceType, ConfigType, ScramMechanism
from kafkacore.admin import ConfigResource as CoreConfigResource
from kafkacore.admin import OffsetSpec as CoreOffsetSpec
from kafkacore.client import TopicPartition
from kafkacore.errors import LocalProtocolError
from kafkacore.transports._admin_common import NewPartitions, NewTopic

__all__ = [
    "AbortTransactionSpec",
    "AlterConfigOp",
    "ConfigFilterType",
    "ConfigResource",
    "ConfigResourceType",
    "ConfigSourceType",
    "ConfigType",
    "GroupState",
    "GroupType",
    "IsolationLevel",
    "MemberToRemove",
    "NewPartitions",
    "NewTopic",
    "OffsetSpec",
    "OffsetTimestamp",
    "PartitionProducerState",
    "ProducerState",
    "ScramMechanism",
    "TransactionDescription",
    "TransactionListing",
    "TransactionState",
    "UpdateFeatureType",
    "UserScramCredentialDeletion",
    "UserScramCredentialUpsertion",
    "member",
]

E = TypeVar("E", bound=enum.Enum)

#: kafka-python's name for kafkacore's incremental op type (SET, DELETE, APPEND, SUBTRACT).
AlterConfigOp = AlterConfigOpType


def member(cls: type[E], value: object, what: str) -> E:
    """``value`` as a member of ``cls``: a member, its name in any case (``-`` for
    ``_``), or its value, as kafka-python's ``EnumHelper.build_from`` takes."""
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        key = value.upper().replace("-", "_")
        if key in cls.__members__:
            return cls.__members__[key]
    for m in cls:
        if m.value == value or (isinstance(value, str) and str(m.value).lower() == value.lower()):
            return m
    names = ", ".join(cls.__members__)
    raise ValueError(f"{what}: {value!r} is not one of {names}")


class ConfigFilterType(enum.IntEnum):
    """Which configs ``describe_configs`` reports (kafka-python's ``config_filter``)."""

    ALL = 0
    DYNAMIC = 1
    MODIFIED = 2
    DEFAULT = 3
    STATIC = 4


class ConfigSourceType(enum.IntEnum):
    """Where a config's value comes from, under kafka-python's member names (the
    values are Kafka's, as kafkacore's :class:`~kafkacore.admin.ConfigSource`)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    DYNAMIC_CLIENT_METRICS_CONFIG = 7
    DYNAMIC_GROUP_CONFIG = 8

    def is_modified(self) -> bool:
        """Set for this resource, rather than a default or the broker's static file."""
        return self.value not in (3, 4, 5)


class UpdateFeatureType(enum.IntEnum):
    UNKNOWN = 0
    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3


class IsolationLevel(enum.IntEnum):
    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1


class OffsetSpec(enum.IntEnum):
    """ListOffsets' sentinels (an int >= 0 is a timestamp in ms)."""

    LATEST = -1
    EARLIEST = -2
    MAX_TIMESTAMP = -3  # KIP-734
    EARLIEST_LOCAL = -4  # KIP-405
    LATEST_TIERED = -5  # KIP-1005


class OffsetTimestamp(int):
    """A timestamp (ms) to look an offset up by, told apart from a bare offset."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"OffsetTimestamp({int(self)})"


def core_offset_spec(value: object, what: str) -> CoreOffsetSpec:
    """kafkacore's spec for kafka-python's ``OffsetSpec``, timestamp, or kafkacore's own."""
    if isinstance(value, CoreOffsetSpec):
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what}: expected an OffsetSpec or a timestamp (int), got {value!r}")
    return CoreOffsetSpec(int(value))


class GroupState(enum.StrEnum):
    """A group's state as the broker spells it (KIP-518, KIP-848)."""

    UNKNOWN = "Unknown"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"


class GroupType(enum.StrEnum):
    UNKNOWN = "Unknown"
    CLASSIC = "classic"
    CONSUMER = "consumer"
    SHARE = "share"


class TransactionState(enum.StrEnum):
    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"
    UNKNOWN = "Unknown"


class TransactionListing(NamedTuple):
    transactional_id: str
    producer_id: int
    state: TransactionState


class TransactionDescription(NamedTuple):
    coordinator_id: int
    state: TransactionState
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int
    topic_partitions: set[TopicPartition]


class ProducerState(NamedTuple):
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_transaction_start_offset: int


class PartitionProducerState(NamedTuple):
    active_producers: list[ProducerState]


class AbortTransactionSpec(NamedTuple):
    """``coordinator_epoch=-1``: the admin abort that skips the epoch check (as
    kafka-python's default; sent as 0, which kafkacore's spec takes)."""

    topic_partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int = -1


class MemberToRemove:
    """A member for ``remove_group_members`` (kafka-python's; kafkacore has no such
    call yet, see ``docs/compat.md``)."""

    __slots__ = ("group_instance_id", "member_id", "reason")

    def __init__(
        self,
        member_id: str | None = None,
        group_instance_id: str | None = None,
        reason: str | None = None,
    ) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.reason = reason

    def __repr__(self) -> str:
        return (
            f"<MemberToRemove member_id={self.member_id}, "
            f"group_instance_id={self.group_instance_id}, reason={self.reason}>"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MemberToRemove):
            return NotImplemented
        return (self.member_id, self.group_instance_id, self.reason) == (
            other.member_id,
            other.group_instance_id,
            other.reason,
        )

    def __hash__(self) -> int:
        return hash((self.member_id, self.group_instance_id, self.reason))


def _mechanism(value: object) -> ScramMechanism:
    found = member(ScramMechanism, value, "SCRAM mechanism")
    if found is ScramMechanism.UNKNOWN:
        raise LocalProtocolError("SCRAM mechanism must not be UNKNOWN")
    return found


class UserScramCredentialDeletion:
    """Delete ``user``'s SCRAM credential for ``mechanism`` (a member, its name or id)."""

    def __init__(self, user: str, mechanism: ScramMechanism | int | str) -> None:
        self.user = user
        self.mechanism = _mechanism(mechanism)

    def __repr__(self) -> str:
        return f"UserScramCredentialDeletion({self.user}, {self.mechanism.name})"


class UserScramCredentialUpsertion:
    """Set ``user``'s SCRAM password for ``mechanism``; the salt defaults to 24 random
    bytes, as kafka-python's does. The password is kept (private) so that
    kafkacore, which salts it itself, can be given it."""

    DEFAULT_ITERATIONS = 4096

    def __init__(
        self,
        user: str,
        mechanism: ScramMechanism | int | str,
        password: bytes | str,
        iterations: int | None = None,
        salt: bytes | None = None,
    ) -> None:
        self.user = user
        self.mechanism = _mechanism(mechanism)
        self.iterations = iterations if iterations is not None else self.DEFAULT_ITERATIONS
        self.salt = salt if salt is not None else os.urandom(24)
        raw = password.encode("utf-8") if isinstance(password, str) else password
        self._password = raw.decode("utf-8")
        self.salted_password = hashlib.pbkdf2_hmac(
            self.mechanism.hash_name, raw, self.salt, self.iterations
        )

    @property
    def password(self) -> str:
        return self._password

    def __repr__(self) -> str:
        return (
            f"UserScramCredentialUpsertion({self.user}, {self.mechanism.name}, "
            f"iterations={self.iterations})"
        )


class ConfigResource:
    """A config resource in kafka-python's shape: ``resource_type`` (a member or its
    name), ``name`` (a broker id may be an int) and ``configs`` (keys to describe,
    or ``{key: value}`` / ``{key: (op, value)}`` to alter)."""

    def __init__(
        self,
        resource_type: ConfigResourceType | str,
        name: str | int,
        configs: Any = None,
    ) -> None:
        if not isinstance(resource_type, ConfigResourceType):
            resource_type = ConfigResourceType[str(resource_type).upper()]
        self.resource_type = resource_type
        self.name = name
        self.configs = configs

    def core(self) -> CoreConfigResource:
        """kafkacore's resource; a broker resource not named by an int is a ValueError."""
        name = str(self.name)
        if self.resource_type in CoreConfigResource.PER_BROKER and not name.isdigit():
            raise ValueError(
                f"ConfigResource: {self.resource_type.name} resources are named by an "
                f"integer broker id (or a string of one), got {self.name!r}"
            )
        return CoreConfigResource(self.resource_type, name)

    def __str__(self) -> str:
        return f"ConfigResource {self.name}={self.resource_type}"

    def __repr__(self) -> str:
        return f"ConfigResource({self.resource_type}, {self.name}, {self.configs})"

"""ACL types: bindings, filters and Kafka's ACL enums (KIP-140, KIP-290).

The enum values are Kafka's own (``ResourceType``, ``PatternType``,
``AclOperation``, ``AclPermissionType`` in kafka-clients); they travel as
int8 fields of CreateAcls, DescribeAcls and DeleteAcls.

An :class:`AclBinding` is one concrete rule (what the broker stores); an
:class:`AclBindingFilter` matches rules, with ``None`` names and the ``ANY``
members matching everything (``MATCH`` patterns also match prefixed and
wildcard rules that cover a literal name).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kafkacore.admin._checks import check_str

__all__ = [
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "PatternType",
    "ResourceType",
    "authorized_operations",
]


class ResourceType(enum.IntEnum):
    """What an ACL protects (kafka-clients ``ResourceType``)."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    """How a resource name matches (KIP-290)."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    """An operation an ACL allows or denies (kafka-clients ``AclOperation``)."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


#: The broker's "authorized operations were not asked for" (Integer.MIN_VALUE, KIP-430).
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


def authorized_operations(bits: int) -> frozenset[AclOperation] | None:
    """The operations set in a KIP-430 bit field; None when the broker left it out."""
    if bits == AUTHORIZED_OPERATIONS_OMITTED:
        return None
    return frozenset(op for op in AclOperation if bits & (1 << op))


def _enum(what: str, cls: type[enum.IntEnum], value: object, refused: tuple[str, ...]) -> None:
    if not isinstance(value, cls):
        raise TypeError(f"{what}: expected a {cls.__name__} member, got {value!r}")
    if value.name in refused:
        raise ValueError(f"{what}: {cls.__name__}.{value.name} cannot be used here")


@dataclass(frozen=True, slots=True, kw_only=True)
class AclBinding:
    """One ACL rule: ``principal`` may (or may not) do ``operation`` on a resource."""

    resource_type: ResourceType
    resource_name: str
    principal: str
    operation: AclOperation
    permission_type: AclPermissionType = AclPermissionType.ALLOW
    host: str = "*"
    pattern_type: PatternType = PatternType.LITERAL

    def __post_init__(self) -> None:
        # UNKNOWN stays allowed: a newer broker may describe a rule with values
        # this client does not know (create_acls refuses them).
        _enum("AclBinding.resource_type", ResourceType, self.resource_type, ("ANY",))
        check_str("AclBinding.resource_name", self.resource_name, empty=True)
        check_str("AclBinding.principal", self.principal, empty=True)
        check_str("AclBinding.host", self.host, empty=True)
        _enum("AclBinding.operation", AclOperation, self.operation, ("ANY",))
        _enum("AclBinding.permission_type", AclPermissionType, self.permission_type, ("ANY",))
        _enum("AclBinding.pattern_type", PatternType, self.pattern_type, ("ANY", "MATCH"))


@dataclass(frozen=True, slots=True, kw_only=True)
class AclBindingFilter:
    """Matches ACL rules; the defaults match every rule."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    principal: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY
    host: str | None = None
    pattern_type: PatternType = PatternType.ANY

    def __post_init__(self) -> None:
        _enum("AclBindingFilter.resource_type", ResourceType, self.resource_type, ("UNKNOWN",))
        _enum("AclBindingFilter.operation", AclOperation, self.operation, ("UNKNOWN",))
        _enum(
            "AclBindingFilter.permission_type",
            AclPermissionType,
            self.permission_type,
            ("UNKNOWN",),
        )
        _enum("AclBindingFilter.pattern_type", PatternType, self.pattern_type, ("UNKNOWN",))
        for name in ("resource_name", "principal", "host"):
            value = getattr(self, name)
            if value is not None:
                check_str(f"AclBindingFilter.{name}", value)

"""kafka-python's ACL classes, over kafkacore's ACL bindings.

kafka-python's ``KafkaAdminClient`` takes ``ACL`` / ``ACLFilter`` objects
holding a ``ResourcePattern`` and answers in its own shapes:
``describe_acls(filter) -> (acls, NoError)``, ``create_acls(acls) ->
{"succeeded": [...], "failed": [...]}``, ``delete_acls(filters) -> [(filter,
acls, error), ...]``. The admin clients accept these classes too and then
answer in those shapes, so kafka-python code runs with only its import
changed; kafkacore's own ``AclBinding`` / ``AclBindingFilter`` keep
kafkacore's results (``docs/admin.md``). The enums are kafkacore's (the
values are Kafka's), under kafka-python's names.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from dataclasses import dataclass
from typing import Any, TypedDict, overload

from kafkacore.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ItemResults,
    PatternType,
    ResourceType,
)

from ._admin_common import AdminSurface, Command, Plan

__all__ = [
    "ACL",
    "ACLFilter",
    "ACLOperation",
    "ACLPermissionType",
    "ACLResourcePatternType",
    "AclPlans",
    "CreatedAcls",
    "NoError",
    "ResourcePattern",
    "ResourcePatternFilter",
    "ResourceType",
]

ACLOperation = AclOperation
ACLPermissionType = AclPermissionType
ACLResourcePatternType = PatternType


class NoError:
    """kafka-python's "nothing failed" marker in ``describe_acls`` / ``delete_acls`` answers."""


@dataclass(frozen=True, slots=True)
class ResourcePatternFilter:
    """Which resources a filter matches: type, name (None: any) and pattern type."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType


@dataclass(frozen=True, slots=True)
class ResourcePattern(ResourcePatternFilter):
    """One resource an ACL protects (a concrete name; LITERAL unless given)."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType = PatternType.LITERAL


@dataclass(frozen=True, slots=True)
class ACLFilter:
    """Matches ACLs: principal and host None for any, the ``ANY`` members for any value."""

    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType
    resource_pattern: ResourcePatternFilter

    def to_binding_filter(self) -> AclBindingFilter:
        """This filter as kafkacore's :class:`AclBindingFilter` (checked there)."""
        pattern = self.resource_pattern
        _require(pattern, ResourcePatternFilter, "ACLFilter.resource_pattern")
        return AclBindingFilter(
            resource_type=pattern.resource_type,
            resource_name=pattern.resource_name,
            pattern_type=pattern.pattern_type,
            principal=self.principal,
            host=self.host,
            operation=self.operation,
            permission_type=self.permission_type,
        )


@dataclass(frozen=True, slots=True)
class ACL(ACLFilter):
    """One concrete ACL rule (what ``create_acls`` takes and the broker stores)."""

    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType
    resource_pattern: ResourcePatternFilter

    def to_binding(self) -> AclBinding:
        """This rule as kafkacore's :class:`AclBinding` (checked there)."""
        pattern = self.resource_pattern
        _require(pattern, ResourcePattern, "ACL.resource_pattern")
        if pattern.resource_name is None or self.principal is None or self.host is None:
            raise ValueError(
                "ACL: resource_pattern.resource_name, principal and host must be given "
                f"(None matches anything: use ACLFilter to match), got {self!r}"
            )
        return AclBinding(
            resource_type=pattern.resource_type,
            resource_name=pattern.resource_name,
            pattern_type=pattern.pattern_type,
            principal=self.principal,
            host=self.host,
            operation=self.operation,
            permission_type=self.permission_type,
        )

    @classmethod
    def from_binding(cls, binding: AclBinding) -> ACL:
        """kafkacore's :class:`AclBinding` in kafka-python's shape."""
        return cls(
            principal=binding.principal,
            host=binding.host,
            operation=binding.operation,
            permission_type=binding.permission_type,
            resource_pattern=ResourcePattern(
                binding.resource_type, binding.resource_name, binding.pattern_type
            ),
        )


def _require(value: object, kind: type, what: str) -> None:
    if not isinstance(value, kind):
        raise TypeError(f"{what}: expected a {kind.__name__}, got {type(value).__name__}")


class CreatedAcls(TypedDict):
    """kafka-python's ``create_acls`` answer: the rules made, and the errors of the rest."""

    succeeded: list[ACL]
    failed: list[BaseException]


def all_kafka_python(items: list[object], kind: type, what: str) -> bool:
    """True when every item is kafka-python-shaped (``kind``); False when none is.

    A mix is refused: the answer could not take both shapes.
    """
    shaped = [isinstance(item, kind) for item in items]
    if any(shaped) and not all(shaped):
        raise TypeError(
            f"{what}: got both kafka-python {kind.__name__} objects and kafkacore "
            "bindings; pass one kind (the answer takes that kind's shape)"
        )
    return bool(shaped) and all(shaped)


def created_acls(acls: list[ACL], results: ItemResults[AclBinding, None]) -> CreatedAcls:
    """kafka-python's ``create_acls`` answer from kafkacore's per-binding results."""
    answer: CreatedAcls = {"succeeded": [], "failed": []}
    for acl in acls:
        item = results[acl.to_binding()]
        if item.error is None:
            answer["succeeded"].append(acl)
        else:
            answer["failed"].append(item.error)
    return answer


DeletedAcls = list[tuple[ACLFilter, list[ACL], BaseException | type[NoError]]]


def deleted_acls(
    filters: list[ACLFilter],
    results: ItemResults[AclBindingFilter, tuple[AclBinding, ...]],
) -> DeletedAcls:
    """kafka-python's ``delete_acls`` answer: (filter, rules deleted, error) per filter."""
    answer: DeletedAcls = []
    for acl_filter in filters:
        item = results[acl_filter.to_binding_filter()]
        if item.error is not None:
            answer.append((acl_filter, [], item.error))
        else:
            answer.append((acl_filter, [ACL.from_binding(b) for b in item.result()], NoError))
    return answer


class AclPlans(AdminSurface):
    """The admin surface's ACL calls, in kafkacore's shapes or kafka-python's."""

    # kafkacore's AclBinding / AclBindingFilter answer in kafkacore's shapes;
    # kafka-python's ACL / ACLFilter (transports/_admin_acls.py) in kafka-python's.
    @overload
    def _describe_acls(
        self, acl_filter: ACLFilter, *, timeout: float | None = None
    ) -> Plan[tuple[list[ACL], type[NoError]]]: ...
    @overload
    def _describe_acls(
        self, acl_filter: AclBindingFilter | None = None, *, timeout: float | None = None
    ) -> Plan[tuple[AclBinding, ...]]: ...
    def _describe_acls(
        self,
        acl_filter: AclBindingFilter | ACLFilter | None = None,
        *,
        timeout: float | None = None,
    ) -> Plan[tuple[AclBinding, ...]] | Plan[tuple[list[ACL], type[NoError]]]:
        """ACL bindings matching ``acl_filter`` (None: all) (DescribeAcls).

        With kafka-python's ``ACLFilter``: ``(list of ACL, NoError)``, as kafka-python.
        """
        if isinstance(acl_filter, ACLFilter):
            core_filter = acl_filter.to_binding_filter()

            def steps() -> Generator[Command, Any, tuple[list[ACL], type[NoError]]]:
                bindings: tuple[AclBinding, ...] = yield lambda core, now, ms: core.describe_acls(
                    core_filter, timeout_ms=ms, now=now
                )
                return [ACL.from_binding(b) for b in bindings], NoError

            return self._plan("describe_acls", timeout, steps())
        return self._one(
            "describe_acls",
            timeout,
            lambda core, now, ms: core.describe_acls(acl_filter, timeout_ms=ms, now=now),
        )

    @overload
    def _create_acls(
        self, acls: Iterable[ACL], *, timeout: float | None = None
    ) -> Plan[CreatedAcls]: ...
    @overload
    def _create_acls(
        self, acls: Iterable[AclBinding], *, timeout: float | None = None
    ) -> Plan[ItemResults[AclBinding, None]]: ...
    def _create_acls(
        self, acls: Iterable[AclBinding] | Iterable[ACL], *, timeout: float | None = None
    ) -> Plan[ItemResults[AclBinding, None]] | Plan[CreatedAcls]:
        """Create ACL bindings (CreateAcls); ``ItemResults`` per binding.

        With kafka-python's ``ACL`` objects: ``{"succeeded": [...], "failed": [...]}``.
        """
        given: list[object] = list(acls)
        if all_kafka_python(given, ACL, "create_acls"):
            rules = [acl for acl in given if isinstance(acl, ACL)]
            bindings = [acl.to_binding() for acl in rules]

            def steps() -> Generator[Command, Any, CreatedAcls]:
                results: ItemResults[AclBinding, None] = (
                    yield lambda core, now, ms: core.create_acls(bindings, timeout_ms=ms, now=now)
                )
                return created_acls(rules, results)

            return self._plan("create_acls", timeout, steps())
        return self._one(
            "create_acls",
            timeout,
            lambda core, now, ms: core.create_acls(given, timeout_ms=ms, now=now),  # type: ignore[arg-type]
        )

    @overload
    def _delete_acls(
        self, filters: Iterable[ACLFilter], *, timeout: float | None = None
    ) -> Plan[DeletedAcls]: ...
    @overload
    def _delete_acls(
        self, filters: Iterable[AclBindingFilter], *, timeout: float | None = None
    ) -> Plan[ItemResults[AclBindingFilter, tuple[AclBinding, ...]]]: ...
    def _delete_acls(
        self,
        filters: Iterable[AclBindingFilter] | Iterable[ACLFilter],
        *,
        timeout: float | None = None,
    ) -> Plan[ItemResults[AclBindingFilter, tuple[AclBinding, ...]]] | Plan[DeletedAcls]:
        """Delete the ACL bindings each filter matches (DeleteAcls); the deleted bindings.

        With kafka-python's ``ACLFilter`` objects: ``[(filter, [ACL, ...], error), ...]``.
        """
        given: list[object] = list(filters)
        if all_kafka_python(given, ACLFilter, "delete_acls"):
            wanted = [f for f in given if isinstance(f, ACLFilter)]
            core_filters = [f.to_binding_filter() for f in wanted]

            def steps() -> Generator[Command, Any, DeletedAcls]:
                results: ItemResults[AclBindingFilter, tuple[AclBinding, ...]] = yield (
                    lambda core, now, ms: core.delete_acls(core_filters, timeout_ms=ms, now=now)
                )
                return deleted_acls(wanted, results)

            return self._plan("delete_acls", timeout, steps())
        return self._one(
            "delete_acls",
            timeout,
            lambda core, now, ms: core.delete_acls(given, timeout_ms=ms, now=now),  # type: ignore[arg-type]
        )

"""ACL commands: describe, create and delete ACLs (KIP-140), on any broker.

A broker without an authorizer answers SECURITY_DISABLED; that is each
item's error (the whole operation's, for ``describe_acls``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafkacore.admin._base import AdminBase, code_error, items_outcome, single_outcome
from kafkacore.admin._checks import check_timeout
from kafkacore.admin.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kafkacore.admin.results import ItemResults
from kafkacore.client.handles import RequestHandle
from kafkacore.client.routing import AnyNode
from kafkacore.operation import Operation
from kafkacore.protocol import messages as m
from kafkacore.protocol.messages.create_acls_request import AclCreation
from kafkacore.protocol.messages.delete_acls_request import DeleteAclsFilter

__all__ = ["AclCommands"]


def _of(cls: Any, value: int) -> Any:
    """An ACL enum member; UNKNOWN for a value this client does not know."""
    return cls(value) if value in cls._value2member_map_ else cls.UNKNOWN


def _binding(resource_type: int, name: str, pattern: int, acl: Any) -> AclBinding:
    return AclBinding(
        resource_type=_of(ResourceType, resource_type),
        resource_name=name,
        pattern_type=_of(PatternType, pattern),
        principal=acl.principal,
        host=acl.host,
        operation=_of(AclOperation, acl.operation),
        permission_type=_of(AclPermissionType, acl.permission_type),
    )


def _items(what: str, values: object, cls: type) -> list[Any]:
    if isinstance(values, cls | str) or not isinstance(values, Iterable):
        raise TypeError(f"{what}: expected a collection of {cls.__name__}, got {values!r}")
    out: list[Any] = []
    for v in values:
        if not isinstance(v, cls):
            raise TypeError(f"{what}: expected {cls.__name__} items, got {v!r}")
        if v in out:
            raise ValueError(f"{what}: {v} is listed twice")
        out.append(v)
    if not out:
        raise ValueError(f"{what}: give at least one {cls.__name__}")
    return out


class AclCommands(AdminBase):
    """ACL commands of :class:`~kafkacore.admin.AdminCore`."""

    def describe_acls(
        self,
        acl_filter: AclBindingFilter | None = None,
        *,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[tuple[AclBinding, ...]]:
        """The ACLs matching ``acl_filter`` (default: every ACL)."""
        f = AclBindingFilter() if acl_filter is None else acl_filter
        if not isinstance(f, AclBindingFilter):
            raise TypeError(f"describe_acls: expected an AclBindingFilter, got {acl_filter!r}")
        job = self._begin(
            "describe_acls", [None], single_outcome, check_timeout("describe_acls", timeout_ms), now
        )
        request = m.DescribeAclsRequest(
            resource_type_filter=f.resource_type,
            resource_name_filter=f.resource_name,
            pattern_type_filter=f.pattern_type,
            principal_filter=f.principal,
            host_filter=f.host,
            operation=f.operation,
            permission_type=f.permission_type,
        )

        def send(keys: list[Any], t: float) -> None:
            self._send(job, keys, request, answer, send, now=t, target=AnyNode())

        def answer(
            response: m.DescribeAclsResponse,
            handle: RequestHandle[m.DescribeAclsResponse],
            t: float,
        ) -> None:
            if response.error_code:
                self._failed(
                    job,
                    [None],
                    code_error(
                        response.error_code,
                        response.error_message,
                        "DescribeAcls",
                        node_id=self._answerer(),
                    ),
                    send,
                    t,
                )
                return
            job.settle(
                None,
                tuple(
                    _binding(r.resource_type, r.resource_name, r.pattern_type, acl)
                    for r in response.resources
                    for acl in r.acls
                ),
            )

        send([None], now)
        return self._started(job, now)

    def create_acls(
        self, acls: Iterable[AclBinding], *, timeout_ms: int | None = None, now: float
    ) -> Operation[ItemResults[AclBinding, None]]:
        """Create ACL rules (creating one that exists is not an error)."""
        bindings = _items("create_acls: acls", acls, AclBinding)
        for b in bindings:
            unknown = [
                v.name
                for v in (b.resource_type, b.pattern_type, b.operation, b.permission_type)
                if v.name == "UNKNOWN"
            ]
            if unknown:
                raise ValueError(f"create_acls: {b} has UNKNOWN values; name each one")
        job = self._begin(
            "create_acls", bindings, items_outcome, check_timeout("create_acls", timeout_ms), now
        )

        def send(keys: list[AclBinding], t: float) -> None:
            creations = [
                AclCreation(
                    resource_type=b.resource_type,
                    resource_name=b.resource_name,
                    resource_pattern_type=b.pattern_type,
                    principal=b.principal,
                    host=b.host,
                    operation=b.operation,
                    permission_type=b.permission_type,
                )
                for b in keys
            ]

            def answer(
                response: m.CreateAclsResponse,
                handle: RequestHandle[m.CreateAclsResponse],
                t2: float,
            ) -> None:
                # Results come back in the order of the creations; their errors are final.
                for b, r in zip(keys, response.results, strict=False):
                    if r.error_code:
                        job.settle(
                            b,
                            error=code_error(
                                r.error_code, r.error_message, f"ACL {b}", node_id=self._answerer()
                            ),
                        )
                    else:
                        job.settle(b, None)

            self._send(
                job,
                keys,
                m.CreateAclsRequest(creations=creations),
                answer,
                send,
                now=t,
                target=AnyNode(),
            )

        send(bindings, now)
        return self._started(job, now)

    def delete_acls(
        self, filters: Iterable[AclBindingFilter], *, timeout_ms: int | None = None, now: float
    ) -> Operation[ItemResults[AclBindingFilter, tuple[AclBinding, ...]]]:
        """Delete the ACLs each filter matches; each filter's value is what it deleted."""
        keys = _items("delete_acls: filters", filters, AclBindingFilter)
        job = self._begin(
            "delete_acls", keys, items_outcome, check_timeout("delete_acls", timeout_ms), now
        )

        def send(todo: list[AclBindingFilter], t: float) -> None:
            request = m.DeleteAclsRequest(
                filters=[
                    DeleteAclsFilter(
                        resource_type_filter=f.resource_type,
                        resource_name_filter=f.resource_name,
                        pattern_type_filter=f.pattern_type,
                        principal_filter=f.principal,
                        host_filter=f.host,
                        operation=f.operation,
                        permission_type=f.permission_type,
                    )
                    for f in todo
                ]
            )

            def answer(
                response: m.DeleteAclsResponse,
                handle: RequestHandle[m.DeleteAclsResponse],
                t2: float,
            ) -> None:
                for f, r in zip(todo, response.filter_results, strict=False):
                    failed = next((a for a in r.matching_acls if a.error_code), None)
                    if r.error_code:
                        job.settle(
                            f,
                            error=code_error(
                                r.error_code,
                                r.error_message,
                                f"ACL filter {f}",
                                node_id=self._answerer(),
                            ),
                        )
                    elif failed is not None:
                        job.settle(
                            f,
                            error=code_error(
                                failed.error_code,
                                failed.error_message,
                                f"ACL filter {f}",
                                node_id=self._answerer(),
                            ),
                        )
                    else:
                        job.settle(
                            f,
                            tuple(
                                _binding(a.resource_type, a.resource_name, a.pattern_type, a)
                                for a in r.matching_acls
                            ),
                        )

            self._send(job, todo, request, answer, send, now=t, target=AnyNode())

        send(keys, now)
        return self._started(job, now)

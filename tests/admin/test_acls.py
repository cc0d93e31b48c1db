"""ACL commands against the scripted cluster."""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kafkacore.admin._acls import _binding
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ApiKey, ErrorCode
from kafkacore.protocol.error_codes import SecurityDisabledError
from kafkacore.protocol.messages import delete_acls_response as dacl
from kafkacore.protocol.messages.describe_acls_response import AclDescription
from tests.admin.fakeadmin import Harness
from tests.client.fakebroker import FakeBroker


def rule(name: str, op: AclOperation = AclOperation.READ, **kw: Any) -> AclBinding:
    return AclBinding(
        resource_type=ResourceType.TOPIC,
        resource_name=name,
        principal="User:alice",
        operation=op,
        **kw,
    )


def test_create_describe_and_delete_acls() -> None:
    h = Harness()
    a, b = (
        rule("a"),
        rule(
            "pre-",
            AclOperation.WRITE,
            pattern_type=PatternType.PREFIXED,
            permission_type=AclPermissionType.DENY,
            host="10.0.0.1",
        ),
    )
    created = h.result(h.core.create_acls([a, b], now=h.now))
    assert created[a].ok and created[b].ok
    creation = h.world.requests(ApiKey.CREATE_ACLS)[0].creations[1]
    assert (creation.resource_pattern_type, creation.permission_type, creation.host) == (
        4,
        2,
        "10.0.0.1",
    )
    assert set(h.result(h.core.describe_acls(now=h.now))) == {a, b}
    only = h.result(h.core.describe_acls(AclBindingFilter(resource_name="a"), now=h.now))
    assert only == (a,)
    body = h.world.requests(ApiKey.DESCRIBE_ACLS)[-1]
    assert (body.resource_type_filter, body.resource_name_filter, body.pattern_type_filter) == (
        1,
        "a",
        1,
    )
    f_write = AclBindingFilter(operation=AclOperation.WRITE)
    f_none = AclBindingFilter(principal="User:nobody")
    deleted = h.result(h.core.delete_acls([f_write, f_none], now=h.now))
    assert deleted[f_write].result() == (b,) and deleted[f_none].result() == ()
    assert h.world.acls and h.result(h.core.describe_acls(now=h.now)) == (a,)


def test_acls_on_a_broker_without_an_authorizer() -> None:
    h = Harness()
    h.world.security_disabled = True
    op = h.core.describe_acls(now=h.now)
    h.run(op)
    assert isinstance(op.error, SecurityDisabledError)
    assert str(op.error) == (
        "SECURITY_DISABLED: DescribeAcls (broker 0): No Authorizer is configured."
    )
    created = h.result(h.core.create_acls([rule("a")], now=h.now))
    assert isinstance(created[rule("a")].error, SecurityDisabledError)
    deleted = h.result(h.core.delete_acls([AclBindingFilter()], now=h.now))
    assert isinstance(deleted[AclBindingFilter()].error, SecurityDisabledError)


def test_describe_acls_retries_a_retriable_error() -> None:
    h = Harness()
    h.world.script(
        ApiKey.DESCRIBE_ACLS,
        lambda b, body, v: m.DescribeAclsResponse(error_code=ErrorCode.REQUEST_TIMED_OUT),
    )
    assert h.result(h.core.describe_acls(now=h.now)) == ()
    assert len(h.world.requests(ApiKey.DESCRIBE_ACLS)) == 2


def test_delete_acls_reports_a_rule_that_could_not_be_deleted() -> None:
    h = Harness()

    def partly(b: FakeBroker, body: Any, v: int) -> Any:
        bad = dacl.DeleteAclsMatchingAcl(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            error_message="not yours",
            resource_type=2,
            resource_name="a",
            pattern_type=3,
            principal="User:x",
            host="*",
            operation=3,
            permission_type=3,
        )
        return m.DeleteAclsResponse(
            filter_results=[dacl.DeleteAclsFilterResult(matching_acls=[bad])]
        )

    h.world.script(ApiKey.DELETE_ACLS, partly)
    result = h.result(h.core.delete_acls([AclBindingFilter()], now=h.now))[AclBindingFilter()]
    assert str(result.error).startswith(
        "CLUSTER_AUTHORIZATION_FAILED: ACL filter AclBindingFilter("
    )
    assert str(result.error).endswith(": not yours")


def test_rules_with_values_this_client_does_not_know_are_read_as_unknown() -> None:
    acl = AclDescription(principal="User:a", host="*", operation=99, permission_type=3)
    binding = _binding(42, "t", 9, acl)
    assert (binding.resource_type, binding.pattern_type, binding.operation) == (
        ResourceType.UNKNOWN,
        PatternType.UNKNOWN,
        AclOperation.UNKNOWN,
    )
    h = Harness()
    with pytest.raises(ValueError, match="has UNKNOWN values; name each one"):
        h.core.create_acls([binding], now=h.now)


@pytest.mark.parametrize(
    ("call", "error", "text"),
    [
        (lambda c: c.describe_acls("all", now=0.0), TypeError, "expected an AclBindingFilter"),
        (lambda c: c.create_acls(rule("a"), now=0.0), TypeError, "collection of AclBinding"),
        (
            lambda c: c.create_acls([AclBindingFilter()], now=0.0),
            TypeError,
            "expected AclBinding items",
        ),
        (lambda c: c.create_acls([rule("a"), rule("a")], now=0.0), ValueError, "listed twice"),
        (lambda c: c.create_acls([], now=0.0), ValueError, "at least one AclBinding"),
        (lambda c: c.delete_acls([], now=0.0), ValueError, "at least one AclBindingFilter"),
    ],
)
def test_acl_commands_refuse_bad_arguments(call: Any, error: type, text: str) -> None:
    h = Harness()
    with pytest.raises(error, match=text):
        call(h.core)

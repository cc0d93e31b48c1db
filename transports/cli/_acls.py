"""``kafkacore acls``: list, create and delete ACL bindings (a broker with an authorizer).

The resource is one of ``--topic``, ``--group``, ``--cluster``,
``--transactional-id``; names of operations and permissions are Kafka's
(``Read``, ``Write``, ``Describe``..., any case). ``delete`` takes a filter
and prints what it removed; a filter that matches nothing removes nothing
and says so.
"""

from __future__ import annotations

from typing import Any

import click

from kafkacore.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

from ._app import App, CliError, Exit, check_items, pass_app
from ._formats import emit_json, table

__all__ = ["register"]

_OPERATIONS = [op.name for op in AclOperation if op.name not in ("UNKNOWN", "ANY")]


def _choice(names: list[str]) -> click.Choice[str]:
    return click.Choice(names, case_sensitive=False)


def _resource_options(fn: Any) -> Any:
    options = [
        click.option("--topic", help="A topic (with --prefixed: a name prefix)."),
        click.option("--group", help="A consumer group."),
        click.option("--cluster", is_flag=True, help="The cluster."),
        click.option("--transactional-id", help="A transactional id."),
        click.option("--prefixed", is_flag=True, help="The name is a prefix (PREFIXED pattern)."),
        click.option("--principal", metavar="TYPE:NAME", help="e.g. User:alice."),
        click.option("--host", help="The client host the rule applies to ('*': any)."),
        click.option(
            "--operation",
            "operations",
            multiple=True,
            type=_choice(_OPERATIONS),
            help="Operation (repeatable).",
        ),
        click.option("--permission", type=_choice(["ALLOW", "DENY"]), help="Allow or deny."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _resource(
    topic: str | None, group: str | None, cluster: bool, transactional_id: str | None
) -> tuple[ResourceType, str] | None:
    given = [
        (ResourceType.TOPIC, topic),
        (ResourceType.GROUP, group),
        (ResourceType.CLUSTER, "kafka-cluster" if cluster else None),
        (ResourceType.TRANSACTIONAL_ID, transactional_id),
    ]
    chosen = [(kind, name) for kind, name in given if name is not None]
    if len(chosen) > 1:
        raise click.UsageError(
            "give at most one of --topic, --group, --cluster, --transactional-id"
        )
    return chosen[0] if chosen else None


def _check_principal(principal: str | None) -> None:
    if principal is not None and (":" not in principal or principal.startswith(":")):
        raise click.BadParameter(
            f"{principal!r}: expected TYPE:NAME, e.g. User:alice", param_hint="--principal"
        )


def _row(b: AclBinding) -> dict[str, str]:
    return {
        "principal": b.principal,
        "host": b.host,
        "operation": b.operation.name,
        "permission": b.permission_type.name,
        "resource_type": b.resource_type.name,
        "resource_name": b.resource_name,
        "pattern_type": b.pattern_type.name,
    }


def _print(bindings: list[AclBinding], as_json: bool) -> None:
    rows = [_row(b) for b in bindings]
    rows.sort(
        key=lambda r: (r["resource_type"], r["resource_name"], r["principal"], r["operation"])
    )
    if as_json:
        emit_json(rows)
        return
    table(
        ("PRINCIPAL", "HOST", "OPERATION", "PERMISSION", "RESOURCE", "NAME", "PATTERN"),
        (tuple(r.values()) for r in rows),
    )


def _filters(kw: dict[str, Any]) -> list[AclBindingFilter]:
    _check_principal(kw["principal"])
    resource = _resource(kw["topic"], kw["group"], kw["cluster"], kw["transactional_id"])
    kind, name = resource if resource else (ResourceType.ANY, None)
    pattern = (
        PatternType.PREFIXED
        if kw["prefixed"]
        else (PatternType.LITERAL if resource else PatternType.ANY)
    )
    permission = (
        AclPermissionType[kw["permission"].upper()] if kw["permission"] else (AclPermissionType.ANY)
    )
    ops = [AclOperation[o.upper()] for o in kw["operations"]] or [AclOperation.ANY]
    return [
        AclBindingFilter(
            resource_type=kind,
            resource_name=name,
            principal=kw["principal"],
            operation=op,
            permission_type=permission,
            host=kw["host"],
            pattern_type=pattern,
        )
        for op in ops
    ]


@click.group("acls")
def acls() -> None:
    """List, create and delete ACLs."""


@acls.command("list")
@_resource_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def list_(app: App, /, as_json: bool, **kw: Any) -> None:
    """ACL bindings, all or those matching the options."""
    found: dict[AclBinding, None] = {}
    with app.admin() as admin:
        for f in _filters(kw):
            found.update(dict.fromkeys(admin.describe_acls(f)))
    _print(list(found), as_json)


@acls.command("create")
@_resource_options
@pass_app
def create(app: App, /, **kw: Any) -> None:
    """Create ACL bindings: --principal, a resource and at least one --operation."""
    _check_principal(kw["principal"])
    resource = _resource(kw["topic"], kw["group"], kw["cluster"], kw["transactional_id"])
    if resource is None or kw["principal"] is None or not kw["operations"]:
        raise click.UsageError(
            "create needs --principal, a resource (--topic, --group, "
            "--cluster or --transactional-id) and --operation"
        )
    kind, name = resource
    bindings = [
        AclBinding(
            resource_type=kind,
            resource_name=name,
            principal=kw["principal"],
            operation=AclOperation[op.upper()],
            permission_type=AclPermissionType[(kw["permission"] or "ALLOW").upper()],
            host=kw["host"] or "*",
            pattern_type=PatternType.PREFIXED if kw["prefixed"] else PatternType.LITERAL,
        )
        for op in kw["operations"]
    ]
    with app.admin() as admin:
        results = admin.create_acls(bindings)
    check_items(results, "acl")
    _print(bindings, as_json=False)


@acls.command("delete")
@_resource_options
@click.option("--json", "as_json", is_flag=True, help="Print what was deleted as JSON.")
@pass_app
def delete(app: App, /, as_json: bool, **kw: Any) -> None:
    """Delete the ACL bindings matching the options (a resource or a principal is needed)."""
    if not any(kw[k] for k in ("topic", "group", "cluster", "transactional_id", "principal")):
        raise click.UsageError(
            "delete needs a resource or --principal (it never deletes every ACL)"
        )
    with app.admin() as admin:
        results = admin.delete_acls(_filters(kw))
    check_items(results, "acl filter")
    deleted = {b: None for r in results.values() for b in r.result()}
    if not deleted:
        raise CliError("no ACL matched; nothing deleted", Exit.NOT_FOUND)
    _print(list(deleted), as_json)


def register(root: click.Group) -> None:
    root.add_command(acls)

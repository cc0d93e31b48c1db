"""Routing targets: where a request should go, resolved by the client core.

A target is resolved every time the core tries to dispatch a queued request,
so a request survives leader moves, coordinator changes and reconnects
until its deadline. Which target an API needs follows its routing kind
(franz-go style), generated from ``codegen/routing.py`` as
:data:`kafkacore.protocol.enums.ROUTING`: most requests go to a partition
leader or a coordinator; Metadata and ApiVersions-like requests go to any
node. :func:`default_target` turns the kind into the target ``send`` uses
when the caller names none.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkacore.protocol.enums import ROUTING, Routing

__all__ = [
    "AnyNode",
    "Controller",
    "GroupCoordinator",
    "Node",
    "PartitionLeader",
    "Target",
    "TransactionCoordinator",
    "default_target",
    "describe_target",
    "is_target",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class AnyNode:
    """The least loaded node (seed 004 ``least_loaded_node`` rule)."""


@dataclass(frozen=True, slots=True)
class Node:
    """One broker by id (negative ids are bootstrap addresses)."""

    node_id: int


@dataclass(frozen=True, slots=True)
class PartitionLeader:
    """The leader of one partition, from metadata (refreshed when unknown)."""

    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupCoordinator:
    """The group coordinator of ``group_id`` (FindCoordinator key type 0)."""

    group_id: str


@dataclass(frozen=True, slots=True)
class TransactionCoordinator:
    """The transaction coordinator of ``transactional_id`` (key type 1)."""

    transactional_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Controller:
    """The controller id from metadata (KRaft: a broker that forwards, KIP-590)."""


Target = AnyNode | Node | PartitionLeader | GroupCoordinator | TransactionCoordinator | Controller


def is_target(obj: object) -> bool:
    """True for a routing target (one of the :data:`Target` classes)."""
    return isinstance(
        obj,
        AnyNode | Node | PartitionLeader | GroupCoordinator | TransactionCoordinator | Controller,
    )


def describe_target(target: Target) -> str:
    """How messages name a target: 'leader of t-0', 'coordinator of group 'g''..."""
    if isinstance(target, AnyNode):
        return "any node"
    if isinstance(target, Node):
        return f"node {target.node_id}"
    if isinstance(target, PartitionLeader):
        return f"leader of {target.topic}-{target.partition}"
    if isinstance(target, GroupCoordinator):
        return f"coordinator of group {target.group_id!r}"
    if isinstance(target, TransactionCoordinator):
        return f"coordinator of transactional id {target.transactional_id!r}"
    return "the controller"


#: The generated routing table, looked up by plain int keys.
_KIND_BY_KEY: dict[int, Routing] = {int(key): kind for key, kind in ROUTING.items()}


def default_target(api_key: int, request: object) -> Target:
    """Where ``request`` (of API ``api_key``) goes when the caller names no target.

    From the API's generated routing kind:

    * GROUP_COORDINATOR: the coordinator of the request's ``group_id``;
    * TXN_COORDINATOR: the coordinator of the request's ``transactional_id``
      (an idempotent-only InitProducerId has none: any node, as in Java);
    * CONTROLLER: the controller;
    * anything else (and a coordinator kind whose request names no single
      key, such as DescribeGroups' list of groups): any node. Partition
      leaders and specific nodes depend on what the caller wants; it names
      them.
    """
    kind = _KIND_BY_KEY.get(api_key)
    if kind is Routing.GROUP_COORDINATOR:
        group_id = getattr(request, "group_id", None)
        if isinstance(group_id, str) and group_id:
            return GroupCoordinator(group_id)
    elif kind is Routing.TXN_COORDINATOR:
        transactional_id = getattr(request, "transactional_id", None)
        if isinstance(transactional_id, str) and transactional_id:
            return TransactionCoordinator(transactional_id)
    elif kind is Routing.CONTROLLER:
        return Controller()
    return AnyNode()

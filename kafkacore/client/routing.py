"""Routing targets: where a request should go, resolved by the client core.

A target is resolved every time the core tries to dispatch a queued request,
so a request survives leader moves, coordinator changes and reconnects
until its deadline. Which target an API needs follows its routing kind
(franz-go style): most requests go to a partition leader or a coordinator;
Metadata and ApiVersions-like requests go to any node.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "AnyNode",
    "Controller",
    "GroupCoordinator",
    "Node",
    "PartitionLeader",
    "Target",
    "TransactionCoordinator",
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

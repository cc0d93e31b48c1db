"""Metadata requests the admin machine makes itself, and what it reads from them.

The admin client asks Metadata for exactly the topics a command is about
(never auto-creating them) and leaves the client core's own tracked topics
alone. Pure functions: a request builder for the negotiated version and
parsers from the response to result types.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from kafkacore.admin.acl import authorized_operations
from kafkacore.admin.types import BrokerNode, TopicDescription, TopicPartitionInfo
from kafkacore.protocol.messages import MetadataRequest, MetadataResponse
from kafkacore.protocol.messages.metadata_request import MetadataRequestTopic

__all__ = ["brokers_of", "describe_topic", "metadata_builder", "topic_id"]

#: Metadata v8 added authorized operations (KIP-430); v4 the auto-create switch.
_AUTHORIZED_OPS_VERSION = 8
_AUTO_CREATE_VERSION = 4


def metadata_builder(
    topics: list[str] | None, *, authorized: bool = False
) -> Callable[[int], MetadataRequest]:
    """Build a Metadata request for ``topics`` (None: every topic) at a version."""

    def build(version: int) -> MetadataRequest:
        if topics is None:
            # v0 has no null: an empty list meant "every topic" then.
            entries: list[MetadataRequestTopic] | None = [] if version == 0 else None
        else:
            entries = [MetadataRequestTopic(name=t) for t in topics]
        request = MetadataRequest(topics=entries)
        if version >= _AUTO_CREATE_VERSION:
            request.allow_auto_topic_creation = False
        if authorized and version >= _AUTHORIZED_OPS_VERSION:
            request.include_topic_authorized_operations = True
        return request

    return build


def topic_id(value: uuid.UUID) -> uuid.UUID | None:
    """A topic id, or None for the zero UUID (no id: old versions, unknown)."""
    return None if value.int == 0 else value


def _or_none(value: int) -> int | None:
    return None if value < 0 else value


def _ids(values: list[int] | None) -> tuple[int, ...] | None:
    return None if values is None else tuple(values)


def describe_topic(topic: Any) -> TopicDescription:
    """A TopicDescription from one topic of a Metadata or a DescribeTopicPartitions
    response (whose partitions also name KIP-966's eligible leader replicas)."""
    partitions = tuple(
        TopicPartitionInfo(
            partition=p.partition_index,
            leader=_or_none(p.leader_id),
            leader_epoch=_or_none(p.leader_epoch),
            replicas=tuple(p.replica_nodes),
            isr=tuple(p.isr_nodes),
            offline_replicas=tuple(p.offline_replicas),
            eligible_leader_replicas=_ids(getattr(p, "eligible_leader_replicas", None)),
            last_known_elr=_ids(getattr(p, "last_known_elr", None)),
        )
        for p in sorted(topic.partitions, key=lambda p: p.partition_index)
    )
    return TopicDescription(
        name=topic.name or "",
        topic_id=topic_id(topic.topic_id),
        is_internal=topic.is_internal,
        partitions=partitions,
        authorized_operations=authorized_operations(topic.topic_authorized_operations),
    )


def brokers_of(response: MetadataResponse) -> tuple[BrokerNode, ...]:
    """The brokers of a Metadata response, by id."""
    return tuple(
        BrokerNode(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
        for b in sorted(response.brokers, key=lambda b: b.node_id)
    )

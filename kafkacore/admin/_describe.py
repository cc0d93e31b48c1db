"""Group descriptions read from DescribeGroups, ConsumerGroupDescribe and
ShareGroupDescribe answers (pure functions)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafkacore.admin.acl import authorized_operations
from kafkacore.admin.group_types import (
    ConsumerGroupDescription,
    GroupState,
    GroupType,
    MemberDescription,
    ShareGroupDescription,
    ShareMemberDescription,
)
from kafkacore.client.metadata import TopicPartition
from kafkacore.errors import DecodeError
from kafkacore.protocol.consumer_protocol import decode_assignment, decode_subscription

__all__ = ["classic_group", "consumer_group", "share_group"]

#: The protocol type of groups of consumers (classic JoinGroup protocol type).
CONSUMER_PROTOCOL_TYPE = "consumer"


def _partitions(topic_partitions: Iterable[Any]) -> frozenset[TopicPartition]:
    """Partitions of a KIP-848/KIP-932 Assignment (by topic name)."""
    return frozenset(
        TopicPartition(tp.topic_name, p) for tp in topic_partitions for p in tp.partitions
    )


def consumer_group(group: Any, coordinator: int | None) -> ConsumerGroupDescription:
    """A KIP-848 group from one ConsumerGroupDescribe entry."""
    members = tuple(
        MemberDescription(
            member_id=mb.member_id,
            group_instance_id=mb.instance_id,
            client_id=mb.client_id,
            host=mb.client_host,
            assignment=_partitions(mb.assignment.topic_partitions),
            target_assignment=_partitions(mb.target_assignment.topic_partitions),
            member_epoch=mb.member_epoch,
            subscribed_topics=tuple(mb.subscribed_topic_names),
            subscribed_topic_regex=mb.subscribed_topic_regex,
            rack_id=mb.rack_id,
        )
        for mb in group.members
    )
    return ConsumerGroupDescription(
        group_id=group.group_id,
        type=GroupType.CONSUMER,
        state=GroupState.parse(group.group_state),
        is_simple_consumer_group=False,
        partition_assignor=group.assignor_name,
        members=members,
        coordinator=coordinator,
        authorized_operations=authorized_operations(group.authorized_operations),
        group_epoch=group.group_epoch,
        target_assignment_epoch=group.assignment_epoch,
    )


def _classic_member(member: Any, consumer: bool) -> MemberDescription:
    assignment: frozenset[TopicPartition] = frozenset()
    topics: tuple[str, ...] | None = None
    if consumer:
        # A member whose metadata does not decode (another client's bug) is
        # still listed; only its partitions are unknown.
        try:
            if member.member_assignment:
                _, decoded = decode_assignment(member.member_assignment)
                assignment = frozenset(
                    TopicPartition(t.topic, p)
                    for t in decoded.assigned_partitions
                    for p in t.partitions
                )
            if member.member_metadata:
                _, sub = decode_subscription(member.member_metadata)
                topics = tuple(sub.topics)
        except DecodeError:
            pass
    return MemberDescription(
        member_id=member.member_id,
        group_instance_id=member.group_instance_id,
        client_id=member.client_id,
        host=member.client_host,
        assignment=assignment,
        subscribed_topics=topics,
    )


def classic_group(group: Any, coordinator: int | None) -> ConsumerGroupDescription:
    """A classic group from one DescribeGroups entry."""
    consumer = group.protocol_type == CONSUMER_PROTOCOL_TYPE
    return ConsumerGroupDescription(
        group_id=group.group_id,
        type=GroupType.CLASSIC,
        state=GroupState.parse(group.group_state),
        is_simple_consumer_group=group.protocol_type == "",
        partition_assignor=group.protocol_data,
        members=tuple(_classic_member(mb, consumer) for mb in group.members),
        coordinator=coordinator,
        authorized_operations=authorized_operations(group.authorized_operations),
    )


def share_group(group: Any, coordinator: int | None) -> ShareGroupDescription:
    """A share group from one ShareGroupDescribe entry (KIP-932)."""
    members = tuple(
        ShareMemberDescription(
            member_id=mb.member_id,
            client_id=mb.client_id,
            host=mb.client_host,
            rack_id=mb.rack_id,
            member_epoch=mb.member_epoch,
            subscribed_topics=tuple(mb.subscribed_topic_names),
            assignment=_partitions(mb.assignment.topic_partitions),
        )
        for mb in group.members
    )
    return ShareGroupDescription(
        group_id=group.group_id,
        state=GroupState.parse(group.group_state),
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor=group.assignor_name,
        members=members,
        coordinator=coordinator,
        authorized_operations=authorized_operations(group.authorized_operations),
    )

"""aiokafka 0.14's ``AIOKafkaAdminClient``: its calls and shapes over kafkacore's
asyncio admin client (see :mod:`kafkacore.compat.aiokafka.admin`)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any

from kafkacore.admin import AclOperation, ConsumerGroupDescription, GroupType, ItemResults
from kafkacore.admin import ConfigResource as CoreConfigResource
from kafkacore.admin import NewPartitions as CoreNewPartitions
from kafkacore.admin import NewTopic as CoreNewTopic
from kafkacore.admin.acl import AUTHORIZED_OPERATIONS_OMITTED
from kafkacore.client import TopicPartition
from kafkacore.compat.kafka.admin._shapes import by_topic, code_of, message_of
from kafkacore.compat.kafka.admin._types import ConfigResource
from kafkacore.consumer import OffsetAndMetadata
from kafkacore.protocol.consumer_protocol import encode_assignment, encode_subscription
from kafkacore.protocol.enums import CoordinatorType, ErrorCode
from kafkacore.protocol.error_codes import GroupIdNotFoundError
from kafkacore.protocol.messages import consumer_protocol_assignment as cpa
from kafkacore.protocol.messages.consumer_protocol_subscription import (
    ConsumerProtocolSubscription,
)
from kafkacore.transports.asyncio import AsyncKafkaAdminClient

from ._responses import (
    AlterConfigsResponse,
    AlteredResource,
    ConfigEntryRow,
    ConfigSynonymRow,
    CreatePartitionsResponse,
    CreateTopicsResponse,
    DeleteTopicsResponse,
    DescribeConfigsResponse,
    DescribedResource,
    DescribeGroupsResponse,
    GroupMemberRow,
    GroupRow,
    TopicError,
    TopicErrorCode,
)
from .new_topic import NewTopic
from .records_to_delete import RecordsToDelete

__all__ = ["AIOKafkaAdminClient"]

#: ListGroups below v5 (aiokafka's) lists classic and KIP-848 consumer groups.
_LISTED_TYPES = (GroupType.CLASSIC, GroupType.CONSUMER)
#: What the broker answers for a partition without a leader (kafkacore reads the leader).
_NO_LEADER = int(ErrorCode.LEADER_NOT_AVAILABLE)
#: The embedded protocol's version aiokafka decodes members with (v0: topics, user data).
_MEMBER_VERSION = 0


class _TypedClient(AsyncKafkaAdminClient):
    """kafkacore's asyncio admin client, named as the user's class in messages."""

    _NAME = "AIOKafkaAdminClient"


def _seconds(timeout_ms: int | None) -> float | None:
    return None if not timeout_ms else timeout_ms / 1000


class AIOKafkaAdminClient:
    """aiokafka 0.14's admin client over kafkacore: keyword options as aiokafka's,
    ``await start()`` / ``await close()`` (or ``async with``), the same calls
    answering in aiokafka's shapes. A client dropped unclosed warns with
    ``ResourceWarning``."""

    def __init__(self, *, loop: None = None, api_version: None = None, **configs: Any) -> None:
        if loop is not None:
            raise TypeError(
                "AIOKafkaAdminClient: loop is not supported (the client runs on the loop "
                "that starts it); leave it out"
            )
        if api_version is not None:
            warnings.warn(
                "The `api_version` parameter has been deprecated since 0.13.0. "
                "It is now a no-op and will be removed in a future release. ",
                DeprecationWarning,
                stacklevel=2,
            )
        self._admin = _TypedClient(**configs)

    # -- life ---------------------------------------------------------------------------
    async def start(self) -> None:
        """Bind to the running loop and reach the cluster (aiokafka bootstraps here:
        an unreachable cluster raises)."""
        await self._admin.start()
        await self._admin.describe_cluster()

    async def close(self) -> None:
        """Fail pending calls and close every connection (idempotent)."""
        await self._admin.close()

    async def __aenter__(self) -> AIOKafkaAdminClient:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- topics -------------------------------------------------------------------------
    async def create_topics(
        self, new_topics: list[NewTopic], timeout_ms: int | None = None, validate_only: bool = False
    ) -> CreateTopicsResponse:
        """Create topics; the response's ``topic_errors`` are (topic, error_code,
        error_message), nothing raised for a topic's error."""
        topics = [
            CoreNewTopic(
                t.name,
                t.num_partitions,
                t.replication_factor,
                t.replica_assignments or None,
                t.topic_configs or None,
            )
            for t in new_topics
        ]
        created = await self._admin.create_topics(
            topics, validate_only=validate_only, timeout=_seconds(timeout_ms)
        )
        return CreateTopicsResponse(
            [TopicError(n, code_of(i.error), message_of(i.error)) for n, i in created.items()]
        )

    async def delete_topics(
        self, topics: list[str], timeout_ms: int | None = None
    ) -> DeleteTopicsResponse:
        """Delete topics; ``topic_error_codes`` are (topic, error_code)."""
        deleted = await self._admin.delete_topics(list(topics), timeout=_seconds(timeout_ms))
        return DeleteTopicsResponse(
            [TopicErrorCode(str(n), code_of(i.error)) for n, i in deleted.items()]
        )

    async def list_topics(self) -> list[str]:
        """Every topic's name, internal ones included."""
        return await self._admin.list_topics(include_internal=True)

    async def describe_topics(self, topics: list[str] | None = None) -> list[dict[str, Any]]:
        """Metadata's topic dicts (``topic``, ``partitions`` with ``partition``,
        ``leader``, ``replicas``, ...); None: every topic."""
        names = list(topics) if topics is not None else await self.list_topics()
        if not names:
            return []
        found = await self._admin.describe_topics(names)
        out = []
        for name, item in found.items():
            d = item.value
            out.append(
                {
                    "error_code": code_of(item.error),
                    "topic": name,
                    "is_internal": False if d is None else d.is_internal,
                    "partitions": [
                        {
                            "error_code": 0 if p.leader is not None else _NO_LEADER,
                            "partition": p.partition,
                            "leader": -1 if p.leader is None else p.leader,
                            "replicas": list(p.replicas),
                            "isr": list(p.isr),
                            "offline_replicas": list(p.offline_replicas),
                        }
                        for p in (() if d is None else d.partitions)
                    ],
                }
            )
        return out

    async def describe_cluster(self) -> dict[str, Any]:
        """``{'brokers': [{node_id, host, port, rack}], 'cluster_id', 'controller_id'}``."""
        c = await self._admin.describe_cluster()
        return {
            "brokers": [
                {"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
                for b in c.brokers
            ],
            "cluster_id": c.cluster_id,
            "controller_id": -1 if c.controller_id is None else c.controller_id,
        }

    async def create_partitions(
        self,
        topic_partitions: Mapping[str, CoreNewPartitions],
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> CreatePartitionsResponse:
        """Grow topics to ``{topic: NewPartitions(total_count)}``; a topic's error raises."""
        grown = await self._admin.create_partitions(
            dict(topic_partitions), validate_only=validate_only, timeout=_seconds(timeout_ms)
        )
        for error in grown.errors.values():
            raise error
        return CreatePartitionsResponse([TopicError(t, 0, None) for t in grown])

    # -- configs ------------------------------------------------------------------------
    async def describe_configs(
        self, config_resources: list[ConfigResource], include_synonyms: bool = False
    ) -> list[DescribeConfigsResponse]:
        """One response per broker asked about, then one for the other resources, as
        aiokafka sends them; a resource's ``configs`` keys select the configs."""
        groups = _by_request(config_resources)
        cores = [r.core() for batch in groups for r in batch]
        found = await self._admin.describe_configs(cores, include_synonyms) if cores else None
        out = []
        for batch in groups:
            rows = []
            for r in batch:
                core = r.core()
                assert found is not None
                item = found[core]
                keep = None if not r.configs else set(r.configs)
                entries = [
                    ConfigEntryRow(
                        name,
                        e.value,
                        e.is_read_only,
                        int(e.source),
                        e.is_sensitive,
                        [ConfigSynonymRow(s.name, s.value, int(s.source)) for s in e.synonyms],
                    )
                    for name, e in (item.value or {}).items()
                    if keep is None or name in keep
                ]
                rows.append(
                    DescribedResource(
                        code_of(item.error), message_of(item.error), core.type, core.name, entries
                    )
                )
            out.append(DescribeConfigsResponse(rows))
        return out

    async def alter_configs(
        self, config_resources: list[ConfigResource]
    ) -> list[AlterConfigsResponse]:
        """Replace each resource's dynamic configs with its ``configs`` (AlterConfigs);
        the topics' response first, then one per broker, as aiokafka sends them."""
        others = [
            r for r in config_resources if r.resource_type not in CoreConfigResource.PER_BROKER
        ]
        brokers = _by_request([r for r in config_resources if r not in others])
        batches = [others, *brokers]
        wanted = {r.core(): dict(r.configs or {}) for batch in batches for r in batch}
        done: ItemResults[CoreConfigResource, None] | None = None
        if wanted:
            done = await self._admin.alter_configs(wanted)
        out = []
        for batch in batches:
            rows = []
            for r in batch:
                assert done is not None
                item = done[r.core()]
                rows.append(
                    AlteredResource(
                        code_of(item.error),
                        message_of(item.error),
                        r.resource_type,
                        r.core().name,
                    )
                )
            out.append(AlterConfigsResponse(rows))
        return out

    # -- groups -------------------------------------------------------------------------
    async def describe_consumer_groups(
        self,
        group_ids: list[str],
        group_coordinator_id: int | None = None,
        include_authorized_operations: bool = False,
    ) -> list[DescribeGroupsResponse]:
        """One DescribeGroups response per coordinator; each group a row of
        (error_code, group, state, protocol_type, protocol, members,
        authorized_operations). ``group_coordinator_id`` is not needed: kafkacore
        finds each group's coordinator."""
        found = await self._admin.describe_consumer_groups(
            list(group_ids), include_authorized_operations=include_authorized_operations
        )
        by_node: dict[int | None, list[GroupRow]] = {}
        for group, item in found.items():
            node = None if item.value is None else item.value.coordinator
            by_node.setdefault(node, []).append(_group_row(group, item.value, item.error))
        return [DescribeGroupsResponse(rows) for rows in by_node.values()]

    async def list_consumer_groups(
        self, broker_ids: list[int] | None = None
    ) -> list[tuple[str, str]]:
        """``[(group_id, protocol_type)]`` of the consumer groups every broker (or
        ``broker_ids``) coordinates; a broker's error raises."""
        listed = (await self._admin.list_groups(types=_LISTED_TYPES)).all()
        only = None if broker_ids is None else set(broker_ids)
        unique = {
            (g.group_id, g.protocol_type): None
            for g in listed
            if only is None or g.coordinator in only
        }
        return list(unique)

    async def find_coordinator(self, group_id: str, coordinator_type: int = 0) -> int:
        """The broker id of ``group_id``'s coordinator (1: of a transactional id)."""
        return await self._admin.find_coordinator(
            group_id, coordinator_type=CoordinatorType(coordinator_type)
        )

    async def list_consumer_group_offsets(
        self,
        group_id: str,
        group_coordinator_id: int | None = None,
        partitions: list[TopicPartition] | None = None,
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """``{tp: OffsetAndMetadata}`` the group committed (``partitions`` None: all it
        has; a named partition without one: offset -1)."""
        found = await self._admin.list_consumer_group_offsets(group_id, partitions or None)
        return {tp: OffsetAndMetadata(-1, "") if o is None else o for tp, o in found.items()}

    # -- records ------------------------------------------------------------------------
    async def delete_records(
        self,
        records_to_delete: Mapping[TopicPartition, RecordsToDelete | int],
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, int]:
        """Delete each partition's records before ``RecordsToDelete(before_offset)``;
        ``{tp: low_watermark}``. A partition's error raises."""
        wanted = {
            tp: r.before_offset if isinstance(r, RecordsToDelete) else r
            for tp, r in records_to_delete.items()
        }
        deleted = await self._admin.delete_records(wanted, timeout=_seconds(timeout_ms))
        return {tp: d.low_watermark for tp, d in deleted.all().items()}


def _by_request(resources: Iterable[ConfigResource]) -> list[list[ConfigResource]]:
    """aiokafka's request split: one per broker (in first-seen order), then the rest."""
    brokers: dict[str, list[ConfigResource]] = {}
    others: list[ConfigResource] = []
    for r in resources:
        if r.resource_type in CoreConfigResource.PER_BROKER:
            brokers.setdefault(str(r.name), []).append(r)
        else:
            others.append(r)
    return [*brokers.values(), *([others] if others else [])]


def _bits(ops: frozenset[AclOperation] | None) -> int:
    if ops is None:
        return AUTHORIZED_OPERATIONS_OMITTED
    return sum(1 << int(op) for op in ops)


def _group_row(
    group: str, desc: ConsumerGroupDescription | None, error: BaseException | None
) -> GroupRow:
    if desc is None:
        if isinstance(error, GroupIdNotFoundError):
            # DescribeGroups v3 (aiokafka's) reports a missing group as Dead, no error.
            return GroupRow(0, group, "Dead", "", "", [], AUTHORIZED_OPERATIONS_OMITTED)
        return GroupRow(code_of(error), group, "", "", "", [], AUTHORIZED_OPERATIONS_OMITTED)
    members = []
    for mb in desc.members:
        subscription = ConsumerProtocolSubscription(topics=list(mb.subscribed_topics or ()))
        assignment = cpa.ConsumerProtocolAssignment(
            assigned_partitions=[
                cpa.TopicPartition(topic=t, partitions=ps)
                for t, ps in by_topic(mb.assignment).items()
            ]
        )
        members.append(
            GroupMemberRow(
                mb.member_id,
                mb.client_id,
                mb.host,
                encode_subscription(subscription, _MEMBER_VERSION),
                encode_assignment(assignment, _MEMBER_VERSION),
            )
        )
    return GroupRow(
        0,
        desc.group_id,
        desc.state.value,
        "" if desc.is_simple_consumer_group else "consumer",
        desc.partition_assignor,
        members,
        _bits(desc.authorized_operations),
    )

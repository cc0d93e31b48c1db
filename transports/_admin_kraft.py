"""The admin surface's quorum, paged-topic, config-listing, replica-directory and
coordinator calls.

See :mod:`kafkacore.transports._admin_common`: each is one core command under
the core's name (:mod:`kafkacore.admin._kraft`, ``_configs``, ``_replicas``,
``_groups``), with ``timeout=`` in seconds and the core's typed value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kafkacore.admin import (
    ConfigResource,
    ConfigResourceType,
    ItemResults,
    QuorumInfo,
    TopicPartitionReplica,
    TopicPartitionsCursor,
    TopicPartitionsPage,
)
from kafkacore.admin._kraft import MAX_PARTITION_LIMIT
from kafkacore.protocol.enums import CoordinatorType

from ._admin_common import AdminSurface, Plan, names

__all__ = ["KraftPlans"]


class KraftPlans(AdminSurface):
    """The metadata quorum, topics page by page, config resources, replica log
    directories and coordinators."""

    def _describe_metadata_quorum(self, *, timeout: float | None = None) -> Plan[QuorumInfo]:
        """The KRaft metadata quorum: leader, epoch, high watermark, voters and
        observers (DescribeQuorum); a :class:`~kafkacore.admin.QuorumInfo`."""
        return self._one(
            "describe_metadata_quorum",
            timeout,
            lambda core, now, ms: core.describe_metadata_quorum(timeout_ms=ms, now=now),
        )

    def _describe_topic_partitions(
        self,
        topics: Iterable[str],
        *,
        partition_limit: int = MAX_PARTITION_LIMIT,
        cursor: TopicPartitionsCursor | None = None,
        timeout: float | None = None,
    ) -> Plan[TopicPartitionsPage]:
        """One page of topic descriptions, at most ``partition_limit`` partitions from
        ``cursor`` on (DescribeTopicPartitions, KIP-966); the page's ``next_cursor``
        starts the next one (None: no more)."""
        asked = names(topics)
        return self._one(
            "describe_topic_partitions",
            timeout,
            lambda core, now, ms: core.describe_topic_partitions(
                asked, partition_limit=partition_limit, cursor=cursor, timeout_ms=ms, now=now
            ),
        )

    def _list_config_resources(
        self,
        resource_types: Iterable[ConfigResourceType] | None = None,
        *,
        timeout: float | None = None,
    ) -> Plan[tuple[ConfigResource, ...]]:
        """The config resources the cluster knows (ListConfigResources, Kafka 4.1+;
        None: every type)."""
        return self._one(
            "list_config_resources",
            timeout,
            lambda core, now, ms: core.list_config_resources(
                resource_types, timeout_ms=ms, now=now
            ),
        )

    def _alter_replica_log_dirs(
        self,
        assignments: Mapping[TopicPartitionReplica, str],
        *,
        timeout: float | None = None,
    ) -> Plan[ItemResults[TopicPartitionReplica, None]]:
        """Move replicas into log directories, ``{TopicPartitionReplica: path}``
        (AlterReplicaLogDirs, to each replica's broker); ``ItemResults`` per replica."""
        return self._one(
            "alter_replica_log_dirs",
            timeout,
            lambda core, now, ms: core.alter_replica_log_dirs(assignments, timeout_ms=ms, now=now),
        )

    def _find_coordinator(
        self,
        key: str,
        *,
        coordinator_type: CoordinatorType = CoordinatorType.GROUP,
        timeout: float | None = None,
    ) -> Plan[int]:
        """The broker id coordinating group (or transactional id) ``key``
        (FindCoordinator)."""
        return self._one(
            "find_coordinator",
            timeout,
            lambda core, now, ms: core.find_coordinator(
                key, coordinator_type=coordinator_type, timeout_ms=ms, now=now
            ),
        )

"""The admin surface's partition, record, transaction, quota and ACL calls (and,
through :class:`~kafkacore.transports._admin_features.FeaturePlans`, feature levels
and delegation tokens; through :class:`~kafkacore.transports._admin_kraft.KraftPlans`,
the metadata quorum, paged topics, config resources, replica log dirs and
coordinators).

See :mod:`kafkacore.transports._admin_common`. kafka-python's ``delete_records`` and
``perform_leader_election`` are here in its shapes (``timeout_ms`` included);
the rest are the core's commands under the core's names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kafkacore.admin import (
    AbortTransactionSpec,
    ClientQuotaEntity,
    ClientQuotaFilter,
    DeletedRecords,
    ElectionType,
    ItemResults,
    ListedOffset,
    LogDirDescription,
    OffsetSpec,
    PartitionReassignment,
    ProducerState,
    ScramCredentialDeletion,
    ScramCredentialInfo,
    ScramCredentialUpsertion,
    TransactionDescription,
    TransactionListings,
    TransactionState,
)
from kafkacore.client import TopicPartition

from ._admin_acls import AclPlans
from ._admin_common import Plan, names
from ._admin_features import FeaturePlans
from ._admin_kraft import KraftPlans

__all__ = ["ClusterPlans"]


class ClusterPlans(FeaturePlans, AclPlans, KraftPlans):
    """Partitions' records and leaders, log dirs, transactions, quotas, SCRAM, ACLs,
    feature levels, delegation tokens, the metadata quorum and coordinators."""

    # -- records -----------------------------------------------------------------------
    def _list_offsets(
        self,
        specs: Mapping[TopicPartition, OffsetSpec],
        *,
        isolation_level: str = "read_uncommitted",
        timeout: float | None = None,
    ) -> Plan[ItemResults[TopicPartition, ListedOffset]]:
        """Offsets by ``OffsetSpec`` (earliest, latest, a timestamp...) from each leader
        (ListOffsets); ``ItemResults`` of :class:`~kafkacore.admin.ListedOffset`."""
        return self._one(
            "list_offsets",
            timeout,
            lambda core, now, ms: core.list_offsets(
                specs, isolation_level=isolation_level, timeout_ms=ms, now=now
            ),
        )

    def _delete_records(
        self,
        records_to_delete: Mapping[TopicPartition, int],
        timeout_ms: int | None = None,
        partition_leader_id: int | None = None,
        *,
        timeout: float | None = None,
    ) -> Plan[ItemResults[TopicPartition, DeletedRecords]]:
        """Delete the records before ``{tp: offset}`` (-1: the high watermark) on each
        leader (DeleteRecords); kafka-python's ``delete_records`` (its
        ``partition_leader_id`` is not supported). ``ItemResults`` of the new low
        watermarks."""
        seconds = self._seconds("delete_records", timeout, timeout_ms)
        self._unsupported(
            "delete_records",
            "partition_leader_id",
            partition_leader_id,
            "kafkacore sends each partition to its leader",
        )
        return self._one(
            "delete_records",
            seconds,
            lambda core, now, ms: core.delete_records(records_to_delete, timeout_ms=ms, now=now),
        )

    # -- leaders and replicas -------------------------------------------------------------
    def _elect_leaders(
        self,
        election_type: ElectionType = ElectionType.PREFERRED,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout: float | None = None,
    ) -> Plan[ItemResults[TopicPartition, None]]:
        """Elect preferred or unclean leaders (ElectLeaders, KIP-460); ``partitions=None``:
        every partition that needs it. ``ItemResults`` per partition."""
        return self._one(
            "elect_leaders",
            timeout,
            lambda core, now, ms: core.elect_leaders(
                election_type, partitions, timeout_ms=ms, now=now
            ),
        )

    def _perform_leader_election(
        self,
        election_type: ElectionType | int,
        topic_partitions: Mapping[str, Iterable[int]] | None = None,
        timeout_ms: int | None = None,
        *,
        timeout: float | None = None,
    ) -> Plan[ItemResults[TopicPartition, None]]:
        """kafka-python's name and shape of :meth:`elect_leaders`: ``election_type`` 0
        (preferred) or 1 (unclean), ``topic_partitions`` ``{topic: [partition ids]}``."""
        what = f"{self._NAME}.perform_leader_election"
        seconds = self._seconds("perform_leader_election", timeout, timeout_ms)
        if isinstance(election_type, bool) or not isinstance(election_type, int):
            raise TypeError(f"{what}: election_type must be 0, 1 or an ElectionType")
        try:
            kind = ElectionType(election_type)
        except ValueError:
            raise ValueError(
                f"{what}: election_type {election_type!r} is neither 0 (preferred) nor 1 (unclean)"
            ) from None
        partitions = None
        if topic_partitions is not None:
            if not isinstance(topic_partitions, Mapping):
                raise TypeError(
                    f"{what}: topic_partitions must be {{topic: [partition ids]}}, got "
                    f"{topic_partitions!r}"
                )
            partitions = [TopicPartition(t, p) for t, ids in topic_partitions.items() for p in ids]
        return self._one(
            "perform_leader_election",
            seconds,
            lambda core, now, ms: core.elect_leaders(kind, partitions, timeout_ms=ms, now=now),
        )

    def _alter_partition_reassignments(
        self,
        reassignments: Mapping[TopicPartition, Sequence[int] | None],
        *,
        timeout: float | None = None,
    ) -> Plan[ItemResults[TopicPartition, None]]:
        """Move partitions to ``{tp: [brokers]}``, or cancel a move with None
        (AlterPartitionReassignments)."""
        return self._one(
            "alter_partition_reassignments",
            timeout,
            lambda core, now, ms: core.alter_partition_reassignments(
                reassignments, timeout_ms=ms, now=now
            ),
        )

    def _list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None, *, timeout: float | None = None
    ) -> Plan[dict[TopicPartition, PartitionReassignment]]:
        """Reassignments in progress (ListPartitionReassignments)."""
        return self._one(
            "list_partition_reassignments",
            timeout,
            lambda core, now, ms: core.list_partition_reassignments(
                partitions, timeout_ms=ms, now=now
            ),
        )

    def _describe_log_dirs(
        self, broker_ids: Iterable[int] | None = None, *, timeout: float | None = None
    ) -> Plan[ItemResults[int, dict[str, LogDirDescription]]]:
        """Each broker's log directories and replicas (DescribeLogDirs); kafka-python's
        ``describe_log_dirs`` (None: every broker)."""
        return self._one(
            "describe_log_dirs",
            timeout,
            lambda core, now, ms: core.describe_log_dirs(broker_ids, timeout_ms=ms, now=now),
        )

    # -- producers and transactions -------------------------------------------------------
    def _describe_producers(
        self, partitions: Iterable[TopicPartition], *, timeout: float | None = None
    ) -> Plan[ItemResults[TopicPartition, tuple[ProducerState, ...]]]:
        """The active producers of each partition (DescribeProducers)."""
        return self._one(
            "describe_producers",
            timeout,
            lambda core, now, ms: core.describe_producers(partitions, timeout_ms=ms, now=now),
        )

    def _list_transactions(
        self,
        *,
        states: Iterable[TransactionState | str] | None = None,
        producer_ids: Iterable[int] | None = None,
        duration_ms: int | None = None,
        transactional_id_pattern: str | None = None,
        timeout: float | None = None,
    ) -> Plan[TransactionListings]:
        """Transactions known to every broker (ListTransactions), optionally filtered."""
        return self._one(
            "list_transactions",
            timeout,
            lambda core, now, ms: core.list_transactions(
                states=states,
                producer_ids=producer_ids,
                duration_ms=duration_ms,
                transactional_id_pattern=transactional_id_pattern,
                timeout_ms=ms,
                now=now,
            ),
        )

    def _describe_transactions(
        self, transactional_ids: Iterable[str], *, timeout: float | None = None
    ) -> Plan[ItemResults[str, TransactionDescription]]:
        """Describe transactions by transactional id (DescribeTransactions)."""
        return self._one(
            "describe_transactions",
            timeout,
            lambda core, now, ms: core.describe_transactions(
                names(transactional_ids), timeout_ms=ms, now=now
            ),
        )

    def _abort_transaction(
        self, spec: AbortTransactionSpec, *, timeout: float | None = None
    ) -> Plan[None]:
        """Abort a hanging transaction on one partition (WriteTxnMarkers, KIP-664)."""
        return self._one(
            "abort_transaction",
            timeout,
            lambda core, now, ms: core.abort_transaction(spec, timeout_ms=ms, now=now),
        )

    # -- quotas and SCRAM credentials -----------------------------------------------------
    def _describe_client_quotas(
        self,
        components: Iterable[ClientQuotaFilter] = (),
        *,
        strict: bool = False,
        timeout: float | None = None,
    ) -> Plan[dict[ClientQuotaEntity, dict[str, float]]]:
        """Client quotas matching ``components`` (DescribeClientQuotas, KIP-546)."""
        return self._one(
            "describe_client_quotas",
            timeout,
            lambda core, now, ms: core.describe_client_quotas(
                components, strict=strict, timeout_ms=ms, now=now
            ),
        )

    def _alter_client_quotas(
        self,
        alterations: Mapping[ClientQuotaEntity, Mapping[str, float | None]],
        *,
        validate_only: bool = False,
        timeout: float | None = None,
    ) -> Plan[ItemResults[ClientQuotaEntity, None]]:
        """Set (a number) or remove (None) quotas per entity (AlterClientQuotas)."""
        return self._one(
            "alter_client_quotas",
            timeout,
            lambda core, now, ms: core.alter_client_quotas(
                alterations, validate_only=validate_only, timeout_ms=ms, now=now
            ),
        )

    def _describe_user_scram_credentials(
        self, users: Iterable[str] | None = None, *, timeout: float | None = None
    ) -> Plan[ItemResults[str, tuple[ScramCredentialInfo, ...]]]:
        """Users' SCRAM mechanisms and iterations (DescribeUserScramCredentials, KIP-554)."""
        return self._one(
            "describe_user_scram_credentials",
            timeout,
            lambda core, now, ms: core.describe_user_scram_credentials(
                names(users), timeout_ms=ms, now=now
            ),
        )

    def _alter_user_scram_credentials(
        self,
        alterations: Iterable[ScramCredentialUpsertion | ScramCredentialDeletion],
        *,
        timeout: float | None = None,
    ) -> Plan[ItemResults[str, None]]:
        """Create, change or delete SCRAM credentials (AlterUserScramCredentials)."""
        return self._one(
            "alter_user_scram_credentials",
            timeout,
            lambda core, now, ms: core.alter_user_scram_credentials(
                alterations, timeout_ms=ms, now=now
            ),
        )

"""The admin surface's group and committed-offset calls.

See :mod:`kafkacore.transports._admin_common` for how a call is planned.

Consumer groups (classic and KIP-848) and share groups: listings, descriptions,
deletion, and the offsets a group committed. kafka-python's
``group_coordinator_id`` and ``broker_ids`` are refused by name: kafkacore
finds each group's coordinator and asks every broker itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kafkacore.admin import (
    ConsumerGroupDescription,
    GroupListings,
    GroupState,
    GroupType,
    ItemResults,
    ShareGroupDescription,
    SharePartitionOffset,
)
from kafkacore.client import TopicPartition
from kafkacore.consumer import OffsetAndMetadata

from ._admin_common import AdminSurface, Plan, names

__all__ = ["GroupPlans"]

_FINDS_COORDINATOR = "kafkacore finds each group's coordinator itself"


class GroupPlans(AdminSurface):
    """Group listings, descriptions, deletion and committed offsets."""

    # -- listings ---------------------------------------------------------------------
    def _list_groups(
        self,
        *,
        states: Iterable[GroupState | str] | None = None,
        types: Iterable[GroupType | str] | None = None,
        timeout: float | None = None,
    ) -> Plan[GroupListings]:
        """Every group of every type, from every broker (ListGroups), optionally filtered
        by state and type; a :class:`~kafkacore.admin.GroupListings`."""
        return self._one(
            "list_groups",
            timeout,
            lambda core, now, ms: core.list_groups(
                states=states, types=types, timeout_ms=ms, now=now
            ),
        )

    def _list_consumer_groups(
        self,
        broker_ids: Iterable[int] | None = None,
        *,
        states: Iterable[GroupState | str] | None = None,
        types: Iterable[GroupType | str] | None = None,
        timeout: float | None = None,
    ) -> Plan[GroupListings]:
        """Classic and KIP-848 consumer groups, from every broker (ListGroups);
        kafka-python's ``list_consumer_groups`` (its ``broker_ids`` is not supported).
        A :class:`~kafkacore.admin.GroupListings`: ``.groups`` and the brokers'
        ``.errors``."""
        self._unsupported("list_consumer_groups", "broker_ids", broker_ids, "every broker is asked")
        return self._one(
            "list_consumer_groups",
            timeout,
            lambda core, now, ms: core.list_consumer_groups(
                states=states, types=types, timeout_ms=ms, now=now
            ),
        )

    def _list_share_groups(
        self,
        *,
        states: Iterable[GroupState | str] | None = None,
        timeout: float | None = None,
    ) -> Plan[GroupListings]:
        """Share groups (KIP-932), from every broker (ListGroups of type ``share``)."""
        return self._one(
            "list_share_groups",
            timeout,
            lambda core, now, ms: core.list_share_groups(states=states, timeout_ms=ms, now=now),
        )

    # -- descriptions and deletion --------------------------------------------------------
    def _describe_consumer_groups(
        self,
        group_ids: Iterable[str],
        *,
        group_coordinator_id: int | None = None,
        include_authorized_operations: bool = False,
        timeout: float | None = None,
    ) -> Plan[ItemResults[str, ConsumerGroupDescription]]:
        """Describe consumer groups, classic or KIP-848 (ConsumerGroupDescribe, else
        DescribeGroups); kafka-python's ``describe_consumer_groups``. Returns
        ``ItemResults`` of :class:`~kafkacore.admin.ConsumerGroupDescription`."""
        what = "describe_consumer_groups"
        self._unsupported(what, "group_coordinator_id", group_coordinator_id, _FINDS_COORDINATOR)
        return self._one(
            what,
            timeout,
            lambda core, now, ms: core.describe_consumer_groups(
                names(group_ids),
                include_authorized_operations=include_authorized_operations,
                timeout_ms=ms,
                now=now,
            ),
        )

    def _describe_share_groups(
        self,
        group_ids: Iterable[str],
        *,
        include_authorized_operations: bool = False,
        timeout: float | None = None,
    ) -> Plan[ItemResults[str, ShareGroupDescription]]:
        """Describe share groups (ShareGroupDescribe); ``ItemResults`` per group."""
        return self._one(
            "describe_share_groups",
            timeout,
            lambda core, now, ms: core.describe_share_groups(
                names(group_ids),
                include_authorized_operations=include_authorized_operations,
                timeout_ms=ms,
                now=now,
            ),
        )

    def _delete_consumer_groups(
        self,
        group_ids: Iterable[str],
        *,
        group_coordinator_id: int | None = None,
        timeout: float | None = None,
    ) -> Plan[ItemResults[str, None]]:
        """Delete empty consumer groups (DeleteGroups); kafka-python's
        ``delete_consumer_groups``. Returns ``ItemResults`` (e.g. ``NonEmptyGroupError``)."""
        what = "delete_consumer_groups"
        self._unsupported(what, "group_coordinator_id", group_coordinator_id, _FINDS_COORDINATOR)
        return self._one(
            what,
            timeout,
            lambda core, now, ms: core.delete_consumer_groups(
                names(group_ids), timeout_ms=ms, now=now
            ),
        )

    def _delete_share_groups(
        self, group_ids: Iterable[str], *, timeout: float | None = None
    ) -> Plan[ItemResults[str, None]]:
        """Delete empty share groups (DeleteGroups); ``ItemResults`` per group."""
        return self._one(
            "delete_share_groups",
            timeout,
            lambda core, now, ms: core.delete_share_groups(
                names(group_ids), timeout_ms=ms, now=now
            ),
        )

    # -- committed offsets ----------------------------------------------------------------
    def _list_consumer_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        group_coordinator_id: int | None = None,
        require_stable: bool = False,
        timeout: float | None = None,
    ) -> Plan[dict[TopicPartition, OffsetAndMetadata | None]]:
        """The offsets ``group_id`` committed (OffsetFetch); kafka-python's
        ``list_consumer_group_offsets`` (give ``partitions`` by keyword there).

        ``partitions=None``: every partition the group committed. Value:
        ``{TopicPartition: OffsetAndMetadata}``, None for a named partition
        without a committed offset. ``require_stable`` waits out pending
        transactional commits (KIP-447).
        """
        what = "list_consumer_group_offsets"
        self._unsupported(what, "group_coordinator_id", group_coordinator_id, _FINDS_COORDINATOR)
        return self._one(
            what,
            timeout,
            lambda core, now, ms: core.list_consumer_group_offsets(
                group_id, partitions, require_stable=require_stable, timeout_ms=ms, now=now
            ),
        )

    def _alter_consumer_group_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
        *,
        timeout: float | None = None,
    ) -> Plan[ItemResults[TopicPartition, None]]:
        """Commit ``{tp: offset or OffsetAndMetadata}`` for an inactive group (OffsetCommit);
        ``ItemResults`` per partition."""
        return self._one(
            "alter_consumer_group_offsets",
            timeout,
            lambda core, now, ms: core.alter_consumer_group_offsets(
                group_id, offsets, timeout_ms=ms, now=now
            ),
        )

    def _delete_consumer_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition],
        *,
        timeout: float | None = None,
    ) -> Plan[ItemResults[TopicPartition, None]]:
        """Forget the group's committed offsets of ``partitions`` (OffsetDelete)."""
        return self._one(
            "delete_consumer_group_offsets",
            timeout,
            lambda core, now, ms: core.delete_consumer_group_offsets(
                group_id, partitions, timeout_ms=ms, now=now
            ),
        )

    def _list_share_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout: float | None = None,
    ) -> Plan[dict[TopicPartition, SharePartitionOffset | None]]:
        """A share group's start offsets (DescribeShareGroupOffsets)."""
        return self._one(
            "list_share_group_offsets",
            timeout,
            lambda core, now, ms: core.list_share_group_offsets(
                group_id, partitions, timeout_ms=ms, now=now
            ),
        )

    def _alter_share_group_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, int],
        *,
        timeout: float | None = None,
    ) -> Plan[ItemResults[TopicPartition, None]]:
        """Set a share group's start offsets (AlterShareGroupOffsets)."""
        return self._one(
            "alter_share_group_offsets",
            timeout,
            lambda core, now, ms: core.alter_share_group_offsets(
                group_id, offsets, timeout_ms=ms, now=now
            ),
        )

    def _delete_share_group_offsets(
        self, group_id: str, topics: Iterable[str], *, timeout: float | None = None
    ) -> Plan[ItemResults[str, None]]:
        """Forget a share group's offsets of ``topics`` (DeleteShareGroupOffsets)."""
        return self._one(
            "delete_share_group_offsets",
            timeout,
            lambda core, now, ms: core.delete_share_group_offsets(
                group_id, topics, timeout_ms=ms, now=now
            ),
        )

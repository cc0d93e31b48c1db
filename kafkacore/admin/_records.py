"""Partition-leader commands: ``list_offsets`` (ListOffsets) and
``delete_records`` (DeleteRecords).

Routing: one request per partition leader
(:class:`~kafkacore.admin._routing.LeaderRouting`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kafkacore.admin._base import items_outcome
from kafkacore.admin._checks import check_int, check_mapping, check_timeout, to_partition
from kafkacore.admin._routing import LeaderRouting
from kafkacore.admin.results import ItemResults
from kafkacore.admin.types import DeletedRecords, ListedOffset, OffsetSpec
from kafkacore.client.handles import RequestHandle
from kafkacore.client.metadata import TopicPartition
from kafkacore.client.routing import Node
from kafkacore.errors import NoCommonVersionError
from kafkacore.operation import Operation
from kafkacore.protocol import messages as m
from kafkacore.protocol.messages.delete_records_request import (
    DeleteRecordsPartition,
    DeleteRecordsTopic,
)
from kafkacore.protocol.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic

__all__ = ["RecordCommands"]

ISOLATION_LEVELS = {"read_uncommitted": 0, "read_committed": 1}
#: ListOffsets v2 added the isolation level (KIP-98), v4 the leader epoch (KIP-320).
_ISOLATION_VERSION = 2
_EPOCH_VERSION = 4
#: DeleteRecords' "up to the high watermark" (DeleteRecordsRequest.HIGH_WATERMARK).
HIGH_WATERMARK = -1


class RecordCommands(LeaderRouting):
    """Partition-leader commands of :class:`~kafkacore.admin.AdminCore`."""

    # ------------------------------------------------------------- offsets
    def list_offsets(
        self,
        specs: Mapping[TopicPartition, OffsetSpec],
        *,
        isolation_level: str = "read_uncommitted",
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[TopicPartition, ListedOffset]]:
        """Earliest, latest, max-timestamp or by-timestamp offsets of partitions."""
        kind = "list_offsets"
        wanted: dict[TopicPartition, OffsetSpec] = {}
        for key, spec in check_mapping(f"{kind}: specs", specs).items():
            tp = to_partition(f"{kind}: specs key", key)
            if not isinstance(spec, OffsetSpec):
                raise TypeError(f"{kind}[{tp}]: expected an OffsetSpec, got {spec!r}")
            wanted[tp] = spec
        if not wanted:
            raise ValueError(f"{kind}: specs: name at least one partition")
        if isolation_level not in ISOLATION_LEVELS:
            choices = ", ".join(ISOLATION_LEVELS)
            raise ValueError(f"{kind}: isolation_level {isolation_level!r} is not one of {choices}")
        isolation = ISOLATION_LEVELS[isolation_level]
        job = self._begin(kind, list(wanted), items_outcome, check_timeout(kind, timeout_ms), now)

        def to_leader(
            leader: int, items: list[tuple[TopicPartition, int]], again: Any, t: float
        ) -> None:
            build = _list_offsets_builder(kind, leader, items, wanted, isolation)

            def answer(
                response: m.ListOffsetsResponse,
                handle: RequestHandle[m.ListOffsetsResponse],
                t2: float,
            ) -> None:
                retry: list[tuple[TopicPartition, BaseException]] = []
                for topic in response.topics:
                    for p in topic.partitions:
                        value = ListedOffset(
                            offset=p.offset if p.offset >= 0 else None,
                            timestamp=p.timestamp if p.timestamp >= 0 else None,
                            leader_epoch=p.leader_epoch if p.leader_epoch >= 0 else None,
                        )
                        self._leader_outcome(
                            job,
                            TopicPartition(topic.name, p.partition_index),
                            p.error_code,
                            value,
                            retry,
                            leader,
                        )
                self._retry_items(job, retry, again, t2)

            keys = [tp for tp, _ in items]
            self._send(
                job,
                keys,
                m.ListOffsetsRequest(),
                answer,
                again,
                now=t,
                target=Node(leader),
                build=build,
            )

        self._to_leaders(job, list(job.keys), to_leader, now)
        return self._started(job, now)

    # ------------------------------------------------------------- records
    def delete_records(
        self,
        before: Mapping[TopicPartition, int],
        *,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[TopicPartition, DeletedRecords]]:
        """Delete every record below an offset (-1: below the high watermark)."""
        kind = "delete_records"
        wanted = {
            to_partition(f"{kind}: before key", tp): check_int(
                f"{kind}[{tp}]", offset, minimum=HIGH_WATERMARK
            )
            for tp, offset in check_mapping(f"{kind}: before", before).items()
        }
        if not wanted:
            raise ValueError(f"{kind}: before: name at least one partition")
        job = self._begin(kind, list(wanted), items_outcome, check_timeout(kind, timeout_ms), now)

        def to_leader(
            leader: int, items: list[tuple[TopicPartition, int]], again: Any, t: float
        ) -> None:
            topics: dict[str, list[DeleteRecordsPartition]] = {}
            for tp, _ in items:
                topics.setdefault(tp.topic, []).append(
                    DeleteRecordsPartition(partition_index=tp.partition, offset=wanted[tp])
                )
            request = m.DeleteRecordsRequest(
                topics=[
                    DeleteRecordsTopic(name=name, partitions=ps) for name, ps in topics.items()
                ],
                timeout_ms=self._budget_ms(job, t),
            )

            def answer(
                response: m.DeleteRecordsResponse,
                handle: RequestHandle[m.DeleteRecordsResponse],
                t2: float,
            ) -> None:
                retry: list[tuple[TopicPartition, BaseException]] = []
                for topic in response.topics:
                    for p in topic.partitions:
                        value = DeletedRecords(low_watermark=p.low_watermark)
                        self._leader_outcome(
                            job,
                            TopicPartition(topic.name, p.partition_index),
                            p.error_code,
                            value,
                            retry,
                            leader,
                        )
                self._retry_items(job, retry, again, t2)

            self._send(
                job, [tp for tp, _ in items], request, answer, again, now=t, target=Node(leader)
            )

        self._to_leaders(job, list(job.keys), to_leader, now)
        return self._started(job, now)


def _list_offsets_builder(
    kind: str,
    leader: int,
    items: list[tuple[TopicPartition, int]],
    wanted: dict[TopicPartition, OffsetSpec],
    isolation: int,
) -> Callable[[int], m.ListOffsetsRequest]:
    """ListOffsets for one leader's partitions at the version its connection speaks."""

    def build(version: int) -> m.ListOffsetsRequest:
        need = max(wanted[tp].min_version for tp, _ in items)
        need = max(need, _ISOLATION_VERSION if isolation else 0)
        if need > version:
            raise NoCommonVersionError(
                f"{kind}: these offset specs need ListOffsets v{need}+; "
                f"broker {leader} offers v{version}"
            )
        topics: dict[str, list[ListOffsetsPartition]] = {}
        for tp, epoch in items:
            part = ListOffsetsPartition(
                partition_index=tp.partition, timestamp=wanted[tp].timestamp
            )
            if version >= _EPOCH_VERSION:
                part.current_leader_epoch = epoch
            topics.setdefault(tp.topic, []).append(part)
        request = m.ListOffsetsRequest(
            replica_id=-1,
            topics=[ListOffsetsTopic(name=t, partitions=ps) for t, ps in topics.items()],
        )
        request.isolation_level = isolation
        return request

    return build

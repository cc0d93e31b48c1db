"""The async consumers' offset calls: commits and offset lookups, awaited.

A base of :class:`~kafkacore.transports._consumer_async.AsyncConsumerBase`:
each call issues the core's operation and awaits the one-shot its
``OperationCompleted`` fills (``_waiter``); ``seek_to_committed`` (aiokafka's)
looks the committed offsets up, then seeks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kafkacore.client import TopicPartition
from kafkacore.consumer import OffsetAndMetadata, OffsetAndTimestamp, Operation

from ._async_driver import Waiter
from ._consumer_args import partition_list
from ._consumer_steps import Command

__all__ = ["AsyncOffsets"]


class AsyncOffsets:
    """See the module docstring."""

    if TYPE_CHECKING:

        def _waiter(self, command: Command[Operation[Any]], what: str) -> Waiter: ...
        def _commit_command(self, offsets: Any, ms: int | None) -> Command[Operation[Any]]: ...
        def _lookup_command(
            self, name: str, partitions: Iterable[TopicPartition], ms: int | None
        ) -> Command[Operation[Any]]: ...
        def _times_command(
            self, timestamps: Mapping[TopicPartition, int], ms: int | None
        ) -> Command[Operation[Any]]: ...
        def _committed_targets(
            self, partitions: tuple[TopicPartition, ...]
        ) -> list[TopicPartition]: ...
        def _seek_committed(
            self, found: Mapping[TopicPartition, OffsetAndMetadata | None]
        ) -> dict[TopicPartition, int | None]: ...

    async def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        result: dict[TopicPartition, OffsetAndMetadata] = await self._waiter(
            self._commit_command(offsets, None), "commit"
        )
        return result

    async def committed(
        self, partitions: TopicPartition | Iterable[TopicPartition], metadata: bool = False
    ) -> Any:
        """aiokafka's ``committed(tp)``: that partition's offset (an int; its
        ``OffsetAndMetadata`` with ``metadata=True``) or None; kafkacore's
        ``committed([tp, ...])``: ``{tp: OffsetAndMetadata | None}``."""
        one = isinstance(partitions, TopicPartition)
        tps = partition_list([partitions] if one else partitions, "committed")
        result: dict[TopicPartition, OffsetAndMetadata | None] = await self._waiter(
            self._lookup_command("committed", tps, None), "committed"
        )
        if not one:
            return result
        found = result.get(tps[0])
        return found if metadata or found is None else found.offset

    async def seek_to_committed(
        self, *partitions: TopicPartition
    ) -> dict[TopicPartition, int | None]:
        """aiokafka's: seek ``partitions`` (none: every assigned one) to the group's
        committed offsets; returns ``{tp: committed offset or None}``."""
        found = await self.committed(self._committed_targets(partitions))
        return self._seek_committed(found)

    async def end_offsets(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        return await self._edge_offsets("end_offsets", partitions)

    async def beginning_offsets(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        return await self._edge_offsets("beginning_offsets", partitions)

    async def _edge_offsets(
        self, name: str, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        tps = partition_list(partitions, name)
        result: dict[TopicPartition, int | None] = await self._waiter(
            self._lookup_command(name, tps, None), name
        )
        return result

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        result: dict[TopicPartition, OffsetAndTimestamp | None] = await self._waiter(
            self._times_command(timestamps, None), "offsets_for_times"
        )
        return result

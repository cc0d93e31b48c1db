"""The consumer's offset commands: commits and lookups (a part of ConsumerCore).

:class:`OffsetCommands` is a base of :class:`~kafkacore.consumer.core.ConsumerCore`
holding the calls that start an offset operation (commit, the group's
committed offsets, ListOffsets by time, beginning or end) and return its
handle; the machines doing the work are the core's (committer, offset
fetch, lookups). Kept apart so the core module stays one screenful of
wiring and stepping.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kafkacore.client.metadata import TopicPartition
from kafkacore.consumer.committer import Committer
from kafkacore.consumer.config import ConsumerConfig
from kafkacore.consumer.events import OffsetAndMetadata
from kafkacore.consumer.list_offsets import OffsetLookups
from kafkacore.consumer.offset_fetch import CommittedOffsets
from kafkacore.consumer.positions import EARLIEST, LATEST
from kafkacore.errors import InvalidArgumentError, LocalProtocolError
from kafkacore.operation import Operation

__all__ = ["OffsetCommands"]


class OffsetCommands:
    """Commits and offset lookups; see the module docstring."""

    # Supplied by ConsumerCore.
    config: ConsumerConfig
    _committer: Committer
    _offsets: CommittedOffsets
    _lookups: OffsetLookups

    if TYPE_CHECKING:  # ConsumerCore's (and StackedMachine's): no stubs in the MRO

        def _check_open(self, what: str) -> None: ...
        def _step(self, now: float) -> None: ...

    def commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        *,
        now: float,
        timeout_ms: int | None = None,
    ) -> Operation[Any]:
        """Commit ``offsets`` (default: every position consumed so far).

        The handle completes with the committed map, or with
        CommitFailedError when a rebalance fenced the commit.
        """
        self._check_open("commit")
        handle = self._committer.commit(offsets, now, timeout_ms)
        self._step(now)
        return handle

    def committed(
        self,
        partitions: Iterable[TopicPartition],
        *,
        now: float,
        timeout_ms: int | None = None,
    ) -> Operation[Any]:
        """The group's committed offsets: handle value ``{tp: OffsetAndMetadata | None}``."""
        self._check_open("committed")
        if self.config.group_id is None:
            raise LocalProtocolError("committed: needs a group_id; set it in the consumer config")
        handle = self._offsets.committed(partitions, now, timeout_ms)
        self._step(now)
        return handle

    def offsets_for_times(
        self,
        timestamps: Mapping[TopicPartition, int],
        *,
        now: float,
        timeout_ms: int | None = None,
    ) -> Operation[Any]:
        """Earliest offset whose timestamp is >= the given one:
        ``{tp: OffsetAndTimestamp | None}`` (None past the end)."""
        query = {TopicPartition(*tp): ts for tp, ts in timestamps.items()}
        for tp, ts in query.items():
            if isinstance(ts, bool) or not isinstance(ts, int) or ts < 0:
                raise InvalidArgumentError(
                    f"offsets_for_times: timestamp {ts!r} for {tp} must be an int >= 0"
                )
        return self._lookup("offsets_for_times", query, now, timeout_ms, keep_ts=True)

    def end_offsets(
        self,
        partitions: Iterable[TopicPartition],
        *,
        now: float,
        timeout_ms: int | None = None,
    ) -> Operation[Any]:
        """The end (high watermark, or LSO with read_committed): ``{tp: offset}``."""
        query = {TopicPartition(*tp): LATEST for tp in partitions}
        return self._lookup("end_offsets", query, now, timeout_ms)

    def beginning_offsets(
        self,
        partitions: Iterable[TopicPartition],
        *,
        now: float,
        timeout_ms: int | None = None,
    ) -> Operation[Any]:
        query = {TopicPartition(*tp): EARLIEST for tp in partitions}
        return self._lookup("beginning_offsets", query, now, timeout_ms)

    def _lookup(
        self,
        kind: str,
        query: dict[TopicPartition, int],
        now: float,
        timeout_ms: int | None,
        *,
        keep_ts: bool = False,
    ) -> Operation[Any]:
        self._check_open(kind)
        handle = self._lookups.lookup(kind, query, now, timeout_ms, keep_ts=keep_ts)
        self._step(now)
        return handle

"""Group offset commands: a consumer group's committed offsets (OffsetFetch,
OffsetCommit, OffsetDelete) and a share group's start offsets
(DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets,
KIP-932), all sent to the group coordinator and sent again when it moved.

OffsetFetch and OffsetCommit are capped at v9: v10 names topics by id only
(KIP-848), and these commands report by topic name without a metadata
round trip to translate ids.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafkacore.admin._base import AdminBase, Job, code_error, items_outcome, single_outcome
from kafkacore.admin._checks import (
    check_bool,
    check_int,
    check_mapping,
    check_name,
    check_names,
    check_partitions,
    check_timeout,
    to_partition,
)
from kafkacore.admin.group_types import SharePartitionOffset
from kafkacore.admin.results import ItemResults
from kafkacore.client.handles import RequestHandle
from kafkacore.client.metadata import TopicPartition
from kafkacore.client.routing import GroupCoordinator
from kafkacore.consumer import OffsetAndMetadata
from kafkacore.errors import NoCommonVersionError
from kafkacore.operation import Operation
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import COORDINATOR_MOVED, ErrorCode
from kafkacore.protocol.messages import alter_share_group_offsets_request as asgo
from kafkacore.protocol.messages import describe_share_group_offsets_request as dsgo
from kafkacore.protocol.messages.delete_share_group_offsets_request import (
    DeleteShareGroupOffsetsRequestTopic,
)
from kafkacore.protocol.messages.offset_commit_request import (
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kafkacore.protocol.messages.offset_delete_request import (
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from kafkacore.protocol.messages.offset_fetch_request import (
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)

__all__ = ["OffsetCommands"]

#: The last OffsetFetch/OffsetCommit version that names topics (v10: ids only).
BY_NAME_MAX_VERSION = 9
#: OffsetFetch v8 batches groups (KIP-709), v7 can wait for stable offsets
#: (KIP-447), v2 can ask for every partition.
_GROUPS_VERSION = 8
_STABLE_VERSION = 7
_ALL_PARTITIONS_VERSION = 2
#: OffsetFetch answers that clear up by themselves: the coordinator moved,
#: or a transaction's offsets are not committed yet (KIP-447).
FETCH_RETRY = COORDINATOR_MOVED | {ErrorCode.UNSTABLE_OFFSET_COMMIT}


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for tp in partitions:
        out.setdefault(tp.topic, []).append(tp.partition)
    return out


def _commit_offsets(offsets: object) -> dict[TopicPartition, OffsetAndMetadata]:
    out: dict[TopicPartition, OffsetAndMetadata] = {}
    for key, value in check_mapping("alter_consumer_group_offsets: offsets", offsets).items():
        tp = to_partition("alter_consumer_group_offsets: offsets key", key)
        if isinstance(value, OffsetAndMetadata):
            check_int(f"alter_consumer_group_offsets[{tp}].offset", value.offset, minimum=0)
            out[tp] = value
        else:
            out[tp] = OffsetAndMetadata(
                check_int(f"alter_consumer_group_offsets[{tp}]", value, minimum=0)
            )
    if not out:
        raise ValueError("alter_consumer_group_offsets: offsets: name at least one partition")
    return out


class OffsetCommands(AdminBase):
    """Group offset commands of :class:`~kafkacore.admin.AdminCore`."""

    def _group_level(
        self,
        job: Job,
        keys: list[Any],
        code: int,
        message: str | None,
        group: str,
        again: Any,
        now: float,
    ) -> bool:
        """True when a group-level ``code`` is success; else retry or fail every key."""
        if not code:
            return True
        error = code_error(code, message, f"group {group!r}", node_id=self._answerer())
        if code in COORDINATOR_MOVED:
            self._again(job, keys, error, again, now)
        else:
            self._fail_all(job, keys, error)
        return False

    # -------------------------------------------------- consumer groups
    def list_consumer_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        require_stable: bool = False,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[dict[TopicPartition, OffsetAndMetadata | None]]:
        """The group's committed offsets: every partition it committed, or just
        ``partitions`` (None where nothing is committed)."""
        kind = "list_consumer_group_offsets"
        group = check_name(f"{kind}: group_id", group_id)
        parts = None if partitions is None else check_partitions(f"{kind}: partitions", partitions)
        stable = check_bool(f"{kind}: require_stable", require_stable)
        topics = None if parts is None else _by_topic(parts)
        job = self._begin(kind, [None], single_outcome, check_timeout(kind, timeout_ms), now)

        build = _fetch_builder(kind, group, topics, stable)

        def send(keys: list[Any], t: float) -> None:
            self._send(
                job,
                keys,
                m.OffsetFetchRequest(),
                answer,
                send,
                now=t,
                target=GroupCoordinator(group),
                build=build,
                max_version=BY_NAME_MAX_VERSION,
            )

        def answer(
            response: m.OffsetFetchResponse, handle: RequestHandle[m.OffsetFetchResponse], t: float
        ) -> None:
            codes, result = _fetched(response, parts)
            code = next((c for c in codes if c in FETCH_RETRY), None) or next(
                (c for c in codes if c), 0
            )
            node = self._answerer()
            if code in FETCH_RETRY:
                error = code_error(code, None, f"group {group!r}", node_id=node)
                self._again(job, [None], error, send, t)
            elif code:
                what = f"OffsetFetch of group {group!r}"
                job.settle(None, error=code_error(code, None, what, node_id=node))
            else:
                job.settle(None, dict(sorted(result.items())))

        send([None], now)
        return self._started(job, now)

    def alter_consumer_group_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
        *,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[TopicPartition, None]]:
        """Commit offsets for a group no member is in (its members would overwrite them)."""
        kind = "alter_consumer_group_offsets"
        group = check_name(f"{kind}: group_id", group_id)
        wanted = _commit_offsets(offsets)
        job = self._begin(kind, list(wanted), items_outcome, check_timeout(kind, timeout_ms), now)

        def send(keys: list[TopicPartition], t: float) -> None:
            topics = [
                OffsetCommitRequestTopic(
                    name=topic,
                    partitions=[
                        OffsetCommitRequestPartition(
                            partition_index=p,
                            committed_offset=wanted[TopicPartition(topic, p)].offset,
                            committed_leader_epoch=_epoch(wanted[TopicPartition(topic, p)]),
                            committed_metadata=wanted[TopicPartition(topic, p)].metadata,
                        )
                        for p in ps
                    ],
                )
                for topic, ps in _by_topic(keys).items()
            ]
            request = m.OffsetCommitRequest(group_id=group, topics=topics)
            self._send(
                job,
                keys,
                request,
                answer,
                send,
                now=t,
                target=GroupCoordinator(group),
                max_version=BY_NAME_MAX_VERSION,
            )

        def answer(
            response: m.OffsetCommitResponse,
            handle: RequestHandle[m.OffsetCommitResponse],
            t: float,
        ) -> None:
            retry: list[tuple[TopicPartition, BaseException]] = []
            for topic in response.topics:
                for p in topic.partitions:
                    tp = TopicPartition(topic.name, p.partition_index)
                    self._coordinator_partition(job, tp, p.error_code, None, retry)
            self._retry_items(job, retry, send, t)

        send(list(wanted), now)
        return self._started(job, now)

    def _coordinator_partition(
        self,
        job: Job,
        key: Any,
        code: int,
        message: str | None,
        retry: list[tuple[Any, BaseException]],
    ) -> None:
        if key not in job.known:
            return
        if not code:
            job.settle(key, None)
            return
        error = code_error(
            code,
            message,
            f"partition {key[0]}-{key[1]}" if isinstance(key, TopicPartition) else f"topic {key!r}",
            node_id=self._answerer(),
        )
        if code in COORDINATOR_MOVED:
            retry.append((key, error))
        else:
            job.settle(key, error=error)

    def delete_consumer_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition],
        *,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[TopicPartition, None]]:
        """Forget a group's committed offsets of partitions it no longer consumes (KIP-496)."""
        kind = "delete_consumer_group_offsets"
        group = check_name(f"{kind}: group_id", group_id)
        parts = check_partitions(f"{kind}: partitions", partitions)
        job = self._begin(kind, parts, items_outcome, check_timeout(kind, timeout_ms), now)

        def send(keys: list[TopicPartition], t: float) -> None:
            topics = [
                OffsetDeleteRequestTopic(
                    name=topic,
                    partitions=[OffsetDeleteRequestPartition(partition_index=p) for p in ps],
                )
                for topic, ps in _by_topic(keys).items()
            ]
            request = m.OffsetDeleteRequest(group_id=group, topics=topics)
            self._send(job, keys, request, answer, send, now=t, target=GroupCoordinator(group))

        def answer(
            response: m.OffsetDeleteResponse,
            handle: RequestHandle[m.OffsetDeleteResponse],
            t: float,
        ) -> None:
            keys = job.unsettled()
            if not self._group_level(job, keys, response.error_code, None, group, send, t):
                return
            retry: list[tuple[TopicPartition, BaseException]] = []
            for topic in response.topics:
                for p in topic.partitions:
                    self._coordinator_partition(
                        job,
                        TopicPartition(topic.name, p.partition_index),
                        p.error_code,
                        None,
                        retry,
                    )
            self._retry_items(job, retry, send, t)

        send(parts, now)
        return self._started(job, now)

    # ----------------------------------------------------- share groups
    def list_share_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[dict[TopicPartition, SharePartitionOffset | None]]:
        """A share group's start offsets (and lag, v1+): every partition, or just
        ``partitions`` (None where the group has no start offset)."""
        kind = "list_share_group_offsets"
        group = check_name(f"{kind}: group_id", group_id)
        parts = None if partitions is None else check_partitions(f"{kind}: partitions", partitions)
        job = self._begin(kind, [None], single_outcome, check_timeout(kind, timeout_ms), now)
        topics = (
            None
            if parts is None
            else [
                dsgo.DescribeShareGroupOffsetsRequestTopic(topic_name=t, partitions=ps)
                for t, ps in _by_topic(parts).items()
            ]
        )

        def send(keys: list[Any], t: float) -> None:
            request = m.DescribeShareGroupOffsetsRequest(
                groups=[dsgo.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=topics)]
            )
            self._send(job, keys, request, answer, send, now=t, target=GroupCoordinator(group))

        def answer(
            response: m.DescribeShareGroupOffsetsResponse,
            handle: RequestHandle[m.DescribeShareGroupOffsetsResponse],
            t: float,
        ) -> None:
            found = next((g for g in response.groups if g.group_id == group), None)
            if found is None:
                return  # settled as unanswered by the engine
            if not self._group_level(
                job, [None], found.error_code, found.error_message, group, send, t
            ):
                return
            result: dict[TopicPartition, SharePartitionOffset | None] = dict.fromkeys(parts or ())
            for topic in found.topics:
                for p in topic.partitions:
                    tp = TopicPartition(topic.topic_name, p.partition_index)
                    if parts is not None and tp not in result:
                        continue
                    if p.error_code:
                        job.settle(
                            None,
                            error=code_error(
                                p.error_code,
                                p.error_message,
                                f"partition {tp.topic}-{tp.partition} of share group {group!r}",
                                node_id=self._answerer(),
                            ),
                        )
                        return
                    result[tp] = (
                        None
                        if p.start_offset < 0
                        else SharePartitionOffset(
                            start_offset=p.start_offset,
                            leader_epoch=p.leader_epoch if p.leader_epoch >= 0 else None,
                            lag=p.lag if p.lag >= 0 else None,
                        )
                    )
            job.settle(None, dict(sorted(result.items())))

        send([None], now)
        return self._started(job, now)

    def alter_share_group_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, int],
        *,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[TopicPartition, None]]:
        """Set a share group's start offsets (the group must be empty)."""
        kind = "alter_share_group_offsets"
        group = check_name(f"{kind}: group_id", group_id)
        wanted = {
            to_partition(f"{kind}: offsets key", tp): check_int(f"{kind}[{tp}]", off, minimum=0)
            for tp, off in check_mapping(f"{kind}: offsets", offsets).items()
        }
        if not wanted:
            raise ValueError(f"{kind}: offsets: name at least one partition")
        job = self._begin(kind, list(wanted), items_outcome, check_timeout(kind, timeout_ms), now)

        def send(keys: list[TopicPartition], t: float) -> None:
            topics = [
                asgo.AlterShareGroupOffsetsRequestTopic(
                    topic_name=topic,
                    partitions=[
                        asgo.AlterShareGroupOffsetsRequestPartition(
                            partition_index=p, start_offset=wanted[TopicPartition(topic, p)]
                        )
                        for p in ps
                    ],
                )
                for topic, ps in _by_topic(keys).items()
            ]
            self._send(
                job,
                keys,
                m.AlterShareGroupOffsetsRequest(group_id=group, topics=topics),
                answer,
                send,
                now=t,
                target=GroupCoordinator(group),
            )

        def answer(
            response: m.AlterShareGroupOffsetsResponse,
            handle: RequestHandle[m.AlterShareGroupOffsetsResponse],
            t: float,
        ) -> None:
            if not self._group_level(
                job, job.unsettled(), response.error_code, response.error_message, group, send, t
            ):
                return
            retry: list[tuple[TopicPartition, BaseException]] = []
            for topic in response.responses:
                for p in topic.partitions:
                    self._coordinator_partition(
                        job,
                        TopicPartition(topic.topic_name, p.partition_index),
                        p.error_code,
                        p.error_message,
                        retry,
                    )
            self._retry_items(job, retry, send, t)

        send(list(wanted), now)
        return self._started(job, now)

    def delete_share_group_offsets(
        self,
        group_id: str,
        topics: Iterable[str],
        *,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[str, None]]:
        """Forget a share group's start offsets of whole topics (the group must be empty)."""
        kind = "delete_share_group_offsets"
        group = check_name(f"{kind}: group_id", group_id)
        names = check_names(f"{kind}: topics", topics)
        job = self._begin(kind, names, items_outcome, check_timeout(kind, timeout_ms), now)

        def send(keys: list[str], t: float) -> None:
            request = m.DeleteShareGroupOffsetsRequest(
                group_id=group,
                topics=[DeleteShareGroupOffsetsRequestTopic(topic_name=k) for k in keys],
            )
            self._send(job, keys, request, answer, send, now=t, target=GroupCoordinator(group))

        def answer(
            response: m.DeleteShareGroupOffsetsResponse,
            handle: RequestHandle[m.DeleteShareGroupOffsetsResponse],
            t: float,
        ) -> None:
            if not self._group_level(
                job, job.unsettled(), response.error_code, response.error_message, group, send, t
            ):
                return
            retry: list[tuple[str, BaseException]] = []
            for r in response.responses:
                self._coordinator_partition(job, r.topic_name, r.error_code, r.error_message, retry)
            self._retry_items(job, retry, send, t)

        send(names, now)
        return self._started(job, now)


def _fetch_builder(
    kind: str, group: str, topics: dict[str, list[int]] | None, stable: bool
) -> Callable[[int], m.OffsetFetchRequest]:
    """OffsetFetch of one group at the coordinator's version (groups list from v8)."""

    def build(version: int) -> m.OffsetFetchRequest:
        if version >= _GROUPS_VERSION:
            entries = None
            if topics is not None:
                entries = [
                    OffsetFetchRequestTopics(name=t, partition_indexes=ps)
                    for t, ps in topics.items()
                ]
            group_entry = OffsetFetchRequestGroup(group_id=group, topics=entries)
            return m.OffsetFetchRequest(groups=[group_entry], require_stable=stable)
        for needed, need, what in (
            (stable, _STABLE_VERSION, "require_stable"),
            (topics is None, _ALL_PARTITIONS_VERSION, "all partitions"),
        ):
            if needed and version < need:
                raise NoCommonVersionError(
                    f"{kind}: {what} needs OffsetFetch v{need}+; the coordinator offers v{version}"
                )
        old = None
        if topics is not None:
            old = [
                OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in topics.items()
            ]
        request = m.OffsetFetchRequest(group_id=group, topics=old)
        request.require_stable = stable
        return request

    return build


def _fetched(
    response: m.OffsetFetchResponse, parts: list[TopicPartition] | None
) -> tuple[list[int], dict[TopicPartition, OffsetAndMetadata | None]]:
    """The error codes (group first) and offsets of an OffsetFetch answer about one group."""
    found = response.groups[0] if response.groups else response
    result: dict[TopicPartition, OffsetAndMetadata | None] = dict.fromkeys(parts or ())
    codes: list[int] = [found.error_code]
    for topic in found.topics:
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            if parts is not None and tp not in result:
                continue
            codes.append(p.error_code)
            epoch = p.committed_leader_epoch
            offset = p.committed_offset
            result[tp] = (
                None
                if offset < 0
                else OffsetAndMetadata(offset, p.metadata or "", epoch if epoch >= 0 else None)
            )
    return codes, result


def _epoch(offset: OffsetAndMetadata) -> int:
    return -1 if offset.leader_epoch is None else offset.leader_epoch

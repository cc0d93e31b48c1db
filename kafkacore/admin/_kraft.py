"""KRaft-era cluster commands: describe the metadata quorum (DescribeQuorum,
KIP-595/KIP-853) and describe topics one page at a time (DescribeTopicPartitions,
KIP-966).

Routing: both go to any broker. A broker answers DescribeQuorum by asking
the active controller (KIP-836), and DescribeTopicPartitions from its own
metadata cache. A broker without either API (ZooKeeper mode, before 3.7)
fails the command with ``NoCommonVersionError``, without retries.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafkacore.admin._base import AdminBase, code_error, single_outcome
from kafkacore.admin._checks import check_int, check_names, check_timeout
from kafkacore.admin._meta import describe_topic, topic_id
from kafkacore.admin.cluster_types import (
    QuorumEndpoint,
    QuorumInfo,
    QuorumReplica,
    TopicPartitionsCursor,
    TopicPartitionsPage,
)
from kafkacore.admin.results import ItemResult, ItemResults
from kafkacore.admin.types import TopicDescription
from kafkacore.client.handles import RequestHandle
from kafkacore.client.routing import AnyNode
from kafkacore.errors import RemoteProtocolError
from kafkacore.operation import Operation
from kafkacore.protocol import messages as m
from kafkacore.protocol.messages import describe_quorum_request as dq
from kafkacore.protocol.messages import describe_quorum_response as dq_resp
from kafkacore.protocol.messages import describe_topic_partitions_request as dtp

__all__ = ["KraftCommands"]

#: The metadata log every KRaft cluster has: one topic, one partition (KIP-595).
METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = 0
#: DescribeQuorum v2 added replica directory ids and the controllers' endpoints (KIP-853).
_DIRECTORY_VERSION = 2
#: The broker's own cap on a DescribeTopicPartitions page (its default limit too).
MAX_PARTITION_LIMIT = 2000


class KraftCommands(AdminBase):
    """Quorum and paged topic commands of :class:`~kafkacore.admin.AdminCore`."""

    def describe_metadata_quorum(
        self, *, timeout_ms: int | None = None, now: float
    ) -> Operation[QuorumInfo]:
        """The KRaft quorum of the metadata log: leader, epoch, high watermark,
        voters and observers (Java's ``describeMetadataQuorum``)."""
        kind = "describe_metadata_quorum"
        job = self._begin(kind, [None], single_outcome, check_timeout(kind, timeout_ms), now)

        def send(keys: list[Any], t: float) -> None:
            request = m.DescribeQuorumRequest(
                topics=[
                    dq.TopicData(
                        topic_name=METADATA_TOPIC,
                        partitions=[dq.PartitionData(partition_index=METADATA_PARTITION)],
                    )
                ]
            )
            self._send(job, keys, request, answer, send, now=t, target=AnyNode())

        def answer(
            response: m.DescribeQuorumResponse,
            handle: RequestHandle[m.DescribeQuorumResponse],
            t: float,
        ) -> None:
            node = self._answerer()
            code, message = response.error_code, response.error_message
            part = _metadata_partition(response)
            if not code and part is None:
                missing = f"{kind}: broker {node} answered without {METADATA_TOPIC}-0"
                job.settle(None, error=RemoteProtocolError(missing))
                return
            if not code and part is not None:
                code, message = part.error_code, part.error_message
            if code:
                self._failed(job, [None], code_error(code, message, kind, node_id=node), send, t)
                return
            assert part is not None
            job.settle(None, _quorum(part, response, handle.api_version or 0))

        send([None], now)
        return self._started(job, now)

    def describe_topic_partitions(
        self,
        topics: Iterable[str],
        *,
        partition_limit: int = MAX_PARTITION_LIMIT,
        cursor: TopicPartitionsCursor | None = None,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[TopicPartitionsPage]:
        """One page of topic descriptions, at most ``partition_limit`` partitions,
        starting at ``cursor`` (None: the first topic's first partition); the
        page names where the next one starts. Also reports KIP-966's eligible
        leader replicas."""
        kind = "describe_topic_partitions"
        names = check_names(f"{kind}: topics", topics)
        limit = check_int(f"{kind}: partition_limit", partition_limit, minimum=1)
        if cursor is not None and not isinstance(cursor, TopicPartitionsCursor):
            raise TypeError(f"{kind}: cursor: expected a TopicPartitionsCursor, got {cursor!r}")
        job = self._begin(kind, [None], single_outcome, check_timeout(kind, timeout_ms), now)

        def send(keys: list[Any], t: float) -> None:
            request = m.DescribeTopicPartitionsRequest(
                topics=[dtp.TopicRequest(name=name) for name in names],
                response_partition_limit=limit,
                cursor=(
                    None
                    if cursor is None
                    else dtp.Cursor(topic_name=cursor.topic, partition_index=cursor.partition)
                ),
            )
            self._send(job, keys, request, answer, send, now=t, target=AnyNode())

        def answer(
            response: m.DescribeTopicPartitionsResponse,
            handle: RequestHandle[m.DescribeTopicPartitionsResponse],
            t: float,
        ) -> None:
            node = self._answerer()
            found: dict[str, ItemResult[TopicDescription]] = {}
            for topic in response.topics:
                name = topic.name or ""
                if topic.error_code:
                    where = f"topic {name!r}"
                    found[name] = ItemResult(
                        error=code_error(topic.error_code, None, where, node_id=node)
                    )
                else:
                    found[name] = ItemResult(describe_topic(topic))
            after = response.next_cursor
            job.settle(
                None,
                TopicPartitionsPage(
                    topics=ItemResults(found),
                    next_cursor=(
                        None
                        if after is None
                        else TopicPartitionsCursor(after.topic_name, after.partition_index)
                    ),
                ),
            )

        send([None], now)
        return self._started(job, now)


def _metadata_partition(response: m.DescribeQuorumResponse) -> dq_resp.PartitionData | None:
    for topic in response.topics:
        if topic.topic_name == METADATA_TOPIC:
            for part in topic.partitions:
                if part.partition_index == METADATA_PARTITION:
                    return part
    return None


def _ms(value: int) -> int | None:
    return None if value < 0 else value


def _replica(r: dq_resp.ReplicaState, version: int) -> QuorumReplica:
    return QuorumReplica(
        replica_id=r.replica_id,
        directory_id=topic_id(r.replica_directory_id) if version >= _DIRECTORY_VERSION else None,
        log_end_offset=r.log_end_offset,
        last_fetch_timestamp=_ms(r.last_fetch_timestamp),
        last_caught_up_timestamp=_ms(r.last_caught_up_timestamp),
    )


def _quorum(
    part: dq_resp.PartitionData, response: m.DescribeQuorumResponse, version: int
) -> QuorumInfo:
    return QuorumInfo(
        leader_id=part.leader_id,
        leader_epoch=part.leader_epoch,
        high_watermark=part.high_watermark,
        voters=tuple(_replica(r, version) for r in part.current_voters),
        observers=tuple(_replica(r, version) for r in part.observers),
        nodes={
            n.node_id: tuple(
                QuorumEndpoint(listener=e.name, host=e.host, port=e.port) for e in n.listeners
            )
            for n in response.nodes
        },
    )

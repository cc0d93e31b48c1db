"""Replica commands: elect leaders (KIP-460), reassign partitions and list the
reassignments in progress (KIP-455), describe brokers' log directories and
move replicas between them (KIP-113).

Routing: ElectLeaders and the reassignment APIs go to the controller
(NOT_CONTROLLER refreshes the metadata and sends again); DescribeLogDirs goes
to each broker asked about, or to every broker the metadata lists;
AlterReplicaLogDirs to the broker of each replica.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kafkacore.admin._base import (
    CONTROLLER_RETRY,
    Job,
    OnResponse,
    code_error,
    items_outcome,
    single_outcome,
)
from kafkacore.admin._checks import (
    check_int,
    check_mapping,
    check_partitions,
    check_str,
    check_timeout,
)
from kafkacore.admin._routing import SEARCH, BrokerFanout, found_outcome
from kafkacore.admin.cluster_types import TopicPartitionReplica
from kafkacore.admin.results import ItemResults
from kafkacore.admin.types import (
    ElectionType,
    LogDirDescription,
    PartitionReassignment,
    ReplicaInfo,
)
from kafkacore.client.handles import RequestHandle
from kafkacore.client.metadata import TopicPartition
from kafkacore.client.routing import Controller, Node
from kafkacore.errors import NoCommonVersionError
from kafkacore.operation import Operation
from kafkacore.protocol import messages as m
from kafkacore.protocol.messages import alter_partition_reassignments_request as apr
from kafkacore.protocol.messages import alter_replica_log_dirs_request as arld
from kafkacore.protocol.messages.elect_leaders_request import TopicPartitions
from kafkacore.protocol.messages.list_partition_reassignments_request import (
    ListPartitionReassignmentsTopics,
)

__all__ = ["ReplicaCommands"]

#: ElectLeaders v1 added the election type (KIP-460: v0 elects preferred leaders).
_ELECTION_TYPE_VERSION = 1
#: DescribeLogDirs v4 added each directory's total and usable bytes (KIP-827).
_SPACE_VERSION = 4


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for tp in partitions:
        out.setdefault(tp.topic, []).append(tp.partition)
    return out


class ReplicaCommands(BrokerFanout):
    """Replica commands of :class:`~kafkacore.admin.AdminCore`."""

    def elect_leaders(
        self,
        election_type: ElectionType = ElectionType.PREFERRED,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[TopicPartition, None]]:
        """Elect the preferred (or, unclean, any in-sync-or-not) leader of partitions;
        None: every partition that needs it. ELECTION_NOT_NEEDED is that
        partition's error, as in Java."""
        kind = "elect_leaders"
        if not isinstance(election_type, ElectionType):
            raise TypeError(f"{kind}: expected an ElectionType, got {election_type!r}")
        parts = None if partitions is None else check_partitions(f"{kind}: partitions", partitions)
        keys: list[Any] = [SEARCH] if parts is None else list(parts)
        finish = found_outcome if parts is None else items_outcome
        job = self._begin(kind, keys, finish, check_timeout(kind, timeout_ms), now)

        def send(todo: list[Any], t: float) -> None:
            asked = (
                None
                if parts is None
                else [TopicPartitions(topic=k, partitions=v) for k, v in _by_topic(todo).items()]
            )

            def build(version: int) -> m.ElectLeadersRequest:
                if version < _ELECTION_TYPE_VERSION and election_type is not ElectionType.PREFERRED:
                    raise NoCommonVersionError(
                        f"{kind}: unclean elections need ElectLeaders v1+; "
                        f"the controller offers v{version}"
                    )
                request = m.ElectLeadersRequest(
                    topic_partitions=asked, timeout_ms=self._budget_ms(job, t)
                )
                if version >= _ELECTION_TYPE_VERSION:
                    request.election_type = election_type
                return request

            self._send(
                job,
                todo,
                m.ElectLeadersRequest(),
                answer,
                send,
                now=t,
                target=Controller(),
                build=build,
            )

        def answer(
            response: m.ElectLeadersResponse,
            handle: RequestHandle[m.ElectLeadersResponse],
            t: float,
        ) -> None:
            if not self._top_level(
                job, job.unsettled(), response.error_code, None, "ElectLeaders", send, t
            ):
                return
            retry: list[tuple[Any, BaseException]] = []
            for topic in response.replica_election_results:
                for p in topic.partition_result:
                    tp = TopicPartition(topic.topic, p.partition_id)
                    if parts is None:
                        job.add([tp])
                    self._controller_partition(job, tp, p.error_code, p.error_message, retry)
            job.settle(SEARCH, None)
            self._controller_retry(job, retry, send, t)

        send(keys, now)
        return self._started(job, now)

    def _controller_partition(
        self,
        job: Job,
        tp: TopicPartition,
        code: int,
        message: str | None,
        retry: list[tuple[Any, BaseException]],
    ) -> None:
        if tp not in job.known:
            return
        where = f"partition {tp.topic}-{tp.partition}"
        error = code_error(code, message, where, node_id=self._answerer()) if code else None
        if error is not None and code in CONTROLLER_RETRY:
            retry.append((tp, error))
        else:
            job.settle(tp, None, error)

    # -------------------------------------------------------- reassignments
    def alter_partition_reassignments(
        self,
        reassignments: Mapping[TopicPartition, Sequence[int] | None],
        *,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[TopicPartition, None]]:
        """Move partitions to these replicas (in order, the first preferred); None
        cancels a reassignment in progress."""
        kind = "alter_partition_reassignments"
        wanted: dict[TopicPartition, list[int] | None] = {}
        for key, replicas in check_mapping(f"{kind}: reassignments", reassignments).items():
            tp = check_partitions(f"{kind}: reassignments key", [key])[0]
            wanted[tp] = None if replicas is None else _replicas(f"{kind}[{tp}]", replicas)
        if not wanted:
            raise ValueError(f"{kind}: reassignments: name at least one partition")
        job = self._begin(kind, list(wanted), items_outcome, check_timeout(kind, timeout_ms), now)

        def send(todo: list[TopicPartition], t: float) -> None:
            topics = [
                apr.ReassignableTopic(
                    name=topic,
                    partitions=[
                        apr.ReassignablePartition(
                            partition_index=p, replicas=wanted[TopicPartition(topic, p)]
                        )
                        for p in ps
                    ],
                )
                for topic, ps in _by_topic(todo).items()
            ]
            request = m.AlterPartitionReassignmentsRequest(
                timeout_ms=self._budget_ms(job, t), topics=topics
            )
            self._send(job, todo, request, answer, send, now=t, target=Controller())

        def answer(
            response: m.AlterPartitionReassignmentsResponse,
            handle: RequestHandle[m.AlterPartitionReassignmentsResponse],
            t: float,
        ) -> None:
            if not self._top_level(
                job,
                job.unsettled(),
                response.error_code,
                response.error_message,
                "AlterPartitionReassignments",
                send,
                t,
            ):
                return
            retry: list[tuple[Any, BaseException]] = []
            for topic in response.responses:
                for p in topic.partitions:
                    self._controller_partition(
                        job,
                        TopicPartition(topic.name, p.partition_index),
                        p.error_code,
                        p.error_message,
                        retry,
                    )
            self._controller_retry(job, retry, send, t)

        send(list(wanted), now)
        return self._started(job, now)

    def list_partition_reassignments(
        self,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[dict[TopicPartition, PartitionReassignment]]:
        """The reassignments in progress (of ``partitions``, or all of them)."""
        kind = "list_partition_reassignments"
        parts = None if partitions is None else check_partitions(f"{kind}: partitions", partitions)
        topics = (
            None
            if parts is None
            else [
                ListPartitionReassignmentsTopics(name=t, partition_indexes=ps)
                for t, ps in _by_topic(parts).items()
            ]
        )
        job = self._begin(kind, [None], single_outcome, check_timeout(kind, timeout_ms), now)

        def send(keys: list[Any], t: float) -> None:
            request = m.ListPartitionReassignmentsRequest(
                timeout_ms=self._budget_ms(job, t), topics=topics
            )
            self._send(job, keys, request, answer, send, now=t, target=Controller())

        def answer(
            response: m.ListPartitionReassignmentsResponse,
            handle: RequestHandle[m.ListPartitionReassignmentsResponse],
            t: float,
        ) -> None:
            if self._top_level(
                job,
                [None],
                response.error_code,
                response.error_message,
                "ListPartitionReassignments",
                send,
                t,
            ):
                found = {
                    TopicPartition(topic.name, p.partition_index): PartitionReassignment(
                        replicas=tuple(p.replicas),
                        adding_replicas=tuple(p.adding_replicas),
                        removing_replicas=tuple(p.removing_replicas),
                    )
                    for topic in response.topics
                    for p in topic.partitions
                }
                job.settle(None, dict(sorted(found.items())))

        send([None], now)
        return self._started(job, now)

    # ------------------------------------------------------------ log dirs
    def describe_log_dirs(
        self,
        broker_ids: Iterable[int] | None = None,
        *,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[int, dict[str, LogDirDescription]]]:
        """Each broker's log directories, by path, with the replicas they hold
        (``broker_ids`` None: every broker)."""
        kind = "describe_log_dirs"
        ids = None if broker_ids is None else _broker_ids(kind, broker_ids)
        keys: list[Any] = [SEARCH] if ids is None else list(ids)
        finish = found_outcome if ids is None else items_outcome
        job = self._begin(kind, keys, finish, check_timeout(kind, timeout_ms), now)

        def ask(nodes: list[int], t: float) -> None:
            for node in nodes:
                self._send(
                    job,
                    [node],
                    m.DescribeLogDirsRequest(topics=None),
                    answered(node),
                    ask,
                    now=t,
                    target=Node(node),
                )

        def answered(node: int) -> OnResponse[m.DescribeLogDirsResponse]:
            def answer(
                response: m.DescribeLogDirsResponse,
                handle: RequestHandle[m.DescribeLogDirsResponse],
                t: float,
            ) -> None:
                if response.error_code:
                    job.settle(
                        node,
                        error=code_error(
                            response.error_code, None, "DescribeLogDirs", node_id=node
                        ),
                    )
                else:
                    job.settle(
                        node,
                        {
                            d.log_dir: _log_dir(d, handle.api_version or 0, node)
                            for d in response.results
                        },
                    )

            return answer

        if ids is None:
            self._each_broker(job, ask, now)
        else:
            ask(ids, now)
        return self._started(job, now)

    def alter_replica_log_dirs(
        self,
        assignments: Mapping[TopicPartitionReplica, str],
        *,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[TopicPartitionReplica, None]]:
        """Move replicas into log directories (absolute paths) of the brokers holding
        them, one AlterReplicaLogDirs request per broker (KIP-113). A replica
        already in that directory succeeds as it is."""
        kind = "alter_replica_log_dirs"
        wanted: dict[TopicPartitionReplica, str] = {}
        for key, path in check_mapping(f"{kind}: assignments", assignments).items():
            wanted[_replica_key(kind, key)] = check_str(f"{kind}[{key}]", path)
        if not wanted:
            raise ValueError(f"{kind}: assignments: name at least one replica")
        job = self._begin(kind, list(wanted), items_outcome, check_timeout(kind, timeout_ms), now)

        def send(todo: list[TopicPartitionReplica], t: float) -> None:
            by_broker: dict[int, list[TopicPartitionReplica]] = {}
            for r in todo:
                by_broker.setdefault(r.broker_id, []).append(r)
            for broker, replicas in sorted(by_broker.items()):
                self._send(
                    job,
                    replicas,
                    m.AlterReplicaLogDirsRequest(dirs=_dirs(replicas, wanted)),
                    answered(broker),
                    send,
                    now=t,
                    target=Node(broker),
                )

        def answered(broker: int) -> OnResponse[m.AlterReplicaLogDirsResponse]:
            def answer(
                response: m.AlterReplicaLogDirsResponse,
                handle: RequestHandle[m.AlterReplicaLogDirsResponse],
                t: float,
            ) -> None:
                for topic in response.results:
                    for p in topic.partitions:
                        key = TopicPartitionReplica(topic.topic_name, p.partition_index, broker)
                        if key not in job.known:
                            continue
                        where = f"replica {key.topic}-{key.partition}"
                        error = (
                            code_error(p.error_code, None, where, node_id=broker)
                            if p.error_code
                            else None
                        )
                        job.settle(key, None, error)

            return answer

        send(list(wanted), now)
        return self._started(job, now)


def _replica_key(what: str, key: object) -> TopicPartitionReplica:
    if not isinstance(key, tuple) or len(key) != 3:
        raise TypeError(
            f"{what}: expected TopicPartitionReplica(topic, partition, broker_id) keys, got {key!r}"
        )
    topic, partition, broker = key
    return TopicPartitionReplica(
        check_str(f"{what}: topic", topic),
        check_int(f"{what}: partition", partition, minimum=0),
        check_int(f"{what}: broker_id", broker, minimum=0),
    )


def _dirs(
    replicas: list[TopicPartitionReplica], paths: Mapping[TopicPartitionReplica, str]
) -> list[arld.AlterReplicaLogDir]:
    """The request's directories: each path with the partitions (by topic) moved into it."""
    by_path: dict[str, dict[str, list[int]]] = {}
    for r in replicas:
        by_path.setdefault(paths[r], {}).setdefault(r.topic, []).append(r.partition)
    return [
        arld.AlterReplicaLogDir(
            path=path,
            topics=[
                arld.AlterReplicaLogDirTopic(name=topic, partitions=parts)
                for topic, parts in topics.items()
            ],
        )
        for path, topics in by_path.items()
    ]


def _replicas(what: str, replicas: object) -> list[int]:
    if isinstance(replicas, str | bytes) or not isinstance(replicas, Sequence) or not replicas:
        raise TypeError(
            f"{what}: expected a non-empty sequence of broker ids or None, got {replicas!r}"
        )
    out = [check_int(f"{what} broker id", r, minimum=0) for r in replicas]
    if len(set(out)) != len(out):
        raise ValueError(f"{what}: a broker is listed twice in {out}")
    return out


def _broker_ids(what: str, ids: object) -> list[int]:
    if not isinstance(ids, Iterable) or isinstance(ids, str | bytes):
        raise TypeError(f"{what}: broker_ids: expected a collection of broker ids, got {ids!r}")
    out = [check_int(f"{what}: broker id", i, minimum=0) for i in ids]
    if not out:
        raise ValueError(f"{what}: broker_ids: name at least one broker, or pass None for all")
    if len(set(out)) != len(out):
        raise ValueError(f"{what}: broker_ids: a broker is listed twice in {out}")
    return out


def _log_dir(d: Any, version: int, node: int) -> LogDirDescription:
    """A log dir of broker ``node``'s DescribeLogDirs answer."""
    space = version >= _SPACE_VERSION
    return LogDirDescription(
        path=d.log_dir,
        error=(
            code_error(d.error_code, None, f"log dir {d.log_dir}", node_id=node)
            if d.error_code
            else None
        ),
        replicas={
            TopicPartition(t.name, p.partition_index): ReplicaInfo(
                size=p.partition_size, offset_lag=p.offset_lag, is_future=p.is_future_key
            )
            for t in d.topics
            for p in t.partitions
        },
        total_bytes=d.total_bytes if space and d.total_bytes >= 0 else None,
        usable_bytes=d.usable_bytes if space and d.usable_bytes >= 0 else None,
    )

"""Topic and cluster commands: create, delete, grow, list and describe topics,
describe the cluster.

Routing: CreateTopics, DeleteTopics and CreatePartitions go to the
controller the metadata names (in KRaft a broker that forwards to the active
controller, KIP-590); NOT_CONTROLLER refreshes the metadata and sends again.
Metadata and DescribeCluster go to any broker.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from kafkacore.admin._base import (
    CONTROLLER_RETRY,
    AdminBase,
    Job,
    code_error,
    items_outcome,
    single_outcome,
)
from kafkacore.admin._checks import (
    check_bool,
    check_mapping,
    check_name,
    check_names,
    check_timeout,
)
from kafkacore.admin._checks import check_uuid_or_name as _name_or_id
from kafkacore.admin._meta import brokers_of, describe_topic, metadata_builder, topic_id
from kafkacore.admin.acl import authorized_operations
from kafkacore.admin.results import ItemResults
from kafkacore.admin.types import (
    BrokerNode,
    ClusterDescription,
    ConfigEntry,
    ConfigSource,
    CreatedTopic,
    NewPartitions,
    NewTopic,
    TopicDescription,
    TopicListing,
)
from kafkacore.client.handles import RequestHandle
from kafkacore.client.routing import AnyNode, Controller
from kafkacore.errors import NoCommonVersionError
from kafkacore.operation import Operation
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.messages.create_partitions_request import (
    CreatePartitionsAssignment,
    CreatePartitionsTopic,
)
from kafkacore.protocol.messages.create_topics_request import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfig,
)
from kafkacore.protocol.messages.delete_topics_request import DeleteTopicState

__all__ = ["TopicCommands"]

#: Metadata knows the topic but its leaders are still being elected.
METADATA_RETRY = frozenset({ErrorCode.LEADER_NOT_AVAILABLE})
#: DeleteTopics by topic id (KIP-516) and DescribeCluster's fenced brokers (KIP-1073).
_DELETE_BY_ID_VERSION = 6
_FENCED_BROKERS_VERSION = 2


class TopicCommands(AdminBase):
    """Topic and cluster commands of :class:`~kafkacore.admin.AdminCore`."""

    # ------------------------------------------------------------ create
    def create_topics(
        self,
        new_topics: Iterable[NewTopic],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[str, CreatedTopic]]:
        """Create topics; with ``validate_only`` the broker only checks the request.

        Value: each topic's :class:`CreatedTopic`, or its error (e.g.
        ``TopicAlreadyExistsError``).
        """
        topics = _new_topics(new_topics)
        check_bool("create_topics: validate_only", validate_only)
        job = self._begin(
            "create_topics",
            list(topics),
            items_outcome,
            check_timeout("create_topics", timeout_ms),
            now,
        )

        def send(keys: list[str], t: float) -> None:
            request = m.CreateTopicsRequest(
                topics=[_creatable(topics[k]) for k in keys],
                timeout_ms=self._budget_ms(job, t),
                validate_only=validate_only,
            )
            self._send(job, keys, request, answer, send, now=t, target=Controller())

        def answer(
            response: m.CreateTopicsResponse,
            handle: RequestHandle[m.CreateTopicsResponse],
            t: float,
        ) -> None:
            retry: list[tuple[str, BaseException]] = []
            for r in response.topics:
                if r.name not in topics:
                    continue
                error = _topic_error(
                    r.error_code, r.error_message, r.name, node_id=self._answerer()
                )
                if error is not None and r.error_code in CONTROLLER_RETRY:
                    retry.append((r.name, error))
                else:
                    job.settle(r.name, None if error else _created(r), error)
            self._controller_retry(job, retry, send, t)

        send(list(topics), now)
        return self._started(job, now)

    # ------------------------------------------------------------ delete
    def delete_topics(
        self,
        topics: Iterable[str | uuid.UUID],
        *,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[str | uuid.UUID, None]]:
        """Delete topics, named or by topic id (ids need DeleteTopics v6+, KIP-516)."""
        if isinstance(topics, str | bytes | uuid.UUID) or not isinstance(topics, Iterable):
            raise TypeError(
                f"delete_topics: expected a collection of topic names or ids, got {topics!r}"
            )
        keys: list[str | uuid.UUID] = []
        for t in topics:
            key = _name_or_id("delete_topics: topic", t)
            if key in keys:
                raise ValueError(f"delete_topics: {key!r} is listed twice")
            keys.append(key)
        if not keys:
            raise ValueError("delete_topics: name at least one topic")
        job = self._begin(
            "delete_topics", keys, items_outcome, check_timeout("delete_topics", timeout_ms), now
        )

        def send(todo: list[str | uuid.UUID], t: float) -> None:
            def build(version: int) -> m.DeleteTopicsRequest:
                budget = self._budget_ms(job, t)
                if version >= _DELETE_BY_ID_VERSION:
                    states = [
                        DeleteTopicState(name=k, topic_id=uuid.UUID(int=0))
                        if isinstance(k, str)
                        else DeleteTopicState(name=None, topic_id=k)
                        for k in todo
                    ]
                    return m.DeleteTopicsRequest(topics=states, timeout_ms=budget)
                if any(isinstance(k, uuid.UUID) for k in todo):
                    raise NoCommonVersionError(
                        f"delete_topics: deleting by topic id needs DeleteTopics "
                        f"v{_DELETE_BY_ID_VERSION}+; the broker offers v{version}"
                    )
                return m.DeleteTopicsRequest(topic_names=[str(k) for k in todo], timeout_ms=budget)

            self._send(
                job,
                todo,
                m.DeleteTopicsRequest(),
                answer,
                send,
                now=t,
                target=Controller(),
                build=build,
            )

        def answer(
            response: m.DeleteTopicsResponse,
            handle: RequestHandle[m.DeleteTopicsResponse],
            t: float,
        ) -> None:
            retry: list[tuple[str | uuid.UUID, BaseException]] = []
            for r in response.responses:
                rid = topic_id(r.topic_id)
                key = rid if rid in keys else r.name
                if key not in keys:
                    continue
                error = _topic_error(r.error_code, r.error_message, key, node_id=self._answerer())
                if error is not None and r.error_code in CONTROLLER_RETRY:
                    retry.append((key, error))
                else:
                    job.settle(key, None, error)
            self._controller_retry(job, retry, send, t)

        send(keys, now)
        return self._started(job, now)

    # ------------------------------------------------------- partitions
    def create_partitions(
        self,
        new_partitions: Mapping[str, NewPartitions],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[str, None]]:
        """Grow topics to more partitions (``{topic: NewPartitions}``)."""
        wanted = dict(check_mapping("create_partitions: new_partitions", new_partitions))
        if not wanted:
            raise ValueError("create_partitions: name at least one topic")
        for name, spec in wanted.items():
            check_name("create_partitions: topic", name)
            if not isinstance(spec, NewPartitions):
                raise TypeError(
                    f"create_partitions[{name!r}]: expected a NewPartitions, got {spec!r}"
                )
        check_bool("create_partitions: validate_only", validate_only)
        job = self._begin(
            "create_partitions",
            list(wanted),
            items_outcome,
            check_timeout("create_partitions", timeout_ms),
            now,
        )

        def send(keys: list[str], t: float) -> None:
            request = m.CreatePartitionsRequest(
                topics=[
                    CreatePartitionsTopic(
                        name=k,
                        count=wanted[k].total_count,
                        assignments=None
                        if wanted[k].new_assignments is None
                        else [
                            CreatePartitionsAssignment(broker_ids=list(b))
                            for b in wanted[k].new_assignments or ()
                        ],
                    )
                    for k in keys
                ],
                timeout_ms=self._budget_ms(job, t),
                validate_only=validate_only,
            )
            self._send(job, keys, request, answer, send, now=t, target=Controller())

        def answer(
            response: m.CreatePartitionsResponse,
            handle: RequestHandle[m.CreatePartitionsResponse],
            t: float,
        ) -> None:
            retry: list[tuple[str, BaseException]] = []
            for r in response.results:
                if r.name not in wanted:
                    continue
                error = _topic_error(
                    r.error_code, r.error_message, r.name, node_id=self._answerer()
                )
                if error is not None and r.error_code in CONTROLLER_RETRY:
                    retry.append((r.name, error))
                else:
                    job.settle(r.name, None, error)
            self._controller_retry(job, retry, send, t)

        send(list(wanted), now)
        return self._started(job, now)

    # --------------------------------------------------- list / describe
    def list_topics(
        self, *, include_internal: bool = False, timeout_ms: int | None = None, now: float
    ) -> Operation[dict[str, TopicListing]]:
        """Every topic's name, id and internal flag (internal topics on request)."""
        check_bool("list_topics: include_internal", include_internal)
        job = self._begin(
            "list_topics", [None], single_outcome, check_timeout("list_topics", timeout_ms), now
        )

        def send(keys: list[Any], t: float) -> None:
            self._send(
                job,
                keys,
                m.MetadataRequest(),
                answer,
                send,
                now=t,
                target=AnyNode(),
                build=metadata_builder(None),
            )

        def answer(
            response: m.MetadataResponse, handle: RequestHandle[m.MetadataResponse], t: float
        ) -> None:
            listing = {
                topic.name: TopicListing(
                    name=topic.name,
                    topic_id=topic_id(topic.topic_id),
                    is_internal=topic.is_internal,
                )
                for topic in sorted(response.topics, key=lambda x: x.name or "")
                if not topic.error_code
                and topic.name
                and (include_internal or not topic.is_internal)
            }
            job.settle(None, listing)

        send([None], now)
        return self._started(job, now)

    def describe_topics(
        self,
        topics: Iterable[str],
        *,
        include_authorized_operations: bool = False,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[str, TopicDescription]]:
        """Partitions, leaders, replicas and ids of topics (Metadata, not auto-creating)."""
        names = check_names("describe_topics: topics", topics)
        check_bool("describe_topics: include_authorized_operations", include_authorized_operations)
        job = self._begin(
            "describe_topics",
            names,
            items_outcome,
            check_timeout("describe_topics", timeout_ms),
            now,
        )

        def send(keys: list[str], t: float) -> None:
            build = metadata_builder(keys, authorized=include_authorized_operations)
            self._send(
                job, keys, m.MetadataRequest(), answer, send, now=t, target=AnyNode(), build=build
            )

        def answer(
            response: m.MetadataResponse, handle: RequestHandle[m.MetadataResponse], t: float
        ) -> None:
            retry: list[tuple[str, BaseException]] = []
            for topic in response.topics:
                if topic.name not in names:
                    continue
                error = _topic_error(topic.error_code, None, topic.name, node_id=self._answerer())
                if error is not None and topic.error_code in METADATA_RETRY:
                    retry.append((topic.name, error))
                else:
                    job.settle(topic.name, None if error else describe_topic(topic), error)
            self._retry_items(job, retry, send, t)

        send(names, now)
        return self._started(job, now)

    def describe_cluster(
        self,
        *,
        include_authorized_operations: bool = False,
        include_fenced_brokers: bool = False,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ClusterDescription]:
        """Cluster id, controller and brokers (DescribeCluster; Metadata on brokers without it)."""
        check_bool("describe_cluster: include_authorized_operations", include_authorized_operations)
        check_bool("describe_cluster: include_fenced_brokers", include_fenced_brokers)
        job = self._begin(
            "describe_cluster",
            [None],
            single_outcome,
            check_timeout("describe_cluster", timeout_ms),
            now,
        )

        def build(version: int) -> m.DescribeClusterRequest:
            if include_fenced_brokers and version < _FENCED_BROKERS_VERSION:
                raise NoCommonVersionError(
                    f"describe_cluster: include_fenced_brokers needs DescribeCluster "
                    f"v{_FENCED_BROKERS_VERSION}+; the broker offers v{version}"
                )
            request = m.DescribeClusterRequest(
                include_cluster_authorized_operations=include_authorized_operations
            )
            if include_fenced_brokers:
                request.include_fenced_brokers = True
            return request

        def send(keys: list[Any], t: float) -> None:
            def fallback(error: BaseException, t2: float) -> None:
                if isinstance(error, NoCommonVersionError) and not include_fenced_brokers:
                    self._describe_by_metadata(job, t2)
                else:
                    self._failed(job, keys, error, send, t2)

            self._send(
                job,
                keys,
                m.DescribeClusterRequest(),
                answer,
                send,
                now=t,
                target=AnyNode(),
                build=build,
                on_error=fallback,
            )

        def answer(
            response: m.DescribeClusterResponse,
            handle: RequestHandle[m.DescribeClusterResponse],
            t: float,
        ) -> None:
            if response.error_code:
                self._failed(
                    job,
                    [None],
                    code_error(
                        response.error_code,
                        response.error_message,
                        "DescribeCluster",
                        node_id=self._answerer(),
                    ),
                    send,
                    t,
                )
                return
            job.settle(None, _cluster(response))

        send([None], now)
        return self._started(job, now)

    def _describe_by_metadata(self, job: Job, now: float) -> None:
        """describe_cluster for brokers older than DescribeCluster (Kafka < 2.8)."""

        def send(keys: list[Any], t: float) -> None:
            self._send(
                job,
                keys,
                m.MetadataRequest(),
                answer,
                send,
                now=t,
                target=AnyNode(),
                build=metadata_builder([]),
            )

        def answer(
            response: m.MetadataResponse, handle: RequestHandle[m.MetadataResponse], t: float
        ) -> None:
            controller = response.controller_id
            description = ClusterDescription(
                cluster_id=response.cluster_id,
                controller_id=controller if controller >= 0 else None,
                brokers=brokers_of(response),
            )
            job.settle(None, description)

        send([None], now)


# ------------------------------------------------------------------ helpers
def _topic_error(
    code: int, message: str | None, topic: object, *, node_id: int | None
) -> BaseException | None:
    return code_error(code, message, f"topic {topic!r}", node_id=node_id) if code else None


def _new_topics(new_topics: object) -> dict[str, NewTopic]:
    if isinstance(new_topics, NewTopic | str) or not isinstance(new_topics, Iterable):
        raise TypeError(f"create_topics: expected a collection of NewTopic, got {new_topics!r}")
    out: dict[str, NewTopic] = {}
    for topic in new_topics:
        if not isinstance(topic, NewTopic):
            raise TypeError(f"create_topics: expected NewTopic items, got {topic!r}")
        if topic.name in out:
            raise ValueError(f"create_topics: topic {topic.name!r} is listed twice")
        out[topic.name] = topic
    if not out:
        raise ValueError("create_topics: name at least one NewTopic")
    return out


def _creatable(topic: NewTopic) -> CreatableTopic:
    return CreatableTopic(
        name=topic.name,
        num_partitions=topic.num_partitions,
        replication_factor=topic.replication_factor,
        assignments=[
            CreatableReplicaAssignment(partition_index=p, broker_ids=list(b))
            for p, b in sorted((topic.replica_assignments or {}).items())
        ],
        configs=[CreatableTopicConfig(name=k, value=v) for k, v in (topic.configs or {}).items()],
    )


def _created(result: Any) -> CreatedTopic:
    configs: dict[str, ConfigEntry] | None = None
    # v5+ reports the configs unless TopicConfigErrorCode says it could not (KIP-525).
    if (
        result.configs is not None
        and not result.topic_config_error_code
        and result.num_partitions >= 0
    ):
        configs = {
            c.name: ConfigEntry(
                name=c.name,
                value=c.value,
                source=ConfigSource.of(c.config_source),
                is_read_only=c.read_only,
                is_sensitive=c.is_sensitive,
            )
            for c in result.configs
        }
    return CreatedTopic(
        name=result.name,
        topic_id=topic_id(result.topic_id),
        num_partitions=result.num_partitions if result.num_partitions >= 0 else None,
        replication_factor=result.replication_factor if result.replication_factor >= 0 else None,
        configs=configs,
    )


def _cluster(response: m.DescribeClusterResponse) -> ClusterDescription:
    brokers = tuple(
        BrokerNode(
            node_id=b.broker_id, host=b.host, port=b.port, rack=b.rack, is_fenced=b.is_fenced
        )
        for b in sorted(response.brokers, key=lambda b: b.broker_id)
    )
    controller = response.controller_id
    return ClusterDescription(
        cluster_id=response.cluster_id,
        controller_id=controller if controller >= 0 else None,
        brokers=brokers,
        authorized_operations=authorized_operations(response.cluster_authorized_operations),
    )

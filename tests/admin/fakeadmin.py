"""A scripted cluster that answers the admin APIs, for AdminCore unit tests.

Builds on tests/client/fakebroker.py (Metadata, FindCoordinator, ApiVersions
and the byte pump): :class:`World` keeps the admin state (topics, configs,
groups, offsets, logs, ACLs) and installs a handler per admin API on every
fake broker. Tests break things on purpose with :meth:`World.script`: a
queue of one-shot answers per API, consumed before the default handler.
"""

from __future__ import annotations

import random
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkacore.admin import AdminConfig, AdminCore
from kafkacore.client.config import ClientConfig
from kafkacore.client.metadata import TopicPartition
from kafkacore.operation import Operation
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ApiKey, ErrorCode
from kafkacore.protocol.messages import consumer_group_describe_response as cgd
from kafkacore.protocol.messages import create_acls_response as cacl
from kafkacore.protocol.messages import create_partitions_response as cp
from kafkacore.protocol.messages import create_topics_response as ct
from kafkacore.protocol.messages import delete_acls_response as dacl
from kafkacore.protocol.messages import delete_groups_response as dg
from kafkacore.protocol.messages import delete_records_response as dr
from kafkacore.protocol.messages import delete_topics_response as dt
from kafkacore.protocol.messages import describe_acls_response as descacl
from kafkacore.protocol.messages import describe_cluster_response as dc
from kafkacore.protocol.messages import describe_configs_response as dcf
from kafkacore.protocol.messages import describe_groups_response as dgr
from kafkacore.protocol.messages import incremental_alter_configs_response as iac
from kafkacore.protocol.messages import list_groups_response as lg
from kafkacore.protocol.messages import list_offsets_response as lo
from kafkacore.protocol.messages import offset_commit_response as oc
from kafkacore.protocol.messages import offset_delete_response as od
from kafkacore.protocol.messages import offset_fetch_response as of
from kafkacore.protocol.messages import share_group_describe_response as sgd
from tests.client.fakebroker import Cluster, FakeBroker, Pump, Topic, make_cluster

#: A one-shot answer: (broker, request body, version) -> response, or None for the default.
Scripted = Callable[[FakeBroker, Any, int], Any]


@dataclass
class Group:
    """A group the fake coordinator holds."""

    group_id: str
    type: str = "classic"  # classic | consumer | share
    state: str = "Empty"
    protocol_type: str = "consumer"
    protocol: str = "range"
    members: list[Any] = field(default_factory=list)  # response Member structs
    offsets: dict[TopicPartition, int] = field(default_factory=dict)


@dataclass
class Token:
    """A delegation token the fake brokers hold."""

    token_id: str
    hmac: bytes
    owner: tuple[str, str]
    requester: tuple[str, str]
    renewers: list[tuple[str, str]]
    issue: int
    expiry: int
    max: int


@dataclass
class Log:
    start: int = 0
    end: int = 0
    #: (timestamp, offset) of records, for timestamp lookups.
    times: list[tuple[int, int]] = field(default_factory=list)


class World:
    """Admin state of a fake cluster; see the module docstring."""

    def __init__(self, cluster: Cluster, brokers: dict[tuple[str, int], FakeBroker]) -> None:
        self.cluster = cluster
        self.brokers = brokers
        self.ids: dict[str, uuid.UUID] = {}
        self.configs: dict[tuple[int, str], dict[str, str]] = {}
        self.groups: dict[str, Group] = {}
        self.logs: dict[TopicPartition, Log] = {}
        self.acls: list[tuple[int, str, int, str, str, int, int]] = []
        self.security_disabled = False
        self.share_offsets: dict[str, dict[TopicPartition, int]] = {}
        #: Partitions whose preferred leader is not leading (elect_leaders has work).
        self.unbalanced: set[tuple[str, int]] = set()
        self.reassigning: dict[TopicPartition, list[int]] = {}
        self.transactions: dict[str, Txn] = {}
        self.quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = {}
        #: user -> mechanism -> (iterations, salt, salted password)
        self.scram: dict[str, dict[int, tuple[int, bytes, bytes]]] = {}
        #: (partition, producer id, epoch, commit?, coordinator epoch) written by WriteTxnMarkers.
        self.markers: list[tuple[TopicPartition, int, int, bool, int]] = []
        #: Delegation tokens by HMAC; the principal the fake takes every request for.
        self.tokens: dict[bytes, Token] = {}
        self.principal = ("User", "admin")
        #: The brokers' wall clock (ms) for token timestamps.
        self.clock_ms = 1_700_000_000_000
        #: Finalized feature levels, their epoch, and what the brokers support.
        self.features: dict[str, int] = {"metadata.version": 27, "transaction.version": 2}
        self.features_epoch = 42
        self.supported_features: dict[str, tuple[int, int]] = {
            "group.version": (0, 1),
            "metadata.version": (7, 28),
            "transaction.version": (0, 2),
        }
        #: Client-metrics subscriptions (ListConfigResources lists them).
        self.client_metrics: list[str] = []
        #: (broker, topic, partition, path) of each AlterReplicaLogDirs move asked.
        self.moved: list[tuple[int, str, int, str]] = []
        self.scripts: dict[int, deque[Scripted]] = {}
        self.seen: list[tuple[int, int, int, Any]] = []  # (node, api key, version, body)
        for broker in brokers.values():
            for api in HANDLERS:
                broker.handlers[api] = self._handler(api)

    def _handler(self, api: int) -> Callable[[FakeBroker, Any, int, dict[str, Any]], Any]:
        def handle(broker: FakeBroker, body: Any, version: int, session: dict[str, Any]) -> Any:
            self.seen.append((broker.node_id, api, version, body))
            queue = self.scripts.get(api)
            if queue:
                answer = queue.popleft()(broker, body, version)
                if answer is not None:
                    return answer
            return HANDLERS[api](self, broker, body, version)

        return handle

    def script(self, api: int, *answers: Scripted) -> None:
        """Answer the next requests of ``api`` with these (None: the default)."""
        self.scripts.setdefault(api, deque()).extend(answers)

    def requests(self, api: int) -> list[Any]:
        return [body for _, key, _, body in self.seen if key == api]

    def add_topic(
        self, name: str, partitions: int = 1, leaders: dict[int, int] | None = None
    ) -> None:
        self.cluster.topics[name] = Topic(name, partitions, leaders or {})
        self.ids.setdefault(name, uuid.UUID(int=len(self.ids) + 1))
        for p in range(partitions):
            self.logs.setdefault(TopicPartition(name, p), Log())

    def coordinator(self, group: str, node: int) -> None:
        self.cluster.coordinators[(0, group)] = node


# ------------------------------------------------------------------ topics
def _create_topics(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    results = []
    for t in body.topics:
        if t.name in w.cluster.topics:
            results.append(
                ct.CreatableTopicResult(
                    name=t.name,
                    error_code=ErrorCode.TOPIC_ALREADY_EXISTS,
                    error_message=f"Topic '{t.name}' already exists.",
                )
            )
            continue
        count = (
            len(t.assignments)
            if t.assignments
            else (t.num_partitions if t.num_partitions > 0 else 1)
        )
        rf = (
            len(t.assignments[0].broker_ids)
            if t.assignments
            else (t.replication_factor if t.replication_factor > 0 else 1)
        )
        if not body.validate_only:
            w.add_topic(t.name, count)
            w.configs[(2, t.name)] = {c.name: c.value or "" for c in t.configs}
        configs = [
            ct.CreatableTopicConfigs(name=c.name, value=c.value, config_source=1) for c in t.configs
        ]
        results.append(
            ct.CreatableTopicResult(
                name=t.name,
                topic_id=w.ids.get(t.name, uuid.UUID(int=0)),
                num_partitions=count,
                replication_factor=rf,
                configs=configs,
            )
        )
    return m.CreateTopicsResponse(topics=results)


def _delete_topics(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    by_id = {i: n for n, i in w.ids.items()}
    wanted = (
        [(s.name or by_id.get(s.topic_id), s.topic_id) for s in body.topics]
        if v >= 6
        else [(n, uuid.UUID(int=0)) for n in body.topic_names]
    )
    results = []
    for name, tid in wanted:
        if name is None or name not in w.cluster.topics:
            results.append(
                dt.DeletableTopicResult(
                    name=name, topic_id=tid, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                )
            )
            continue
        del w.cluster.topics[name]
        results.append(dt.DeletableTopicResult(name=name, topic_id=w.ids.get(name, tid)))
    return m.DeleteTopicsResponse(responses=results)


def _create_partitions(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    results = []
    for t in body.topics:
        topic = w.cluster.topics.get(t.name)
        if topic is None:
            results.append(
                cp.CreatePartitionsTopicResult(
                    name=t.name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                )
            )
        elif t.count <= topic.partitions:
            results.append(
                cp.CreatePartitionsTopicResult(
                    name=t.name,
                    error_code=ErrorCode.INVALID_PARTITIONS,
                    error_message=f"Topic already has {topic.partitions} partitions.",
                )
            )
        else:
            if not body.validate_only:
                topic.partitions = t.count
            results.append(cp.CreatePartitionsTopicResult(name=t.name))
    return m.CreatePartitionsResponse(results=results)


def _metadata(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    response = w.cluster.metadata(body)
    for t in response.topics:
        if t.name in w.ids:
            t.topic_id = w.ids[t.name]
        t.is_internal = t.name == "__consumer_offsets"
        if body.include_topic_authorized_operations:
            t.topic_authorized_operations = (1 << 3) | (1 << 8)
    return response


def _describe_cluster(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    brokers = [
        dc.DescribeClusterBroker(broker_id=n, host=h, port=p, rack="r1" if n == 0 else None)
        for n, (h, p) in sorted(w.cluster.brokers.items())
    ]
    ops = (1 << 7) | (1 << 8) if body.include_cluster_authorized_operations else -(2**31)
    return m.DescribeClusterResponse(
        cluster_id=w.cluster.cluster_id,
        controller_id=w.cluster.controller_id,
        brokers=brokers,
        cluster_authorized_operations=ops,
    )


# ------------------------------------------------------------------ configs
def _describe_configs(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    results = []
    for r in body.resources:
        if r.resource_type == 2 and r.resource_name not in w.cluster.topics:
            results.append(
                dcf.DescribeConfigsResult(
                    error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    error_message="no such topic",
                    resource_type=r.resource_type,
                    resource_name=r.resource_name,
                )
            )
            continue
        if r.resource_type == 4 and r.resource_name and int(r.resource_name) != b.node_id:
            results.append(
                dcf.DescribeConfigsResult(
                    error_code=ErrorCode.INVALID_REQUEST,
                    error_message="wrong broker",
                    resource_type=4,
                    resource_name=r.resource_name,
                )
            )
            continue
        values = w.configs.get((r.resource_type, r.resource_name), {})
        configs = [
            dcf.DescribeConfigsResourceResult(
                name=k,
                value=val,
                config_source=1,
                synonyms=[dcf.DescribeConfigsSynonym(name=k, value=val, source=1)]
                if body.include_synonyms
                else [],
                config_type=2 if v >= 3 else 0,
                documentation=f"doc of {k}" if body.include_documentation else None,
            )
            for k, val in sorted(values.items())
        ]
        results.append(
            dcf.DescribeConfigsResult(
                resource_type=r.resource_type, resource_name=r.resource_name, configs=configs
            )
        )
    return m.DescribeConfigsResponse(results=results)


def _alter_configs(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    out = []
    for r in body.resources:
        key = (r.resource_type, r.resource_name)
        if r.resource_type == 2 and r.resource_name not in w.cluster.topics:
            out.append(
                iac.AlterConfigsResourceResponse(
                    error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    resource_type=2,
                    resource_name=r.resource_name,
                )
            )
            continue
        values = dict(w.configs.get(key, {}))
        for c in r.configs:
            if c.config_operation == 0:
                values[c.name] = c.value or ""
            elif c.config_operation == 1:
                values.pop(c.name, None)
            elif c.config_operation == 2:
                values[c.name] = ",".join(x for x in (values.get(c.name, ""), c.value or "") if x)
            else:
                values[c.name] = ",".join(
                    x for x in values.get(c.name, "").split(",") if x and x != c.value
                )
        if not body.validate_only:
            w.configs[key] = values
        out.append(
            iac.AlterConfigsResourceResponse(
                resource_type=r.resource_type, resource_name=r.resource_name
            )
        )
    return m.IncrementalAlterConfigsResponse(responses=out)


# ------------------------------------------------------------------ groups
def _coordinated_here(w: World, b: FakeBroker, group: str) -> bool:
    return w.cluster.coordinators.get((0, group), min(w.cluster.brokers)) == b.node_id


def _list_groups(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    groups = []
    for g in w.groups.values():
        if not _coordinated_here(w, b, g.group_id):
            continue
        if (
            v >= 4
            and body.states_filter
            and g.state.lower() not in [s.lower() for s in body.states_filter]
        ):
            continue
        if v >= 5 and body.types_filter and g.type not in body.types_filter:
            continue
        groups.append(
            lg.ListedGroup(
                group_id=g.group_id,
                protocol_type=g.protocol_type,
                group_state=g.state,
                group_type=g.type,
            )
        )
    return m.ListGroupsResponse(groups=groups)


def _consumer_describe(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    out = []
    for gid in body.group_ids:
        g = w.groups.get(gid)
        if not _coordinated_here(w, b, gid):
            out.append(cgd.DescribedGroup(group_id=gid, error_code=ErrorCode.NOT_COORDINATOR))
        elif g is None or g.type != "consumer":
            out.append(
                cgd.DescribedGroup(
                    group_id=gid,
                    error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                    error_message=f"Group {gid} not found.",
                )
            )
        else:
            out.append(
                cgd.DescribedGroup(
                    group_id=gid,
                    group_state=g.state,
                    group_epoch=5,
                    assignment_epoch=5,
                    assignor_name="uniform",
                    members=list(g.members),
                    authorized_operations=(1 << 8)
                    if body.include_authorized_operations
                    else -(2**31),
                )
            )
    return m.ConsumerGroupDescribeResponse(groups=out)


def _describe_groups(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    out = []
    for gid in body.groups:
        g = w.groups.get(gid)
        if not _coordinated_here(w, b, gid):
            out.append(dgr.DescribedGroup(group_id=gid, error_code=ErrorCode.NOT_COORDINATOR))
        elif g is None or g.type != "classic":
            if v >= 6:
                out.append(
                    dgr.DescribedGroup(
                        group_id=gid,
                        error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                        error_message=f"Group {gid} not found.",
                    )
                )
            else:
                out.append(dgr.DescribedGroup(group_id=gid, group_state="Dead"))
        else:
            out.append(
                dgr.DescribedGroup(
                    group_id=gid,
                    group_state=g.state,
                    protocol_type=g.protocol_type,
                    protocol_data=g.protocol,
                    members=list(g.members),
                )
            )
    return m.DescribeGroupsResponse(groups=out)


def _share_describe(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    out = []
    for gid in body.group_ids:
        g = w.groups.get(gid)
        if not _coordinated_here(w, b, gid):
            out.append(sgd.DescribedGroup(group_id=gid, error_code=ErrorCode.NOT_COORDINATOR))
        elif g is None or g.type != "share":
            out.append(
                sgd.DescribedGroup(
                    group_id=gid,
                    error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                    error_message=f"Group {gid} not found.",
                )
            )
        else:
            out.append(
                sgd.DescribedGroup(
                    group_id=gid,
                    group_state=g.state,
                    group_epoch=3,
                    assignment_epoch=3,
                    assignor_name="simple",
                    members=list(g.members),
                )
            )
    return m.ShareGroupDescribeResponse(groups=out)


def _delete_groups(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    out = []
    for gid in body.groups_names:
        g = w.groups.get(gid)
        if not _coordinated_here(w, b, gid):
            out.append(dg.DeletableGroupResult(group_id=gid, error_code=ErrorCode.NOT_COORDINATOR))
        elif g is None:
            out.append(
                dg.DeletableGroupResult(group_id=gid, error_code=ErrorCode.GROUP_ID_NOT_FOUND)
            )
        elif g.members:
            out.append(dg.DeletableGroupResult(group_id=gid, error_code=ErrorCode.NON_EMPTY_GROUP))
        else:
            del w.groups[gid]
            out.append(dg.DeletableGroupResult(group_id=gid))
    return m.DeleteGroupsResponse(results=out)


# ------------------------------------------------------------------ offsets
def _offset_fetch(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    gid = body.groups[0].group_id if v >= 8 else body.group_id
    asked = body.groups[0].topics if v >= 8 else body.topics
    g = w.groups.get(gid, Group(gid))
    code = ErrorCode.NONE if _coordinated_here(w, b, gid) else ErrorCode.NOT_COORDINATOR
    if asked is None:
        wanted = sorted(g.offsets)
    else:
        wanted = [TopicPartition(t.name, p) for t in asked for p in t.partition_indexes]
    by_topic: dict[str, list[Any]] = {}
    for tp in wanted:
        offset = g.offsets.get(tp, -1)
        cls = of.OffsetFetchResponsePartitions if v >= 8 else of.OffsetFetchResponsePartition
        by_topic.setdefault(tp.topic, []).append(
            cls(
                partition_index=tp.partition,
                committed_offset=offset,
                committed_leader_epoch=2 if offset >= 0 else -1,
                metadata="m" if offset >= 0 else None,
            )
        )
    if v >= 8:
        topics = [of.OffsetFetchResponseTopics(name=t, partitions=ps) for t, ps in by_topic.items()]
        return m.OffsetFetchResponse(
            groups=[of.OffsetFetchResponseGroup(group_id=gid, topics=topics, error_code=code)]
        )
    return m.OffsetFetchResponse(
        topics=[of.OffsetFetchResponseTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
        error_code=code,
    )


def _offset_commit(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    g = w.groups.setdefault(body.group_id, Group(body.group_id, protocol_type=""))
    here = _coordinated_here(w, b, body.group_id)
    topics = []
    for t in body.topics:
        parts = []
        for p in t.partitions:
            code = ErrorCode.NONE
            if not here:
                code = ErrorCode.NOT_COORDINATOR
            elif g.members:
                code = ErrorCode.UNKNOWN_MEMBER_ID
            elif t.name not in w.cluster.topics:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                g.offsets[TopicPartition(t.name, p.partition_index)] = p.committed_offset
            parts.append(
                oc.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
            )
        topics.append(oc.OffsetCommitResponseTopic(name=t.name, partitions=parts))
    return m.OffsetCommitResponse(topics=topics)


def _offset_delete(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    if not _coordinated_here(w, b, body.group_id):
        return m.OffsetDeleteResponse(error_code=ErrorCode.NOT_COORDINATOR)
    g = w.groups.get(body.group_id)
    if g is None:
        return m.OffsetDeleteResponse(error_code=ErrorCode.GROUP_ID_NOT_FOUND)
    topics = []
    for t in body.topics:
        parts = []
        for p in t.partitions:
            tp = TopicPartition(t.name, p.partition_index)
            subscribed = g.members and g.protocol_type == "consumer" and g.state == "Stable"
            code = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if subscribed else ErrorCode.NONE
            if not code:
                g.offsets.pop(tp, None)
            parts.append(
                od.OffsetDeleteResponsePartition(partition_index=p.partition_index, error_code=code)
            )
        topics.append(od.OffsetDeleteResponseTopic(name=t.name, partitions=parts))
    return m.OffsetDeleteResponse(topics=topics)


def _describe_share_offsets(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    from kafkacore.protocol.messages import describe_share_group_offsets_response as r

    out = []
    for grp in body.groups:
        if not _coordinated_here(w, b, grp.group_id):
            out.append(
                r.DescribeShareGroupOffsetsResponseGroup(
                    group_id=grp.group_id, error_code=ErrorCode.NOT_COORDINATOR
                )
            )
            continue
        offsets = w.share_offsets.get(grp.group_id, {})
        wanted = (
            sorted(offsets)
            if grp.topics is None
            else [TopicPartition(t.topic_name, p) for t in grp.topics for p in t.partitions]
        )
        by_topic: dict[str, list[Any]] = {}
        for tp in wanted:
            start = offsets.get(tp, -1)
            by_topic.setdefault(tp.topic, []).append(
                r.DescribeShareGroupOffsetsResponsePartition(
                    partition_index=tp.partition,
                    start_offset=start,
                    leader_epoch=0 if start >= 0 else -1,
                    lag=3 if v >= 1 and start >= 0 else -1,
                )
            )
        topics = [
            r.DescribeShareGroupOffsetsResponseTopic(
                topic_name=t, topic_id=w.ids.get(t, uuid.UUID(int=0)), partitions=ps
            )
            for t, ps in by_topic.items()
        ]
        out.append(r.DescribeShareGroupOffsetsResponseGroup(group_id=grp.group_id, topics=topics))
    return m.DescribeShareGroupOffsetsResponse(groups=out)


def _alter_share_offsets(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    from kafkacore.protocol.messages import alter_share_group_offsets_response as r

    if not _coordinated_here(w, b, body.group_id):
        return m.AlterShareGroupOffsetsResponse(error_code=ErrorCode.NOT_COORDINATOR)
    g = w.groups.get(body.group_id)
    if g is not None and g.members:
        return m.AlterShareGroupOffsetsResponse(
            error_code=ErrorCode.NON_EMPTY_GROUP, error_message="group has members"
        )
    offsets = w.share_offsets.setdefault(body.group_id, {})
    topics = []
    for t in body.topics:
        parts = []
        for p in t.partitions:
            known = t.topic_name in w.cluster.topics
            if known:
                offsets[TopicPartition(t.topic_name, p.partition_index)] = p.start_offset
            parts.append(
                r.AlterShareGroupOffsetsResponsePartition(
                    partition_index=p.partition_index,
                    error_code=0 if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    error_message=None if known else "no such topic",
                )
            )
        topics.append(
            r.AlterShareGroupOffsetsResponseTopic(topic_name=t.topic_name, partitions=parts)
        )
    return m.AlterShareGroupOffsetsResponse(responses=topics)


def _delete_share_offsets(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    from kafkacore.protocol.messages import delete_share_group_offsets_response as r

    if not _coordinated_here(w, b, body.group_id):
        return m.DeleteShareGroupOffsetsResponse(error_code=ErrorCode.NOT_COORDINATOR)
    if body.group_id not in w.share_offsets:
        return m.DeleteShareGroupOffsetsResponse(
            error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message="no such group"
        )
    offsets = w.share_offsets[body.group_id]
    out = []
    for t in body.topics:
        known = any(tp.topic == t.topic_name for tp in offsets)
        for tp in [tp for tp in offsets if tp.topic == t.topic_name]:
            del offsets[tp]
        out.append(
            r.DeleteShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name,
                error_code=0 if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            )
        )
    return m.DeleteShareGroupOffsetsResponse(responses=out)


# ------------------------------------------------------------------ records
def _leads(w: World, b: FakeBroker, tp: TopicPartition) -> bool:
    topic = w.cluster.topics.get(tp.topic)
    return (
        topic is not None
        and tp.partition < topic.partitions
        and topic.leaders.get(tp.partition, min(w.cluster.brokers)) == b.node_id
    )


def _list_offsets(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    topics = []
    for t in body.topics:
        parts = []
        for p in t.partitions:
            tp = TopicPartition(t.name, p.partition_index)
            if not _leads(w, b, tp):
                parts.append(
                    lo.ListOffsetsPartitionResponse(
                        partition_index=p.partition_index,
                        error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER,
                    )
                )
                continue
            log = w.logs.setdefault(tp, Log())
            offset, ts = _lookup(log, p.timestamp)
            parts.append(
                lo.ListOffsetsPartitionResponse(
                    partition_index=p.partition_index,
                    offset=offset,
                    timestamp=ts,
                    leader_epoch=0 if v >= 4 else -1,
                )
            )
        topics.append(lo.ListOffsetsTopicResponse(name=t.name, partitions=parts))
    return m.ListOffsetsResponse(topics=topics)


def _lookup(log: Log, ts: int) -> tuple[int, int]:
    if ts == -2:
        return log.start, -1
    if ts == -1:
        return log.end, -1
    if ts == -3:
        best = max(log.times, default=None)
        return (best[1], best[0]) if best else (-1, -1)
    for stamp, offset in sorted(log.times):
        if stamp >= ts:
            return offset, stamp
    return -1, -1


def _delete_records(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    topics = []
    for t in body.topics:
        parts = []
        for p in t.partitions:
            tp = TopicPartition(t.name, p.partition_index)
            if not _leads(w, b, tp):
                parts.append(
                    dr.DeleteRecordsPartitionResult(
                        partition_index=p.partition_index,
                        low_watermark=-1,
                        error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER,
                    )
                )
                continue
            log = w.logs.setdefault(tp, Log())
            target = log.end if p.offset == -1 else p.offset
            if target > log.end:
                parts.append(
                    dr.DeleteRecordsPartitionResult(
                        partition_index=p.partition_index,
                        low_watermark=-1,
                        error_code=ErrorCode.OFFSET_OUT_OF_RANGE,
                    )
                )
                continue
            log.start = max(log.start, target)
            parts.append(
                dr.DeleteRecordsPartitionResult(
                    partition_index=p.partition_index, low_watermark=log.start
                )
            )
        topics.append(dr.DeleteRecordsTopicResult(name=t.name, partitions=parts))
    return m.DeleteRecordsResponse(topics=topics)


# ------------------------------------------------------------------ ACLs
def _matches(f: Any, acl: tuple[int, str, int, str, str, int, int]) -> bool:
    rtype, name, pattern, principal, host, op, perm = acl
    return (
        f.resource_type_filter in (1, rtype)
        and f.resource_name_filter in (None, name)
        and f.pattern_type_filter in (1, 2, pattern)
        and f.principal_filter in (None, principal)
        and f.host_filter in (None, host)
        and f.operation in (1, op)
        and f.permission_type in (1, perm)
    )


def _describe_acls(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    if w.security_disabled:
        return m.DescribeAclsResponse(
            error_code=ErrorCode.SECURITY_DISABLED, error_message="No Authorizer is configured."
        )
    found: dict[tuple[int, str, int], list[Any]] = {}
    for acl in w.acls:
        if _matches(body, acl):
            found.setdefault(acl[:3], []).append(
                descacl.AclDescription(
                    principal=acl[3], host=acl[4], operation=acl[5], permission_type=acl[6]
                )
            )
    resources = [
        descacl.DescribeAclsResource(
            resource_type=k[0], resource_name=k[1], pattern_type=k[2], acls=v2
        )
        for k, v2 in found.items()
    ]
    return m.DescribeAclsResponse(resources=resources)


def _create_acls(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    results = []
    for c in body.creations:
        if w.security_disabled:
            results.append(
                cacl.AclCreationResult(
                    error_code=ErrorCode.SECURITY_DISABLED,
                    error_message="No Authorizer is configured.",
                )
            )
            continue
        acl = (
            c.resource_type,
            c.resource_name,
            c.resource_pattern_type,
            c.principal,
            c.host,
            c.operation,
            c.permission_type,
        )
        if acl not in w.acls:
            w.acls.append(acl)
        results.append(cacl.AclCreationResult())
    return m.CreateAclsResponse(results=results)


def _delete_acls(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    results = []
    for f in body.filters:
        if w.security_disabled:
            results.append(dacl.DeleteAclsFilterResult(error_code=ErrorCode.SECURITY_DISABLED))
            continue
        gone = [a for a in w.acls if _matches(f, a)]
        w.acls = [a for a in w.acls if a not in gone]
        results.append(
            dacl.DeleteAclsFilterResult(
                matching_acls=[
                    dacl.DeleteAclsMatchingAcl(
                        resource_type=a[0],
                        resource_name=a[1],
                        pattern_type=a[2],
                        principal=a[3],
                        host=a[4],
                        operation=a[5],
                        permission_type=a[6],
                    )
                    for a in gone
                ]
            )
        )
    return m.DeleteAclsResponse(filter_results=results)


# ------------------------------------------------------------------ replicas
def _elect_leaders(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    from kafkacore.protocol.messages import elect_leaders_response as r

    asked = (
        [(t.topic, p) for t in body.topic_partitions for p in t.partitions]
        if body.topic_partitions is not None
        else [
            (n, p)
            for n, t in w.cluster.topics.items()
            for p in range(t.partitions)
            if (n, p) in w.unbalanced
        ]
    )
    by_topic: dict[str, list[Any]] = {}
    for topic, p in asked:
        known = topic in w.cluster.topics and p < w.cluster.topics[topic].partitions
        code = (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if not known
            else (0 if (topic, p) in w.unbalanced else ErrorCode.ELECTION_NOT_NEEDED)
        )
        w.unbalanced.discard((topic, p))
        by_topic.setdefault(topic, []).append(
            r.PartitionResult(
                partition_id=p, error_code=code, error_message=None if not code else "no"
            )
        )
    return m.ElectLeadersResponse(
        replica_election_results=[
            r.ReplicaElectionResult(topic=t, partition_result=ps) for t, ps in by_topic.items()
        ]
    )


def _alter_reassignments(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    from kafkacore.protocol.messages import alter_partition_reassignments_response as r

    out = []
    for t in body.topics:
        parts = []
        for p in t.partitions:
            tp = TopicPartition(t.name, p.partition_index)
            if t.name not in w.cluster.topics:
                parts.append(
                    r.ReassignablePartitionResponse(
                        partition_index=p.partition_index,
                        error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        error_message="no such topic",
                    )
                )
                continue
            if p.replicas is None:
                code = (
                    0
                    if w.reassigning.pop(tp, None) is not None
                    else ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
                )
            else:
                w.reassigning[tp], code = list(p.replicas), 0
            parts.append(
                r.ReassignablePartitionResponse(partition_index=p.partition_index, error_code=code)
            )
        out.append(r.ReassignableTopicResponse(name=t.name, partitions=parts))
    return m.AlterPartitionReassignmentsResponse(responses=out)


def _list_reassignments(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    from kafkacore.protocol.messages import list_partition_reassignments_response as r

    wanted = (
        None
        if body.topics is None
        else {TopicPartition(t.name, p) for t in body.topics for p in t.partition_indexes}
    )
    by_topic: dict[str, list[Any]] = {}
    for tp, replicas in sorted(w.reassigning.items()):
        if wanted is None or tp in wanted:
            by_topic.setdefault(tp.topic, []).append(
                r.OngoingPartitionReassignment(
                    partition_index=tp.partition,
                    replicas=[0, *replicas],
                    adding_replicas=replicas,
                    removing_replicas=[0],
                )
            )
    return m.ListPartitionReassignmentsResponse(
        topics=[r.OngoingTopicReassignment(name=t, partitions=ps) for t, ps in by_topic.items()]
    )


def _describe_log_dirs(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    from kafkacore.protocol.messages import describe_log_dirs_response as r

    topics = [
        r.DescribeLogDirsTopic(
            name=name,
            partitions=[
                r.DescribeLogDirsPartition(partition_index=p, partition_size=100 * (p + 1))
                for p in range(t.partitions)
                if t.leaders.get(p, min(w.cluster.brokers)) == b.node_id
            ],
        )
        for name, t in sorted(w.cluster.topics.items())
    ]
    good = r.DescribeLogDirsResult(
        log_dir=f"/data/{b.node_id}", topics=topics, total_bytes=1000, usable_bytes=400
    )
    bad = r.DescribeLogDirsResult(
        log_dir=f"/broken/{b.node_id}", error_code=ErrorCode.KAFKA_STORAGE_ERROR
    )
    return m.DescribeLogDirsResponse(results=[good, bad])


def _legacy_alter_configs(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    from kafkacore.protocol.messages import alter_configs_response as r

    out = []
    for res in body.resources:
        if res.resource_type == 2 and res.resource_name not in w.cluster.topics:
            out.append(
                r.AlterConfigsResourceResponse(
                    error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    resource_type=2,
                    resource_name=res.resource_name,
                )
            )
            continue
        if not body.validate_only:
            w.configs[(res.resource_type, res.resource_name)] = {
                c.name: c.value or "" for c in res.configs
            }
        out.append(
            r.AlterConfigsResourceResponse(
                resource_type=res.resource_type, resource_name=res.resource_name
            )
        )
    return m.AlterConfigsResponse(responses=out)


# ------------------------------------------------------------ transactions
@dataclass
class Txn:
    producer_id: int
    state: str = "Ongoing"
    partitions: list[TopicPartition] = field(default_factory=list)


def _txn_coordinator(w: World, tid: str) -> int:
    return w.cluster.coordinators.get((1, tid), min(w.cluster.brokers))


def _describe_producers(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    from kafkacore.protocol.messages import describe_producers_response as r

    topics = []
    for t in body.topics:
        parts = []
        for p in t.partition_indexes:
            tp = TopicPartition(t.name, p)
            if not _leads(w, b, tp):
                parts.append(
                    r.PartitionResponse(
                        partition_index=p, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER
                    )
                )
                continue
            active = [
                r.ProducerState(
                    producer_id=txn.producer_id,
                    producer_epoch=3,
                    last_sequence=9,
                    last_timestamp=1234,
                    coordinator_epoch=1,
                    current_txn_start_offset=5,
                )
                for txn in w.transactions.values()
                if tp in txn.partitions
            ]
            parts.append(r.PartitionResponse(partition_index=p, active_producers=active))
        topics.append(r.TopicResponse(name=t.name, partitions=parts))
    return m.DescribeProducersResponse(topics=topics)


def _list_transactions(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    from kafkacore.protocol.messages import list_transactions_response as r

    states = [
        r.TransactionState(
            transactional_id=tid, producer_id=txn.producer_id, transaction_state=txn.state
        )
        for tid, txn in sorted(w.transactions.items())
        if _txn_coordinator(w, tid) == b.node_id
        and (not body.state_filters or txn.state in body.state_filters)
        and (not body.producer_id_filters or txn.producer_id in body.producer_id_filters)
    ]
    return m.ListTransactionsResponse(transaction_states=states)


def _describe_transactions(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    from kafkacore.protocol.messages import describe_transactions_response as r

    out = []
    for tid in body.transactional_ids:
        txn = w.transactions.get(tid)
        if _txn_coordinator(w, tid) != b.node_id:
            out.append(
                r.TransactionState(transactional_id=tid, error_code=ErrorCode.NOT_COORDINATOR)
            )
        elif txn is None:
            out.append(
                r.TransactionState(
                    transactional_id=tid, error_code=ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
                )
            )
        else:
            by_topic: dict[str, list[int]] = {}
            for tp in txn.partitions:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            topics = [r.TopicData(topic=k, partitions=ps) for k, ps in by_topic.items()]
            out.append(
                r.TransactionState(
                    transactional_id=tid,
                    transaction_state=txn.state,
                    transaction_timeout_ms=60000,
                    transaction_start_time_ms=-1 if txn.state == "Empty" else 1000,
                    producer_id=txn.producer_id,
                    producer_epoch=3,
                    topics=topics,
                )
            )
    return m.DescribeTransactionsResponse(transaction_states=out)


def _write_txn_markers(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    from kafkacore.protocol.messages import write_txn_markers_response as r

    results = []
    for marker in body.markers:
        topics = []
        for t in marker.topics:
            parts = []
            for p in t.partition_indexes:
                tp = TopicPartition(t.name, p)
                code = 0 if _leads(w, b, tp) else ErrorCode.NOT_LEADER_OR_FOLLOWER
                if not code:
                    w.markers.append(
                        (
                            tp,
                            marker.producer_id,
                            marker.producer_epoch,
                            marker.transaction_result,
                            marker.coordinator_epoch,
                        )
                    )
                parts.append(r.WritableTxnMarkerPartitionResult(partition_index=p, error_code=code))
            topics.append(r.WritableTxnMarkerTopicResult(name=t.name, partitions=parts))
        results.append(r.WritableTxnMarkerResult(producer_id=marker.producer_id, topics=topics))
    return m.WriteTxnMarkersResponse(markers=results)


# ------------------------------------------------------------ quotas, SCRAM
def _describe_quotas(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    from kafkacore.protocol.messages import describe_client_quotas_response as r

    def matches(entity: tuple[tuple[str, str | None], ...]) -> bool:
        named = dict(entity)
        for c in body.components:
            if c.entity_type not in named:
                return False
            name = named[c.entity_type]
            if (c.match_type == 0 and name != c.match) or (c.match_type == 1 and name is not None):
                return False
            if c.match_type == 2 and name is None:
                return False
        return not body.strict or {c.entity_type for c in body.components} == set(named)

    entries = [
        r.EntryData(
            entity=[r.EntityData(entity_type=k, entity_name=n) for k, n in entity],
            values=[r.ValueData(key=k, value=x) for k, x in sorted(values.items())],
        )
        for entity, values in sorted(w.quotas.items(), key=lambda kv: str(kv[0]))
        if matches(entity)
    ]
    return m.DescribeClientQuotasResponse(entries=entries)


def _alter_quotas(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    from kafkacore.protocol.messages import alter_client_quotas_response as r

    out = []
    for e in body.entries:
        entity = tuple(sorted((d.entity_type, d.entity_name) for d in e.entity))
        bad = [d.entity_type for d in e.entity if d.entity_type not in ("user", "client-id", "ip")]
        if bad:
            out.append(
                r.EntryData(
                    error_code=ErrorCode.INVALID_REQUEST,
                    error_message=f"unknown entity type {bad[0]}",
                    entity=[r.EntityData(entity_type=k, entity_name=n) for k, n in entity],
                )
            )
            continue
        if not body.validate_only:
            values = w.quotas.setdefault(entity, {})
            for op in e.ops:
                if op.remove:
                    values.pop(op.key, None)
                else:
                    values[op.key] = op.value
        out.append(
            r.EntryData(entity=[r.EntityData(entity_type=k, entity_name=n) for k, n in entity])
        )
    return m.AlterClientQuotasResponse(entries=out)


def _describe_scram(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    from kafkacore.protocol.messages import describe_user_scram_credentials_response as r

    users = sorted(w.scram) if body.users is None else [u.name for u in body.users]
    results = []
    for user in users:
        creds = w.scram.get(user)
        if not creds:
            results.append(
                r.DescribeUserScramCredentialsResult(
                    user=user,
                    error_code=ErrorCode.RESOURCE_NOT_FOUND,
                    error_message="no credentials",
                )
            )
        else:
            results.append(
                r.DescribeUserScramCredentialsResult(
                    user=user,
                    credential_infos=[
                        r.CredentialInfo(mechanism=mech, iterations=it)
                        for mech, (it, _, _) in sorted(creds.items())
                    ],
                )
            )
    return m.DescribeUserScramCredentialsResponse(results=results)


def _alter_scram(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    from kafkacore.protocol.messages import alter_user_scram_credentials_response as r

    codes: dict[str, int] = {}
    for d in body.deletions:
        if d.mechanism not in w.scram.get(d.name, {}):
            codes[d.name] = ErrorCode.RESOURCE_NOT_FOUND
        else:
            del w.scram[d.name][d.mechanism]
            codes.setdefault(d.name, 0)
    for u in body.upsertions:
        w.scram.setdefault(u.name, {})[u.mechanism] = (
            u.iterations,
            bytes(u.salt),
            bytes(u.salted_password),
        )
        codes.setdefault(u.name, 0)
    return m.AlterUserScramCredentialsResponse(
        results=[r.AlterUserScramCredentialsResult(user=k, error_code=c) for k, c in codes.items()]
    )


# ------------------------------------------------------------------ delegation tokens
_DAY_MS = 86_400_000


def _create_token(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    from kafkacore.protocol.messages import create_delegation_token_response as r

    n = len(w.tokens) + 1
    owner = w.principal
    if v >= 3 and body.owner_principal_name is not None:
        owner = (body.owner_principal_type, body.owner_principal_name)
    life = body.max_lifetime_ms if body.max_lifetime_ms > 0 else 7 * _DAY_MS
    token = Token(
        token_id=f"token-{n}",
        hmac=bytes([n]) * 8,
        owner=owner,
        requester=w.principal,
        renewers=[(x.principal_type, x.principal_name) for x in body.renewers],
        issue=w.clock_ms,
        expiry=w.clock_ms + min(_DAY_MS, life),
        max=w.clock_ms + life,
    )
    w.tokens[token.hmac] = token
    answer = r.CreateDelegationTokenResponse(
        principal_type=owner[0],
        principal_name=owner[1],
        issue_timestamp_ms=token.issue,
        expiry_timestamp_ms=token.expiry,
        max_timestamp_ms=token.max,
        token_id=token.token_id,
        hmac=token.hmac,
    )
    if v >= 3:
        answer.token_requester_principal_type, answer.token_requester_principal_name = w.principal
    return answer


def _token_check(w: World, hmac: bytes) -> tuple[Token | None, int]:
    token = w.tokens.get(bytes(hmac))
    if token is None:
        return None, ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    if w.principal != token.owner and w.principal not in token.renewers:
        return None, ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    if token.expiry < w.clock_ms:
        return None, ErrorCode.DELEGATION_TOKEN_EXPIRED
    return token, 0


def _renew_token(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    token, code = _token_check(w, body.hmac)
    if token is None:
        return m.RenewDelegationTokenResponse(error_code=code)
    period = body.renew_period_ms if body.renew_period_ms >= 0 else _DAY_MS
    token.expiry = min(w.clock_ms + period, token.max)
    return m.RenewDelegationTokenResponse(expiry_timestamp_ms=token.expiry)


def _expire_token(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    token, code = _token_check(w, body.hmac)
    if token is None:
        return m.ExpireDelegationTokenResponse(error_code=code)
    if body.expiry_time_period_ms < 0:
        del w.tokens[token.hmac]
        return m.ExpireDelegationTokenResponse(expiry_timestamp_ms=w.clock_ms)
    token.expiry = min(w.clock_ms + body.expiry_time_period_ms, token.max)
    return m.ExpireDelegationTokenResponse(expiry_timestamp_ms=token.expiry)


def _describe_tokens(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    from kafkacore.protocol.messages import describe_delegation_token_response as r

    owners = (
        None if body.owners is None else {(o.principal_type, o.principal_name) for o in body.owners}
    )
    tokens = []
    for t in w.tokens.values():
        if owners is not None and t.owner not in owners:
            continue
        d = r.DescribedDelegationToken(
            principal_type=t.owner[0],
            principal_name=t.owner[1],
            issue_timestamp=t.issue,
            expiry_timestamp=t.expiry,
            max_timestamp=t.max,
            token_id=t.token_id,
            hmac=t.hmac,
            renewers=[
                r.DescribedDelegationTokenRenewer(principal_type=k, principal_name=n)
                for k, n in t.renewers
            ],
        )
        if v >= 3:
            d.token_requester_principal_type, d.token_requester_principal_name = t.requester
        tokens.append(d)
    return m.DescribeDelegationTokenResponse(tokens=tokens)


# ------------------------------------------------------------------ features
def _api_versions_with_features(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    from kafkacore.protocol.messages import api_versions_response as r
    from tests.client.fakebroker import DEFAULT_HANDLERS

    answer = DEFAULT_HANDLERS[ApiKey.API_VERSIONS](b, body, v, {})
    if v >= 3:  # KIP-584's fields
        answer.supported_features = [
            r.SupportedFeatureKey(name=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in w.supported_features.items()
        ]
        answer.finalized_features = [
            r.FinalizedFeatureKey(name=k, min_version_level=1, max_version_level=level)
            for k, level in w.features.items()
        ]
        answer.finalized_features_epoch = w.features_epoch
    return answer


def _feature_refusal(w: World, update: Any, allow_downgrade: bool) -> str | None:
    supported = w.supported_features.get(update.feature)
    level = update.max_version_level
    if supported is None:
        return f"{update.feature} is not a feature this cluster knows"
    if level != 0 and not supported[0] <= level <= supported[1]:
        return f"level {level} of {update.feature} is outside {supported[0]}..{supported[1]}"
    if level < w.features.get(update.feature, 0) and not allow_downgrade:
        return f"{update.feature} {level} is a downgrade; ask for one"
    return None


def _update_features(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    from kafkacore.protocol.messages import update_features_response as r

    results = []
    changes = {}
    for u in body.feature_updates:
        downgrade = u.allow_downgrade if v == 0 else u.upgrade_type != 1
        refusal = _feature_refusal(w, u, downgrade)
        code = ErrorCode.INVALID_UPDATE_VERSION if refusal else 0
        results.append(
            r.UpdatableFeatureResult(feature=u.feature, error_code=code, error_message=refusal)
        )
        if not refusal:
            changes[u.feature] = u.max_version_level
    failed = [x for x in results if x.error_code]
    if v >= 2:
        if failed:
            return m.UpdateFeaturesResponse(
                error_code=failed[0].error_code, error_message=failed[0].error_message
            )
        results = []
    if not (v >= 1 and body.validate_only) and not (v >= 2 and failed):
        for name, level in changes.items():
            if level == 0:
                w.features.pop(name, None)
            else:
                w.features[name] = level
        w.features_epoch += 1
    return m.UpdateFeaturesResponse(results=results, error_message=None)


# ------------------------------------------------- the quorum, paged topics, ...
def _describe_quorum(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    """The lowest broker leads the metadata log and is its only voter."""
    from kafkacore.protocol.messages import describe_quorum_response as r

    leader = min(w.cluster.brokers)

    def replica(node: int) -> Any:
        return r.ReplicaState(
            replica_id=node,
            replica_directory_id=uuid.UUID(int=node + 100 if v >= 2 else 0),
            log_end_offset=500 if node == leader else 480,
            last_fetch_timestamp=-1 if node == leader else w.clock_ms,
            last_caught_up_timestamp=w.clock_ms,
        )

    topics = [
        r.TopicData(
            topic_name=t.topic_name,
            partitions=[
                r.PartitionData(
                    partition_index=p.partition_index,
                    leader_id=leader,
                    leader_epoch=7,
                    high_watermark=500,
                    current_voters=[replica(leader)],
                    observers=[replica(n) for n in sorted(w.cluster.brokers) if n != leader],
                )
                for p in t.partitions
            ],
        )
        for t in body.topics
    ]
    nodes = [  # KIP-853: v2 names the controllers' endpoints
        r.Node(node_id=leader, listeners=[r.Listener(name="CONTROLLER", host="ctl", port=9093)])
    ]
    return m.DescribeQuorumResponse(topics=topics, nodes=nodes if v >= 2 else [])


def _describe_topic_partitions(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    """Pages of at most ``response_partition_limit`` partitions, in the order asked."""
    from kafkacore.protocol.messages import describe_topic_partitions_response as r

    left = body.response_partition_limit
    cursor = body.cursor
    started = cursor is None
    out: list[Any] = []
    next_cursor = None
    for asked in body.topics:
        if not started and asked.name != cursor.topic_name:
            continue
        first = 0 if started else cursor.partition_index
        started = True
        t = w.cluster.topics.get(asked.name)
        if t is None:
            out.append(r.DescribeTopicPartitionsResponseTopic(error_code=3, name=asked.name))
            continue
        parts = []
        for p in range(first, t.partitions):
            if left == 0:
                next_cursor = r.Cursor(topic_name=t.name, partition_index=p)
                break
            left -= 1
            leader = t.leaders.get(p, min(w.cluster.brokers))
            parts.append(
                r.DescribeTopicPartitionsResponsePartition(
                    partition_index=p,
                    leader_id=leader,
                    leader_epoch=t.epoch,
                    replica_nodes=[leader],
                    isr_nodes=[leader],
                    eligible_leader_replicas=[leader] if p == 0 else None,
                )
            )
        out.append(
            r.DescribeTopicPartitionsResponseTopic(
                name=t.name, topic_id=w.ids[t.name], partitions=parts
            )
        )
        if next_cursor is not None:
            break
    return m.DescribeTopicPartitionsResponse(topics=out, next_cursor=next_cursor)


def _list_config_resources(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    """Topics, brokers and client-metrics subscriptions; v0 lists the last alone."""
    from kafkacore.protocol.messages import list_config_resources_response as r

    known = [(2, name) for name in sorted(w.cluster.topics)]
    known += [(4, str(node)) for node in sorted(w.cluster.brokers)]
    known += [(16, name) for name in w.client_metrics]
    types = set(body.resource_types) if v >= 1 and body.resource_types else None
    if v == 0:
        types = {16}
    return m.ListConfigResourcesResponse(
        config_resources=[
            r.ConfigResource(resource_type=t, resource_name=n)
            for t, n in known
            if types is None or t in types
        ]
    )


def _alter_replica_log_dirs(w: World, b: FakeBroker, body: Any, v: int) -> Any:
    """A broker's only log dir is /data/<id>; another path is LOG_DIR_NOT_FOUND."""
    from kafkacore.protocol.messages import alter_replica_log_dirs_response as r

    results: dict[str, list[Any]] = {}
    for d in body.dirs:
        code = 0 if d.path == f"/data/{b.node_id}" else ErrorCode.LOG_DIR_NOT_FOUND
        for t in d.topics:
            for p in t.partitions:
                here = t.name in w.cluster.topics and p < w.cluster.topics[t.name].partitions
                results.setdefault(t.name, []).append(
                    r.AlterReplicaLogDirPartitionResult(
                        partition_index=p,
                        error_code=code if here else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    )
                )
                w.moved.append((b.node_id, t.name, p, d.path))
    return m.AlterReplicaLogDirsResponse(
        results=[
            r.AlterReplicaLogDirTopicResult(topic_name=n, partitions=ps)
            for n, ps in results.items()
        ]
    )


HANDLERS: dict[int, Callable[[World, FakeBroker, Any, int], Any]] = {
    ApiKey.API_VERSIONS: _api_versions_with_features,
    ApiKey.DESCRIBE_QUORUM: _describe_quorum,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: _describe_topic_partitions,
    ApiKey.LIST_CONFIG_RESOURCES: _list_config_resources,
    ApiKey.ALTER_REPLICA_LOG_DIRS: _alter_replica_log_dirs,
    ApiKey.CREATE_DELEGATION_TOKEN: _create_token,
    ApiKey.RENEW_DELEGATION_TOKEN: _renew_token,
    ApiKey.EXPIRE_DELEGATION_TOKEN: _expire_token,
    ApiKey.DESCRIBE_DELEGATION_TOKEN: _describe_tokens,
    ApiKey.UPDATE_FEATURES: _update_features,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: _describe_quotas,
    ApiKey.ALTER_CLIENT_QUOTAS: _alter_quotas,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _describe_scram,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _alter_scram,
    ApiKey.DESCRIBE_PRODUCERS: _describe_producers,
    ApiKey.LIST_TRANSACTIONS: _list_transactions,
    ApiKey.DESCRIBE_TRANSACTIONS: _describe_transactions,
    ApiKey.WRITE_TXN_MARKERS: _write_txn_markers,
    ApiKey.ELECT_LEADERS: _elect_leaders,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _alter_reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _list_reassignments,
    ApiKey.DESCRIBE_LOG_DIRS: _describe_log_dirs,
    ApiKey.ALTER_CONFIGS: _legacy_alter_configs,
    ApiKey.METADATA: _metadata,
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.CREATE_PARTITIONS: _create_partitions,
    ApiKey.DESCRIBE_CLUSTER: _describe_cluster,
    ApiKey.DESCRIBE_CONFIGS: _describe_configs,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _alter_configs,
    ApiKey.LIST_GROUPS: _list_groups,
    ApiKey.CONSUMER_GROUP_DESCRIBE: _consumer_describe,
    ApiKey.DESCRIBE_GROUPS: _describe_groups,
    ApiKey.SHARE_GROUP_DESCRIBE: _share_describe,
    ApiKey.DELETE_GROUPS: _delete_groups,
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.OFFSET_COMMIT: _offset_commit,
    ApiKey.OFFSET_DELETE: _offset_delete,
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: _describe_share_offsets,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: _alter_share_offsets,
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: _delete_share_offsets,
    ApiKey.LIST_OFFSETS: _list_offsets,
    ApiKey.DELETE_RECORDS: _delete_records,
    ApiKey.DESCRIBE_ACLS: _describe_acls,
    ApiKey.CREATE_ACLS: _create_acls,
    ApiKey.DELETE_ACLS: _delete_acls,
}


# ------------------------------------------------------------------ harness
class Harness:
    """An AdminCore booted against a World, with the pump that drives it."""

    def __init__(
        self,
        n: int = 1,
        *,
        seed: int = 0,
        api_timeout_ms: int = 60000,
        versions: dict[int, tuple[int, int] | None] | None = None,
        **client: Any,
    ) -> None:
        cluster, fakes = make_cluster(n)
        for api, span in (versions or {}).items():  # what the brokers offer (None: not at all)
            if span is None:
                del cluster.api_ranges[api]
            else:
                cluster.api_ranges[api] = span
        self.world = World(cluster, fakes)
        client.setdefault("bootstrap_servers", "127.0.0.1:9092")
        self.core = AdminCore(
            AdminConfig(default_api_timeout_ms=api_timeout_ms),
            now=0.0,
            rng=random.Random(seed),
            client_config=ClientConfig(**client),
        )
        self.pump = Pump(self.core, fakes)  # type: ignore[arg-type]  # the pump only uses Driven methods
        self.pump.run(until=lambda: self.core.client.cluster.update_count > 0)

    @property
    def now(self) -> float:
        return self.pump.now

    def run(self, op: Operation[Any], rounds: int = 2000) -> Operation[Any]:
        self.pump.run(until=lambda: op.done, rounds=rounds)
        return op

    def result(self, op: Operation[Any]) -> Any:
        return self.run(op).result()

    def completions(self, op: Operation[Any]) -> int:
        """How many OperationCompleted events named ``op``."""
        from kafkacore.operation import OperationCompleted

        return sum(
            1 for e in self.pump.events if isinstance(e, OperationCompleted) and e.handle is op
        )

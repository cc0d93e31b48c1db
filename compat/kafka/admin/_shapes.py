"""kafkacore's typed admin results in kafka-python 3's shapes.

kafka-python answers most admin calls with its protocol responses turned into
dicts (``response.to_dict()``: the schema's field names in snake case, topic
ids as strings, authorized operations as bit positions) or with the response
objects themselves (``create_partitions``, ``elect_leaders``: fields by name
and by position). These functions build the same shapes from kafkacore's
results. A field kafkacore's results do not carry (throttle times, a member's
``user_data``) is left out rather than made up; ``docs/compat.md`` lists them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from kafkacore.admin import (
    AclOperation,
    ClusterDescription,
    ConfigEntry,
    ConsumerGroupDescription,
    GroupListing,
    LogDirDescription,
    QuorumInfo,
    QuorumReplica,
    TopicDescription,
    TopicPartitionInfo,
    TopicPartitionsPage,
)
from kafkacore.client import TopicPartition
from kafkacore.errors import BrokerError
from kafkacore.protocol.enums import ErrorCode
from kafkacore.transports._admin_acls import NoError

from ._types import ConfigFilterType, ConfigSourceType

__all__ = [
    "CreatePartitionsResponse",
    "CreatePartitionsTopicResult",
    "ElectLeadersResponse",
    "ErrorClass",
    "PartitionResult",
    "ReplicaElectionResult",
    "by_topic",
    "cluster_dict",
    "code_of",
    "config_dict",
    "error_class",
    "group_dict",
    "keep_config",
    "listing_dict",
    "log_dirs_dict",
    "message_of",
    "page_dict",
    "quorum_dict",
    "topic_dict",
]

#: The metadata log DescribeQuorum reports on (KIP-595).
_METADATA_TOPIC = "__cluster_metadata"
#: The operations kafka-python leaves out of a description's named list.
_NOT_OPERATIONS = frozenset({AclOperation.UNKNOWN, AclOperation.ANY, AclOperation.ALL})


def code_of(error: BaseException | None) -> int:
    """The error code of an item's error (0: none; -1: not a broker error)."""
    if error is None:
        return 0
    return error.code if isinstance(error, BrokerError) else -1


#: kafka-python's per-item outcome: the error's class, ``NoError`` for success.
ErrorClass = type[BaseException] | type[NoError]


def error_class(error: BaseException | None) -> ErrorClass:
    return NoError if error is None else type(error)


def message_of(error: BaseException | None) -> str | None:
    if error is None:
        return None
    return error.message if isinstance(error, BrokerError) else str(error)


def _bits(ops: frozenset[AclOperation] | None) -> list[int] | None:
    """Authorized operations as kafka-python's protocol dicts give them: bit positions."""
    return None if ops is None else sorted(int(op) for op in ops)


def _op_names(ops: frozenset[AclOperation] | None) -> list[str] | None:
    if ops is None:
        return None
    return sorted(op.name for op in ops if op not in _NOT_OPERATIONS)


def _id(value: uuid.UUID | None) -> str:
    return str(value if value is not None else uuid.UUID(int=0))


# -- configs ------------------------------------------------------------------------------
def config_dict(entry: ConfigEntry) -> dict[str, Any]:
    """One config as kafka-python's ``describe_configs`` reports it (its name is the key)."""
    return {
        "value": entry.value,
        "read_only": entry.is_read_only,
        "config_source": ConfigSourceType(int(entry.source)).name,
        "is_sensitive": entry.is_sensitive,
        "synonyms": [
            {"name": s.name, "value": s.value, "source": ConfigSourceType(int(s.source)).name}
            for s in entry.synonyms
        ],
        "config_type": entry.type.name,
        "documentation": entry.documentation,
    }


def keep_config(entry: ConfigEntry, kind: ConfigFilterType) -> bool:
    """Whether kafka-python's ``config_filter`` keeps ``entry``."""
    source = ConfigSourceType(int(entry.source))
    if kind is ConfigFilterType.DYNAMIC:
        return not entry.is_read_only
    if kind is ConfigFilterType.MODIFIED:
        return source.is_modified()
    if kind is ConfigFilterType.DEFAULT:
        return not source.is_modified()
    if kind is ConfigFilterType.STATIC:
        return source is ConfigSourceType.STATIC_BROKER_CONFIG
    return True


# -- topics and the cluster ----------------------------------------------------------------
def _partition_dict(p: TopicPartitionInfo, *, paged: bool) -> dict[str, Any]:
    # kafkacore reads a partition's leader, not its code: a partition without a
    # leader is what the broker reports as LEADER_NOT_AVAILABLE.
    out: dict[str, Any] = {
        "error_code": 0 if p.leader is not None else int(ErrorCode.LEADER_NOT_AVAILABLE),
        "partition_index": p.partition,
        "leader_id": -1 if p.leader is None else p.leader,
        "leader_epoch": -1 if p.leader_epoch is None else p.leader_epoch,
        "replica_nodes": list(p.replicas),
        "isr_nodes": list(p.isr),
    }
    if paged:
        elr, last = p.eligible_leader_replicas, p.last_known_elr
        out["eligible_leader_replicas"] = list(elr) if elr else None
        out["last_known_elr"] = list(last) if last else None
    out["offline_replicas"] = list(p.offline_replicas)
    return out


def topic_dict(
    name: str, desc: TopicDescription | None, error: BaseException | None, *, paged: bool = False
) -> dict[str, Any]:
    """A topic of ``describe_topics`` (Metadata) or ``describe_topic_partitions``."""
    return {
        "error_code": code_of(error),
        "name": name,
        "topic_id": _id(None if desc is None else desc.topic_id),
        "is_internal": False if desc is None else desc.is_internal,
        "partitions": (
            [] if desc is None else [_partition_dict(p, paged=paged) for p in desc.partitions]
        ),
        "topic_authorized_operations": None if desc is None else _bits(desc.authorized_operations),
    }


def page_dict(page: TopicPartitionsPage) -> dict[str, Any]:
    cursor = page.next_cursor
    return {
        "topics": [
            topic_dict(name, item.value, item.error, paged=True)
            for name, item in page.topics.items()
        ],
        "next_cursor": (
            None
            if cursor is None
            else {"topic_name": cursor.topic, "partition_index": cursor.partition}
        ),
    }


def cluster_dict(cluster: ClusterDescription) -> dict[str, Any]:
    return {
        "cluster_id": cluster.cluster_id,
        "controller_id": -1 if cluster.controller_id is None else cluster.controller_id,
        "brokers": [
            {
                "broker_id": b.node_id,
                "host": b.host,
                "port": b.port,
                "rack": b.rack,
                "is_fenced": b.is_fenced,
            }
            for b in cluster.brokers
        ],
        "cluster_authorized_operations": _bits(cluster.authorized_operations),
    }


def _asked(tp: TopicPartition, wanted: Mapping[str, set[int] | None] | None) -> bool:
    if wanted is None:
        return True
    if tp.topic not in wanted:
        return False
    parts = wanted[tp.topic]
    return not parts or tp.partition in parts


def log_dirs_dict(
    broker: int, dirs: Mapping[str, LogDirDescription], wanted: Mapping[str, set[int] | None] | None
) -> dict[str, Any]:
    """One broker's ``describe_log_dirs`` entry; ``wanted``: the topics (and
    partitions, None: all) asked about, None: every one."""
    out = []
    for d in dirs.values():
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp, replica in sorted(d.replicas.items()):
            if not _asked(tp, wanted):
                continue
            topics.setdefault(tp.topic, []).append(
                {
                    "partition_index": tp.partition,
                    "partition_size": replica.size,
                    "offset_lag": replica.offset_lag,
                    "is_future_key": replica.is_future,
                }
            )
        out.append(
            {
                "error_code": code_of(d.error),
                "log_dir": d.path,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
                "total_bytes": -1 if d.total_bytes is None else d.total_bytes,
                "usable_bytes": -1 if d.usable_bytes is None else d.usable_bytes,
            }
        )
    return {"broker": broker, "log_dirs": out}


def _replica_dict(r: QuorumReplica) -> dict[str, Any]:
    return {
        "replica_id": r.replica_id,
        "replica_directory_id": _id(r.directory_id),
        "log_end_offset": r.log_end_offset,
        "last_fetch_timestamp": -1 if r.last_fetch_timestamp is None else r.last_fetch_timestamp,
        "last_caught_up_timestamp": (
            -1 if r.last_caught_up_timestamp is None else r.last_caught_up_timestamp
        ),
    }


def quorum_dict(q: QuorumInfo) -> dict[str, Any]:
    """``describe_metadata_quorum``: DescribeQuorum's shape, errors folded into ``error``."""
    return {
        "topics": [
            {
                "topic_name": _METADATA_TOPIC,
                "partitions": [
                    {
                        "partition_index": 0,
                        "leader_id": q.leader_id,
                        "leader_epoch": q.leader_epoch,
                        "high_watermark": q.high_watermark,
                        "current_voters": [_replica_dict(r) for r in q.voters],
                        "observers": [_replica_dict(r) for r in q.observers],
                        "error": None,
                    }
                ],
            }
        ],
        "nodes": [
            {
                "node_id": node,
                "listeners": [{"name": e.listener, "host": e.host, "port": e.port} for e in ends],
            }
            for node, ends in q.nodes.items()
        ],
    }


# -- groups --------------------------------------------------------------------------------
def by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    """``{topic: [partition ids]}``, sorted: an assignment as the embedded protocol has it."""
    out: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        out.setdefault(tp.topic, []).append(tp.partition)
    return out


def group_dict(
    group_id: str, desc: ConsumerGroupDescription | None, error: BaseException | None
) -> dict[str, Any]:
    """One group of ``describe_groups`` (DescribeGroups' shape with the members'
    subscription and assignment decoded); a failed group has its ``error``."""
    if desc is None:
        # What a broker answers for a group it does not have (KIP-1043's Dead group).
        return {
            "group_id": group_id,
            "group_state": "Dead",
            "protocol_type": "",
            "protocol_data": "",
            "members": [],
            "authorized_operations": None,
            "error": str(error),
        }
    members = []
    for mb in desc.members:
        members.append(
            {
                "member_id": mb.member_id,
                "group_instance_id": mb.group_instance_id,
                "client_id": mb.client_id,
                "client_host": mb.host,
                "member_metadata": (
                    None if mb.subscribed_topics is None else {"topics": list(mb.subscribed_topics)}
                ),
                "member_assignment": {
                    "assigned_partitions": [
                        {"topic": t, "partitions": ps} for t, ps in by_topic(mb.assignment).items()
                    ]
                },
            }
        )
    return {
        "group_id": desc.group_id,
        "group_state": desc.state.value,
        "protocol_type": "" if desc.is_simple_consumer_group else "consumer",
        "protocol_data": desc.partition_assignor,
        "members": members,
        "authorized_operations": _op_names(desc.authorized_operations),
        "error": None,
    }


def listing_dict(g: GroupListing) -> dict[str, Any]:
    """One group of ``list_groups`` (ListGroups v5's fields)."""
    return {
        "group_id": g.group_id,
        "protocol_type": g.protocol_type,
        "group_state": None if g.state is None else g.state.value,
        "group_type": None if g.type is None else g.type.value,
    }


# -- the response objects kafka-python returns as they are ---------------------------------
class CreatePartitionsTopicResult(NamedTuple):
    name: str
    error_code: int
    error_message: str | None


class CreatePartitionsResponse(NamedTuple):
    """``create_partitions``'s answer: ``results`` (name, error_code, error_message)."""

    results: list[CreatePartitionsTopicResult]

    def to_dict(self) -> dict[str, Any]:
        return {"results": [r._asdict() for r in self.results]}


class PartitionResult(NamedTuple):
    partition_id: int
    error_code: int
    error_message: str | None


class ReplicaElectionResult(NamedTuple):
    topic: str
    partition_result: list[PartitionResult]


class ElectLeadersResponse(NamedTuple):
    """``elect_leaders``'s answer: a top-level ``error_code`` and each topic's
    partition results (partition_id, error_code, error_message)."""

    error_code: int
    replica_election_results: list[ReplicaElectionResult]

    def to_dict(self) -> dict[str, Any]:
        return {
            "error_code": self.error_code,
            "replica_election_results": [
                {"topic": r.topic, "partition_result": [p._asdict() for p in r.partition_result]}
                for r in self.replica_election_results
            ],
        }

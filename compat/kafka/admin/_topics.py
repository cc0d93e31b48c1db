"""kafka-python 3's topic and partition calls, over kafkacore's typed ones."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from kafkacore.admin import NewPartitions as CoreNewPartitions
from kafkacore.admin import NewTopic as CoreNewTopic
from kafkacore.admin import OffsetAndTimestamp, TopicPartitionsCursor
from kafkacore.client import TopicPartition
from kafkacore.errors import KafkaTimeoutError
from kafkacore.protocol.error_codes import ElectionNotNeededError, UnknownTopicOrPartitionError

from ._base import AdminBase, PartitionErrors, raise_first, seconds
from ._shapes import (
    CreatePartitionsResponse,
    CreatePartitionsTopicResult,
    ElectLeadersResponse,
    PartitionResult,
    ReplicaElectionResult,
    code_of,
    config_dict,
    message_of,
    page_dict,
    topic_dict,
)
from ._types import IsolationLevel, NewPartitions, NewTopic, core_offset_spec, member

__all__ = ["TopicCalls"]


class TopicCalls(AdminBase):
    """Topics, partitions, records and leaders, in kafka-python 3's shapes."""

    # -- topics -------------------------------------------------------------------------
    def list_topics(self) -> list[str]:
        """Every topic's name, internal ones included."""
        return self._admin.list_topics(include_internal=True)

    def describe_topics(self, topics: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """A dict per topic (Metadata's fields, partitions included); None: every topic.
        A topic that does not exist has its ``error_code``."""
        names = list(topics) if topics is not None else self.list_topics()
        if not names:
            return []
        found = self._admin.describe_topics(names, include_authorized_operations=True)
        return [topic_dict(name, item.value, item.error) for name, item in found.items()]

    def create_topics(
        self,
        new_topics: Any,
        timeout_ms: int | None = None,
        validate_only: bool = False,
        raise_errors: bool = True,
        wait_for_metadata: bool = False,
    ) -> dict[str, Any]:
        """Create topics given as names, ``{name: {num_partitions:, replication_factor:,
        assignments:, configs:}}`` or ``NewTopic`` objects; ``{'topics': [...]}``."""
        if validate_only and wait_for_metadata:
            raise ValueError("validate_only and wait_for_metadata are mutually exclusive")
        topics = _new_topics(new_topics)
        created = self._admin.create_topics(
            topics, validate_only=validate_only, timeout=seconds(timeout_ms, "create_topics")
        )
        if raise_errors:
            raise_first(created)
        if wait_for_metadata:
            self.wait_for_topics([t.name for t in topics])
        out = []
        for name, item in created.items():
            entry: dict[str, Any] = {
                "name": name,
                "topic_id": None if item.value is None else _str_id(item.value.topic_id),
                "error_code": code_of(item.error),
                "error_message": message_of(item.error),
            }
            made = item.value
            if made is not None:
                entry["num_partitions"] = made.num_partitions
                entry["replication_factor"] = made.replication_factor
                if made.configs:
                    entry["configs"] = {k: _topic_config(v) for k, v in made.configs.items()}
            out.append(entry)
        return {"topics": out}

    def wait_for_topics(self, topic_names: Iterable[str], timeout_ms: int = 10000) -> None:
        """Block until each topic is in the metadata with a leader for every partition."""
        names = list(topic_names)
        deadline = time.monotonic() + timeout_ms / 1000
        while names:
            pending = {}
            for t in self.describe_topics(names):
                if t["error_code"] or not t["partitions"]:
                    pending[t["name"]] = "not ready"
                elif any(p["leader_id"] < 0 for p in t["partitions"]):
                    pending[t["name"]] = "no leader"
            if not pending:
                return
            if time.monotonic() >= deadline:
                raise KafkaTimeoutError(f"Topics not ready after {timeout_ms}ms: {pending}")
            time.sleep(0.1)

    def delete_topics(
        self,
        topics: Iterable[str | uuid.UUID],
        timeout_ms: int | None = None,
        raise_errors: bool = True,
    ) -> dict[str, Any]:
        """Delete topics by name or id; ``{'topics': [{name, topic_id, error_code, ...}]}``."""
        deleted = self._admin.delete_topics(
            list(topics), timeout=seconds(timeout_ms, "delete_topics")
        )
        if raise_errors:
            raise_first(deleted)
        return {
            "topics": [
                {
                    "name": key if isinstance(key, str) else None,
                    "topic_id": str(key) if isinstance(key, uuid.UUID) else None,
                    "error_code": code_of(item.error),
                    "error_message": message_of(item.error),
                }
                for key, item in deleted.items()
            ]
        }

    # -- partitions ----------------------------------------------------------------------
    def create_partitions(
        self,
        topic_partitions: Mapping[str, Any],
        timeout_ms: int | None = None,
        validate_only: bool = False,
        raise_errors: bool = True,
    ) -> CreatePartitionsResponse:
        """Grow topics to ``{topic: count}`` (or ``{count:, assignments:}``, or a
        ``NewPartitions``); the response's ``results`` are (name, error_code, message)."""
        wanted = {topic: _new_partitions(topic, spec) for topic, spec in topic_partitions.items()}
        grown = self._admin.create_partitions(
            wanted, validate_only=validate_only, timeout=seconds(timeout_ms, "create_partitions")
        )
        if raise_errors:
            raise_first(grown)
        return CreatePartitionsResponse(
            [
                CreatePartitionsTopicResult(topic, code_of(item.error), message_of(item.error))
                for topic, item in grown.items()
            ]
        )

    def delete_records(
        self,
        records_to_delete: Mapping[TopicPartition, int],
        timeout_ms: int | None = None,
        partition_leader_id: int | None = None,
    ) -> dict[TopicPartition, dict[str, int]]:
        """Delete the records before ``{tp: offset}`` (-1: all); ``{tp: {low_watermark,
        error_code, partition_index}}``. An unknown partition raises before anything
        is deleted; one partition's error raises that error, several raise
        ``BrokerResponseError``. ``partition_leader_id`` is not needed: kafkacore
        sends each partition to its leader."""
        unknown = self._unknown_partitions(records_to_delete)
        if unknown:
            listed = ", ".join(f"{tp.topic}-{tp.partition}" for tp in unknown)
            raise UnknownTopicOrPartitionError(f"The following partitions are not known: {listed}")
        deleted = self._admin.delete_records(
            dict(records_to_delete), timeout=seconds(timeout_ms, "delete_records")
        )
        errors = deleted.errors
        if len(errors) == 1:
            raise next(iter(errors.values()))
        if errors:
            raise PartitionErrors("errors deleting records", errors)
        return {
            tp: {
                "low_watermark": item.result().low_watermark,
                "error_code": 0,
                "partition_index": tp.partition,
            }
            for tp, item in deleted.items()
        }

    def elect_leaders(
        self,
        election_type: int,
        topic_partitions: Mapping[str, Iterable[int]] | Iterable[str] | None = None,
        timeout_ms: int | None = None,
        raise_errors: bool = True,
    ) -> ElectLeadersResponse:
        """Elect preferred (0) or unclean (1) leaders of ``{topic: [ids]}``, of every
        partition of a list of topics, or of every partition (None). The response
        lists each partition's (partition_id, error_code, error_message);
        ``ElectionNotNeededError`` is never raised, as in kafka-python."""
        if topic_partitions is not None and not isinstance(topic_partitions, Mapping):
            topic_partitions = self._partitions_of(topic_partitions)
        elected = self._admin.perform_leader_election(
            election_type, topic_partitions, timeout=seconds(timeout_ms, "elect_leaders")
        )
        if raise_errors:
            raise_first(elected, ignore=(ElectionNotNeededError,))
        by_topic: dict[str, list[PartitionResult]] = {}
        for tp, item in elected.items():
            by_topic.setdefault(tp.topic, []).append(
                PartitionResult(tp.partition, code_of(item.error), message_of(item.error))
            )
        return ElectLeadersResponse(
            0, [ReplicaElectionResult(topic, parts) for topic, parts in by_topic.items()]
        )

    def alter_partition_reassignments(
        self,
        reassignments: Mapping[TopicPartition, Iterable[int] | None],
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, type[BaseException] | None]:
        """Move partitions to ``{tp: [brokers]}`` (None cancels); each partition's
        error class, or None when accepted."""
        wanted = {tp: None if r is None else list(r) for tp, r in reassignments.items()}
        for tp, replicas in wanted.items():
            if replicas is not None and not replicas:
                raise ValueError(
                    f"Replica list for {tp} must be non-empty; use None to cancel a reassignment."
                )
        moved = self._admin.alter_partition_reassignments(
            wanted, timeout=seconds(timeout_ms, "alter_partition_reassignments")
        )
        return {tp: None if item.error is None else type(item.error) for tp, item in moved.items()}

    def list_partition_reassignments(
        self,
        topic_partitions: Mapping[str, Iterable[int]] | Iterable[TopicPartition] | None = None,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, dict[str, list[int]]]:
        """Reassignments in progress (of ``{topic: [ids]}``, of partitions, or all)."""
        partitions = None
        if isinstance(topic_partitions, Mapping):
            partitions = [TopicPartition(t, p) for t, ids in topic_partitions.items() for p in ids]
        elif topic_partitions is not None:
            partitions = [TopicPartition(*tp) for tp in topic_partitions]
        listed = self._admin.list_partition_reassignments(
            partitions, timeout=seconds(timeout_ms, "list_partition_reassignments")
        )
        return {
            tp: {
                "replicas": list(r.replicas),
                "adding_replicas": list(r.adding_replicas),
                "removing_replicas": list(r.removing_replicas),
            }
            for tp, r in listed.items()
        }

    def describe_topic_partitions(
        self,
        topics: Iterable[str],
        response_partition_limit: int = 2000,
        cursor: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """One page of DescribeTopicPartitions (KIP-966): ``{'topics': [...],
        'next_cursor': None or {topic_name, partition_index}}``."""
        start = (
            None
            if cursor is None
            else TopicPartitionsCursor(cursor["topic_name"], cursor["partition_index"])
        )
        page = self._admin.describe_topic_partitions(
            list(topics), partition_limit=response_partition_limit, cursor=start
        )
        return page_dict(page)

    def list_partition_offsets(
        self,
        topic_partition_specs: Mapping[TopicPartition, Any],
        isolation_level: IsolationLevel | int | str = IsolationLevel.READ_UNCOMMITTED,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, OffsetAndTimestamp]:
        """Offsets by ``OffsetSpec`` (or a timestamp) from each leader:
        ``{tp: OffsetAndTimestamp}``; a partition's error raises."""
        level = member(IsolationLevel, isolation_level, "list_partition_offsets: isolation_level")
        specs = {
            TopicPartition(*tp): core_offset_spec(spec, f"list_partition_offsets[{tp}]")
            for tp, spec in topic_partition_specs.items()
        }
        found = self._admin.list_offsets(
            specs,
            isolation_level=level.name.lower(),
            timeout=seconds(timeout_ms, "list_partition_offsets"),
        )
        raise_first(found)
        return {
            tp: OffsetAndTimestamp(
                -1 if o.offset is None else o.offset,
                -1 if o.timestamp is None else o.timestamp,
                o.leader_epoch,
            )
            for tp, o in found.all().items()
        }


def _str_id(value: uuid.UUID | None) -> str:
    return str(value if value is not None else uuid.UUID(int=0))


def _topic_config(entry: Any) -> dict[str, Any]:
    """A created topic's config (CreateTopics' fields: no synonyms, type or docs)."""
    full = config_dict(entry)
    return {k: full[k] for k in ("value", "read_only", "config_source", "is_sensitive")}


def _new_topics(new_topics: Any) -> list[CoreNewTopic]:
    """kafka-python's three spellings of topics to create, as kafkacore's NewTopic."""
    out: list[CoreNewTopic] = []
    if isinstance(new_topics, Mapping):
        for name, data in new_topics.items():
            out.append(
                NewTopic(
                    name,
                    data.get("num_partitions", -1),
                    data.get("replication_factor", -1),
                    data.get("assignments"),
                    data.get("configs"),
                )
            )
    else:
        for topic in new_topics:
            if not isinstance(topic, str | CoreNewTopic):
                raise TypeError(f"create_topics: expected topic names or NewTopic, got {topic!r}")
            out.append(NewTopic(topic) if isinstance(topic, str) else topic)
    if not out:
        raise ValueError(f"No valid topics found in new_topics: {new_topics}")
    return out


def _new_partitions(topic: str, spec: Any) -> CoreNewPartitions:
    """A partition count, ``{count:, assignments:}`` or a NewPartitions."""
    if isinstance(spec, CoreNewPartitions):
        return spec
    if isinstance(spec, Mapping):
        return NewPartitions(spec["count"], spec.get("assignments"))
    if isinstance(spec, bool) or not isinstance(spec, int):
        raise TypeError(
            f"create_partitions[{topic!r}]: expected a partition count, {{count:, assignments:}} "
            f"or NewPartitions, got {spec!r}"
        )
    return NewPartitions(spec)

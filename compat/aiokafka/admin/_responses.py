"""aiokafka's admin answers: its protocol responses, rebuilt from kafkacore's typed
results.

aiokafka returns the decoded response of the highest version it knows
(CreateTopics v3, DeleteTopics v3, DescribeConfigs v2, AlterConfigs v1,
CreatePartitions v1, DescribeGroups v3): fields by attribute, each array
entry a tuple in the schema's field order, ``to_object()`` for dicts. The
classes here have those fields and orders (entries are named tuples, so
they unpack and index alike). ``throttle_time_ms`` is left out: kafkacore
waits out broker throttling itself and does not report it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, NamedTuple

__all__ = [
    "AlterConfigsResponse",
    "AlteredResource",
    "ConfigEntryRow",
    "ConfigSynonymRow",
    "CreatePartitionsResponse",
    "CreateTopicsResponse",
    "DeleteTopicsResponse",
    "DescribeConfigsResponse",
    "DescribeGroupsResponse",
    "DescribedResource",
    "GroupMemberRow",
    "GroupRow",
    "TopicError",
    "TopicErrorCode",
]


def _object(value: Any) -> Any:
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {k: _object(v) for k, v in value._asdict().items()}
    if isinstance(value, list):
        return [_object(v) for v in value]
    return value


class _Response:
    """Fields by attribute; ``to_object()``: the response as nested dicts."""

    __slots__ = ()

    def to_object(self) -> dict[str, Any]:
        return {f.name: _object(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]


class TopicError(NamedTuple):
    topic: str
    error_code: int
    error_message: str | None


class TopicErrorCode(NamedTuple):
    topic: str
    error_code: int


@dataclass(frozen=True, slots=True)
class CreateTopicsResponse(_Response):
    topic_errors: list[TopicError]


@dataclass(frozen=True, slots=True)
class DeleteTopicsResponse(_Response):
    topic_error_codes: list[TopicErrorCode]


@dataclass(frozen=True, slots=True)
class CreatePartitionsResponse(_Response):
    topic_errors: list[TopicError]


class ConfigSynonymRow(NamedTuple):
    config_name: str
    config_value: str | None
    config_source: int


class ConfigEntryRow(NamedTuple):
    # "config_names" (sic): aiokafka's schema spells the entry's name so.
    config_names: str
    config_value: str | None
    read_only: bool
    config_source: int
    is_sensitive: bool
    config_synonyms: list[ConfigSynonymRow]


class DescribedResource(NamedTuple):
    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str
    config_entries: list[ConfigEntryRow]


@dataclass(frozen=True, slots=True)
class DescribeConfigsResponse(_Response):
    resources: list[DescribedResource]


class AlteredResource(NamedTuple):
    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str


@dataclass(frozen=True, slots=True)
class AlterConfigsResponse(_Response):
    resources: list[AlteredResource]


class GroupMemberRow(NamedTuple):
    member_id: str
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


class GroupRow(NamedTuple):
    error_code: int
    group: str
    state: str
    protocol_type: str
    protocol: str
    members: list[GroupMemberRow]
    authorized_operations: int


@dataclass(frozen=True, slots=True)
class DescribeGroupsResponse(_Response):
    groups: list[GroupRow]

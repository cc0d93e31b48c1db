"""Argument checks shared by the admin commands and their argument types.

A caller's mistake raises at once, before any request is queued:
``TypeError`` for a value of the wrong type, ``ValueError`` for a value out
of range; the message names the argument, what was given and what is
expected.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from kafkacore.client.metadata import TopicPartition

__all__ = [
    "check_bool",
    "check_int",
    "check_mapping",
    "check_name",
    "check_names",
    "check_partitions",
    "check_str",
    "check_timeout",
    "check_uuid_or_name",
    "to_partition",
]

#: Kafka's own limit on a topic name (Topic.MAX_NAME_LENGTH).
MAX_TOPIC_NAME = 249


def check_int(what: str, value: object, *, minimum: int | None = None) -> int:
    """``value`` as an int (bools refused), at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what}: expected an int, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{what}: {value} must be {minimum} or more")
    return value


def check_bool(what: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{what}: expected True or False, got {value!r}")
    return value


def check_str(what: str, value: object, *, empty: bool = False) -> str:
    """``value`` as a str; empty only when ``empty``."""
    if not isinstance(value, str):
        raise TypeError(f"{what}: expected a str, got {value!r}")
    if not value and not empty:
        raise ValueError(f"{what}: must not be empty")
    return value


def check_name(what: str, value: object) -> str:
    """A topic or group name: a non-empty str."""
    return check_str(what, value)


def check_names(what: str, values: object, *, allow_empty: bool = False) -> list[str]:
    """A collection of distinct non-empty names, in the caller's order."""
    items = _collection(what, values, "names")
    out: list[str] = []
    for item in items:
        name = check_name(f"{what} item", item)
        if name in out:
            raise ValueError(f"{what}: {name!r} is listed twice")
        out.append(name)
    if not out and not allow_empty:
        raise ValueError(f"{what}: name at least one")
    return out


def to_partition(what: str, value: object) -> TopicPartition:
    """A ``TopicPartition`` (or a ``(topic, partition)`` pair)."""
    if not isinstance(value, tuple) or len(value) != 2:
        raise TypeError(f"{what}: expected a TopicPartition or (topic, partition), got {value!r}")
    topic = check_name(f"{what} topic", value[0])
    partition = check_int(f"{what} partition", value[1], minimum=0)
    return TopicPartition(topic, partition)


def check_partitions(
    what: str, values: object, *, allow_empty: bool = False
) -> list[TopicPartition]:
    """Distinct partitions, in the caller's order."""
    out: list[TopicPartition] = []
    for item in _collection(what, values, "partitions"):
        tp = to_partition(f"{what} item", item)
        if tp in out:
            raise ValueError(f"{what}: {tp} is listed twice")
        out.append(tp)
    if not out and not allow_empty:
        raise ValueError(f"{what}: name at least one partition")
    return out


def check_mapping(what: str, value: object) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"{what}: expected a mapping, got {type(value).__name__}")
    return value


def check_timeout(what: str, value: object) -> int | None:
    """An operation timeout in ms: None (the default) or an int > 0."""
    if value is None:
        return None
    return check_int(f"{what}: timeout_ms", value, minimum=1)


def check_uuid_or_name(what: str, value: object) -> str | uuid.UUID:
    if isinstance(value, uuid.UUID):
        if value.int == 0:
            raise ValueError(f"{what}: the zero UUID names no topic")
        return value
    return check_name(what, value)


def _collection(what: str, values: object, noun: str) -> Iterable[object]:
    # A bare str is iterable too, but a caller passing "topic" surely meant ["topic"].
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise TypeError(f"{what}: expected a collection of {noun}, got {values!r}")
    return values

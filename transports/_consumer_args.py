"""The consumers' arguments: their shapes checked, their units made one.

Theory of operation
-------------------
The consumers take kafka-python's and aiokafka's calls as well as
kafkacore's; this module holds what those calls share, with no I/O:

- **Durations are milliseconds**, as every option (``*_ms``) and as
  kafka-python's and aiokafka's calls: ``poll(timeout_ms=500)``,
  ``close(timeout_ms=...)``. kafkacore's older ``timeout=`` keyword
  (seconds) is still accepted; giving both is an error, and so is a
  fractional ``timeout_ms`` (``poll(0.5)`` meant seconds once and would now
  mean half a millisecond: the message says to write ``poll(500)``).
- **Argument shapes are checked, never guessed**: a call taking partitions
  one by one (``seek_to_beginning(*partitions)``) refuses a list with a
  message showing the right call; ``assign`` refuses a lone partition;
  ``committed(tp)`` (kafka-python's, one partition, its offset) and
  ``committed([tp, ...])`` (kafkacore's, a dict) are told apart by type: a
  ``TopicPartition`` is never a collection of partitions.
- **Deserializers** (``key_deserializer``/``value_deserializer``) are applied
  as kafka-python does: to every record handed out, ``None`` included.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kafkacore.client import TopicPartition
from kafkacore.consumer import ConsumerRecord
from kafkacore.errors import ConfigError
from kafkacore.serde import SerdeObject, as_serde

__all__ = [
    "Applied",
    "ConsumerExtras",
    "by_partition",
    "check_topics",
    "duration_s",
    "max_records",
    "one_partition",
    "partition_list",
    "partitions_one_by_one",
]

#: A callable ``(data)``, or a SerdeObject for an object with ``deserialize``.
Deserializer = Callable[[Any], Any] | SerdeObject


def _tp(value: Any, what: str, expected: str) -> TopicPartition:
    """``value`` as a TopicPartition: one already, or a ``(topic, partition)`` pair."""
    if isinstance(value, TopicPartition):
        return value
    if (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], str)
        and isinstance(value[1], int)
        and not isinstance(value[1], bool)
    ):
        return TopicPartition(value[0], value[1])
    raise TypeError(f"{what}: expected {expected}, got {value!r}; write TopicPartition('topic', 0)")


def one_partition(value: Any, what: str) -> TopicPartition:
    """A call's one partition (``seek(tp, offset)``, ``position(tp)``, ``highwater(tp)``)."""
    if isinstance(value, list | set | frozenset):
        raise TypeError(f"{what}: expected one TopicPartition, got a {type(value).__name__}")
    return _tp(value, what, "a TopicPartition")


def partitions_one_by_one(values: Sequence[Any], what: str) -> list[TopicPartition]:
    """Partitions given as separate arguments (``seek_to_beginning(tp1, tp2)``)."""
    for value in values:
        if isinstance(value, list | set | frozenset | tuple) and not (
            isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str)
        ):
            raise TypeError(
                f"{what}: give partitions as separate arguments, {what}(tp1, tp2) or "
                f"{what}(*partitions), not a {type(value).__name__}; no argument means all "
                "assigned partitions"
            )
    return [_tp(v, what, "TopicPartition arguments") for v in values]


def partition_list(values: Any, what: str) -> list[TopicPartition]:
    """Partitions given as one collection (``assign([tp1, tp2])``, ``end_offsets([...])``)."""
    if isinstance(values, TopicPartition | str | bytes):
        raise TypeError(
            f"{what}: expected a list of TopicPartition, got {values!r}; write {what}([tp])"
        )
    if not isinstance(values, Iterable):
        raise TypeError(f"{what}: expected a list of TopicPartition, got {values!r}")
    return [_tp(v, what, "a list of TopicPartition") for v in values]


def check_topics(owner: str, topics: Sequence[Any]) -> list[str]:
    """The constructor's positional topics: names, one per argument (kafka-python's)."""
    for topic in topics:
        if not isinstance(topic, str):
            shown = type(topic).__name__
            raise TypeError(
                f"{owner}: topics are separate arguments, {owner}('a', 'b', ...), or "
                f"{owner}(*topics), not a {shown} (or call subscribe([...]) later)"
            )
        if not topic:
            raise TypeError(f"{owner}: a topic name is empty")
    return list(topics)


def duration_s(what: str, timeout_ms: Any, timeout: Any, default: float | None) -> float | None:
    """A call's bound in seconds from ``timeout_ms`` (the unit) or kafkacore's older
    ``timeout`` (seconds); ``default`` when neither is given."""
    if timeout is not None:
        if timeout_ms is not None:
            raise TypeError(f"{what}: give timeout_ms (milliseconds), not also timeout")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout < 0:
            raise ValueError(f"{what}: timeout (seconds) must be 0 or more, got {timeout!r}")
        return float(timeout)
    if timeout_ms is None:
        return default
    if isinstance(timeout_ms, float) and not isinstance(timeout_ms, bool):
        if math.isfinite(timeout_ms) and timeout_ms.is_integer() and timeout_ms >= 0:
            return timeout_ms / 1000
        raise TypeError(
            f"{what}: timeout_ms is milliseconds, an int; got {timeout_ms!r} (durations of "
            f"the consumer's calls are milliseconds, as its options: for half a second "
            f"write {what.rsplit('.', 1)[-1]}(500) or timeout_ms=500)"
        )
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < 0:
        raise TypeError(f"{what}: timeout_ms must be an int of 0 or more, got {timeout_ms!r}")
    return timeout_ms / 1000


def max_records(what: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what}: max_records must be an int of 1 or more, or None; got {value!r}")
    return value


def by_partition(records: list[ConsumerRecord]) -> dict[TopicPartition, list[ConsumerRecord]]:
    """kafka-python's ``poll`` answer: records by partition, in order."""
    out: dict[TopicPartition, list[ConsumerRecord]] = {}
    for record in records:
        out.setdefault(TopicPartition(record.topic, record.partition), []).append(record)
    return out


@dataclass(frozen=True, slots=True)
class ConsumerExtras:
    """The constructor keywords a consumer handles itself (not a config's)."""

    key_deserializer: Deserializer | None = None
    value_deserializer: Deserializer | None = None
    #: The iterator stops after this long without a record (None: never).
    consumer_timeout_s: float | None = None
    #: kafka-python's: called ``(offsets, result or exception)`` when a
    #: ``commit_async`` without its own callback completes.
    default_offset_commit_callback: Callable[[Any, Any], Any] | None = None

    NAMES = (
        "key_deserializer",
        "value_deserializer",
        "consumer_timeout_ms",
        "default_offset_commit_callback",
    )

    @classmethod
    def take(cls, owner: str, options: dict[str, Any]) -> ConsumerExtras:
        """Take (pop) this class's keywords out of ``options``, checked."""
        callback = options.get("default_offset_commit_callback")
        if callback is not None and not callable(callback):
            raise ConfigError(
                f"{owner}: default_offset_commit_callback must be a callable or None, "
                f"got {callback!r}"
            )
        key_de, value_de = (
            as_serde(options.pop(name, None), name, owner, "deserialize")
            for name in ("key_deserializer", "value_deserializer")
        )
        timeout = options.pop("consumer_timeout_ms", None)
        seconds: float | None = None
        if timeout is not None and timeout != math.inf:
            if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout < 0:
                raise ConfigError(
                    f"{owner}: consumer_timeout_ms must be 0 or more milliseconds "
                    f"(None or float('inf'): iterate for ever), got {timeout!r}"
                )
            seconds = timeout / 1000
        return cls(
            key_deserializer=key_de,
            value_deserializer=value_de,
            consumer_timeout_s=seconds,
            default_offset_commit_callback=options.pop("default_offset_commit_callback", None),
        )

    @property
    def deserializes(self) -> bool:
        return self.key_deserializer is not None or self.value_deserializer is not None

    def deserialize(self, record: ConsumerRecord) -> ConsumerRecord:
        """The record as the user gets it (kafka-python calls the deserializers on None too)."""
        key, value = record.key, record.value
        kd, vd = self.key_deserializer, self.value_deserializer
        if isinstance(kd, SerdeObject):
            key = kd(record.topic, list(record.headers), key)
        elif kd is not None:
            key = kd(key)
        if isinstance(vd, SerdeObject):
            value = vd(record.topic, list(record.headers), value)
        elif vd is not None:
            value = vd(value)
        return record._replace(key=key, value=value)


class Applied:
    """What an async consumer's immediate call (``seek_to_beginning``, ...)
    returns: the call has taken effect already; awaiting it (aiokafka's
    style, where these are coroutines) returns None at once, and not awaiting
    it (kafkacore's style) is fine too."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        return
        yield  # a generator that yields nothing: awaiting never suspends

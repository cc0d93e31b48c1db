"""What every part of the kafka-python-shaped admin client shares: the kafkacore
client it drives, its life, and the conversions of kafka-python's arguments."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any

from kafkacore.admin import ItemResults
from kafkacore.client import TopicPartition
from kafkacore.errors import BrokerError
from kafkacore.transports.selector import KafkaAdminClient as TypedAdminClient

__all__ = ["AdminBase", "PartitionErrors", "raise_first", "seconds"]


def seconds(timeout_ms: object, what: str) -> float | None:
    """kafka-python's ``timeout_ms`` (None or 0: the client's default) as kafkacore's
    ``timeout`` in seconds: the bound of the whole call."""
    if timeout_ms is None or timeout_ms == 0:
        return None
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int | float) or timeout_ms < 0:
        raise ValueError(f"KafkaAdminClient.{what}: timeout_ms must be a positive number of ms")
    return timeout_ms / 1000


def raise_first(
    results: ItemResults[Any, Any], ignore: tuple[type[BaseException], ...] = ()
) -> None:
    """Raise the first item's error, as kafka-python's ``raise_errors=True`` does."""
    for error in results.errors.values():
        if not isinstance(error, ignore):
            raise error


class PartitionErrors(BrokerError):
    """Several partitions failed: kafka-python raises its ``BrokerResponseError`` base
    for that (this is one); ``errors`` holds each partition's own error."""

    name = "SEVERAL_PARTITION_ERRORS"

    def __init__(self, what: str, errors: Mapping[TopicPartition, BaseException]) -> None:
        listed = ", ".join(
            f"{tp.topic}(partition={tp.partition}): {type(e).__name__}" for tp, e in errors.items()
        )
        super().__init__(f"{what}: {listed}")
        self.errors = dict(errors)


class AdminBase:
    """The kafkacore client (``kafkacore.transports.selector.KafkaAdminClient``,
    whose own calls keep kafkacore's typed results) and the client's life."""

    def __init__(self, **configs: Any) -> None:
        """kafka-python's options (keywords only, as kafka-python takes them); see
        ``docs/admin.md`` for those kafkacore refuses. Connections open on the first
        call (kafka-python bootstraps in the constructor)."""
        self._admin = TypedAdminClient(**configs)

    def close(self) -> None:
        """Fail pending calls, close every connection and stop the I/O thread."""
        self._admin.close()

    @property
    def closed(self) -> bool:
        return self._admin.closed

    def __enter__(self) -> AdminBase:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _partitions_of(self, topics: Iterable[str] | None) -> dict[str, list[int]]:
        """``{topic: [partition ids]}`` of ``topics`` (None: every topic)."""
        names = list(topics) if topics is not None else self._admin.list_topics()
        if not names:
            return {}
        described = self._admin.describe_topics(names).all()
        return {t: [p.partition for p in d.partitions] for t, d in described.items()}

    def _unknown_partitions(self, partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
        """The partitions the cluster does not have (their topic or their index)."""
        wanted = list(partitions)
        known: dict[str, set[int]] = {}
        topics = sorted({tp.topic for tp in wanted})
        for topic, item in self._admin.describe_topics(topics).items():
            if item.ok:
                known[topic] = {p.partition for p in item.result().partitions}
        return [tp for tp in wanted if tp.partition not in known.get(tp.topic, set())]

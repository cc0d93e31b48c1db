"""kafka-python 3's ``kafka.consumer``: ``KafkaConsumer``.

kafkacore's blocking consumer, which takes kafka-python's usage (its
keywords, ``poll``, iteration, ``bootstrap()``, Serializer objects, ...),
with the defaults kafka-python chooses differently from Java: the offset
lookups (``offsets_for_times``, ``beginning_offsets``, ``end_offsets``) wait
at most ``request_timeout_ms`` when no ``timeout_ms`` is given, as
kafka-python's do (kafkacore's own wait ``default_api_timeout_ms``, as Java's),
and ``bootstrap_timeout_ms`` (default 30 s) bounds ``bootstrap()`` when it is
given no ``timeout_ms``. The constructor does not wait for the cluster
(kafka-python's does when ``api_version`` is None): the first call that needs
it does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafkacore.client import TopicPartition
from kafkacore.errors import ConfigError
from kafkacore.transports.selector import KafkaConsumer as _KafkaConsumer

__all__ = ["KafkaConsumer"]


class KafkaConsumer(_KafkaConsumer):
    """kafka-python's consumer over kafkacore (see the module docstring)."""

    def __init__(self, *topics: str, bootstrap_timeout_ms: int = 30000, **configs: Any) -> None:
        if isinstance(bootstrap_timeout_ms, bool) or not isinstance(bootstrap_timeout_ms, int):
            raise ConfigError(
                f"KafkaConsumer: bootstrap_timeout_ms must be an int of milliseconds, "
                f"got {bootstrap_timeout_ms!r}"
            )
        self._bootstrap_ms = bootstrap_timeout_ms
        super().__init__(*topics, **configs)

    def bootstrap(self, timeout_ms: int | None = None, refresh: bool = False) -> None:
        super().bootstrap(self._bootstrap_ms if timeout_ms is None else timeout_ms, refresh)

    def _lookup_ms(self, timeout_ms: int | None, timeout: float | None) -> int | None:
        if timeout_ms is None and timeout is None:
            return self.client_config.request_timeout_ms
        return timeout_ms

    def offsets_for_times(
        self,
        timestamps: Mapping[TopicPartition, int],
        timeout_ms: int | None = None,
        *,
        timeout: float | None = None,
    ) -> Any:
        ms = self._lookup_ms(timeout_ms, timeout)
        return super().offsets_for_times(timestamps, ms, timeout=timeout)

    def beginning_offsets(
        self,
        partitions: Iterable[TopicPartition],
        timeout_ms: int | None = None,
        *,
        timeout: float | None = None,
    ) -> Any:
        ms = self._lookup_ms(timeout_ms, timeout)
        return super().beginning_offsets(partitions, ms, timeout=timeout)

    def end_offsets(
        self,
        partitions: Iterable[TopicPartition],
        timeout_ms: int | None = None,
        *,
        timeout: float | None = None,
    ) -> Any:
        return super().end_offsets(
            partitions, self._lookup_ms(timeout_ms, timeout), timeout=timeout
        )

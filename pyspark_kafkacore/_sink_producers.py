"""Idle at-least-once producers kept per Python worker, so small tasks skip the connection setup.

Theory of operation
-------------------
A Spark Python worker runs one task after another (``spark.python.worker.reuse``,
on by default). Building a kafkacore producer per task costs a thread, the
connections, ApiVersions, metadata and an InitProducerId: about a hundred
milliseconds, which dominates the small tasks of a streaming query. The JVM
connector keeps its producers per executor for the same reason.

:class:`ProducerPool` lends a producer for a set of options and takes it back
after the task. Only a task that ended well returns its producer (all its
records were flushed, so nothing of the old task is left in it); after a
failure the producer is closed at once. A producer idle longer than
``idle_s`` is closed at the next ``acquire``; at most ``max_idle``
producers wait, the oldest is closed first. Transactional producers are
never pooled: every exactly-once task needs its own transactional id and a
fresh InitProducerId.
"""

from __future__ import annotations

import atexit
import threading
import time
from collections.abc import Callable, Hashable, Mapping
from typing import Any

__all__ = ["ProducerPool", "pool"]


def _key(options: Mapping[str, Any]) -> Hashable:
    return tuple(sorted((k, repr(v)) for k, v in options.items()))


class ProducerPool:
    """See the module docstring. ``factory(**options)`` builds a producer."""

    def __init__(
        self,
        factory: Callable[..., Any],
        *,
        idle_s: float = 60.0,
        max_idle: int = 4,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._factory = factory
        self._idle_s = idle_s
        self._max_idle = max_idle
        self._clock = clock
        self._lock = threading.Lock()
        self._idle: list[tuple[Hashable, Any, float]] = []  # oldest first

    def acquire(self, options: Mapping[str, Any]) -> Any:
        key = _key(options)
        now = self._clock()
        found = None
        expired = []
        with self._lock:
            keep = []
            for entry in self._idle:
                if now - entry[2] > self._idle_s:
                    expired.append(entry[1])
                elif found is None and entry[0] == key:
                    found = entry[1]
                else:
                    keep.append(entry)
            self._idle = keep
        for producer in expired:
            producer.close(0.0)
        return found if found is not None else self._factory(**options)

    def release(self, options: Mapping[str, Any], producer: Any, *, healthy: bool) -> None:
        if not healthy:
            producer.close(0.0)
            return
        evicted = []
        with self._lock:
            self._idle.append((_key(options), producer, self._clock()))
            while len(self._idle) > self._max_idle:
                evicted.append(self._idle.pop(0)[1])
        for old in evicted:
            old.close(0.0)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for _, producer, _ in idle:
            producer.close(0.0)

    def __len__(self) -> int:
        return len(self._idle)


def _make_producer(**options: Any) -> Any:
    from kafkacore.transports.selector import KafkaProducer

    return KafkaProducer(**options)


pool = ProducerPool(_make_producer)
atexit.register(pool.close)

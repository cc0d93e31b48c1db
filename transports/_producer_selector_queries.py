"""The blocking producer's queries (kafka-python's names): partitions, metrics, the loop.

A base of :class:`~kafkacore.transports._producer_selector.KafkaProducer`, as
:class:`~kafkacore.transports._producer_common.BlockingOperations` is: each
query takes the producer's core lock (or runs on its loop thread), none is on
the send path.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafkacore.producer import ProducerCore

from ._producer_common import ProducerSurface
from ._producer_future import ThreadIdiom
from ._selector_driver import Delivery, LoopThread, failer

__all__ = ["BlockingQueries"]

_monotonic = time.monotonic


class BlockingQueries(ProducerSurface):
    """Queries of the blocking producer; see the module docstring."""

    # Set by KafkaProducer._setup.
    _core: ProducerCore
    _lock: threading.RLock
    _cond: threading.Condition
    _idiom: ThreadIdiom
    _loop: LoopThread
    _open: bool
    _max_block_s: float

    if TYPE_CHECKING:

        def _refused(self) -> BaseException: ...
        def _wake(self) -> None: ...

    def partitions_for(self, topic: str) -> set[int]:
        """``topic``'s partition ids; waits up to max_block_ms for its metadata."""
        self._idiom.check_off_loop("partitions_for")
        deadline = _monotonic() + self._max_block_s
        while True:
            with self._lock:
                if not self._open:
                    raise self._refused()
                parts = self._known_partitions(self._core, topic, _monotonic())
                if parts is not None:
                    return parts
                self._wake()
                remaining = deadline - _monotonic()
                if remaining <= 0:
                    raise self._no_partitions(topic)
                self._idiom.waiters += 1  # metadata comes with no producer event: poll
                try:
                    self._cond.wait(min(remaining, 0.05))
                finally:
                    self._idiom.waiters -= 1

    def metrics(self, raw: bool = False) -> dict[str, dict[str, float]]:
        """kafka-python's ``metrics()``: ``{"producer-metrics": {name: value}}`` (counters)."""
        with self._lock:
            return self._metrics_of(self._core)

    def bootstrap_connected(self) -> bool:
        """Whether a bootstrap broker answered (kafka-python)."""
        with self._lock:
            return self._connected(self._core)

    def run_on_loop(self, fn: Callable[[Any], Any], timeout: float | None = None) -> Any:
        """Run ``fn(core)`` on the loop thread and return its result (queries, tests)."""
        fut = Delivery()
        self._loop.post(lambda now: fut.set_result(fn(self._core)), failer(fut))
        return fut.result(timeout)

"""What the three consumer facades share: option splitting and event routing.

Theory of operation
-------------------
Each facade takes one flat set of keyword options, Java-style. Those that
:class:`~kafkacore.consumer.ConsumerConfig` knows configure the consumer;
the rest go to :func:`transports._common.make_parts` (the client config).

:class:`ConsumerRouter` receives every event the bridge drains from the
:class:`~kafkacore.consumer.ConsumerCore`: an ``OperationCompleted``
resolves the completion registered for its handle; assignment changes and
truncation notices are queued for the user's rebalance listener, which the
facade calls from ``poll`` (in the user's thread or task, as Java does);
every event bumps ``seq`` and calls ``wake`` so a waiting ``poll`` looks
again. Kafka logic stays in the core.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import Any, Protocol

from kafkacore.consumer import (
    ConsumerConfig,
    OperationCompleted,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    PartitionsRevoking,
    TruncationDetected,
)

from ._common import Parts, make_parts
from ._sockets import Address

__all__ = ["ConsumerRouter", "RebalanceListener", "split_options"]

_CONSUMER_FIELDS = frozenset(f.name for f in fields(ConsumerConfig))
Completion = Callable[[Any, BaseException | None], None]


class RebalanceListener(Protocol):
    """Called from ``poll`` with the partitions that changed hands."""

    def on_partitions_assigned(self, partitions: frozenset[Any]) -> None: ...

    def on_partitions_revoked(self, partitions: frozenset[Any]) -> None: ...

    def on_partitions_lost(self, partitions: frozenset[Any]) -> None: ...


def split_options(
    owner: str,
    bootstrap_servers: str | Sequence[str] | None,
    *,
    source_address: Address | None,
    ssl_server_hostname: str | None,
    rng: random.Random | None,
    options: dict[str, Any],
) -> tuple[Parts, ConsumerConfig]:
    consumer = {k: v for k, v in options.items() if k in _CONSUMER_FIELDS}
    client = {k: v for k, v in options.items() if k not in _CONSUMER_FIELDS}
    # The client's own retry backoff is the consumer's too.
    if "retry_backoff_ms" in consumer:
        client["retry_backoff_ms"] = consumer["retry_backoff_ms"]
    if source_address is not None:
        client["source_address"] = source_address
    parts = make_parts(
        owner,
        bootstrap_servers,
        ssl_server_hostname=ssl_server_hostname,
        rng=rng,
        options=client,
    )
    try:
        config = ConsumerConfig(**consumer)
    except TypeError as exc:  # pragma: no cover - names were filtered above
        raise TypeError(f"{owner}: {exc}") from None
    return parts, config


class ConsumerRouter:
    """Routes consumer-core events; see the module docstring."""

    __slots__ = ("_announced", "_ops", "notices", "seq", "wake")

    def __init__(self, wake: Callable[[], None] = lambda: None) -> None:
        self._ops: dict[object, Completion] = {}
        self.notices: deque[object] = deque(maxlen=10000)
        self.seq = 0
        self.wake = wake
        self._announced: set[object] = set()

    def expect(self, handle: object, done: Completion) -> None:
        if getattr(handle, "done", False):
            done(getattr(handle, "value", None), getattr(handle, "error", None))
            return
        self._ops[handle] = done

    def fail_all(self, error: BaseException) -> None:
        ops, self._ops = self._ops, {}
        for done in ops.values():
            done(None, error)

    def on_event(self, event: object) -> None:
        if isinstance(event, OperationCompleted):
            done = self._ops.pop(event.handle, None)
            if done is not None:
                done(event.handle.value, event.handle.error)
        elif isinstance(
            event,
            PartitionsAssigned
            | PartitionsRevoked
            | PartitionsRevoking
            | PartitionsLost
            | TruncationDetected,
        ):
            self.notices.append(event)
        self.seq += 1
        self.wake()

    def dispatch(
        self, listener: RebalanceListener | None, ack: Callable[[int], None] | None = None
    ) -> None:
        """Call the listener for queued notices (from the user's thread or task).

        A ``PartitionsRevoking`` is acknowledged with ``ack(token)`` after the
        listener ran, so the core lets the partitions go only then; the
        ``PartitionsRevoked`` that follows is not announced twice.
        """
        while self.notices:
            event = self.notices.popleft()
            if isinstance(event, PartitionsRevoking):
                try:
                    if listener is not None:
                        listener.on_partitions_revoked(event.partitions)
                        self._announced.update(event.partitions)
                finally:
                    if ack is not None:
                        ack(event.token)
                continue
            if listener is None:
                continue
            if isinstance(event, PartitionsAssigned):
                listener.on_partitions_assigned(event.partitions)
            elif isinstance(event, PartitionsRevoked):
                fresh = frozenset(p for p in event.partitions if p not in self._announced)
                self._announced.difference_update(event.partitions)
                if fresh:
                    listener.on_partitions_revoked(fresh)
            elif isinstance(event, PartitionsLost):
                listener.on_partitions_lost(event.partitions)

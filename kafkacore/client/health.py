"""Per-node reconnect backoff and last failure (KIP-144), as pure state.

Theory of operation
-------------------
:class:`NodeHealthTable` keeps, per node id (all lanes of a node share it),
how many connections in a row failed, until when the node must not be
connected again, and the error that closed its last failed connection.

* :meth:`NodeHealthTable.failed`: a connection of the node closed on an
  error (any kind: refused, lost, timed out, a protocol error after READY,
  a refused authentication). The n-th consecutive failure blacks the node
  out for ``min(base * 2**(n-1), max)`` ms with +-20% jitter from the
  injected rng. A failure while the node is already blacked out (another
  lane of the same incident) does not count again. A connection that was
  READY for at least ``stable_s`` before failing restarts the count at one;
  reaching READY alone does not, so a broker that accepts connections and
  then breaks the protocol keeps backing off.
* :meth:`NodeHealthTable.connected`: a connection reached READY; the node's
  last attempt no longer counts as failed (:meth:`last_error` is None), the
  count stays.

No clock and no randomness of its own: ``now`` and the rng come in.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from kafkacore.client.backoff import ExponentialBackoff

__all__ = ["NodeHealth", "NodeHealthTable"]


@dataclass(slots=True)
class NodeHealth:
    """One node's backoff state."""

    failures: int = 0
    blackout_until: float = -math.inf
    #: The error that closed the node's last failed connection (None once a
    #: connection reached READY again), and when.
    last_error: BaseException | None = None
    failed_at: float = -math.inf


class NodeHealthTable:
    """See the module docstring."""

    __slots__ = ("_backoff", "_nodes", "_rng", "_stable_s")

    def __init__(self, backoff: ExponentialBackoff, *, rng: random.Random, stable_s: float) -> None:
        self._backoff = backoff
        self._rng = rng
        self._stable_s = stable_s
        self._nodes: dict[int, NodeHealth] = {}

    def get(self, node_id: int) -> NodeHealth | None:
        return self._nodes.get(node_id)

    def __iter__(self) -> Iterator[tuple[int, NodeHealth]]:
        return iter(self._nodes.items())

    def blackout_until(self, node_id: int) -> float:
        """When the node may be connected again (``-inf``: now)."""
        health = self._nodes.get(node_id)
        return -math.inf if health is None else health.blackout_until

    def last_error(self, node_id: int) -> BaseException | None:
        health = self._nodes.get(node_id)
        return None if health is None else health.last_error

    def latest_error(self) -> BaseException | None:
        """The most recent last error of any node (None if no node is failing)."""
        failing = [h for h in self._nodes.values() if h.last_error is not None]
        if not failing:
            return None
        return max(failing, key=lambda h: h.failed_at).last_error

    def connected(self, node_id: int) -> None:
        """A connection of ``node_id`` reached READY."""
        health = self._nodes.get(node_id)
        if health is not None:
            health.last_error = None

    def failed(
        self, node_id: int, error: BaseException, *, now: float, ready_since: float | None
    ) -> tuple[int, float] | None:
        """A connection of ``node_id`` closed on ``error``; ``ready_since`` is when it
        became READY (None if it never did). Returns ``(failures, delay_ms)`` when a
        new backoff starts, None when the node was already backing off."""
        health = self._nodes.get(node_id)
        if health is None:
            health = self._nodes[node_id] = NodeHealth()
        health.last_error = error
        health.failed_at = now
        if health.blackout_until > now:
            return None  # another lane of a node already backing off: the same incident
        stable = ready_since is not None and now - ready_since >= self._stable_s
        health.failures = 1 if stable else health.failures + 1
        delay_ms = self._backoff.delay_ms(health.failures, self._rng)
        health.blackout_until = now + delay_ms / 1000
        return health.failures, delay_ms

    def forget(self, node_ids: Iterable[int]) -> None:
        """Drop nodes that left the cluster (their ids may be reused later)."""
        for node_id in list(node_ids):
            self._nodes.pop(node_id, None)

"""The client core's reasons to wake, in one ``Deadlines`` (docs/stacking.md §5).

Theory of operation
-------------------
:class:`Wakeups` is the client core's :class:`~kafkacore.timers.Deadlines`
with the core's keys named:

* ``("conn", conn_id)``: a connection's own deadline (connect setup, the
  oldest request in flight, idleness, re-authentication), updated only when
  the core drained that connection (:meth:`Wakeups.connection`);
* ``"queue"``, ``"blackout"``, ``"refresh"``, ``"lookup"``, ``"telemetry"``,
  ``"bootstrap"``: the earliest queued request's timeout, the end of a
  reconnect backoff a queued request waits for, the next metadata refresh,
  the next coordinator lookup, the next KIP-714 push, the earliest deadline
  of a bootstrap wait (``KafkaClient.connect()``); updated at the end of a
  step (:meth:`Wakeups.arm`);
* ``"step"``: a command queued work for a stacked owner's step loop (due at
  once, so a command issued outside any step is never forgotten);
* ``"close"``: the end of a graceful close (``begin_close``'s timeout), while
  the core still has something to say (the KIP-714 terminating push).

``next()`` is the core's ``next_deadline()``.
"""

from __future__ import annotations

from collections.abc import Hashable

from kafkacore.timers import Deadlines

__all__ = [
    "BLACKOUT",
    "BOOTSTRAP",
    "CLOSE",
    "LOOKUP",
    "QUEUE",
    "REFRESH",
    "STEP",
    "TELEMETRY",
    "Wakeups",
]

STEP = "step"
QUEUE = "queue"
BLACKOUT = "blackout"
REFRESH = "refresh"
LOOKUP = "lookup"
TELEMETRY = "telemetry"
CLOSE = "close"
BOOTSTRAP = "bootstrap"


class Wakeups(Deadlines[Hashable]):
    """The client core's deadlines; see the module docstring."""

    __slots__ = ()

    def arm(self, key: str, at: float | None) -> None:
        """Wake for ``key`` at ``at``, or not at all (None)."""
        if at is None:
            self.cancel(key)
        else:
            self.set(key, at)

    def connection(self, conn_id: int, at: float | None) -> None:
        """Connection ``conn_id``'s own deadline (None: it has none, or is gone)."""
        if at is None:
            self.cancel(("conn", conn_id))
        else:
            self.set(("conn", conn_id), at)

    @property
    def step_due(self) -> bool:
        return STEP in self

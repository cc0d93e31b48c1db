"""What every driver does to a core at its start and at its end, whatever its idiom.

Theory of operation
-------------------
The core reads no clock of its own: time comes in as ``now``, the
transport's monotonic clock. Two things at the edges of a core's life need
more than that, and every driver (selector, asyncio, trio) does them the
same way:

- **Start**: :func:`set_wall_clock` measures Unix time minus the driver's
  clock once and hands it to the client core (``set_wall_offset``), so that
  KIP-714 telemetry dates its points in Unix nanoseconds rather than from the
  clock's origin (near 1970 for a collector).
- **End**: the *farewell*. Closing used to shut the core down and drop the
  sockets in the same pass, so what the core wrote last (the terminating
  PushTelemetry, KIP-714) never left the process. Now a driver first tells
  the client core to begin closing (``begin_close``, bounded by the time the
  user's close has left), keeps serving its I/O until the core says it has
  nothing more to send (``closing_done``) or that time is up, and only then
  runs the owner's shutdown and closes the sockets. A broker without a
  telemetry plugin, or none reachable, costs nothing (done at once); a
  broker that never answers costs at most the time left.

The client core is the driven core itself (a bare client) or its ``client``
(producer, consumer, admin, share consumer): :func:`closer_of` finds it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["Closer", "closer_of", "farewell_ms", "set_wall_clock", "wall_offset"]


@runtime_checkable
class Closer(Protocol):
    """The graceful-close side of a client core (``KafkaClientCore``)."""

    def begin_close(self, *, now: float, timeout_ms: int) -> None: ...

    @property
    def closing_done(self) -> bool: ...

    def set_wall_offset(self, offset: float) -> None: ...


def closer_of(core: object) -> Closer | None:
    """The client core ``core`` is or wraps (its ``client``), or None."""
    if isinstance(core, Closer):
        return core
    client = getattr(core, "client", None)
    return client if isinstance(client, Closer) else None


def wall_offset(clock: Callable[[], float]) -> float:
    """Unix time minus ``clock()``, in seconds (the clock read on both sides of
    the wall clock, so the offset is as exact as the two reads are close)."""
    before = clock()
    wall = time.time()
    after = clock()
    return wall - (before + after) / 2


def set_wall_clock(core: object, clock: Callable[[], float]) -> None:
    """Give the client core in ``core`` the offset of ``clock`` to Unix time."""
    closer = closer_of(core)
    if closer is not None:
        closer.set_wall_offset(wall_offset(clock))


def farewell_ms(seconds: float | None) -> int:
    """The farewell's budget for ``begin_close`` (None, negative, NaN: none)."""
    if seconds is None or not seconds > 0:
        return 0
    return math.ceil(seconds * 1000) if math.isfinite(seconds) else 2**31 - 1

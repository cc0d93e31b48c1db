"""A client dropped while it is open says so, as aiokafka's and kafka-python's do.

Theory of operation
-------------------
A client object collected by the garbage collector while still open (never
closed, never left with ``with``/``async with``) warns with
``ResourceWarning: Unclosed <Name>``; the blocking clients also stop their
loop thread, which closes every socket it holds. For that the object must
be collectable: what the running loop holds (the driver's sockets and
timers, the loop thread, background tasks, the core's event callbacks)
reaches back to it only through :func:`weak_method` or a ``weakref``, never
by a bound method, or the loop would keep it alive for ever.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["WarnsUnclosed", "weak_method"]


def weak_method(method: Callable[..., Any]) -> Callable[..., None]:
    """``method`` (a bound method) called through a weak reference to its object:
    a no-op once the object is gone."""
    ref = weakref.WeakMethod(method)

    def call(*args: Any) -> None:
        bound = ref()
        if bound is not None:
            bound(*args)

    return call


class WarnsUnclosed:
    """Mixin of the user-facing clients; see the module docstring."""

    _NAME: str

    def _is_open(self) -> bool:
        """Whether the client holds connections, a thread or tasks (started, not closed)."""
        raise NotImplementedError

    def _drop(self) -> None:
        """Release what an unclosed client holds, from any thread, without waiting."""

    def __del__(self) -> None:
        try:
            still_open = self._is_open()
        except AttributeError:  # half-built: the constructor raised
            return
        if still_open:
            warnings.warn(
                f"Unclosed {self._NAME}: close it (or use it in a with block) when done",
                ResourceWarning,
                source=self,
                stacklevel=2,
            )
            self._drop()

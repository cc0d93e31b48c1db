"""The blocking idiom's one-shot outcome: a future that a core completion resolves.

Apart from :mod:`kafkacore.transports._selector_driver` (which re-exports it) so
that the loop thread's module holds only the loop.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import Any

__all__ = ["Delivery", "failer"]


class Delivery(concurrent.futures.Future[Any]):
    """A future a core completion resolves: ``fill(value, error)``, once.

    Filling a future that is done already (cancelled by the user from
    another thread, or resolved before) does nothing.
    """

    def fill(self, value: Any, error: BaseException | None) -> None:
        if self.done():
            return
        try:
            if error is not None:
                self.set_exception(error)
            else:
                self.set_result(value)
        except concurrent.futures.InvalidStateError:
            pass  # cancelled by another thread just now


def failer(fut: Delivery) -> Callable[[BaseException], None]:
    """``fail(error)`` for :meth:`LoopThread.post`: fails ``fut`` unless it is done."""
    return lambda error: fut.fill(None, error)

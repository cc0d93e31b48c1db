"""How a consumer call waits, in every I/O idiom: :class:`Wait` steps and :func:`drive`.

A call that waits for the core (``poll``, ``position``, the iterator) is a
generator of :class:`Wait` steps (see :mod:`kafkacore.transports._consumer_common`);
the blocking consumer runs it with :func:`drive`, the async ones with their
event loop's event. Shared with the share consumer.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TypeVar

from kafkacore.consumer import ConsumerCore

__all__ = ["LISTEN", "REFILLED", "Command", "Listing", "Steps", "Wait", "drive", "timeout_ms"]

T = TypeVar("T")
Command = Callable[[ConsumerCore, float], T]
#: A cluster's topics as a Metadata answer lists them: name -> (partitions, internal).
Listing = dict[str, tuple[frozenset[int], bool]]


@dataclass(frozen=True, slots=True)
class Wait:
    """A waiting step: until the core reports anything after ``mark`` (the
    router's ``seq``), or ``until()`` when given, or until ``deadline`` on the
    loop's clock."""

    mark: int
    deadline: float
    until: Callable[[], bool] | None = None


#: Yielded by the iterator after it borrowed a fresh batch: trio makes
#: every batch a checkpoint, so a cancel scope around the loop is honoured.
REFILLED = Wait(-1, float("-inf"))
#: Yielded by the async consumers' steps where the rebalance listener must run
#: before records go on (its calls may be coroutines, which only the idiom can
#: await); the blocking consumer calls the listener in place instead.
LISTEN = Wait(-3, float("-inf"))

Steps = Generator[Wait, None, T]


def drive(steps: Steps[T], block: Callable[[Wait], None]) -> T:
    """Run ``steps`` to its value, blocking on each wait (the blocking idiom)."""
    while True:
        try:
            wait = next(steps)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        block(wait)


def timeout_ms(timeout: float | None) -> int | None:
    """A user's ``timeout`` (seconds, None: the default) for the core."""
    return None if timeout is None else max(int(timeout * 1000), 0)

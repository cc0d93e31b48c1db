"""The async consumers' rebalance listener: called as aiokafka calls it.

Theory of operation
-------------------
aiokafka runs a consumer's rebalance listener from its group coordinator's
task, as soon as the group moves partitions, whether or not the user is
in ``getone``/``getmany`` at that moment; the listener's methods may be
coroutine functions, which it awaits; and an exception from the listener
is logged, not raised at the user. Code written for aiokafka relies on all
three (a listener that waits for an event set by another task, a consumer
that has stopped polling and must still give its partitions up in time:
KIP-62's ``max_poll_interval_ms``).

:class:`ListenerCalls` does the same for the asyncio and trio consumers:
:meth:`ListenerCalls.background` is a task of the client (the driver's
``spawn``) that makes the queued calls when the router has notices, and
:meth:`ListenerCalls.run` makes them where a poll must not hand records
over before they ran (the steps' ``LISTEN``). One call at a time, in the
order the group made the changes; a revocation is acknowledged to the core
once its call has returned (or raised), so the partitions go only then.
The blocking consumer keeps Java's rule instead: the listener runs in the
caller's thread, in ``poll``.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable

from ._async_driver import AsyncDriver
from ._consumer_router import ConsumerRouter, RebalanceListener

__all__ = ["ListenerCalls"]

log = logging.getLogger("kafkacore.consumer")

#: How long one wait of the background task lasts before it looks again (s).
_IDLE_S = 3600.0


class ListenerCalls:
    """See the module docstring."""

    __slots__ = ("_ack", "_busy", "_driver", "_listener", "_owner", "_router", "_running")

    def __init__(
        self,
        owner: str,
        *,
        router: ConsumerRouter,
        driver: AsyncDriver,
        listener: Callable[[], RebalanceListener | None],
        ack: Callable[[int], None],
        running: Callable[[], bool],
    ) -> None:
        self._owner = owner
        self._router = router
        self._driver = driver
        self._listener = listener
        self._ack = ack
        self._running = running
        self._busy = False

    async def run(self) -> None:
        """Make every queued call now (after one under way elsewhere has ended)."""
        driver = self._driver
        while self._busy:
            await driver.wait_change(lambda: not self._busy, driver.clock() + _IDLE_S)
        self._busy = True
        try:
            while self._running() and (call := self._router.next_call(self._listener())):
                try:
                    if call.method is not None:
                        out = call.method(call.partitions)
                        if inspect.isawaitable(out):
                            await out
                except Exception:
                    log.exception(
                        "%s: the rebalance listener raised for %s", self._owner, call.partitions
                    )
                finally:
                    if call.token is not None and self._running():
                        self._ack(call.token)
        finally:
            self._busy = False
            driver.notify()

    async def background(self) -> None:
        """The client's task: make the calls as the group's notices arrive."""
        driver, router = self._driver, self._router
        while self._running():
            if router.notices and not self._busy:
                await self.run()
                continue
            await driver.wait_change(
                lambda: (bool(router.notices) and not self._busy) or not self._running(),
                driver.clock() + _IDLE_S,
            )

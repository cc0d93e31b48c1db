"""The client surface shared by the asyncio and trio clients.

Theory of operation
-------------------
On an event loop a user call reaches the core directly: it issues its
command through the driver (:mod:`kafkacore.transports._client_common` says what
each call does) and awaits a one-shot the core's completion event fills.
Because a command is issued when the coroutine starts,
``gather(*(client.send(r) for r in reqs))`` pipelines the requests on the
wire. A caller that stops waiting (cancelled, timed out) cancels its
request in the core.

Subclasses supply the life (:class:`~kafkacore.transports._common.ClientState`):
asyncio starts on first use, trio needs ``async with``; both report a
call made in the wrong state through ``_running``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kafkacore.client import ClusterMetadata, KafkaClientCore, Target
from kafkacore.errors import RequestCancelled

from ._async_driver import AsyncDriver
from ._client_common import ClientSurface
from ._common import ClientState, bound_ms, resolve_target

__all__ = ["AsyncClientBase"]


class AsyncClientBase(ClientSurface):
    """asyncio and trio clients; see the module docstring."""

    _NAME = "AsyncClient"
    _driver: AsyncDriver
    _core: KafkaClientCore | None = None

    def _running(self, what: str) -> KafkaClientCore:
        """The core, or a LocalProtocolError saying why there is none now."""
        raise NotImplementedError

    def _attach(self) -> None:
        self._core = self._driver.attach(self._build_core, self._router.on_event)
        self._state = ClientState.RUNNING

    async def connect(self, timeout: float | None = None) -> None:
        """Wait until cluster metadata arrived (bootstrap done), at most ``timeout``
        s (default ``request_timeout_ms``); refused connections are retried with
        the reconnect backoff meanwhile.

        Raises ``NoBrokersAvailable`` (naming each bootstrap server's last
        error) when no broker was reached by then.
        """
        core = self._running("connect")
        waiter = self._driver.waiter()
        ms = bound_ms(f"{self._NAME}.connect", timeout)
        self._driver.call(
            lambda now: self._router.expect_bootstrap(
                waiter.fill, lambda: core.wait_bootstrapped(now=now, timeout_ms=ms)
            )
        )
        await waiter

    async def close(self, timeout: float = 5.0) -> None:
        """Say goodbye (KIP-714's terminating push, at most ``timeout`` s), then
        cancel everything and close every connection."""
        if self._state is ClientState.RUNNING and self._core is not None:
            await self._driver.farewell(timeout)
        self._shutdown()
        await self._driver.yield_()  # let aborted connections run their callbacks

    def _shutdown(self) -> None:
        if self._state is ClientState.CLOSED:
            return
        old, self._state = self._state, ClientState.CLOSED
        core = self._core
        if old is ClientState.RUNNING and core is not None:
            self._driver.call(lambda now: core.shutdown(now=now))
            self._driver.abort()
        self._router.fail_all(RequestCancelled(f"{self._NAME} closed"))

    # -- requests -----------------------------------------------------------
    async def send(
        self,
        request: Any,
        *,
        node_id: int | None = None,
        target: Target | None = None,
        lane: str | None = None,
        timeout_ms: int | None = None,
    ) -> Any:
        """Send ``request`` and return its decoded response (or raise its error)."""
        dest = resolve_target(f"{self._NAME}.send", node_id, target)
        core = self._running("send")
        waiter = self._driver.waiter()
        handle = self._driver.call(
            lambda now: self._issue(
                core,
                request,
                target=dest,
                lane=lane,
                timeout_ms=timeout_ms,
                done=waiter.fill,
                now=now,
            )
        )
        try:
            return await waiter
        except BaseException:
            # Cancelled (or interrupted) while waiting: withdraw the request.
            if not handle.done and self._state is ClientState.RUNNING:
                self._driver.call(lambda now: self._withdraw(core, handle, now))
            raise

    # -- metadata -----------------------------------------------------------
    async def metadata(self, topics: Sequence[str] | None = None) -> ClusterMetadata:
        """Refresh metadata (tracking ``topics`` too) and return the live view."""
        core = self._running("metadata")
        waiter = self._driver.waiter()
        self._driver.call(lambda now: self._refresh(core, topics, waiter.fill, now))
        await waiter
        return core.cluster

    def cluster(self) -> ClusterMetadata:
        """The core's live cluster metadata (same thread: no copy needed)."""
        return self._running("cluster").cluster

    def run_on_loop(self, fn: Callable[[KafkaClientCore], Any]) -> Any:
        """Call ``fn(core)`` and pump the core afterwards (for queries and commands)."""
        core = self._running("run_on_loop")
        return self._driver.call(lambda now: fn(core))

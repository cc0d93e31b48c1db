"""The trio transport's driver: one core driven by tasks in the owner's nursery.

Theory of operation
-------------------
trio wants every task inside a nursery, so :class:`TrioDriver` is opened
with ``await open()`` (from the owner's ``async with``) and closed with
``await close()``. Between the two, the nursery holds the timer task and
one task per broker connection (:class:`~kafkacore.transports._trio_io.TrioIo`).
:meth:`abort` cancels those tasks through their own scopes; the nursery's
scope is left alone, since it encloses the user's ``async with`` body
(:meth:`cancel_all` cancels it too, when the block is over).

A :class:`Delivery` (a ``trio.Event`` plus the outcome) is the one-shot
every completion fills; the change signal is a ``trio.Event`` replaced
once set. See :mod:`kafkacore.transports._async_driver` for the contract.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Generator
from typing import Any

import trio

from kafkacore.client.events import CredentialsNeeded
from kafkacore.errors import KafkaTimeoutError, LocalProtocolError

from ._async_driver import AsyncDriver, Waiter
from ._common import Parts
from ._credentials import fulfil_trio
from ._trio_io import TrioIo

__all__ = ["Delivery", "TrioDriver"]


class Delivery:
    """One awaited outcome: ``await`` it (or ``await d.wait()``) for the value."""

    __slots__ = ("_error", "_event", "_value")

    def __init__(self) -> None:
        self._event = trio.Event()
        self._value: Any = None
        self._error: BaseException | None = None

    def done(self) -> bool:
        return self._event.is_set()

    def fill(self, value: Any, error: BaseException | None) -> None:
        if self._event.is_set():
            return
        self._value, self._error = value, error
        self._event.set()

    def result(self) -> Any:
        if not self._event.is_set():
            raise LocalProtocolError("Delivery.result: still pending; await it")
        if self._error is not None:
            raise self._error
        return self._value

    async def wait(self) -> Any:
        await self._event.wait()
        return self.result()

    def __await__(self) -> Generator[Any, None, Any]:
        return self.wait().__await__()


class TrioDriver(AsyncDriver):
    """See the module docstring."""

    def __init__(self, owner: str, parts: Parts) -> None:
        super().__init__(owner, parts)
        self._nursery_cm: Any = None
        self._nursery: trio.Nursery | None = None
        self._io: TrioIo | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._changed = trio.Event()
        self._scopes: list[trio.CancelScope] = []
        #: Tasks inside wait_change now (close lets them see it closed, then returns).
        self.waiting = 0

    async def open(self) -> None:
        """Open the nursery (from the owner's ``__aenter__``)."""
        self._nursery_cm = trio.open_nursery()
        self._nursery = await self._nursery_cm.__aenter__()
        self._token = trio.lowlevel.current_trio_token()

    async def close(self) -> None:
        """Leave the nursery (its tasks must have been stopped: :meth:`abort`)."""
        await self._nursery_cm.__aexit__(None, None, None)

    def cancel_all(self) -> None:
        """Cancel the nursery's scope itself (the user's block is over)."""
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()

    def _make_io(self) -> TrioIo:
        assert self._nursery is not None, "open() the driver first"
        self._io = TrioIo(
            self._nursery,
            sockets=self.parts.sockets,
            ssl_context=self.parts.ssl_context_factory(),
            ssl_server_hostname=self.parts.ssl_server_hostname,
        )
        return self._io

    def _fulfil_credentials(self, event: CredentialsNeeded) -> None:
        # In the driver's nursery: a blocking provider runs in a worker thread.
        assert self._nursery is not None, "open() the driver first"
        self._nursery.start_soon(fulfil_trio, event, self.bridge.answer_credentials)

    def _started(self) -> None:
        assert self._nursery is not None and self._io is not None
        self._nursery.start_soon(self._io.run_timer)

    def clock(self) -> float:
        return trio.current_time()

    def waiter(self) -> Delivery:
        return Delivery()

    async def wait(
        self, waiter: Waiter, timeout: float | None, what: str, *, shared: bool = False
    ) -> Any:
        assert isinstance(waiter, Delivery)
        with trio.move_on_after(math.inf if timeout is None else timeout):
            return await waiter.wait()
        raise KafkaTimeoutError(f"{what}: not finished within {timeout} s")

    def notify(self) -> None:
        self._changed.set()

    async def wait_change(self, changed: Callable[[], bool], deadline: float) -> None:
        if changed():
            return
        if self._changed.is_set():
            self._changed = trio.Event()
        self.waiting += 1
        try:
            with trio.move_on_at(deadline):
                await self._changed.wait()
        finally:
            self.waiting -= 1

    def call_soon(self, fn: Callable[[], None]) -> None:
        assert self._token is not None
        self._token.run_sync_soon(fn)

    def spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        assert self._nursery is not None, "open() the driver first"
        scope = trio.CancelScope()
        self._scopes.append(scope)

        async def run() -> None:
            with scope:
                await fn()

        self._nursery.start_soon(run)

    async def yield_(self) -> None:
        await trio.lowlevel.checkpoint()

    async def checkpoint(self) -> None:
        await trio.lowlevel.checkpoint()

    def abort(self) -> None:
        for scope in self._scopes:
            scope.cancel()
        if self._io is not None:
            self._io.abort_all()

"""The asyncio transport's driver: one core on the running asyncio loop.

Theory of operation
-------------------
:class:`AsyncioDriver` binds to the loop it is attached on: connections
are the :class:`~kafkacore.transports._asyncio_io.AsyncioIo` protocols, the core's
timer one ``loop.call_at`` handle. A :class:`Delivery` (an
``asyncio.Future`` with ``fill``) is the one-shot every completion fills;
the change signal is one ``asyncio.Event``. See
:mod:`kafkacore.transports._async_driver` for the contract.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from kafkacore.client.events import CredentialsNeeded
from kafkacore.errors import KafkaTimeoutError

from ._async_driver import AsyncDriver, Waiter
from ._asyncio_io import AsyncioIo
from ._common import Parts
from ._credentials import fulfil_asyncio

__all__ = ["AsyncioDriver", "Delivery"]


class Delivery(asyncio.Future[Any]):
    """One awaited outcome (for a producer: await it for the RecordMetadata)."""

    def fill(self, value: Any, error: BaseException | None) -> None:
        if self.done():
            return  # cancelled by the user meanwhile
        if error is not None:
            self.set_exception(error)
        else:
            self.set_result(value)


class AsyncioDriver(AsyncDriver):
    """See the module docstring."""

    def __init__(self, owner: str, parts: Parts) -> None:
        super().__init__(owner, parts)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._io: AsyncioIo | None = None
        self._changed = asyncio.Event()
        self._credential_tasks: set[asyncio.Task[None]] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        #: Tasks inside wait_change now (close lets them see it closed, then returns).
        self.waiting = 0

    def _make_io(self) -> AsyncioIo:
        self.loop = asyncio.get_running_loop()
        self._io = AsyncioIo(
            self.loop,
            sockets=self.parts.sockets,
            ssl_context=self.parts.ssl_context_factory(),
            ssl_server_hostname=self.parts.ssl_server_hostname,
        )
        return self._io

    def _fulfil_credentials(self, event: CredentialsNeeded) -> None:
        # A coroutine provider is awaited; a blocking one runs in the executor.
        task = asyncio.get_running_loop().create_task(
            fulfil_asyncio(event, self.bridge.answer_credentials)
        )
        self._credential_tasks.add(task)
        task.add_done_callback(self._credential_tasks.discard)

    def on_own_loop(self) -> bool:
        """True when called from the loop the driver was attached on."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        return loop is self.loop

    def clock(self) -> float:
        loop = self.loop if self.loop is not None else asyncio.get_running_loop()
        return loop.time()

    def waiter(self) -> Delivery:
        return Delivery(loop=self.loop if self.loop is not None else asyncio.get_running_loop())

    async def wait(
        self, waiter: Waiter, timeout: float | None, what: str, *, shared: bool = False
    ) -> Any:
        assert isinstance(waiter, Delivery)
        if timeout is None:
            return await waiter
        try:
            # A timeout cancels what wait_for awaits: never a shared waiter.
            return await asyncio.wait_for(asyncio.shield(waiter) if shared else waiter, timeout)
        except TimeoutError:
            raise KafkaTimeoutError(f"{what}: not finished within {timeout} s") from None

    def notify(self) -> None:
        self._changed.set()

    async def wait_change(self, changed: Callable[[], bool], deadline: float) -> None:
        if changed():
            return
        self._changed.clear()
        self.waiting += 1
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), deadline - self.clock())
        finally:
            self.waiting -= 1

    def call_soon(self, fn: Callable[[], None]) -> None:
        assert self.loop is not None
        self.loop.call_soon(fn)

    def spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        assert self.loop is not None

        async def run() -> None:
            await fn()

        task = self.loop.create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def yield_(self) -> None:
        await asyncio.sleep(0)

    def abort(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._io is not None:
            self._io.abort_all()

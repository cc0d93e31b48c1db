"""asyncio share consumer (KIP-932): the sans-IO share core on the running event loop.

The surface is :class:`~kafkacore.transports._share_common.AsyncShareBase`;
this module binds it to asyncio: the consumer starts lazily on the running
loop (or in ``async with``), ``commit_async`` returns an ``asyncio.Future``.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any

from kafkacore.errors import LocalProtocolError
from kafkacore.share import ShareConsumerCore

from ._asyncio_driver import AsyncioDriver, Delivery
from ._common import Parts
from ._share_common import AsyncShareBase, ShareState

__all__ = ["AsyncKafkaShareConsumer"]


class AsyncKafkaShareConsumer(AsyncShareBase):
    """asyncio share consumer; options as ClientConfig + ShareConsumerConfig."""

    _NAME = "AsyncKafkaShareConsumer"

    def _new_driver(self, parts: Parts) -> AsyncioDriver:
        return AsyncioDriver(self._NAME, parts)

    def start(self) -> None:
        """Bind to the running loop (idempotent); subscribes to the constructor's topics."""
        if self._state is ShareState.CLOSED:
            raise LocalProtocolError(f"{self._NAME}.start: closed; make a new share consumer")
        if self._state is ShareState.NEW:
            self._attach()

    async def __aenter__(self) -> AsyncKafkaShareConsumer:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def commit_async(self) -> asyncio.Future[Any]:
        """Send every acknowledgement so far; await the future (or don't) for the outcome."""
        waiter = self._waiter(self._commit_command(), "commit_async")
        assert isinstance(waiter, Delivery)
        return waiter

    def _running(self, what: str) -> ShareConsumerCore:
        if self._state is ShareState.NEW:
            self.start()
        if self._state is ShareState.CLOSED:
            raise LocalProtocolError(f"{self._NAME}.{what}: closed; make a new share consumer")
        assert self._core is not None
        return self._core

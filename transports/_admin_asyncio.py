"""asyncio Kafka admin client: the sans-IO admin core on the running event loop.

Theory of operation
-------------------
:class:`AsyncKafkaAdminClient` drives one :class:`~kafkacore.admin.AdminCore`
from the loop it was started on, with the asyncio driver
(:class:`~kafkacore.transports._asyncio_driver.AsyncioDriver`), as the asyncio
consumer does. The calls are the async admin surface
(:mod:`kafkacore.transports._admin_async`); this module adds the life, aiokafka's
``await start()`` / ``await close()`` or ``async with``::

    NEW --start()/async with/first call--> RUNNING --close()--> CLOSED
"""

from __future__ import annotations

from types import TracebackType

from kafkacore.admin import AdminCore
from kafkacore.errors import LocalProtocolError

from ._admin_async import AsyncAdminBase
from ._asyncio_driver import AsyncioDriver
from ._common import Parts

__all__ = ["AsyncKafkaAdminClient"]


class AsyncKafkaAdminClient(AsyncAdminBase):
    """asyncio admin client; see the module docstring and ``docs/admin.md``.

    Options as ``ClientConfig`` + ``AdminConfig``. Every call takes
    ``timeout=`` in seconds (default: ``default_api_timeout_ms``); the
    kafka-python-shaped calls also take its ``timeout_ms=``.
    """

    _NAME = "AsyncKafkaAdminClient"

    def _new_driver(self, parts: Parts) -> AsyncioDriver:
        return AsyncioDriver(self._NAME, parts)

    async def start(self) -> None:
        """Bind to the running loop (idempotent); connections open on the first call."""
        if self._closed:
            raise LocalProtocolError(f"{self._NAME}.start: closed; make a new admin client")
        if self._core is None:
            self._attach()

    async def __aenter__(self) -> AsyncKafkaAdminClient:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def _running(self, what: str) -> AdminCore:
        if self._closed:
            raise LocalProtocolError(f"{what}: the admin client is closed; make a new one")
        if self._core is None:
            self._attach()
        assert self._core is not None
        return self._core

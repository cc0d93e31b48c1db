"""trio Kafka admin client: the sans-IO admin core driven by tasks in its own nursery.

Theory of operation
-------------------
:class:`TrioKafkaAdminClient` is used as ``async with TrioKafkaAdminClient(...) as a``:
entering opens the trio driver's nursery
(:class:`~kafkacore.transports._trio_driver.TrioDriver`: the timer task and one task
per broker connection), as the trio consumer does. The calls are the async
admin surface (:mod:`kafkacore.transports._admin_async`). Leaving the block fails
what is pending with ``RequestCancelled`` and stops every task, which
closes every socket.
"""

from __future__ import annotations

from types import TracebackType

from kafkacore.admin import AdminCore
from kafkacore.errors import LocalProtocolError

from ._admin_async import AsyncAdminBase
from ._common import Parts
from ._trio_driver import TrioDriver

__all__ = ["TrioKafkaAdminClient"]


class TrioKafkaAdminClient(AsyncAdminBase):
    """trio admin client; see the module docstring and ``docs/admin.md``.

    Options as ``ClientConfig`` + ``AdminConfig``. Every call takes
    ``timeout=`` in seconds (default: ``default_api_timeout_ms``); the
    kafka-python-shaped calls also take its ``timeout_ms=``.
    """

    _NAME = "TrioKafkaAdminClient"

    def _new_driver(self, parts: Parts) -> TrioDriver:
        self._trio = TrioDriver(self._NAME, parts)
        return self._trio

    async def __aenter__(self) -> TrioKafkaAdminClient:
        if self._closed or self._core is not None:
            state = "closed" if self._closed else "running"
            raise LocalProtocolError(f"{self._NAME}: cannot enter an admin client that is {state}")
        await self._trio.open()
        self._attach()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        # A clean exit says goodbye as close() does (KIP-714's terminating
        # push); leaving on an error or a cancellation does not wait.
        await self.close(5.0 if exc_type is None else 0.0)
        await self._trio.close()
        return False

    def _running(self, what: str) -> AdminCore:
        if self._closed:
            raise LocalProtocolError(f"{what}: the admin client is closed; make a new one")
        if self._core is None:
            raise LocalProtocolError(
                f"{what}: the admin client is not running; use 'async with {self._NAME}(...)'"
            )
        return self._core

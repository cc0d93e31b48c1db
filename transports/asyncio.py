"""asyncio Kafka client: the sans-IO core on the running event loop.

Theory of operation
-------------------
:class:`AsyncKafkaClient` owns one :class:`~kafkacore.client.KafkaClientCore`
and drives it from the loop it was started on
(:class:`~kafkacore.transports._asyncio_driver.AsyncioDriver`): connections are
``asyncio.Protocol`` objects, the timer is one ``loop.call_at`` handle, and
every user call issues a core command synchronously (we are on the loop
thread) and awaits an asyncio future that the core's completion event
resolves (:mod:`kafkacore.transports._client_async`, shared with trio). Because
commands are issued when the coroutine starts,
``asyncio.gather(*(client.send(r) for r in reqs))`` pipelines them on the
wire.

Cancelling an awaiting task cancels its request in the core. Client life
(:class:`ClientState`)::

    NEW --start()/connect()/async with--> RUNNING --close()--> CLOSED

``close()`` never waits on the network: it shuts the core down (pending
requests end with ``RequestCancelled``) and aborts every socket.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

from kafkacore.client import KafkaClientCore
from kafkacore.errors import LocalProtocolError

from ._asyncio_driver import AsyncioDriver
from ._client_async import AsyncClientBase
from ._common import ClientState
from ._lazy import ADMIN_TYPES, lazy_exports

if TYPE_CHECKING:
    from kafkacore.admin import ConfigResourceType

    from ._admin_acls import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        NoError,
        ResourcePattern,
        ResourcePatternFilter,
        ResourceType,
    )
    from ._admin_asyncio import AsyncKafkaAdminClient
    from ._admin_common import ConfigResource, NewPartitions, NewTopic
    from ._consumer_asyncio import AsyncKafkaConsumer
    from ._producer_asyncio import AsyncKafkaProducer
    from ._share_asyncio import AsyncKafkaShareConsumer

__all__ = [
    "ACL",
    "ACLFilter",
    "ACLOperation",
    "ACLPermissionType",
    "ACLResourcePatternType",
    "AsyncKafkaAdminClient",
    "AsyncKafkaClient",
    "AsyncKafkaConsumer",
    "AsyncKafkaProducer",
    "AsyncKafkaShareConsumer",
    "ClientState",
    "ConfigResource",
    "ConfigResourceType",
    "NewPartitions",
    "NewTopic",
    "NoError",
    "ResourcePattern",
    "ResourcePatternFilter",
    "ResourceType",
]

# The producer, consumer, share consumer and admin client load on first use
# (see _lazy): a program that only produces never imports the others.
if not TYPE_CHECKING:  # type checkers read the imports above
    __getattr__, __dir__ = lazy_exports(
        globals(),
        {
            **ADMIN_TYPES,
            "AsyncKafkaAdminClient": "._admin_asyncio",
            "AsyncKafkaConsumer": "._consumer_asyncio",
            "AsyncKafkaProducer": "._producer_asyncio",
            "AsyncKafkaShareConsumer": "._share_asyncio",
        },
    )


class AsyncKafkaClient(AsyncClientBase):
    """asyncio client; see the module docstring. Options as ``ClientConfig``."""

    _NAME = "AsyncKafkaClient"

    def _setup(self) -> None:
        self._asyncio = self._driver = AsyncioDriver(self._NAME, self._parts)

    def start(self) -> None:
        """Bind to the running loop and let the core open connections (idempotent)."""
        if self._state is ClientState.CLOSED:
            raise LocalProtocolError("AsyncKafkaClient.start: client is closed; make a new one")
        if self._state is ClientState.RUNNING:
            self._check_loop("start")
            return
        self._attach()

    async def __aenter__(self) -> AsyncKafkaClient:
        try:
            await self.connect()
        except BaseException:
            await self.close()  # __aexit__ will not run: leave nothing open
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def _running(self, what: str) -> KafkaClientCore:
        if self._state is ClientState.NEW:
            self.start()
        if self._state is ClientState.CLOSED:
            raise LocalProtocolError(f"AsyncKafkaClient.{what}: client is closed; make a new one")
        self._check_loop(what)
        assert self._core is not None
        return self._core

    def _check_loop(self, what: str) -> None:
        if not self._asyncio.on_own_loop():
            raise LocalProtocolError(
                f"AsyncKafkaClient.{what}: called outside the event loop the client started "
                "on; use one client per loop"
            )

"""trio Kafka client: the sans-IO core driven by tasks in the client's nursery.

Theory of operation
-------------------
:class:`TrioKafkaClient` is used as ``async with TrioKafkaClient(...) as c``:
entering opens a nursery holding the timer task and one task per broker
connection (:class:`~kafkacore.transports._trio_driver.TrioDriver`). Everything runs
in trio's single thread, so user calls issue core commands directly and
wait on a :class:`~kafkacore.transports._trio_driver.Delivery` (a ``trio.Event`` plus
the outcome) that the core's completion event fills
(:mod:`kafkacore.transports._client_async`, shared with asyncio). Several tasks
calling ``send`` at once pipeline their requests on the wire.

Cancelling a waiting task (a cancel scope, a timeout) cancels its request
in the core. Client life (:class:`ClientState`)::

    NEW --async with--> RUNNING --close()/exit--> CLOSED

Leaving the block (or ``close()``) is bounded: the core is shut down
(pending requests end with ``RequestCancelled``), and the timer and every
connection task are cancelled through their own scopes, which closes every
socket without waiting for the peer. The nursery's own scope is never
cancelled: it encloses the user's ``async with`` body.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

from kafkacore.client import KafkaClientCore
from kafkacore.errors import LocalProtocolError

from ._client_async import AsyncClientBase
from ._common import ClientState
from ._lazy import ADMIN_TYPES, lazy_exports
from ._trio_driver import TrioDriver

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
    from ._admin_common import ConfigResource, NewPartitions, NewTopic
    from ._admin_trio import TrioKafkaAdminClient
    from ._consumer_trio import TrioKafkaConsumer
    from ._producer_trio import TrioKafkaProducer
    from ._share_trio import TrioKafkaShareConsumer

__all__ = [
    "ACL",
    "ACLFilter",
    "ACLOperation",
    "ACLPermissionType",
    "ACLResourcePatternType",
    "ClientState",
    "ConfigResource",
    "ConfigResourceType",
    "NewPartitions",
    "NewTopic",
    "NoError",
    "ResourcePattern",
    "ResourcePatternFilter",
    "ResourceType",
    "TrioKafkaAdminClient",
    "TrioKafkaClient",
    "TrioKafkaConsumer",
    "TrioKafkaProducer",
    "TrioKafkaShareConsumer",
]

# The producer, consumer, share consumer and admin client load on first use
# (see _lazy): a program that only produces never imports the others.
if not TYPE_CHECKING:  # type checkers read the imports above
    __getattr__, __dir__ = lazy_exports(
        globals(),
        {
            **ADMIN_TYPES,
            "TrioKafkaAdminClient": "._admin_trio",
            "TrioKafkaConsumer": "._consumer_trio",
            "TrioKafkaProducer": "._producer_trio",
            "TrioKafkaShareConsumer": "._share_trio",
        },
    )


class TrioKafkaClient(AsyncClientBase):
    """trio client; see the module docstring. Options as ``ClientConfig``."""

    _NAME = "TrioKafkaClient"

    def _setup(self) -> None:
        self._trio = self._driver = TrioDriver(self._NAME, self._parts)

    async def __aenter__(self) -> TrioKafkaClient:
        if self._state is not ClientState.NEW:
            raise LocalProtocolError(
                f"TrioKafkaClient: cannot enter a client that is {self._state.value}; "
                "make a new one"
            )
        await self._trio.open()
        try:
            self._attach()
            await self.connect()
        except BaseException:
            # Leave the nursery cleanly and raise the error itself, not a
            # group wrapping it: a failed bootstrap is one plain error.
            self._shutdown()
            await self._trio.close()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if exc_type is None and self._state is ClientState.RUNNING and self._core is not None:
            # A clean exit says goodbye as close() does (KIP-714's terminating
            # push); leaving on an error or a cancellation does not wait.
            await self._driver.farewell(5.0)
        self._shutdown()
        # The block's own exception propagates unwrapped; the nursery only
        # holds our connection and timer tasks, which _shutdown cancelled.
        await self._trio.close()
        return False

    def inspect_core(self, fn: Callable[[KafkaClientCore], Any]) -> Any:
        """Call ``fn(core)`` in any state after entry, closed included (diagnostics)."""
        if self._core is None:
            raise LocalProtocolError("TrioKafkaClient.inspect_core: client was never entered")
        return fn(self._core)

    def _running(self, what: str) -> KafkaClientCore:
        if self._state is not ClientState.RUNNING:
            hint = (
                "use 'async with TrioKafkaClient(...)'"
                if self._state is ClientState.NEW
                else "make a new one"
            )
            raise LocalProtocolError(
                f"TrioKafkaClient.{what}: client is {self._state.value}; {hint}"
            )
        assert self._core is not None
        return self._core

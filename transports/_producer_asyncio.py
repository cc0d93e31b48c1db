"""asyncio Kafka producer: the producer core on the running event loop.

Theory of operation
-------------------
:class:`AsyncKafkaProducer` binds to the loop it is started on (``async
with`` or ``await start()``): connections are the asyncio backend's
protocols, the core's timer is one ``loop.call_at`` handle, and the
producer surface (:class:`~transports._producer_async.AsyncProducerBase`)
issues core commands directly since everything runs on the loop thread.
``await producer.send(...)`` returns a :class:`Delivery` (an
``asyncio.Future``) resolving to the record's
:class:`~kafkacore.producer.RecordMetadata`; ``send_and_wait`` awaits it
too.

Producer life (:class:`ProducerState`)::

    NEW --start()/async with--> RUNNING --close()--> CLOSED

``close(timeout)`` flushes for at most ``timeout`` seconds, then stops the
core (what is left fails with ProducerClosedError) and aborts every socket.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable
from types import TracebackType
from typing import Any

from kafkacore.errors import KafkaTimeoutError, LocalProtocolError

from ._asyncio_io import AsyncioIo
from ._bridge import Bridge
from ._producer_async import AsyncProducerBase, Slot

__all__ = ["AsyncKafkaProducer", "Delivery", "ProducerState"]


class ProducerState(enum.Enum):
    NEW = "new"
    RUNNING = "running"
    CLOSED = "closed"


class Delivery(asyncio.Future[Any]):
    """The outcome of one ``send``: await it for the RecordMetadata."""

    def fill(self, value: Any, error: BaseException | None) -> None:
        if error is not None:
            self.set_exception(error)
        else:
            self.set_result(value)


class AsyncKafkaProducer(AsyncProducerBase):
    """asyncio producer; see the module docstring. Options as ProducerConfig + ClientConfig."""

    _owner = "AsyncKafkaProducer"
    _loop: asyncio.AbstractEventLoop | None = None
    _io: AsyncioIo | None = None

    @property
    def state(self) -> ProducerState:
        if self._closed:
            return ProducerState.CLOSED
        return ProducerState.RUNNING if self._core is not None else ProducerState.NEW

    async def start(self) -> None:
        """Bind to the running loop; connections open on demand (idempotent)."""
        if self._closed:
            raise LocalProtocolError(f"{self._owner}.start: closed; make a new producer")
        if self._core is not None:
            return
        loop = asyncio.get_running_loop()
        parts = self._parts.parts
        io = AsyncioIo(
            loop,
            sockets=parts.sockets,
            ssl_context=parts.ssl_context_factory(),
            ssl_server_hostname=self._ssl_server_hostname,
        )
        core = self._parts.build_core(io.clock())
        bridge = Bridge(core, io, clock=io.clock, on_event=self._on_event)
        io.bridge = bridge
        self._loop, self._io = loop, io
        self._attach(core, bridge)
        bridge.pump()

    async def __aenter__(self) -> AsyncKafkaProducer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self, timeout: float | None = None) -> None:
        """Flush for at most ``timeout`` s (None: until done), then stop; bounded."""
        await self._flush_then_stop(timeout)
        if self._io is not None:
            self._io.abort_all()
        await asyncio.sleep(0)  # let aborted transports run their callbacks

    # -- framework hooks --------------------------------------------------------
    def _new_slot(self) -> Slot:
        loop = self._loop if self._loop is not None else asyncio.get_running_loop()
        return Delivery(loop=loop)

    def _call_soon(self, fn: Callable[[], None]) -> None:
        assert self._loop is not None
        self._loop.call_soon(fn)

    def _clock(self) -> float:
        assert self._loop is not None
        return self._loop.time()

    async def _yield(self) -> None:
        await asyncio.sleep(0)

    async def _wait(self, slot: Slot, timeout: float | None, what: str) -> Any:
        assert isinstance(slot, Delivery)
        if timeout is None:
            return await slot
        try:
            return await asyncio.wait_for(asyncio.shield(slot), timeout)
        except TimeoutError:
            raise KafkaTimeoutError(
                f"{self._owner}.{what}: not finished within {timeout} s"
            ) from None

"""asyncio Kafka producer: the producer core on the running event loop.

Theory of operation
-------------------
:class:`AsyncKafkaProducer` binds to the loop it is started on (``async
with`` or ``await start()``) with the asyncio driver
(:class:`~kafkacore.transports._asyncio_driver.AsyncioDriver`), and the async
producer surface (:class:`~kafkacore.transports._producer_async.AsyncProducerBase`)
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

from types import TracebackType

from kafkacore.errors import LocalProtocolError

from ._asyncio_driver import AsyncioDriver, Delivery
from ._common import Parts
from ._producer_async import AsyncProducerBase
from ._producer_common import ProducerState

__all__ = ["AsyncKafkaProducer", "Delivery", "ProducerState"]


class AsyncKafkaProducer(AsyncProducerBase):
    """asyncio producer; see the module docstring. Options as ProducerConfig + ClientConfig."""

    _NAME = "AsyncKafkaProducer"

    def _new_driver(self, parts: Parts) -> AsyncioDriver:
        return AsyncioDriver(self._NAME, parts)

    async def start(self) -> None:
        """Bind to the running loop; connections open on demand (idempotent)."""
        if self._closed:
            raise LocalProtocolError(f"{self._NAME}.start: closed; make a new producer")
        if self._core is None:
            self._attach()

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
        self._driver.abort()
        await self._driver.yield_()  # let aborted transports run their callbacks

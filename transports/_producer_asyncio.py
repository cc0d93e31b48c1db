"""asyncio Kafka producer: the producer core on the running event loop.

Theory of operation
-------------------
:class:`AsyncKafkaProducer` binds to the loop it is started on (``async
with`` or ``await start()``) with the asyncio driver
(:class:`~kafkacore.transports._asyncio_driver.AsyncioDriver`), and the async
producer surface (:class:`~kafkacore.transports._producer_async.AsyncProducerBase`)
issues core commands directly since everything runs on the loop thread.
``await producer.send(...)`` returns a light future (awaitable, as
aiokafka's send future; its callbacks run through ``loop.call_soon``)
resolving to the record's :class:`~kafkacore.producer.RecordMetadata`;
``send_and_wait`` awaits it too. aiokafka's ``stop()`` is ``close()``.

Producer life (:class:`ProducerState`)::

    NEW --start()/async with--> RUNNING --close()--> CLOSED

``close(timeout)`` flushes for at most ``timeout`` seconds, then stops the
core (what is left fails with ProducerClosedError) and aborts every socket.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from types import TracebackType
from typing import Any

from kafkacore.errors import LocalProtocolError

from ._asyncio_driver import AsyncioDriver, Delivery
from ._common import Parts, ignore_loop
from ._producer_async import AsyncProducerBase
from ._producer_common import ProducerState
from ._producer_future import Idiom, LightFuture, run_callback

__all__ = ["AsyncKafkaProducer", "Delivery", "ProducerState"]


class _AsyncioIdiom(Idiom):
    """Callbacks through ``loop.call_soon`` (as asyncio futures); ``await`` on a loop future."""

    __slots__ = ("_driver",)

    def __init__(self, owner: str, driver: AsyncioDriver) -> None:
        super().__init__(owner)
        self._driver = driver

    def call(self, fn: Callable[[Any], object], fut: LightFuture) -> None:
        if type(fn) is _Wake:
            fn(fut)  # only sets a loop future: its task wakes through the loop
            return
        loop = self._driver.loop
        if loop is None:  # pragma: no cover - futures exist only once started
            run_callback(fn, fut)
        else:
            loop.call_soon(run_callback, fn, fut)

    def await_(self, fut: LightFuture) -> Generator[Any, None, Any]:
        loop = self._driver.loop or asyncio.get_running_loop()
        waiter = loop.create_future()
        fut.add_done_callback(_Wake(waiter))
        return (yield from waiter.__await__())


class _Wake:
    __slots__ = ("_waiter",)

    def __init__(self, waiter: asyncio.Future[Any]) -> None:
        self._waiter = waiter

    def __call__(self, fut: object) -> None:
        if not self._waiter.done():
            self._waiter.set_result(None)


class AsyncKafkaProducer(AsyncProducerBase):
    """asyncio producer; see the module docstring. Options as ProducerConfig + ClientConfig."""

    _NAME = "AsyncKafkaProducer"

    def __init__(self, *args: Any, loop: object = None, **options: Any) -> None:
        """Options as ProducerConfig + ClientConfig; ``loop`` as aiokafka's (ignored)."""
        ignore_loop(self._NAME, loop)
        super().__init__(*args, **options)

    def _new_driver(self, parts: Parts) -> AsyncioDriver:
        self._asyncio = AsyncioDriver(self._NAME, parts)
        return self._asyncio

    def _new_idiom(self) -> Idiom:
        return _AsyncioIdiom(self._NAME, self._asyncio)

    async def stop(self) -> None:
        """aiokafka's name for :meth:`close` (flush, then stop)."""
        await self.close()

    async def start(self) -> None:
        """Bind to the running loop (idempotent); a transactional producer also
        gets its producer id, as aiokafka's start does."""
        if self._closed:
            raise LocalProtocolError(f"{self._NAME}.start: closed; make a new producer")
        if self._core is None:
            self._attach()
            await self._start_transactions()

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

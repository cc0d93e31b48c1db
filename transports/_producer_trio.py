"""trio Kafka producer: the producer core driven by tasks in the producer's nursery.

Theory of operation
-------------------
:class:`TrioKafkaProducer` is used as ``async with TrioKafkaProducer(...)
as p``: entering opens the trio driver's nursery
(:class:`~kafkacore.transports._trio_driver.TrioDriver`: the timer task and one task
per broker connection). Everything runs in trio's thread, so the async
producer surface (:class:`~kafkacore.transports._producer_async.AsyncProducerBase`)
issues core commands directly; one pump per burst of sends is scheduled
with the trio token. ``await p.send(...)`` returns a light future;
``await fut`` (or ``await fut.wait()``) gives the record's
:class:`~kafkacore.producer.RecordMetadata`.

Producer life (:class:`ProducerState`)::

    NEW --async with--> RUNNING --close()/exit--> CLOSED

Leaving the block flushes (bounded by ``close_timeout``), stops the core
and cancels the nursery, which closes every socket.
"""

from __future__ import annotations

from collections.abc import Generator
from types import TracebackType
from typing import Any

import trio

from kafkacore.errors import LocalProtocolError

from ._common import Parts
from ._producer_async import AsyncProducerBase
from ._producer_common import ProducerState
from ._producer_future import Idiom, LightFuture
from ._trio_driver import Delivery, TrioDriver

__all__ = ["Delivery", "ProducerState", "TrioKafkaProducer"]


class _TrioIdiom(Idiom):
    """Callbacks at once (trio's thread); ``await`` on a ``trio.Event``."""

    __slots__ = ()

    def await_(self, fut: LightFuture) -> Generator[Any, None, Any]:
        event = trio.Event()
        fut.add_done_callback(lambda _: event.set())
        return (yield from event.wait().__await__())


class TrioKafkaProducer(AsyncProducerBase):
    """trio producer; see the module docstring. Options as ProducerConfig + ClientConfig."""

    _NAME = "TrioKafkaProducer"

    def __init__(self, *args: Any, close_timeout: float | None = 30.0, **kwargs: Any) -> None:
        """As ``AsyncKafkaProducer``; leaving the block flushes for ``close_timeout`` s."""
        self._close_timeout = close_timeout
        self._entered = False
        super().__init__(*args, **kwargs)

    def _new_driver(self, parts: Parts) -> TrioDriver:
        self._trio = TrioDriver(self._NAME, parts)
        return self._trio

    def _new_idiom(self) -> Idiom:
        return _TrioIdiom(self._NAME)

    async def __aenter__(self) -> TrioKafkaProducer:
        if self._entered:
            raise LocalProtocolError(f"{self._NAME}: already entered; make a new producer")
        self._entered = True
        await self._trio.open()
        self._attach()
        try:
            await self._start_transactions()
        except BaseException:
            self._shutdown()
            await self._trio.close()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            await self._flush_then_stop(self._close_timeout)
        self._shutdown()
        await self._trio.close()

    async def close(self, timeout: float | None = None) -> None:
        """Flush for at most ``timeout`` s, then stop; the ``async with`` block may go on."""
        await self._flush_then_stop(timeout)
        # The nursery's scope encloses the user's block: stop only our tasks.
        self._shutdown(cancel_nursery=False)
        await trio.lowlevel.checkpoint()

    def _shutdown(self, *, cancel_nursery: bool = True) -> None:
        self._stop_core()
        self._trio.abort()
        if cancel_nursery:
            self._trio.cancel_all()

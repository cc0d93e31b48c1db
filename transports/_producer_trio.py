"""trio Kafka producer: the producer core driven by tasks in the producer's nursery.

Theory of operation
-------------------
:class:`TrioKafkaProducer` is used as ``async with TrioKafkaProducer(...)
as p``: entering opens a nursery for the timer task and one task per broker
connection (the trio backend). Everything runs in trio's thread, so the
producer surface (:class:`~transports._producer_async.AsyncProducerBase`)
issues core commands directly; one pump per burst of sends is scheduled
with the trio token. ``await p.send(...)`` returns a :class:`Delivery`;
``await delivery`` (or ``await delivery.wait()``) gives the record's
:class:`~kafkacore.producer.RecordMetadata`.

Producer life (:class:`ProducerState`)::

    NEW --async with--> RUNNING --close()/exit--> CLOSED

Leaving the block flushes (bounded by ``close_timeout``), stops the core
and cancels the nursery, which closes every socket.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Generator
from types import TracebackType
from typing import Any

import trio

from kafkacore.errors import KafkaTimeoutError, LocalProtocolError

from ._bridge import Bridge
from ._producer_async import AsyncProducerBase, Slot
from ._trio_io import TrioIo

__all__ = ["Delivery", "ProducerState", "TrioKafkaProducer"]


class ProducerState(enum.Enum):
    NEW = "new"
    RUNNING = "running"
    CLOSED = "closed"


class Delivery:
    """The outcome of one ``send``: ``await`` it for the RecordMetadata."""

    __slots__ = ("_error", "_event", "_value")

    def __init__(self) -> None:
        self._event = trio.Event()
        self._value: Any = None
        self._error: BaseException | None = None

    def done(self) -> bool:
        return self._event.is_set()

    def fill(self, value: Any, error: BaseException | None) -> None:
        if self._event.is_set():
            return
        self._value, self._error = value, error
        self._event.set()

    def result(self) -> Any:
        if not self._event.is_set():
            raise LocalProtocolError("Delivery.result: still pending; await it")
        if self._error is not None:
            raise self._error
        return self._value

    async def wait(self) -> Any:
        await self._event.wait()
        return self.result()

    def __await__(self) -> Generator[Any, None, Any]:
        return self.wait().__await__()


class TrioKafkaProducer(AsyncProducerBase):
    """trio producer; see the module docstring. Options as ProducerConfig + ClientConfig."""

    _owner = "TrioKafkaProducer"

    def __init__(self, *args: Any, close_timeout: float | None = 30.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._close_timeout = close_timeout
        self._nursery_cm: Any = None
        self._nursery: trio.Nursery | None = None
        self._io: TrioIo | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._entered = False

    @property
    def state(self) -> ProducerState:
        if self._closed:
            return ProducerState.CLOSED
        return ProducerState.RUNNING if self._core is not None else ProducerState.NEW

    async def __aenter__(self) -> TrioKafkaProducer:
        if self._entered:
            raise LocalProtocolError(f"{self._owner}: already entered; make a new producer")
        self._entered = True
        self._nursery_cm = trio.open_nursery()
        nursery = await self._nursery_cm.__aenter__()
        parts = self._parts.parts
        io = TrioIo(
            nursery,
            sockets=parts.sockets,
            ssl_context=parts.ssl_context_factory(),
            ssl_server_hostname=self._ssl_server_hostname,
        )
        core = self._parts.build_core(io.clock())
        bridge = Bridge(core, io, clock=io.clock, on_event=self._on_event)
        io.bridge = bridge
        self._nursery, self._io = nursery, io
        self._token = trio.lowlevel.current_trio_token()
        self._attach(core, bridge)
        nursery.start_soon(io.run_timer)
        bridge.pump()
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
        await self._nursery_cm.__aexit__(None, None, None)

    async def close(self, timeout: float | None = None) -> None:
        """Flush for at most ``timeout`` s, then stop; the ``async with`` block may go on."""
        await self._flush_then_stop(timeout)
        # The nursery's scope encloses the user's block: stop only our tasks.
        self._shutdown(cancel_nursery=False)
        await trio.lowlevel.checkpoint()

    def _shutdown(self, *, cancel_nursery: bool = True) -> None:
        self._stop_core()
        if self._io is not None:
            self._io.abort_all()
        if cancel_nursery and self._nursery is not None:
            self._nursery.cancel_scope.cancel()

    # -- framework hooks --------------------------------------------------------
    def _new_slot(self) -> Slot:
        return Delivery()

    def _call_soon(self, fn: Callable[[], None]) -> None:
        assert self._token is not None
        self._token.run_sync_soon(fn)

    def _clock(self) -> float:
        return trio.current_time()

    async def _yield(self) -> None:
        await trio.lowlevel.checkpoint()

    async def _wait(self, slot: Slot, timeout: float | None, what: str) -> Any:
        assert isinstance(slot, Delivery)
        with trio.move_on_after(math.inf if timeout is None else timeout):
            return await slot.wait()
        raise KafkaTimeoutError(f"{self._owner}.{what}: not finished within {timeout} s")

"""The producer's light futures: one small object per record, on every transport.

Theory of operation
-------------------
``send`` hands the core a :class:`RecordFuture` as the record's token. It
holds four slots and no lock, condition or event of its own: when the
record's batch completes, :func:`~kafkacore.transports._producer_fanout.fan_out`
stores the batch's :class:`~kafkacore.producer.BatchCompleted` and the
record's index in it, and runs the callbacks if there are any. The
:class:`~kafkacore.producer.RecordMetadata` is made only when asked for.

What depends on the I/O style is one :class:`Idiom` per producer, shared by
all its futures:

* how a blocking ``result()``/``get()`` waits: the blocking producer's
  idiom waits on the producer's one condition (filled batches notify it
  only when someone waits) and refuses at once on the producer's I/O
  thread, where the wait could never end (the record completes on that
  very thread); the async idioms never block (``await`` the future);
* how a callback runs: at once on the thread that completed the future
  (blocking, trio), or through ``loop.call_soon`` on asyncio, as asyncio's
  own futures do;
* how ``await`` waits (asyncio: a loop future made on the first await of a
  pending record; trio: an Event).

The surface is the union of what users of the other clients call on a
send's future: ``concurrent.futures``/asyncio (``done``, ``result``,
``exception``, ``add_done_callback``, ``cancel`` which always says False:
a record in the buffer cannot be taken back) and kafka-python's
``FutureRecordMetadata`` (``get(timeout=)``, ``add_callback(fn, *args)``,
``add_errback(fn, *args)``, ``add_both``, ``succeeded()``, ``failed()``,
``is_done``, ``value``). A callback that raises is logged on
``kafkacore.producer`` and does not stop the others.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Generator
from typing import Any, Protocol

from kafkacore.errors import KafkaTimeoutError, LocalProtocolError
from kafkacore.producer import BatchCompleted, RecordMetadata

__all__ = [
    "Idiom",
    "LightFuture",
    "RecordFuture",
    "ThreadIdiom",
    "WaitTimeoutError",
    "failed_outcome",
]

_monotonic = time.monotonic

_log = logging.getLogger("kafkacore.producer")


class Idiom:
    """How the futures of one producer wait and call back (the async default:
    never block, callbacks at once); the transports subclass it."""

    __slots__ = ("owner",)

    #: Entered around adding a callback and around filling (a no-op on one thread).
    lock: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()

    def __init__(self, owner: str) -> None:
        self.owner = owner

    def block(self, fut: LightFuture, timeout: float | None, what: str) -> None:
        """Wait until ``fut`` is done (at most ``timeout`` s), or raise why not."""
        raise LocalProtocolError(
            f"{self.owner}: {what} on a record that is still pending; "
            "await the future (or add a callback) instead"
        )

    def call(self, fn: Callable[[Any], object], fut: LightFuture) -> None:
        """Run a done callback ``fn(fut)``."""
        run_callback(fn, fut)

    def await_(self, fut: LightFuture) -> Generator[Any, None, Any]:
        raise TypeError(f"{self.owner}: its futures are not awaitable; call result()")
        yield  # pragma: no cover - makes this a generator

    def filled(self) -> None:
        """Futures were filled (wake blocked waiters, if the idiom has any)."""
        return None


def run_callback(fn: Callable[[Any], object], arg: Any) -> None:
    try:
        fn(arg)
    except Exception:
        _log.exception("producer: a delivery callback %r raised; the others still run", fn)


class _Settled:
    """The outcome of a future that is not a record's (``send_many``), or of a
    record that failed before reaching a batch."""

    __slots__ = ("error", "value")

    def __init__(self, value: Any, error: BaseException | None) -> None:
        self.value = value
        self.error = error


def failed_outcome(error: BaseException) -> _Settled:
    return _Settled(None, error)


class LightFuture:
    """A one-shot outcome without a lock of its own; see the module docstring."""

    __slots__ = ("_callbacks", "_idiom", "_outcome")

    def __init__(self, idiom: Idiom) -> None:
        self._idiom = idiom
        self._outcome: Any = None
        self._callbacks: list[Callable[[Any], object]] | None = None

    # -- filling (the producer's side) --------------------------------------
    def fill(self, value: Any, error: BaseException | None) -> None:
        """Resolve once; does nothing when done already."""
        if self._outcome is not None:
            return
        self._outcome = _Settled(value, error)
        if self._callbacks is not None:
            self._run_callbacks()

    def _run_callbacks(self) -> None:
        callbacks, self._callbacks = self._callbacks, None
        call = self._idiom.call
        for fn in callbacks or ():
            call(fn, self)

    def _value(self) -> Any:
        """The value of a done future, or raise its error."""
        settled: _Settled = self._outcome
        if settled.error is not None:
            raise settled.error
        return settled.value

    def _error(self) -> BaseException | None:
        error: BaseException | None = self._outcome.error
        return error

    # -- concurrent.futures / asyncio ------------------------------------------
    def done(self) -> bool:
        return self._outcome is not None

    def result(self, timeout: float | None = None) -> Any:
        """The value (blocking transport: waits at most ``timeout`` s); raises the error."""
        if self._outcome is None:
            self._idiom.block(self, timeout, "result()")
        return self._value()

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if self._outcome is None:
            self._idiom.block(self, timeout, "exception()")
        return self._error()

    def add_done_callback(self, fn: Callable[[Any], object], *, context: Any = None) -> None:
        """``fn(future)`` once done (at once if done already; asyncio: soon)."""
        with self._idiom.lock:
            if self._outcome is None:
                if self._callbacks is None:
                    self._callbacks = [fn]
                else:
                    self._callbacks.append(fn)
                return
        self._idiom.call(fn, self)

    def remove_done_callback(self, fn: Callable[[Any], object]) -> int:
        """Forget ``fn`` (as asyncio's futures); returns how many were removed."""
        with self._idiom.lock:
            callbacks = self._callbacks
            if not callbacks:
                return 0
            kept = [cb for cb in callbacks if cb != fn]
            self._callbacks = kept or None
            return len(callbacks) - len(kept)

    def cancel(self) -> bool:
        """A record handed to the producer cannot be taken back: always False."""
        return False

    def cancelled(self) -> bool:
        return False

    def running(self) -> bool:
        return self._outcome is None

    def __await__(self) -> Generator[Any, None, Any]:
        if self._outcome is None:
            yield from self._idiom.await_(self)
        return self._value()

    async def wait(self) -> Any:
        """``await fut.wait()``: the same as ``await fut``."""
        return await self

    # -- kafka-python's Future ------------------------------------------------
    def get(self, timeout: float | None = None) -> Any:
        """kafka-python's name for ``result``: KafkaTimeoutError after ``timeout`` s."""
        return self.result(timeout)

    @property
    def is_done(self) -> bool:
        return self._outcome is not None

    @property
    def value(self) -> Any:
        """The value once succeeded, else None."""
        if self._outcome is None or self._error() is not None:
            return None
        return self._value()

    def succeeded(self) -> bool:
        return self._outcome is not None and self._error() is None

    def failed(self) -> bool:
        return self._outcome is not None and self._error() is not None

    def add_callback(self, fn: Callable[..., object], *args: Any, **kwargs: Any) -> LightFuture:
        """kafka-python: ``fn(*args, value, **kwargs)`` on success."""

        def on_done(fut: LightFuture) -> None:
            if fut._error() is None:
                fn(*args, fut._value(), **kwargs)

        self.add_done_callback(on_done)
        return self

    def add_errback(self, fn: Callable[..., object], *args: Any, **kwargs: Any) -> LightFuture:
        """kafka-python: ``fn(*args, exception, **kwargs)`` on failure."""

        def on_done(fut: LightFuture) -> None:
            error = fut._error()
            if error is not None:
                fn(*args, error, **kwargs)

        self.add_done_callback(on_done)
        return self

    def add_both(self, fn: Callable[..., object], *args: Any, **kwargs: Any) -> LightFuture:
        """kafka-python: ``fn`` as both callback and errback."""
        return self.add_callback(fn, *args, **kwargs).add_errback(fn, *args, **kwargs)

    def __repr__(self) -> str:
        if self._outcome is None:
            return f"<{type(self).__name__} pending>"
        error = self._error()
        if error is not None:
            return f"<{type(self).__name__} failed: {error!r}>"
        return f"<{type(self).__name__} {self._value()!r}>"


class RecordFuture(LightFuture):
    """One record's outcome: its batch's ``BatchCompleted`` and its index there."""

    __slots__ = ("_index",)

    _index: int

    def _value(self) -> Any:
        event = self._outcome
        if type(event) is not BatchCompleted:
            return super()._value()
        if event.error is not None:
            raise event.error
        i = self._index
        base = event.base_offset
        lat = event.log_append_time
        return RecordMetadata(
            event.topic,
            event.partition,
            base + i if base >= 0 else -1,
            lat if lat >= 0 else event.timestamps[i],
        )


class ThreadIdiom(Idiom):
    """The blocking producer's futures: wait on the core lock's condition; refuse
    to wait on the producer's I/O thread (``loop.on_loop``)."""

    __slots__ = ("broken", "cond", "lock", "loop", "waiters")

    def __init__(self, owner: str, lock: Any, loop: _OnLoop) -> None:
        super().__init__(owner)
        self.lock = lock
        self.cond = threading.Condition(lock)
        self.loop = loop
        self.waiters = 0
        #: Why no future will ever be filled any more (the loop crashed).
        self.broken: BaseException | None = None

    def check_off_loop(self, what: str) -> None:
        if self.loop.on_loop:
            raise LocalProtocolError(
                f"{self.owner}.{what}: called on the producer's I/O thread (from a delivery "
                "callback): it would wait for that very thread and deadlock; use a callback "
                "(add_callback, on_delivery), or wait from your own thread"
            )

    def block(self, fut: LightFuture, timeout: float | None, what: str) -> None:
        self.check_off_loop(what)
        deadline = None if timeout is None else _monotonic() + timeout
        with self.cond:
            self.waiters += 1
            try:
                while fut._outcome is None:
                    if self.broken is not None:
                        raise self.broken
                    if deadline is None:
                        self.cond.wait()
                        continue
                    remaining = deadline - _monotonic()
                    if remaining <= 0:
                        raise WaitTimeoutError(f"{self.owner}: {what} not done within {timeout} s")
                    self.cond.wait(remaining)
            finally:
                self.waiters -= 1

    def filled(self) -> None:
        if self.waiters:
            self.cond.notify_all()  # the loop holds the lock while it fills


class _OnLoop(Protocol):
    @property
    def on_loop(self) -> bool: ...


class WaitTimeoutError(KafkaTimeoutError, TimeoutError):
    """``result(timeout)``/``get(timeout)`` gave up: both kafka-python's
    ``KafkaTimeoutError`` and ``concurrent.futures``' ``TimeoutError``."""

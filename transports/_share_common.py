"""What every share consumer does, whatever its I/O idiom (KIP-932).

Theory of operation
-------------------
The three share consumers (blocking, asyncio, trio) offer Java's
``KafkaShareConsumer`` surface. As for the consumers
(:mod:`kafkacore.transports._consumer_common`), what a call *does* is
written once here, in :class:`ShareSurface`; an idiom supplies ``_call``
(run ``fn(core, now)`` on the loop), ``_clock`` and ``_notify``, and how it
waits: ``poll`` is a generator of :class:`~kafkacore.transports._consumer_common.Wait`
steps, ``commit`` and ``close`` are core commands returning an
:class:`~kafkacore.operation.Operation`.

The acknowledgement-commit callback (Java's ``AcknowledgementCommitCallback``)
runs in the user's thread or task, as in Java: the router queues each
``AcknowledgementsCommitted`` event, and ``poll``, ``commit_sync`` and
``close`` call the callback for what is queued.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import random
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import fields
from typing import Any, TypeVar

from kafkacore.client import TopicPartition
from kafkacore.errors import RequestCancelled
from kafkacore.operation import Operation, OperationCompleted
from kafkacore.options import Role
from kafkacore.share import (
    AcknowledgementsCommitted,
    AcknowledgeType,
    ShareConsumerConfig,
    ShareConsumerCore,
    ShareGroupFailed,
    ShareRecord,
)

from ._async_driver import AsyncDriver, Waiter
from ._common import Parts, make_parts
from ._consumer_common import Steps, Wait
from ._router import Completion
from ._sockets import Address

__all__ = [
    "AckCallback",
    "AsyncShareBase",
    "ShareCommand",
    "ShareRouter",
    "ShareState",
    "ShareSurface",
]

T = TypeVar("T")
ShareCommand = Callable[[ShareConsumerCore, float], T]
#: ``callback(offsets, error)``: offsets per partition whose acknowledgements were answered.
AckCallback = Callable[[dict[TopicPartition, frozenset[int]], BaseException | None], None]

log = logging.getLogger("kafkacore.share")
log.addHandler(logging.NullHandler())

_SHARE_OPTIONS = frozenset(f.name for f in fields(ShareConsumerConfig) if f.init)


class ShareState(enum.Enum):
    NEW = "new"
    RUNNING = "running"
    CLOSED = "closed"


class ShareRouter:
    """Routes share-core events: operations to their completions, answered
    acknowledgements to a queue the user's calls drain (bounded)."""

    __slots__ = ("_ops", "acked", "seq", "wake")

    def __init__(self, wake: Callable[[], None]) -> None:
        self._ops: dict[object, Completion] = {}
        self.acked: deque[AcknowledgementsCommitted] = deque(maxlen=100000)
        self.seq = 0
        self.wake = wake

    def expect(self, handle: Operation[Any], done: Completion) -> None:
        if handle.done:
            done(handle.value, handle.error)
        else:
            self._ops[handle] = done

    def fail_all(self, error: BaseException) -> None:
        ops, self._ops = self._ops, {}
        for done in ops.values():
            done(None, error)

    def on_event(self, event: object) -> None:
        if isinstance(event, OperationCompleted):
            done = self._ops.pop(event.handle, None)
            if done is not None:
                done(event.handle.value, event.handle.error)
        elif isinstance(event, AcknowledgementsCommitted):
            self.acked.append(event)
        elif isinstance(event, ShareGroupFailed):
            log.error("%s", event.error)
        self.seq += 1
        self.wake()


class ShareSurface:
    """The calls every share consumer offers; see the module docstring."""

    _NAME = "ShareConsumer"
    _state: ShareState

    def __init__(
        self,
        *topics: str,
        group_id: str,
        bootstrap_servers: str | Sequence[str] | None = "localhost:9092",
        source_address: Address | None = None,
        ssl_server_hostname: str | None = None,
        rng: random.Random | None = None,
        acknowledgement_commit_callback: AckCallback | None = None,
        **options: Any,
    ) -> None:
        """Options as ``ClientConfig`` + ``ShareConsumerConfig``."""
        share = {k: options.pop(k) for k in list(options) if k in _SHARE_OPTIONS}
        self._parts = make_parts(
            self._NAME,
            bootstrap_servers,
            role=Role.CLIENT,
            source_address=source_address,
            ssl_server_hostname=ssl_server_hostname,
            rng=rng,
            options=options,
        )
        self.config = ShareConsumerConfig(group_id=group_id, **share)
        self.client_config = self._parts.config
        self._topics = list(topics)
        self._callback = acknowledgement_commit_callback
        self._router = ShareRouter(wake=self._notify)
        self._setup()

    def _setup(self) -> None:
        raise NotImplementedError

    def _call(self, fn: ShareCommand[T]) -> T:
        raise NotImplementedError

    def _clock(self) -> float:
        raise NotImplementedError

    def _notify(self) -> None:
        raise NotImplementedError

    def _build_core(self, now: float) -> ShareConsumerCore:
        return ShareConsumerCore(self._parts.config, self.config, now=now, rng=self._parts.rng)

    @property
    def state(self) -> ShareState:
        return self._state

    # -- calls that do not wait --------------------------------------------------
    def subscribe(self, topics: Iterable[str]) -> None:
        """Join the share group for ``topics`` (the whole new subscription)."""
        names = [topics] if isinstance(topics, str) else list(topics)
        self._call(lambda core, now: core.subscribe(names, now=now))

    def subscription(self) -> frozenset[str]:
        return self._call(lambda core, now: core.subscription())

    def assignment(self) -> frozenset[TopicPartition]:
        return self._call(lambda core, now: core.assignment())

    def acknowledge(
        self, record: ShareRecord, type: AcknowledgeType = AcknowledgeType.ACCEPT
    ) -> None:
        """Acknowledge one record of the last poll (``acknowledgement_mode='explicit'``)."""
        self._call(lambda core, now: core.acknowledge(record, type, now=now))

    def set_acknowledgement_commit_callback(self, callback: AckCallback | None) -> None:
        """Called (from poll, commit_sync, close) with each answered batch of acknowledgements."""
        self._callback = callback

    def run_on_loop(self, fn: Callable[[ShareConsumerCore], T]) -> T:
        """Run ``fn(core)`` on the loop (for queries in tests and tools)."""
        return self._call(lambda core, now: fn(core))

    # -- waiting, as steps -----------------------------------------------------------
    def _poll_steps(self, max_records: int | None, timeout: float) -> Steps[list[ShareRecord]]:
        """Settle the previous poll, then wait up to ``timeout`` for records."""
        deadline = self._clock() + max(timeout, 0.0)
        while True:
            mark = self._router.seq
            out = self._call(lambda core, now: core.poll_records(max_records, now=now))
            self._run_callbacks()
            if out or self._clock() >= deadline:
                return out
            yield Wait(mark, deadline)

    def _commit_command(self) -> ShareCommand[Operation[Any]]:
        return lambda core, now: core.commit(now=now)

    def _close_command(self, timeout: float) -> ShareCommand[Operation[Any]]:
        ms = max(int(timeout * 1000), 0)
        return lambda core, now: core.close(now=now, timeout_ms=ms)

    def _start(self, command: ShareCommand[Operation[Any]], done: Completion) -> None:
        self._call(lambda core, now: self._router.expect(command(core, now), done))

    def _news_since(self, wait: Wait) -> Callable[[], bool]:
        router, mark = self._router, wait.mark
        return lambda: router.seq != mark

    def _run_callbacks(self) -> None:
        """Java calls the acknowledgement-commit callback in the user's thread."""
        acked = self._router.acked
        while acked:
            event = acked.popleft()
            if self._callback is not None:
                self._callback({event.partition: event.offsets}, event.error)


class AsyncShareBase(ShareSurface):
    """The awaitable surface shared by the asyncio and trio share consumers.

    Both call the core directly from their event loop's thread through an
    :class:`~kafkacore.transports._async_driver.AsyncDriver`; ``poll`` awaits
    the driver's change signal between its steps, ``commit_sync`` and
    ``close`` await a one-shot filled by the core's ``OperationCompleted``.
    Subclasses supply ``_running(what)`` (asyncio starts lazily, trio needs
    ``async with``).
    """

    _driver: AsyncDriver

    def _setup(self) -> None:
        self._driver = self._new_driver(self._parts)
        self._state = ShareState.NEW
        self._core: ShareConsumerCore | None = None

    def _new_driver(self, parts: Parts) -> AsyncDriver:
        raise NotImplementedError

    def _attach(self) -> None:
        self._core = self._driver.attach(self._build_core, self._router.on_event)
        self._state = ShareState.RUNNING
        if self._topics:
            self.subscribe(self._topics)

    def _running(self, what: str) -> ShareConsumerCore:
        raise NotImplementedError

    async def poll(self, timeout: float = 0.0, max_records: int | None = None) -> list[ShareRecord]:
        """Settle the previous poll's records, then wait up to ``timeout`` s for more."""
        steps = self._poll_steps(max_records, timeout)
        driver = self._driver
        while True:
            try:
                wait = next(steps)
            except StopIteration as stop:
                await driver.checkpoint()
                return stop.value  # type: ignore[no-any-return]
            await driver.wait_change(self._news_since(wait), wait.deadline)

    async def commit_sync(self, timeout: float | None = None) -> dict[TopicPartition, Any]:
        """Send every acknowledgement so far and await each partition's outcome."""
        limit = self.config.default_api_timeout_ms / 1000 if timeout is None else timeout
        waiter = self._waiter(self._commit_command(), "commit_sync")
        try:
            result: dict[TopicPartition, Any] = await self._driver.wait(
                waiter, limit + 1, f"{self._NAME}.commit_sync"
            )
        finally:
            self._run_callbacks()
        return result

    async def close(self, timeout: float = 30.0) -> None:
        """Send what is acknowledged, close the sessions, leave; within ~``timeout`` s."""
        if self._state is not ShareState.RUNNING:
            self._state = ShareState.CLOSED
            return
        core = self._running("close")
        end = self._driver.clock() + timeout
        try:
            with contextlib.suppress(Exception):
                waiter = self._waiter(self._close_command(timeout), "close")
                await self._driver.wait(waiter, timeout + 1, f"{self._NAME}.close")
            self._run_callbacks()
            # Then the farewell (KIP-714's terminating push) in what is left.
            await self._driver.farewell(end - self._driver.clock())
        finally:
            self._state = ShareState.CLOSED
            self._driver.call(lambda now: core.shutdown(now=now))
            self._driver.abort()
            self._router.fail_all(RequestCancelled(f"{self._NAME} closed"))
            await self._driver.yield_()

    def _call(self, fn: ShareCommand[T]) -> T:
        core = self._running("call")
        return self._driver.call(lambda now: fn(core, now))

    def _clock(self) -> float:
        return self._driver.clock()

    def _notify(self) -> None:
        self._driver.notify()

    def _waiter(self, command: ShareCommand[Operation[Any]], what: str) -> Waiter:
        self._running(what)
        waiter = self._driver.waiter()
        self._start(command, waiter.fill)
        return waiter

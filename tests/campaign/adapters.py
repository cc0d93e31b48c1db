"""One async surface over the three transports' producers and consumers.

Campaign workers are written once, as ``async`` code under anyio, against
:class:`Producer` and :class:`Consumer` (from :func:`open_producer` and
:func:`open_consumer`, context managers, as trio nurseries must nest).
``selector`` objects run their blocking calls in a worker thread
(``anyio.to_thread``) on an asyncio loop;
``asyncio`` and ``trio`` objects are awaited directly on their own loop.
:func:`run_flavor` runs a worker on the loop its flavor needs (each worker
gets its own thread when several run at once, see ``runner.py``).

Every call takes a timeout and is bounded by it (plus :data:`SLACK_S`):
``CallTimer`` records how long each call took, so a campaign can check that
every call ended within its timeout.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread
import trio

from kafkacore.client import TopicPartition

FLAVORS = ("selector", "asyncio", "trio")
#: How far past its own timeout a call may end (2 shared cores, a JVM beside us).
SLACK_S = 2.0

Done = Callable[[Any, float], None]  # (result or exception, completion time)


@dataclass
class CallTimer:
    """Durations of bounded calls: (what, timeout, took)."""

    calls: list[tuple[str, float, float]] = field(default_factory=list)

    async def run(self, what: str, timeout: float, fn: Callable[[], Awaitable[Any]]) -> Any:
        start = time.monotonic()
        try:
            with anyio.fail_after(timeout + SLACK_S):
                return await fn()
        finally:
            self.calls.append((what, timeout, time.monotonic() - start))

    def overruns(self) -> list[tuple[str, float, float]]:
        return [c for c in self.calls if c[2] > c[1] + SLACK_S]


def run_flavor(flavor: str, main: Callable[[], Awaitable[Any]]) -> Any:
    """Run ``main`` on the event loop ``flavor`` needs (selector: asyncio + threads)."""
    if flavor == "trio":
        return trio.run(main)
    return asyncio.run(main())  # type: ignore[arg-type]


class Producer:
    """A producer of one flavor; open with ``await Producer.open(...)``."""

    def __init__(self, flavor: str, inner: Any, timer: CallTimer) -> None:
        self.flavor = flavor
        self.inner = inner
        self.timer = timer

    async def send(
        self, tg: Any, topic: str, value: bytes, key: bytes | None, on_done: Done
    ) -> None:
        """Queue one record; ``on_done(result_or_error, when)`` once it is settled.

        ``tg`` is a task group that outlives the send (async flavors wait there).
        """
        if self.flavor == "selector":
            try:
                fut: concurrent.futures.Future[Any] = await anyio.to_thread.run_sync(
                    lambda: self.inner.send(topic, value, key)
                )
            except Exception as exc:
                on_done(exc, time.monotonic())
                return

            def settle(f: concurrent.futures.Future[Any]) -> None:
                exc = f.exception()
                on_done(exc if exc is not None else f.result(), time.monotonic())

            fut.add_done_callback(settle)
            return
        try:
            slot = await self.inner.send(topic, value, key)
        except Exception as exc:
            on_done(exc, time.monotonic())
            return

        async def wait() -> None:
            try:
                result = await slot
            except Exception as exc:
                result = exc
            on_done(result, time.monotonic())

        tg.start_soon(wait)

    async def _call(self, what: str, timeout: float, name: str, *args: Any) -> Any:
        method = getattr(self.inner, name)
        if self.flavor == "selector":
            return await self.timer.run(
                what, timeout, lambda: anyio.to_thread.run_sync(lambda: method(*args))
            )
        return await self.timer.run(what, timeout, lambda: method(*args))

    async def flush(self, timeout: float) -> None:
        await self._call("flush", timeout, "flush", timeout)

    async def init_transactions(self, timeout: float) -> None:
        await self._call("init_transactions", timeout, "init_transactions", timeout)

    async def begin_transaction(self) -> None:
        await self._call("begin_transaction", 5.0, "begin_transaction")

    async def send_offsets_to_transaction(
        self, offsets: Mapping[TopicPartition, int], group_id: str, timeout: float
    ) -> None:
        await self._call(
            "send_offsets_to_transaction",
            timeout,
            "send_offsets_to_transaction",
            offsets,
            group_id,
            timeout,
        )

    async def commit_transaction(self, timeout: float) -> None:
        await self._call("commit_transaction", timeout, "commit_transaction", timeout)

    async def abort_transaction(self, timeout: float) -> None:
        await self._call("abort_transaction", timeout, "abort_transaction", timeout)

    async def close(self, timeout: float) -> None:
        await self._call("close", timeout, "close", timeout)


@contextlib.asynccontextmanager
async def open_producer(
    flavor: str, bootstrap: str, timer: CallTimer, **options: Any
) -> AsyncIterator[Producer]:
    """A producer, closed on exit (its close() may also be called inside)."""
    if flavor == "selector":
        from kafkacore.transports._producer_selector import KafkaProducer

        inner: Any = await anyio.to_thread.run_sync(lambda: KafkaProducer(bootstrap, **options))
        try:
            yield Producer(flavor, inner, timer)
        finally:
            await anyio.to_thread.run_sync(inner.close, 5.0)
        return
    if flavor == "asyncio":
        from kafkacore.transports._producer_asyncio import AsyncKafkaProducer as cls
    else:
        from kafkacore.transports._producer_trio import TrioKafkaProducer as cls  # type: ignore[assignment]
    async with cls(bootstrap, **options) as inner:
        yield Producer(flavor, inner, timer)


class Consumer:
    """A consumer of one flavor; open with ``await Consumer.open(...)``."""

    def __init__(self, flavor: str, inner: Any, timer: CallTimer) -> None:
        self.flavor = flavor
        self.inner = inner
        self.timer = timer

    async def poll_records(self, timeout: float) -> list[Any]:
        """The consumer's records as one list (its ``poll_records``), ``timeout`` in seconds."""
        if self.flavor == "selector":
            out: list[Any] = await self.timer.run(
                "poll",
                timeout,
                lambda: anyio.to_thread.run_sync(lambda: self.inner.poll_records(timeout=timeout)),
            )
            return out
        out = await self.timer.run(
            "poll", timeout, lambda: self.inner.poll_records(timeout=timeout)
        )
        return out

    async def commit(self, offsets: Mapping[TopicPartition, int] | None, timeout: float) -> Any:
        """Commit ``offsets`` (None: every position consumed so far); what was committed."""
        if self.flavor == "selector":
            return await self.timer.run(
                "commit",
                timeout,
                lambda: anyio.to_thread.run_sync(
                    lambda: self.inner.commit(offsets, timeout=timeout)
                ),
            )
        return await self.timer.run("commit", timeout, lambda: self.inner.commit(offsets))

    async def committed(
        self, partitions: list[TopicPartition], timeout: float
    ) -> dict[TopicPartition, Any]:
        if self.flavor == "selector":
            out: dict[TopicPartition, Any] = await self.timer.run(
                "committed",
                timeout,
                lambda: anyio.to_thread.run_sync(
                    lambda: self.inner.committed(partitions, timeout=timeout)
                ),
            )
            return out
        out = await self.timer.run("committed", timeout, lambda: self.inner.committed(partitions))
        return out

    def seek(self, partition: TopicPartition, offset: int) -> None:
        self.inner.seek(partition, offset)

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.inner.assign(partitions)

    def assignment(self) -> frozenset[TopicPartition]:
        result: frozenset[TopicPartition] = self.inner.assignment()
        return result

    async def close(self, timeout: float) -> None:
        if self.flavor == "selector":
            await self.timer.run(
                "close",
                timeout,
                lambda: anyio.to_thread.run_sync(lambda: self.inner.close(timeout=timeout)),
            )
        else:
            await self.timer.run("close", timeout, lambda: self.inner.close(timeout=timeout))


@contextlib.asynccontextmanager
async def open_consumer(
    flavor: str, topics: list[str], timer: CallTimer, **options: Any
) -> AsyncIterator[Consumer]:
    """A consumer subscribed to ``topics``, closed on exit."""
    if flavor == "selector":
        from kafkacore.transports._consumer_selector import KafkaConsumer

        inner: Any = await anyio.to_thread.run_sync(lambda: KafkaConsumer(*topics, **options))
        try:
            yield Consumer(flavor, inner, timer)
        finally:
            await anyio.to_thread.run_sync(lambda: inner.close(timeout=5.0))
        return
    if flavor == "asyncio":
        from kafkacore.transports._consumer_asyncio import AsyncKafkaConsumer as cls
    else:
        from kafkacore.transports._consumer_trio import TrioKafkaConsumer as cls  # type: ignore[assignment]
    async with cls(*topics, **options) as inner:
        yield Consumer(flavor, inner, timer)

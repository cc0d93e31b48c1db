"""The conformance shim: one async surface over the three transports.

Every conformance test is an ``async def`` written once against
:class:`UniformClient`. The ``flavor`` fixture runs it three times:

- ``selector``: :class:`kafkacore.transports.selector.KafkaClient` under asyncio,
  every blocking call made in a worker thread (``anyio.to_thread``), which
  also proves the blocking client is usable from threads other than its loop;
- ``asyncio``: :class:`kafkacore.transports.asyncio.AsyncKafkaClient` on asyncio;
- ``trio``: :class:`kafkacore.transports.trio.TrioKafkaClient` on trio.

``anyio_backend`` follows the flavor, so anyio's pytest plugin runs each
test on the right event loop.
"""

from __future__ import annotations

import contextlib
import functools
import socket
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
import pytest

from kafkacore.client import KafkaClientCore
from kafkacore.errors import KafkaTimeoutError

FLAVORS = ("selector", "asyncio", "trio")


class UniformClient:
    """What a conformance test may do with a client, on any transport."""

    name: str

    async def send(self, request: Any, **kw: Any) -> Any:
        raise NotImplementedError

    async def send_many(self, requests: Sequence[Any], **kw: Any) -> list[Any]:
        """Issue all requests at once (pipelined); results or exceptions, in order."""
        raise NotImplementedError

    async def metadata(self, topics: Sequence[str] | None = None) -> Any:
        raise NotImplementedError

    async def send_abandoned(self, request: Any, after_s: float, **kw: Any) -> bool:
        """Send, but stop waiting after ``after_s`` seconds; True if we gave up."""
        raise NotImplementedError

    async def query(self, fn: Callable[[KafkaClientCore], Any]) -> Any:
        """Run ``fn(core)`` on the client's loop (snapshots of core state)."""
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError


async def _gather(calls: Sequence[Callable[[], Any]]) -> list[Any]:
    results: list[Any] = [None] * len(calls)

    async def one(i: int) -> None:
        try:
            results[i] = await calls[i]()
        except Exception as exc:
            results[i] = exc

    async with anyio.create_task_group() as tg:
        for i in range(len(calls)):
            tg.start_soon(one, i)
    return results


class _AsyncShim(UniformClient):
    """AsyncKafkaClient and TrioKafkaClient share method names: one shim."""

    def __init__(self, name: str, client: Any) -> None:
        self.name = name
        self.client = client

    async def send(self, request: Any, **kw: Any) -> Any:
        return await self.client.send(request, **kw)

    async def send_many(self, requests: Sequence[Any], **kw: Any) -> list[Any]:
        return await _gather([functools.partial(self.client.send, r, **kw) for r in requests])

    async def metadata(self, topics: Sequence[str] | None = None) -> Any:
        return await self.client.metadata(topics)

    async def send_abandoned(self, request: Any, after_s: float, **kw: Any) -> bool:
        with anyio.move_on_after(after_s) as scope:
            await self.client.send(request, **kw)
        return scope.cancelled_caught

    async def query(self, fn: Callable[[KafkaClientCore], Any]) -> Any:
        return self.client.run_on_loop(fn)

    async def close(self) -> None:
        await self.client.close()


class _SelectorShim(UniformClient):
    def __init__(self, client: Any) -> None:
        self.name = "selector"
        self.client = client

    async def send(self, request: Any, **kw: Any) -> Any:
        return await anyio.to_thread.run_sync(functools.partial(self.client.send, request, **kw))

    async def send_many(self, requests: Sequence[Any], **kw: Any) -> list[Any]:
        futures = [self.client.submit(r, **kw) for r in requests]

        def wait_all() -> list[Any]:
            out: list[Any] = []
            for f in futures:
                exc = f.exception()
                out.append(exc if exc is not None else f.result())
            return out

        return await anyio.to_thread.run_sync(wait_all)

    async def metadata(self, topics: Sequence[str] | None = None) -> Any:
        return await anyio.to_thread.run_sync(self.client.metadata, topics)

    async def send_abandoned(self, request: Any, after_s: float, **kw: Any) -> bool:
        def run() -> bool:
            try:
                self.client.send(request, timeout=after_s, **kw)
            except KafkaTimeoutError:
                return True
            return False

        return await anyio.to_thread.run_sync(run)

    async def query(self, fn: Callable[[KafkaClientCore], Any]) -> Any:
        return await anyio.to_thread.run_sync(self.client.run_on_loop, fn)

    async def close(self) -> None:
        await anyio.to_thread.run_sync(self.client.close)


@dataclass(frozen=True)
class Flavor:
    name: str

    @property
    def backend(self) -> str:
        return "trio" if self.name == "trio" else "asyncio"

    @contextlib.asynccontextmanager
    async def client(self, bootstrap: str, **options: Any) -> AsyncIterator[UniformClient]:
        """A connected client (bootstrap done), closed on exit."""
        if self.name == "selector":
            from kafkacore.transports.selector import KafkaClient

            sc = KafkaClient(bootstrap, **options)
            try:
                await anyio.to_thread.run_sync(sc.connect)
                yield _SelectorShim(sc)
            finally:
                await anyio.to_thread.run_sync(sc.close)
        elif self.name == "asyncio":
            from kafkacore.transports.asyncio import AsyncKafkaClient

            async with AsyncKafkaClient(bootstrap, **options) as ac:
                yield _AsyncShim("asyncio", ac)
        else:
            from kafkacore.transports.trio import TrioKafkaClient

            async with TrioKafkaClient(bootstrap, **options) as tc:
                yield _AsyncShim("trio", tc)

    async def failed_connect(
        self,
        bootstrap: str,
        after: Callable[[KafkaClientCore], Any],
        *,
        settle: float = 0.0,
        **options: Any,
    ) -> tuple[BaseException, Any]:
        """Connect expecting an error; return it and ``after(core)``, run ``settle``
        seconds after it while the client stays open (trio: right after it, on the
        client it closed)."""
        if self.name == "selector":
            from kafkacore.transports.selector import KafkaClient

            sc = KafkaClient(bootstrap, **options)
            try:
                try:
                    await anyio.to_thread.run_sync(sc.connect)
                except Exception as exc:
                    await anyio.sleep(settle)
                    return exc, await anyio.to_thread.run_sync(sc.run_on_loop, after)
            finally:
                await anyio.to_thread.run_sync(sc.close)
        elif self.name == "asyncio":
            from kafkacore.transports.asyncio import AsyncKafkaClient

            ac = AsyncKafkaClient(bootstrap, **options)
            try:
                try:
                    await ac.connect()
                except Exception as exc:
                    await anyio.sleep(settle)
                    return exc, ac.run_on_loop(after)
            finally:
                await ac.close()
        else:
            from kafkacore.transports.trio import TrioKafkaClient

            # The trio client connects on entry and is closed when that fails;
            # ``after`` then sees the shut-down core (counters survive shutdown).
            tc = TrioKafkaClient(bootstrap, **options)
            try:
                async with tc:
                    pass
            except Exception as exc:
                return exc, tc.inspect_core(after)
        pytest.fail(f"{self.name}: connecting to {bootstrap} succeeded; expected an error")

    async def connect_error(self, bootstrap: str, **options: Any) -> BaseException:
        """Connect and return the error connecting raised (fails the test if none)."""
        try:
            async with self.client(bootstrap, **options):
                pass
        except Exception as exc:
            return exc
        pytest.fail(f"{self.name}: connecting to {bootstrap} succeeded; expected an error")


@pytest.fixture(params=FLAVORS)
def flavor(request: pytest.FixtureRequest) -> Flavor:
    return Flavor(request.param)


@pytest.fixture
def anyio_backend(flavor: Flavor) -> str:
    return flavor.backend


@pytest.fixture
def dead_address() -> str:
    """``host:port`` where nothing listens (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"127.0.0.1:{port}"

"""Run one scenario on each transport's clients, for the compatibility tests.

A scenario is an ``async def`` taking the client; on the selector transport
the blocking calls run as they are inside it (``await call(obj, name, ...)``
awaits only what returns an awaitable), so one body serves all three.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from kafkacore.transports._consumer_asyncio import AsyncKafkaConsumer
from kafkacore.transports._consumer_selector import KafkaConsumer
from kafkacore.transports._consumer_trio import TrioKafkaConsumer
from kafkacore.transports._producer_asyncio import AsyncKafkaProducer
from kafkacore.transports._producer_selector import KafkaProducer
from kafkacore.transports._producer_trio import TrioKafkaProducer

TRANSPORTS = ["selector", "asyncio", "trio"]
Scenario = Callable[[Any], Awaitable[None]]

_CLASSES: dict[str, dict[str, Any]] = {
    "consumer": {
        "selector": KafkaConsumer,
        "asyncio": AsyncKafkaConsumer,
        "trio": TrioKafkaConsumer,
    },
    "producer": {
        "selector": KafkaProducer,
        "asyncio": AsyncKafkaProducer,
        "trio": TrioKafkaProducer,
    },
}


async def call(obj: Any, name: str, *args: Any, **kw: Any) -> Any:
    """``obj.name(*args, **kw)``, awaited when the transport's call is async (a
    coroutine or an asyncio future; a blocking client's record future is not)."""
    out = getattr(obj, name)(*args, **kw)
    if inspect.iscoroutine(out) or isinstance(out, asyncio.Future):
        out = await out
    return out


async def sleep(transport: str, seconds: float) -> None:
    if transport == "trio":
        await trio.sleep(seconds)
    else:
        await asyncio.sleep(seconds)


def run(kind: str, transport: str, scenario: Scenario, *args: Any, **options: Any) -> None:
    """Run ``scenario(client)`` with a ``kind`` client ("consumer", "producer") of ``transport``."""
    cls = _CLASSES[kind][transport]
    if transport == "selector":
        with cls(*args, **options) as client:
            asyncio.run(scenario(client))
        return

    async def main() -> None:
        async with cls(*args, **options) as client:
            await scenario(client)

    if transport == "asyncio":
        asyncio.run(main())
    else:
        trio.run(main)

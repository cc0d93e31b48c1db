"""close(timeout) is bounded on every transport, even with no broker at all.

The bootstrap address is a port nobody listens on: the record can never be
sent, so close() must give up after its timeout and fail the record with
ProducerClosedError instead of hanging.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest
import trio

from kafkacore.producer import ProducerClosedError
from kafkacore.transports.asyncio import AsyncKafkaProducer
from kafkacore.transports.selector import KafkaProducer
from kafkacore.transports.trio import TrioKafkaProducer


@pytest.fixture
def dead_address() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"127.0.0.1:{port}"


#: Slow reconnects: the send must still be waiting when close gives up (it
#: would until max_block_ms, 60 s by default, the bound of a cluster never reached).
OPTIONS: dict[str, Any] = {"reconnect_backoff_ms": 2000, "reconnect_backoff_max_ms": 2000}


def test_selector_close_gives_up_after_its_timeout(dead_address: str) -> None:
    producer = KafkaProducer(dead_address, **OPTIONS)
    fut = producer.send("t", b"v")
    producer.close(timeout=0.5)
    with pytest.raises(ProducerClosedError):
        fut.result(5)
    with pytest.raises(ProducerClosedError):
        producer.send("t", b"again")


def test_asyncio_close_gives_up_after_its_timeout(dead_address: str) -> None:
    async def main() -> None:
        producer = AsyncKafkaProducer(dead_address, **OPTIONS)
        await producer.start()
        delivery = await producer.send("t", b"v")
        await producer.close(timeout=0.5)
        with pytest.raises(ProducerClosedError):
            await delivery
        with pytest.raises(ProducerClosedError):
            await producer.send("t", b"again")

    asyncio.run(main())


def test_trio_close_gives_up_after_its_timeout(dead_address: str) -> None:
    async def main() -> None:
        async with TrioKafkaProducer(dead_address, close_timeout=0.5, **OPTIONS) as producer:
            delivery = await producer.send("t", b"v")
            await producer.close(timeout=0.5)
            with pytest.raises(ProducerClosedError):
                await delivery
            with pytest.raises(ProducerClosedError):
                await producer.send("t", b"again")

    trio.run(main)

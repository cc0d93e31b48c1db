"""Failures that must reach the consumer's caller as themselves, against real
sockets, on each transport (issue 10, fault 8).

- ``end_offsets`` and ``committed`` on a dead bootstrap address fail at
  their timeout with NoBrokersAvailable naming the address (``end_offsets``
  used to say only "no leader answered"), ``position`` with a
  KafkaTimeoutError whose ``__cause__`` is that NoBrokersAvailable; not
  before their timeout, which a broker started late may beat (issue 26);
- ``poll`` with partitions to follow on a cluster never reached raises
  NoBrokersAvailable when its timeout ends (it used to return ``[]`` for
  ever);
- a wrong SASL password fails ``end_offsets`` at once (not after the 60 s
  default timeout) and ``poll`` raises the AuthenticationError; the password
  appears in no message;
- subscribing to a topic that does not exist logs a warning on the
  ``kafkacore.consumer`` logger and shows in ``missing_topics()``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio

from kafkacore.client import TopicPartition
from kafkacore.errors import (
    AuthenticationError,
    KafkaConnectionError,
    KafkaTimeoutError,
    NoBrokersAvailable,
)
from kafkacore.transports._consumer_asyncio import AsyncKafkaConsumer
from kafkacore.transports._consumer_selector import KafkaConsumer
from kafkacore.transports._consumer_trio import TrioKafkaConsumer

TRANSPORTS = ["selector", "asyncio", "trio"]
Scenario = Callable[[Any], Awaitable[None]]


def dead_port() -> int:
    """A local port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


async def call(obj: Any, name: str, *args: Any, **kw: Any) -> Any:
    out = getattr(obj, name)(*args, **kw)
    if inspect.isawaitable(out):
        out = await out
    return out


def run(transport: str, scenario: Scenario, *topics: str, **options: Any) -> None:
    """Run ``scenario(consumer)`` on one transport (blocking calls awaited as they are)."""
    if transport == "selector":
        with KafkaConsumer(*topics, **options) as c:
            asyncio.run(scenario(c))
    elif transport == "asyncio":

        async def main() -> None:
            async with AsyncKafkaConsumer(*topics, **options) as c:
                await scenario(c)

        asyncio.run(main())
    else:

        async def main_trio() -> None:
            async with TrioKafkaConsumer(*topics, **options) as c:
                await scenario(c)

        trio.run(main_trio)


async def poll_until_raised(c: Any, within: float) -> BaseException:
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            assert await call(c, "poll_records", timeout=0.2) == []
        except AssertionError:
            raise
        except Exception as exc:
            return exc
    raise AssertionError(f"poll raised nothing within {within} s")


#: How late past its own timeout a call may be reported (2 shared, busy cores).
SLACK_S = 1.5
#: How early: a lookup fails when its next retry (retry_backoff_ms, 100 ms by
#: default) would start after its deadline.
EARLY_S = 0.1 + 0.01


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_dead_bootstrap_fails_a_lookup_at_its_timeout(transport: str) -> None:
    """A cluster never reached is reported when the call's timeout passes (not
    after a few refused connects: a broker may be a moment late, issue 26)."""
    address = f"127.0.0.1:{dead_port()}"
    tp = TopicPartition("anything", 0)
    seen: list[BaseException] = []

    async def scenario(c: Any) -> None:
        start = time.monotonic()
        with pytest.raises(NoBrokersAvailable) as info:
            await call(c, "end_offsets", [tp])  # bound: default_api_timeout_ms
        assert 2.0 - EARLY_S <= time.monotonic() - start < 2.0 + SLACK_S
        seen.append(info.value)

    run(
        transport,
        scenario,
        bootstrap_servers=address,
        default_api_timeout_ms=2000,
        reconnect_backoff_ms=50,
    )
    error = seen[0]
    assert isinstance(error.__cause__, KafkaConnectionError), repr(error.__cause__)
    assert address in str(error) and "no leader answered" in str(error), str(error)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_dead_bootstrap_fails_committed_and_position_at_their_timeout(transport: str) -> None:
    address = f"127.0.0.1:{dead_port()}"
    tp = TopicPartition("anything", 0)

    async def scenario(c: Any) -> None:
        start = time.monotonic()
        with pytest.raises(NoBrokersAvailable) as info:
            await call(c, "committed", [tp])
        assert address in str(info.value)
        assert 1.0 - EARLY_S <= time.monotonic() - start < 1.0 + SLACK_S  # default_api_timeout_ms
        await call(c, "assign", [tp])
        start = time.monotonic()
        with pytest.raises(KafkaTimeoutError) as timed_out:
            await call(c, "position", tp, 1000)
        assert 1.0 <= time.monotonic() - start < 1.0 + SLACK_S
        cause = timed_out.value.__cause__
        assert isinstance(cause, NoBrokersAvailable) and address in str(cause), repr(cause)

    run(
        transport,
        scenario,
        bootstrap_servers=address,
        group_id="g",
        default_api_timeout_ms=1000,
        reconnect_backoff_ms=50,
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_poll_raises_at_its_timeout_when_the_cluster_was_never_reached(transport: str) -> None:
    address = f"127.0.0.1:{dead_port()}"

    async def scenario(c: Any) -> None:
        await call(c, "assign", [TopicPartition("anything", 0)])
        start = time.monotonic()
        with pytest.raises(NoBrokersAvailable) as info:
            await call(c, "poll_records", timeout=1.5)
        assert 1.5 <= time.monotonic() - start < 1.5 + SLACK_S
        assert address in str(info.value) and "never reached" in str(info.value)

    run(
        transport,
        scenario,
        bootstrap_servers=address,
        default_api_timeout_ms=60000,
        reconnect_backoff_ms=50,
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_wrong_password_fails_at_once_and_poll_raises_it(kafka_broker: Any, transport: str) -> None:
    topic = f"auth-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, 1)
    tp = TopicPartition(topic, 0)

    async def scenario(c: Any) -> None:
        start = time.monotonic()
        with pytest.raises(AuthenticationError) as info:
            await call(c, "end_offsets", [tp])
        assert time.monotonic() - start < 20, "waited for the 60 s default timeout"
        assert "wrong-password" not in str(info.value)
        await call(c, "assign", [tp])
        error = await poll_until_raised(c, 20)
        assert isinstance(error, AuthenticationError), repr(error)

    run(
        transport,
        scenario,
        bootstrap_servers=kafka_broker.bootstrap_for("SASL_PLAINTEXT"),
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="alice",
        sasl_plain_password="wrong-password",
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_missing_topic_is_logged_and_reported(
    kafka_broker: Any, transport: str, caplog: pytest.LogCaptureFixture
) -> None:
    missing = f"missing-{uuid.uuid4().hex[:8]}"

    async def scenario(c: Any) -> None:
        end = time.monotonic() + 30
        while missing not in await call(c, "missing_topics"):
            assert time.monotonic() < end, "the missing topic was never reported"
            await call(c, "poll_records", timeout=0.2)

    with caplog.at_level(logging.WARNING, logger="kafkacore.consumer"):
        run(
            transport,
            scenario,
            missing,
            bootstrap_servers=kafka_broker.bootstrap,
            group_id=f"g-{missing}",
            allow_auto_create_topics=False,
        )
    assert any(
        missing in r.getMessage() and r.name == "kafkacore.consumer" for r in caplog.records
    ), [r.getMessage() for r in caplog.records]

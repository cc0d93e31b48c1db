"""transports/_credentials.py: each I/O style makes the call off its loop and answers."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest
import trio

from kafkacore.client.credentials import CredentialKind
from kafkacore.client.events import CredentialsNeeded
from kafkacore.transports._credentials import (
    CredentialsAnswer,
    answer,
    fulfil_asyncio,
    fulfil_in_thread,
    fulfil_inline,
    fulfil_trio,
)
from tests.client.test_credentials import CountingProvider, boot, needed

#: Bound on waits for another thread (never reached when things work).
WAIT_S = 10.0


def event_for(call: Callable[[], Any], request_id: int = 7) -> CredentialsNeeded:
    return CredentialsNeeded(
        request_id=request_id,
        node_id=1,
        conn_id=2,
        kind=CredentialKind.OAUTH_TOKEN,
        mechanism="OAUTHBEARER",
        call=call,
        deadline=30.0,
    )


class GatedProvider:
    """Blocks until ``gate`` is set, the way a provider waiting on the network does."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.thread: int | None = None

    def __call__(self) -> str:
        self.thread = threading.get_ident()
        if not self.gate.wait(WAIT_S):
            raise TimeoutError("the gate was never opened: the loop was blocked")
        return "good-token"


def fail() -> str:
    raise RuntimeError("boom")


async def async_token() -> str:
    await asyncio.sleep(0)
    return "async-tok"


def test_inline_makes_the_call_here() -> None:
    assert fulfil_inline(event_for(lambda: "t")) == CredentialsAnswer(7, result="t")
    reply = fulfil_inline(event_for(fail))
    assert reply.result is None and isinstance(reply.error, RuntimeError)
    assert fulfil_inline(event_for(async_token)).result == "async-tok"


def test_in_thread_makes_the_call_on_a_worker_and_delivers_from_it() -> None:
    provider = GatedProvider()
    delivered: list[tuple[CredentialsAnswer, int]] = []
    done = threading.Event()

    def deliver(reply: CredentialsAnswer) -> None:
        delivered.append((reply, threading.get_ident()))
        done.set()

    worker = fulfil_in_thread(event_for(provider), deliver)
    assert worker.daemon and worker.name == "kafkacore-credentials-7"
    assert not done.is_set()  # the caller was not blocked
    provider.gate.set()
    assert done.wait(WAIT_S)
    [(reply, thread)] = delivered
    assert reply == CredentialsAnswer(7, result="good-token")
    assert provider.thread == thread != threading.get_ident()
    worker.join(WAIT_S)


def test_in_thread_delivers_errors() -> None:
    got: list[CredentialsAnswer] = []
    fulfil_in_thread(event_for(fail), got.append).join(WAIT_S)
    assert isinstance(got[0].error, RuntimeError)


def test_asyncio_runs_a_blocking_provider_in_the_executor() -> None:
    provider = GatedProvider()
    got: list[CredentialsAnswer] = []

    async def main() -> None:
        task = asyncio.create_task(fulfil_asyncio(event_for(provider), got.append))
        for _ in range(3):
            await asyncio.sleep(0)  # the loop keeps turning while the provider waits
        assert not got
        provider.gate.set()  # opened by the loop itself: it was never blocked
        await task

    asyncio.run(main())
    assert got == [CredentialsAnswer(7, result="good-token")]
    assert provider.thread != threading.get_ident()


@pytest.mark.parametrize(("call", "result"), [(async_token, "async-tok"), (fail, None)])
def test_asyncio_awaits_coroutine_functions_and_reports_errors(
    call: Callable[[], Any], result: Any
) -> None:
    got: list[CredentialsAnswer] = []
    asyncio.run(fulfil_asyncio(event_for(call), got.append))
    assert got[0].result == result
    assert (got[0].error is None) == (result is not None)


def test_trio_runs_a_blocking_provider_in_a_thread() -> None:
    provider = GatedProvider()
    got: list[CredentialsAnswer] = []

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(fulfil_trio, event_for(provider), got.append)
            for _ in range(3):
                await trio.lowlevel.checkpoint()
            assert not got
            provider.gate.set()

    trio.run(main)
    assert got == [CredentialsAnswer(7, result="good-token")]
    assert provider.thread != threading.get_ident()


async def trio_token() -> str:
    await trio.lowlevel.checkpoint()
    return "trio-tok"


def test_trio_awaits_coroutine_functions_and_reports_errors() -> None:
    got: list[CredentialsAnswer] = []
    trio.run(fulfil_trio, event_for(trio_token), got.append)
    trio.run(fulfil_trio, event_for(fail), got.append)
    assert got[0].result == "trio-tok" and isinstance(got[1].error, RuntimeError)


def test_asyncio_end_to_end_with_the_core() -> None:
    """A loop that pumps the core answers through fulfil_asyncio; the provider blocks
    until the loop itself opens the gate, so it cannot have run on the loop."""
    provider = GatedProvider()
    core, pump, _ = boot("OAUTHBEARER", sasl_oauth_token_provider=provider)

    async def main() -> None:
        tasks: list[asyncio.Task[None]] = []

        def deliver(reply: CredentialsAnswer) -> None:
            assert answer(core, reply, now=pump.now)
            pump.drain()

        for _ in range(200):
            if core.cluster.update_count > 0:
                break
            pump.step()
            fresh = [
                asyncio.create_task(fulfil_asyncio(event, deliver))
                for event in needed(pump)[len(tasks) :]
            ]
            if fresh:
                tasks += fresh
                await asyncio.sleep(0)  # the task started; the provider waits off the loop
                provider.gate.set()
                await asyncio.gather(*fresh)
        assert len(tasks) == 1

    asyncio.run(main())
    assert core.cluster.update_count > 0


def test_answer_reports_a_reply_nobody_waits_for() -> None:
    core, pump, _ = boot("OAUTHBEARER", sasl_oauth_token_provider=CountingProvider())
    pump.run(until=lambda: bool(needed(pump)), jump=False)
    event = needed(pump)[0]
    reply = fulfil_inline(event)
    assert answer(core, reply, now=pump.now)
    assert not answer(core, reply, now=pump.now)

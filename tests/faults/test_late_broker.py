"""A client started a moment before its broker waits for it (issue 26), on every
transport, against a real broker launched after the clients.

The clients (a producer's send, a consumer's first poll, a client's connect,
an admin call) start first, each in a thread of its own, toward a port where
nothing listens yet; the broker is launched on that port later:

* 2 s later, with bounds that outlast the broker's start: every call must
  succeed, after refused connections (each client logs a refused round);
* 10 s later, with bounds of 4 s: every call must fail at its bound (not
  before, within a margin after) with ``NoBrokersAvailable`` naming the
  address and carrying the refusal; then, once the broker is up, the same
  producer, consumer and admin client work (the client never stopped
  retrying).

The issue-10 fault-8 tests (a dead address reported at the bound, a wrong
password at once) are in ``test_issue_faults.py``.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import random
import socket
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
import trio

from kafkacore.client import TopicPartition
from kafkacore.errors import NoBrokersAvailable
from kafkacore.testing import LocalKafka
from tests.faults.drive import Outcome, chain, chain_text

pytestmark = [pytest.mark.broker, pytest.mark.timeout(600)]

#: LocalKafka's own bound on a start: a broker slower than this fails the test
#: as a broker that did not start, not as a client that gave up.
START_S = 120.0
#: Inside: the broker is launched this long after the clients, and their bound
#: covers that, the broker's start and the work after it (group join, a
#: metadata round or two: seconds, given a busy machine's minute).
LATE_S = 2.0
INSIDE_S = LATE_S + START_S + 60.0
#: Outside: launched after the clients' bound has passed.
LATER_S = 10.0
OUTSIDE_S = 4.0
#: How early a call may end: an admin call fails when its next retry (capped
#: by retry_backoff_max_ms below, +20% jitter) would start after its deadline.
RETRY_MAX_MS = 200
EARLY_S = RETRY_MAX_MS * 1.2 / 1000 + 0.01
#: How late: the core fails the call at its deadline, on the transport's timer;
#: a thread of two busy shared cores may wait that long to run. Still far below
#: LATER_S - OUTSIDE_S, so no outcome inside it can be the broker's doing.
SLACK_S = 2.5

SURFACES = ("producer", "consumer", "client", "admin")


def port_nobody_listens_on() -> int:
    """A loopback port free now and below the ephemeral range: a client that
    connects to it while nothing listens cannot be given it as its own source
    port (a TCP self-connect would hold it and keep the broker from binding)."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(10000, max(low, 10001))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError(f"no free port in 10000..{low}")


@dataclass
class Scenario:
    """What one surface does: its bound, and whether it waits for the broker again."""

    flavor: str
    bootstrap: str
    topic: str
    bound_s: float
    again: threading.Event | None = None  # set once the broker is up (outside case)
    first: Outcome | None = None
    second: Outcome | None = None
    crashed: list[BaseException] = field(default_factory=list)

    def client_id(self, surface: str) -> str:
        return f"late-{self.flavor}-{surface}"


async def call(obj: Any, name: str, *args: Any, **kw: Any) -> Any:
    """``obj.name(...)``, awaited when the transport's call is awaitable."""
    out = getattr(obj, name)(*args, **kw)
    if isinstance(out, Awaitable):
        out = await out
    return out


async def timed(t0: float, fn: Callable[[], Awaitable[Any]]) -> Outcome:
    try:
        value = await fn()
    except Exception as exc:
        value = exc
    return Outcome(value, time.monotonic() - t0)


async def until_up(s: Scenario) -> bool:
    """Wait for the broker of the outside case (False: there is no second call)."""
    if s.again is None:
        return False
    end = time.monotonic() + LATER_S + START_S + 30
    while not s.again.is_set():
        assert time.monotonic() < end, "the broker never came up"
        await anyio.sleep(0.05)
    return True


async def until_ok(fn: Callable[[], Awaitable[Any]], bound_s: float) -> Outcome:
    """Call again until it works, within ``bound_s`` (a call's own bound is short)."""
    t0 = time.monotonic()
    while True:
        out = await timed(t0, fn)
        if out.error is None or out.elapsed > bound_s:
            return out
        await anyio.sleep(0.2)


# -- the four surfaces, each the same on every transport ------------------------------


#: Each transport's module and the prefix of its class names.
_TRANSPORTS = {"selector": "Kafka", "asyncio": "AsyncKafka", "trio": "TrioKafka"}
_CLASSES = {
    "producer": "Producer",
    "consumer": "Consumer",
    "client": "Client",
    "admin": "AdminClient",
}


def _classes(flavor: str) -> dict[str, Any]:
    module = importlib.import_module(f"kafkacore.transports.{flavor}")
    prefix = _TRANSPORTS[flavor]
    return {surface: getattr(module, prefix + name) for surface, name in _CLASSES.items()}


class _Opened:
    """``with`` for the selector's objects, ``async with`` for the others."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    async def __aenter__(self) -> Any:
        if hasattr(self.obj, "__aenter__"):
            return await self.obj.__aenter__()
        return self.obj.__enter__()

    async def __aexit__(self, *exc: Any) -> None:
        if hasattr(self.obj, "__aexit__"):
            await self.obj.__aexit__(*exc)
        else:
            self.obj.__exit__(*exc)


async def producer(s: Scenario, t0: float) -> None:
    cls = _classes(s.flavor)["producer"]
    ms = int(s.bound_s * 1000)
    p = cls(
        s.bootstrap, client_id=s.client_id("producer"), linger_ms=0, max_block_ms=ms,
        delivery_timeout_ms=max(ms, 120_000),
    )  # fmt: skip

    async def send() -> Any:
        if s.flavor == "selector":
            return p.send(s.topic, b"late").get(timeout=s.bound_s + 30)
        return await p.send_and_wait(s.topic, b"late")

    async with _Opened(p):
        s.first = await timed(t0, send)
        if await until_up(s):
            s.second = await until_ok(send, INSIDE_S)


async def consumer(s: Scenario, t0: float) -> None:
    cls = _classes(s.flavor)["consumer"]
    # Assigned, not subscribed: the topic cannot exist before its broker, and a
    # classic group member that joined while its topic was missing does not
    # pick the topic up once it is created (a separate fault, found here and
    # reported with issue 26); an assigned partition is fetched once it exists.
    c = cls(
        bootstrap_servers=s.bootstrap, client_id=s.client_id("consumer"),
        auto_offset_reset="earliest",
    )  # fmt: skip

    async def first_poll() -> Any:
        return await call(c, "poll_records", timeout=s.bound_s)

    async def records() -> Any:
        got = await call(c, "poll_records", timeout=5.0)
        assert got, "no record yet"
        return got

    async with _Opened(c):
        await call(c, "assign", [TopicPartition(s.topic, 0)])
        s.first = await timed(t0, first_poll)
        if await until_up(s):
            s.second = await until_ok(records, INSIDE_S)


async def client(s: Scenario, t0: float) -> None:
    # Entering connects, bounded by request_timeout_ms (connect()'s default).
    cls = _classes(s.flavor)["client"]

    async def connect() -> Any:
        c = cls(
            s.bootstrap, client_id=s.client_id("client"), request_timeout_ms=int(s.bound_s * 1000)
        )
        async with _Opened(c) as opened:
            return sorted(await call(opened, "metadata"))

    s.first = await timed(t0, connect)


async def admin(s: Scenario, t0: float) -> None:
    cls = _classes(s.flavor)["admin"]
    a = cls(
        bootstrap_servers=s.bootstrap, client_id=s.client_id("admin"),
        retry_backoff_max_ms=RETRY_MAX_MS,
    )  # fmt: skip

    async def describe() -> Any:
        return await call(a, "describe_cluster", timeout=s.bound_s)

    async def describe_again() -> Any:
        return await call(a, "describe_cluster", timeout=30.0)

    async with _Opened(a):
        s.first = await timed(t0, describe)
        if await until_up(s):
            s.second = await until_ok(describe_again, INSIDE_S)


RUNNERS = {"producer": producer, "consumer": consumer, "client": client, "admin": admin}


def start_surface(surface: str, s: Scenario, t0: float) -> threading.Thread:
    def body() -> None:
        async def main() -> None:
            await RUNNERS[surface](s, t0)

        try:
            if s.flavor == "trio":
                trio.run(main)
            else:
                asyncio.run(main())  # the selector's calls block in this thread
        except BaseException as exc:  # reported by the test
            s.crashed.append(exc)

    thread = threading.Thread(target=body, name=f"late-{s.flavor}-{surface}", daemon=True)
    thread.start()
    return thread


def race(flavor: str, *, late_s: float, bound_s: float, again: bool) -> dict[str, Scenario]:
    """Start the four surfaces, then the broker ``late_s`` later; their outcomes."""
    port = port_nobody_listens_on()
    topic = f"late-{uuid.uuid4().hex[:8]}"
    up = threading.Event() if again else None
    scenarios = {
        surface: Scenario(flavor, f"127.0.0.1:{port}", topic, bound_s, up) for surface in SURFACES
    }
    t0 = time.monotonic()
    threads = [start_surface(surface, scenarios[surface], t0) for surface in SURFACES]
    kafka = LocalKafka(port=port, start_timeout=START_S)
    try:
        time.sleep(max(0.0, t0 + late_s - time.monotonic()))
        kafka.start()
        kafka.create_topic(topic, 1)  # as a fixture would, once the broker is up
        if up is not None:
            up.set()
    finally:
        for thread in threads:
            thread.join(timeout=INSIDE_S + 60)
        kafka.stop()
    for surface, s in scenarios.items():
        assert not s.crashed, f"{surface}: {chain_text(s.crashed[0])}"
        assert s.first is not None, f"{surface}: no outcome"
    return scenarios


def refused_first(caplog: pytest.LogCaptureFixture, s: Scenario, surface: str) -> bool:
    """The surface's client logged a round of refused bootstrap connections."""
    tag = f"[{s.client_id(surface)}] bootstrap failed, still trying"
    return any(r.levelno == logging.WARNING and tag in r.getMessage() for r in caplog.records)


def test_a_broker_started_after_its_clients_inside_their_bound_is_used(
    flavor: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="kafkacore"):
        scenarios = race(flavor, late_s=LATE_S, bound_s=INSIDE_S, again=False)
    for surface, s in scenarios.items():
        out = s.first
        assert out is not None and out.error is None, f"{surface}: {chain_text(out.error)}"
        assert out.elapsed >= LATE_S, f"{surface} succeeded before the broker was launched"
        assert refused_first(caplog, s, surface), f"{surface}: never refused, no race"
    first_poll = scenarios["consumer"].first
    assert first_poll is not None and [r.value for r in first_poll.value] == [b"late"], (
        f"the first poll, after {first_poll.elapsed:.1f} s: {first_poll.value!r}"
    )
    assert scenarios["client"].first.value == [1]  # the broker's id, from metadata
    assert [b.node_id for b in scenarios["admin"].first.value.brokers] == [1]


def test_a_broker_started_after_the_bound_is_reported_then_used(flavor: str) -> None:
    scenarios = race(flavor, late_s=LATER_S, bound_s=OUTSIDE_S, again=True)
    for surface, s in scenarios.items():
        out = s.first
        assert out is not None
        text = chain_text(out.error)
        assert isinstance(out.error, NoBrokersAvailable), f"{surface}: {text or out.value!r}"
        assert s.bootstrap in str(out.error), f"{surface}: {text}"
        assert any(isinstance(e, ConnectionRefusedError) for e in chain(out.error)), text
        assert OUTSIDE_S - EARLY_S <= out.elapsed < OUTSIDE_S + SLACK_S, (
            f"{surface}: after {out.elapsed:.2f} s (bound {OUTSIDE_S} s): {text}"
        )
    # The same producer, consumer and admin client, once the broker is up.
    for surface in ("producer", "consumer", "admin"):
        second = scenarios[surface].second
        assert second is not None and second.error is None, (
            f"{surface} after the broker came up: {chain_text(second and second.error)}"
        )

"""The drivers' farewell: a closing core's last bytes reach the peer, bounded.

A scripted core (:class:`GoodbyeCore`, the graceful-close side of a client
core: ``begin_close``, ``closing_done``, ``set_wall_offset``) opens one
connection to a local server; asked to close, it writes a goodbye much
larger than the socket buffers and is done when the server echoed all of
it. Each driver (the selector's loop thread, asyncio, trio) must keep
serving the connection until then, and only then close; against a server
that reads but never answers, the close must end at its timeout. No
broker: the real-broker check is ``tests/telemetry/test_broker.py``.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import trio

from kafkacore.client.driver import Action, OpenConnection, WriteData
from kafkacore.transports._async_driver import AsyncDriver
from kafkacore.transports._asyncio_driver import AsyncioDriver
from kafkacore.transports._common import Parts, make_parts
from kafkacore.transports._lifecycle import closer_of, farewell_ms
from kafkacore.transports._selector_driver import LoopThread
from kafkacore.transports._trio_driver import TrioDriver

GOODBYE = bytes(range(256)) * 1024  # 256 KiB: many partial writes on 8 KiB buffers
SILENT_TIMEOUT_S = 0.4
#: A loaded machine (2 cores shared with brokers and JVMs) may be slow to wake.
SLACK_S = 1.5


class GoodbyeCore:
    """A driven core whose graceful close is one large write, answered by an echo."""

    def __init__(self, port: int, *, now: float) -> None:
        self.started_at = now
        self.actions: list[Action] = [
            OpenConnection(conn_id=1, host="127.0.0.1", port=port, tls=False)
        ]
        self.connected = False
        self.echoed = 0
        self.closes = 0
        self.until: float | None = None
        self.expired = False
        self.wall_offset: float | None = None

    # -- Driven ------------------------------------------------------------------
    def connection_made(self, conn_id: int, *, now: float) -> None:
        self.connected = True

    def connection_failed(self, conn_id: int, error: BaseException, *, now: float) -> None:
        raise AssertionError(f"connect failed: {error!r}")

    def data_received(self, conn_id: int, data: Any, *, now: float) -> None:
        self.echoed += len(data)

    def connection_lost(self, conn_id: int, error: BaseException | None, *, now: float) -> None:
        self.connected = False

    def handle_timeout(self, *, now: float) -> None:
        if self.until is not None and now >= self.until:
            self.expired = True

    def next_deadline(self) -> float | None:
        return None if self.until is None or self.closing_done else self.until

    def pull_actions(self) -> list[Action]:
        out, self.actions = self.actions, []
        return out

    def pull_events(self) -> list[object]:
        return []

    # -- the graceful close ------------------------------------------------------
    def begin_close(self, *, now: float, timeout_ms: int) -> None:
        self.closes += 1
        self.until = now + timeout_ms / 1000
        self.actions.append(WriteData(conn_id=1, data=GOODBYE))

    @property
    def closing_done(self) -> bool:
        return self.echoed >= len(GOODBYE) or self.expired

    def set_wall_offset(self, offset: float) -> None:
        self.wall_offset = offset


class Peer:
    """A local server: echoes what it reads, or (``silent``) reads and never answers."""

    def __init__(self, *, silent: bool) -> None:
        self.silent = silent
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.received = 0
        self.closed = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            try:
                while data := conn.recv(65536):
                    self.received += len(data)
                    if not self.silent:
                        conn.sendall(data)
            except OSError:
                pass
        self.closed.set()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(params=["echo", "silent"])
def peer(request: pytest.FixtureRequest) -> Iterator[Peer]:
    server = Peer(silent=request.param == "silent")
    yield server
    server.close()


def _parts(port: int) -> Parts:
    return make_parts(
        "FarewellTest",
        f"127.0.0.1:{port}",
        ssl_server_hostname=None,
        rng=None,
        options={"send_buffer_bytes": 8192, "receive_buffer_bytes": 8192},
    )


def _wait_for(what: str, done: Callable[[], bool], timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.005)


def _check(peer: Peer, core: GoodbyeCore, elapsed: float, timeout: float) -> None:
    assert core.closes == 1
    if peer.silent:
        # Nothing answers: the close ends at its timeout (the core's deadline or
        # the driver's own bound, whichever fires first), not before, not much after.
        assert core.echoed == 0
        assert timeout * 0.9 <= elapsed < timeout + SLACK_S, elapsed
    else:
        # Every byte went out and came back before the sockets closed.
        assert core.echoed == len(GOODBYE) == peer.received
        assert elapsed < timeout, elapsed


def _check_wall_offset(core: GoodbyeCore, clock: Callable[[], float]) -> None:
    assert core.wall_offset is not None
    assert abs(clock() + core.wall_offset - time.time()) < 1.0


# ------------------------------------------------------------------- selector
def test_selector_loop_serves_the_goodbye_before_it_closes(peer: Peer) -> None:
    timeout = SILENT_TIMEOUT_S if peer.silent else 30.0
    loop = LoopThread("FarewellTest", _parts(peer.port), noun="client", thread_name="farewell")
    core = GoodbyeCore(peer.port, now=loop.clock())
    last: list[bool] = []
    loop.start(core, on_event=lambda event: None)
    _wait_for("the connection", lambda: core.connected)
    _check_wall_offset(core, loop.clock)
    start = time.monotonic()
    loop.stop(lambda: last.append(core.closing_done), timeout)
    elapsed = time.monotonic() - start
    assert last == [True]  # the owner's last command ran after the farewell
    _check(peer, core, elapsed, timeout)
    assert peer.closed.wait(5)  # and then the socket closed


def test_selector_stop_without_a_budget_skips_the_farewell() -> None:
    server = Peer(silent=True)
    try:
        loop = LoopThread("FarewellTest", _parts(server.port), noun="client", thread_name="fw0")
        core = GoodbyeCore(server.port, now=loop.clock())
        loop.start(core, on_event=lambda event: None)
        _wait_for("the connection", lambda: core.connected)
        loop.stop(None, 0)
        assert core.closes == 0
    finally:
        server.close()


# --------------------------------------------------------------- asyncio, trio
async def _farewell_on(driver: AsyncDriver, peer: Peer, timeout: float, sleep: Any) -> float:
    core = driver.attach(lambda now: GoodbyeCore(peer.port, now=now), lambda event: None)
    for _ in range(2000):
        if core.connected:
            break
        await sleep(0.005)
    assert core.connected
    _check_wall_offset(core, driver.clock)
    start = time.monotonic()
    await driver.farewell(timeout)
    elapsed = time.monotonic() - start
    driver.abort()
    _check(peer, core, elapsed, timeout)
    return elapsed


def test_asyncio_driver_serves_the_goodbye_before_it_closes(peer: Peer) -> None:
    timeout = SILENT_TIMEOUT_S if peer.silent else 30.0

    async def main() -> None:
        driver = AsyncioDriver("FarewellTest", _parts(peer.port))
        await _farewell_on(driver, peer, timeout, asyncio.sleep)
        await asyncio.sleep(0)

    asyncio.run(main())
    assert peer.closed.wait(5)


def test_trio_driver_serves_the_goodbye_before_it_closes(peer: Peer) -> None:
    timeout = SILENT_TIMEOUT_S if peer.silent else 30.0

    async def main() -> None:
        driver = TrioDriver("FarewellTest", _parts(peer.port))
        await driver.open()
        try:
            await _farewell_on(driver, peer, timeout, trio.sleep)
        finally:
            driver.abort()  # a failed check must not leave the nursery's tasks behind
            await driver.close()

    trio.run(main)
    assert peer.closed.wait(5)


def test_no_budget_means_no_farewell() -> None:
    async def main() -> None:
        server = Peer(silent=True)
        try:
            driver = AsyncioDriver("FarewellTest", _parts(server.port))
            core = driver.attach(lambda now: GoodbyeCore(server.port, now=now), lambda e: None)
            for budget in (None, 0, -1.0, float("nan")):
                await driver.farewell(budget)
            assert core.closes == 0
            driver.abort()
        finally:
            server.close()

    asyncio.run(main())


# ------------------------------------------------------------------ helpers
def test_the_client_core_is_found_in_its_owner() -> None:
    core = GoodbyeCore(1, now=0.0)

    class Owner:
        client = core

    assert closer_of(core) is core
    assert closer_of(Owner()) is core
    assert closer_of(object()) is None


@pytest.mark.parametrize(
    ("seconds", "ms"),
    [(None, 0), (0, 0), (-1.0, 0), (float("nan"), 0), (0.0001, 1), (2.5, 2500)],
)
def test_farewell_budget_in_milliseconds(seconds: float | None, ms: int) -> None:
    assert farewell_ms(seconds) == ms

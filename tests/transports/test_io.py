"""The three I/O backends under a scripted core, without a broker.

A tiny fake core (:class:`EchoCore`) drives each backend through the shared
:class:`~kafkacore.transports._bridge.Bridge` against a local echo server: it asks for
a connection, writes a payload much larger than the socket buffers (so the
transport must keep unsent remainders: partial writes), expects every byte
back in order, arms a timer and closes. The same script runs on the
selector, asyncio and trio backends, plain and over TLS (trustme CA).
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import trustme

from kafkacore.client.driver import Action, CloseConnection, OpenConnection, WriteData
from kafkacore.errors import AuthenticationError, KafkaConnectionError
from kafkacore.transports._bridge import Bridge
from kafkacore.transports._sockets import SocketConfig

PAYLOAD = bytes(range(256)) * 8 * 1024  # 2 MiB
CHUNK = 64 * 1024


@dataclass
class Done:
    received: bytes
    timer_fired_at: float | None
    deadline: float


class EchoCore:
    """Opens one connection, writes PAYLOAD in chunks, expects it echoed, then a timer."""

    def __init__(self, host: str, port: int, *, tls: bool, server_hostname: str | None) -> None:
        self.actions: list[Action] = [
            OpenConnection(
                conn_id=1, host=host, port=port, tls=tls, server_hostname=server_hostname
            )
        ]
        self.events: list[object] = []
        self.received = bytearray()
        self.deadline: float | None = None
        self.armed_at: float | None = None
        self.fired_at: float | None = None
        self.failure: BaseException | None = None
        self.facts: list[str] = []

    def connection_made(self, conn_id: int, *, now: float) -> None:
        self.facts.append("made")
        view = memoryview(PAYLOAD)
        for i in range(0, len(PAYLOAD), CHUNK):
            self.actions.append(WriteData(conn_id=conn_id, data=view[i : i + CHUNK]))

    def connection_failed(self, conn_id: int, error: BaseException, *, now: float) -> None:
        self.facts.append("failed")
        self.failure = error
        self.events.append(error)

    def data_received(self, conn_id: int, data: Any, *, now: float) -> None:
        self.received += data
        if len(self.received) >= len(PAYLOAD) and self.deadline is None:
            self.deadline = now + 0.01  # a real 10 ms timer: the transport's clock
            self.armed_at = now

    def connection_lost(self, conn_id: int, error: BaseException | None, *, now: float) -> None:
        self.facts.append("lost")
        self.failure = error or KafkaConnectionError("lost")
        self.events.append(self.failure)

    def handle_timeout(self, *, now: float) -> None:
        if self.deadline is not None and now >= self.deadline and self.fired_at is None:
            self.fired_at = now
            self.actions.append(CloseConnection(conn_id=1))
            self.events.append(
                Done(received=bytes(self.received), timer_fired_at=now, deadline=self.deadline)
            )
            self.deadline = None

    def next_deadline(self) -> float | None:
        return self.deadline

    def pull_actions(self) -> list[Action]:
        out, self.actions = self.actions, []
        return out

    def pull_events(self) -> list[object]:
        out, self.events = self.events, []
        return out


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


class EchoServer:
    """Threaded echo server; optionally TLS. Accepts any number of clients."""

    def __init__(self, ctx: ssl.SSLContext | None) -> None:
        self.ctx = ctx
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.threads: list[threading.Thread] = []
        self.closing = False
        self.acceptor = threading.Thread(target=self._accept, daemon=True)
        self.acceptor.start()

    def _accept(self) -> None:
        while not self.closing:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            t = threading.Thread(target=self._echo, args=(conn,), daemon=True)
            t.start()
            self.threads.append(t)

    def _echo(self, conn: socket.socket) -> None:
        try:
            if self.ctx is not None:
                conn = self.ctx.wrap_socket(conn, server_side=True)
            # Small reads: the client sees a slow reader and partial writes.
            while data := conn.recv(4096):
                conn.sendall(data)
        except (OSError, ssl.SSLError):
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.closing = True
        self.sock.close()


@pytest.fixture(params=["plain", "tls"])
def server(request: pytest.FixtureRequest, ca: trustme.CA) -> Iterator[EchoServer]:
    ctx = None
    if request.param == "tls":
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("127.0.0.1", "localhost").configure_cert(ctx)
    srv = EchoServer(ctx)
    yield srv
    srv.close()


def _client_ctx(ca: trustme.CA) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ca.configure_trust(ctx)
    return ctx


SMALL_BUFFERS = SocketConfig(send_buffer_bytes=8192, receive_buffer_bytes=8192)


def _check(done: Done) -> None:
    assert done.received == PAYLOAD  # every byte, in order, once
    assert done.timer_fired_at is not None and done.timer_fired_at >= done.deadline


def run_selector(core: EchoCore, ca: trustme.CA, hostname: str | None = None) -> object:
    from kafkacore.transports._selector_io import SelectorIo

    io = SelectorIo(
        sockets=SMALL_BUFFERS, ssl_context=lambda: _client_ctx(ca), ssl_server_hostname=hostname
    )
    seen: list[object] = []
    io.bridge = Bridge(core, io, clock=io.clock, on_event=seen.append)
    io.bridge.pump()
    try:
        for _ in range(100_000):
            if seen:
                return seen[0]
            io.run_once(max_wait=1.0)
        pytest.fail(f"selector: no outcome; facts {core.facts}")
    finally:
        io.close_all()


def run_asyncio(core: EchoCore, ca: trustme.CA, hostname: str | None = None) -> object:
    import asyncio

    from kafkacore.transports._asyncio_io import AsyncioIo

    async def main() -> object:
        loop = asyncio.get_running_loop()
        io = AsyncioIo(
            loop,
            sockets=SMALL_BUFFERS,
            ssl_context=lambda: _client_ctx(ca),
            ssl_server_hostname=hostname,
        )
        outcome: asyncio.Future[object] = loop.create_future()

        def on_event(event: object) -> None:
            if not outcome.done():
                outcome.set_result(event)

        io.bridge = Bridge(core, io, clock=io.clock, on_event=on_event)
        io.bridge.pump()
        try:
            return await asyncio.wait_for(outcome, 60)
        finally:
            io.abort_all()

    return asyncio.run(main())


def run_trio(core: EchoCore, ca: trustme.CA, hostname: str | None = None) -> object:
    import trio

    from kafkacore.transports._trio_io import TrioIo

    async def main() -> object:
        seen: list[object] = []
        got = trio.Event()
        async with trio.open_nursery() as nursery:
            io = TrioIo(
                nursery,
                sockets=SMALL_BUFFERS,
                ssl_context=lambda: _client_ctx(ca),
                ssl_server_hostname=hostname,
            )

            def on_event(e: object) -> None:
                seen.append(e)
                got.set()

            io.bridge = Bridge(core, io, clock=io.clock, on_event=on_event)
            nursery.start_soon(io.run_timer)
            io.bridge.pump()
            with trio.fail_after(60):
                await got.wait()
            io.abort_all()
        return seen[0]

    return trio.run(main)


RUNNERS = {"selector": run_selector, "asyncio": run_asyncio, "trio": run_trio}


@pytest.mark.parametrize("backend", list(RUNNERS))
def test_large_writes_echo_back_in_order_then_timer_fires(
    backend: str, server: EchoServer, ca: trustme.CA
) -> None:
    core = EchoCore("127.0.0.1", server.port, tls=server.ctx is not None, server_hostname=None)
    outcome = RUNNERS[backend](core, ca)
    assert isinstance(outcome, Done), (outcome, core.facts)
    _check(outcome)
    assert core.facts == ["made"]  # closed by the core: no fact after CloseConnection


@pytest.mark.parametrize("backend", list(RUNNERS))
def test_refused_connection_is_reported_as_failed(backend: str, ca: trustme.CA) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    core = EchoCore("127.0.0.1", port, tls=False, server_hostname=None)
    outcome = RUNNERS[backend](core, ca)
    assert isinstance(outcome, KafkaConnectionError), outcome
    assert f"127.0.0.1:{port}" in str(outcome)
    assert core.facts == ["failed"]


@pytest.mark.parametrize("backend", list(RUNNERS))
def test_tls_hostname_mismatch_is_an_authentication_error(backend: str, ca: trustme.CA) -> None:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(ctx)
    srv = EchoServer(ctx)
    try:
        core = EchoCore("127.0.0.1", srv.port, tls=True, server_hostname=None)
        outcome = RUNNERS[backend](core, ca, "elsewhere.invalid")
    finally:
        srv.close()
    assert isinstance(outcome, AuthenticationError), outcome
    assert "elsewhere.invalid" in str(outcome)
    assert core.facts == ["failed"]

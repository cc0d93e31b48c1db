"""Regression: the selector backend flushes writes made between loop passes.

The blocking producer feeds records to its core through ``Bridge.command``
between ``run_once`` passes. Those writes must reach the socket before the
next ``select()`` may block; otherwise they wait for the next timer (the
30 s request timeout) and a second ``send_many`` took 30 s.
"""

from __future__ import annotations

from typing import Any

from kafkacore.client.driver import Action, OpenConnection, WriteData
from kafkacore.transports._bridge import Bridge
from kafkacore.transports._selector_io import SelectorIo
from kafkacore.transports._sockets import SocketConfig

from .test_io import EchoServer


class WriteOnCommandCore:
    """Opens one connection; writes only when the test issues a command."""

    def __init__(self, port: int) -> None:
        self.actions: list[Action] = [
            OpenConnection(conn_id=1, host="127.0.0.1", port=port, tls=False)
        ]
        self.connected = False
        self.received = bytearray()

    def connection_made(self, conn_id: int, *, now: float) -> None:
        self.connected = True

    def connection_failed(self, conn_id: int, error: BaseException, *, now: float) -> None:
        raise AssertionError(f"connect failed: {error}")

    def data_received(self, conn_id: int, data: Any, *, now: float) -> None:
        self.received += data

    def connection_lost(self, conn_id: int, error: BaseException | None, *, now: float) -> None:
        raise AssertionError(f"connection lost: {error}")

    def handle_timeout(self, *, now: float) -> None:
        pass

    def next_deadline(self) -> float | None:
        return None  # no timer: a blocked select() would wait for the full max_wait

    def pull_actions(self) -> list[Action]:
        out, self.actions = self.actions, []
        return out

    def pull_events(self) -> list[object]:
        return []


def test_writes_issued_between_passes_are_flushed_before_select_blocks() -> None:
    server = EchoServer(None)
    io = SelectorIo(sockets=SocketConfig(), ssl_context=lambda: None, ssl_server_hostname=None)  # type: ignore[arg-type,return-value]
    core = WriteOnCommandCore(server.port)
    io.bridge = Bridge(core, io, clock=io.clock, on_event=lambda e: None)
    io.bridge.pump()
    try:
        for _ in range(1000):
            if core.connected:
                break
            io.run_once(max_wait=1.0)
        assert core.connected

        real_select = io.selector.select
        blocked_with_pending: list[int] = []

        def select(timeout: float | None = None) -> Any:
            if io._dirty:
                blocked_with_pending.append(len(io._dirty))
            return real_select(timeout)

        io.selector.select = select  # type: ignore[method-assign]
        # A command from outside a pass, as the producer's feed does.
        io.bridge.command(lambda now: core.actions.append(WriteData(conn_id=1, data=b"ping")))
        for _ in range(1000):
            if bytes(core.received) == b"ping":
                break
            io.run_once(max_wait=1.0)
        assert bytes(core.received) == b"ping"
        assert blocked_with_pending == [], "select() ran while writes were still unsent"
    finally:
        io.close_all()
        server.close()

"""A minimal blocking driver for the real-broker admin tests.

It drives any :class:`~kafkacore.client.driver.Driven` machine over plain
TCP sockets with ``selectors`` on the calling thread, and reports time from
``time.monotonic``: no TLS, no threads, no facade. It exists so the admin
core can be proven against a real broker before (and independently of) the
transports' admin facades.
"""

from __future__ import annotations

import errno
import selectors
import socket
import time
from collections.abc import Callable
from typing import Any, TypeVar

from kafkacore.client.driver import CloseConnection, Driven, OpenConnection, WriteData
from kafkacore.operation import Operation

T = TypeVar("T")


class SocketDriver:
    """Runs ``machine`` until a condition holds; see the module docstring."""

    def __init__(self, machine: Driven) -> None:
        self.machine = machine
        self.selector = selectors.DefaultSelector()
        self.socks: dict[int, socket.socket] = {}
        self.connecting: set[int] = set()
        self.out: dict[int, bytearray] = {}
        self.events: list[object] = []

    def close(self) -> None:
        for conn_id in list(self.socks):
            self._drop(conn_id)
        self.selector.close()

    def _drop(self, conn_id: int) -> None:
        sock = self.socks.pop(conn_id, None)
        self.connecting.discard(conn_id)
        self.out.pop(conn_id, None)
        if sock is not None:
            self.selector.unregister(sock)
            sock.close()

    def _apply(self) -> None:
        while True:
            actions = self.machine.pull_actions()
            self.events.extend(self.machine.pull_events())
            if not actions:
                return
            for action in actions:
                if isinstance(action, OpenConnection):
                    self._open(action)
                elif isinstance(action, WriteData):
                    self.out.setdefault(action.conn_id, bytearray()).extend(action.data)
                    self._watch(action.conn_id)
                elif isinstance(action, CloseConnection):
                    self._drop(action.conn_id)

    def _open(self, action: OpenConnection) -> None:
        assert not action.tls, "SocketDriver speaks plain TCP only"
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        code = sock.connect_ex((action.host, action.port))
        if code not in (0, errno.EINPROGRESS):
            sock.close()
            self.machine.connection_failed(
                action.conn_id, ConnectionRefusedError(code, "connect failed"), now=time.monotonic()
            )
            return
        self.socks[action.conn_id] = sock
        self.connecting.add(action.conn_id)
        self.selector.register(sock, selectors.EVENT_WRITE, action.conn_id)

    def _watch(self, conn_id: int) -> None:
        sock = self.socks.get(conn_id)
        if sock is None:
            return
        mask = selectors.EVENT_READ
        if conn_id in self.connecting or self.out.get(conn_id):
            mask |= selectors.EVENT_WRITE
        self.selector.modify(sock, mask, conn_id)

    def _ready(self, conn_id: int, mask: int) -> None:
        sock = self.socks[conn_id]
        now = time.monotonic()
        if conn_id in self.connecting:
            code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            self.connecting.discard(conn_id)
            if code:
                self._drop(conn_id)
                self.machine.connection_failed(
                    conn_id, ConnectionRefusedError(code, "refused"), now=now
                )
                return
            self._watch(conn_id)
            self.machine.connection_made(conn_id, now=now)
            return
        if mask & selectors.EVENT_WRITE and self.out.get(conn_id):
            sent = sock.send(self.out[conn_id])
            del self.out[conn_id][:sent]
            self._watch(conn_id)
        if mask & selectors.EVENT_READ:
            try:
                data = sock.recv(1 << 16)
            except OSError as exc:
                self._drop(conn_id)
                self.machine.connection_lost(conn_id, exc, now=now)
                return
            if not data:
                self._drop(conn_id)
                self.machine.connection_lost(
                    conn_id, ConnectionResetError("closed by peer"), now=now
                )
                return
            self.machine.data_received(conn_id, data, now=now)

    def run(self, until: Callable[[], bool], *, timeout: float = 60.0) -> None:
        """Serve the machine until ``until()`` (AssertionError after ``timeout`` s)."""
        end = time.monotonic() + timeout
        self._apply()
        while not until():
            now = time.monotonic()
            if now > end:
                raise AssertionError(f"SocketDriver: condition not reached in {timeout} s")
            deadline = self.machine.next_deadline()
            wait = 0.2 if deadline is None else min(max(deadline - now, 0.0), 0.2)
            for key, mask in self.selector.select(wait) if self.socks else ():
                if key.data in self.socks:
                    self._ready(key.data, mask)
                    self._apply()
            if not self.socks:
                time.sleep(wait)
            deadline = self.machine.next_deadline()
            if deadline is not None and time.monotonic() >= deadline:
                self.machine.handle_timeout(now=time.monotonic())
            self._apply()

    def result(self, op: Operation[T], *, timeout: float = 60.0) -> T:
        """Run until ``op`` completes; its value (raises its error)."""
        self.run(lambda: op.done, timeout=timeout)
        return op.result()

    def wait(self, op: Operation[Any], *, timeout: float = 60.0) -> Operation[Any]:
        self.run(lambda: op.done, timeout=timeout)
        return op

"""A blocking socket driver for the client core, for real-broker tests only.

It is deliberately tiny (no TLS, one thread, ``select`` with the core's
deadline as timeout): the real transports live in ``transports/``; this one
only proves the core's wire behaviour (ApiVersions, SASL) against Kafka early.
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Callable

from kafkacore.client import KafkaClientCore
from kafkacore.client.driver import CloseConnection, OpenConnection, WriteData


class SocketPump:
    def __init__(self, core: KafkaClientCore) -> None:
        self.core = core
        self.socks: dict[int, socket.socket] = {}
        self.events: list[object] = []

    def _apply(self) -> None:
        while True:
            actions = self.core.pull_actions()
            self.events.extend(self.core.pull_events())
            if not actions:
                return
            for action in actions:
                now = time.monotonic()
                if isinstance(action, OpenConnection):
                    try:
                        sock = socket.create_connection((action.host, action.port), timeout=5)
                    except OSError as exc:
                        self.core.connection_failed(action.conn_id, exc, now=now)
                        continue
                    sock.setblocking(False)
                    self.socks[action.conn_id] = sock
                    self.core.connection_made(action.conn_id, now=now)
                elif isinstance(action, WriteData):
                    sock = self.socks[action.conn_id]
                    sock.setblocking(True)
                    sock.sendall(action.data)
                    sock.setblocking(False)
                elif isinstance(action, CloseConnection):
                    closing = self.socks.pop(action.conn_id, None)
                    if closing is not None:
                        closing.close()

    def run(self, until: Callable[[], bool], *, timeout: float = 30.0) -> None:
        end = time.monotonic() + timeout
        self._apply()
        while not until():
            now = time.monotonic()
            if now > end:
                raise AssertionError("socket pump: condition not reached in time")
            deadline = self.core.next_deadline()
            wait = 0.5 if deadline is None else min(max(deadline - now, 0.0), 0.5)
            ready, _, _ = select.select(list(self.socks.values()), [], [], wait)
            now = time.monotonic()
            by_sock = {s: cid for cid, s in self.socks.items()}
            for sock in ready:
                cid = by_sock[sock]
                try:
                    data = sock.recv(65536)
                except OSError as exc:
                    self.socks.pop(cid).close()
                    self.core.connection_lost(cid, exc, now=now)
                    continue
                if not data:
                    self.socks.pop(cid).close()
                    self.core.connection_lost(cid, None, now=now)
                else:
                    self.core.data_received(cid, data, now=now)
            self.core.handle_timeout(now=time.monotonic())
            self._apply()

    def close(self) -> None:
        self.core.shutdown(now=time.monotonic())
        self._apply()
        for sock in self.socks.values():
            sock.close()
        self.socks.clear()

"""Broker connections as trio tasks, for the trio transport.

Theory of operation
-------------------
Every connection the core asks for is one task in the client's nursery,
with its own cancel scope (:class:`_Conn`). The task connects (socket made
with the shared options, then ``trio.SSLStream`` for TLS), reports
``connection_made``, and then runs a reader loop while a writer child task
sends whatever the core queued (trio allows one receiver and one sender on
a stream at once, TLS included). States (:class:`ConnState`)::

    CONNECTING --(TCP [+TLS] up)--> OPEN --(EOF / error)--> CLOSED (connection_lost)
        \\--(error)--> CLOSED (connection_failed)
    any --(core closes)--> CLOSED (no fact: the scope is cancelled)

The timer is one long-lived task sleeping in a cancel scope whose
``deadline`` is moved whenever the core's next deadline changes; trio lets
a scope's deadline be changed from outside, so no task is respawned per
re-arm.
"""

from __future__ import annotations

import enum
import math
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import trio

from kafkacore.client.driver import ConnId, OpenConnection
from kafkacore.errors import KafkaConnectionError

from ._bridge import Bridge
from ._sockets import READ_CHUNK, SocketConfig, connect_error, new_socket
from ._tls import describe_tls_failure

if TYPE_CHECKING:
    import ssl  # types only: ssl loads with the first TLS context (_tls)

__all__ = ["ConnState", "TrioIo"]


class ConnState(enum.Enum):
    CONNECTING = "connecting"
    OPEN = "open"
    CLOSED = "closed"


@dataclass(slots=True, eq=False)
class _Conn:
    conn_id: ConnId
    scope: trio.CancelScope
    state: ConnState = ConnState.CONNECTING
    out: list[bytes | bytearray | memoryview] = field(default_factory=list)
    out_ready: trio.Event = field(default_factory=trio.Event)


class TrioIo:
    """The trio transport's I/O backend; see the module docstring."""

    def __init__(
        self,
        nursery: trio.Nursery,
        *,
        sockets: SocketConfig,
        ssl_context: Callable[[], ssl.SSLContext],
        ssl_server_hostname: str | None = None,
    ) -> None:
        self._nursery = nursery
        self._sockets = sockets
        self._ssl_context_factory = ssl_context
        self._ssl_context: ssl.SSLContext | None = None
        self._ssl_server_hostname = ssl_server_hostname
        self._conns: dict[ConnId, _Conn] = {}
        self._timer_scope = trio.CancelScope()
        self._timer_stop = trio.CancelScope()
        self._deadline: float | None = None
        self.bridge: Bridge | None = None

    @staticmethod
    def clock() -> float:
        return trio.current_time()

    def bridge_(self) -> Bridge:
        if self.bridge is None:  # pragma: no cover - wiring bug
            raise RuntimeError("TrioIo: bridge not attached; set io.bridge first")
        return self.bridge

    # -- IoBackend ------------------------------------------------------
    def open(self, action: OpenConnection) -> None:
        conn = _Conn(conn_id=action.conn_id, scope=trio.CancelScope())
        self._conns[action.conn_id] = conn
        self._nursery.start_soon(self._run_conn, action, conn)

    def write(self, conn_id: ConnId, data: bytes | bytearray | memoryview) -> None:
        conn = self._conns.get(conn_id)
        if conn is None or conn.state is ConnState.CLOSED or not data:
            return
        conn.out.append(data)
        conn.out_ready.set()

    def close(self, conn_id: ConnId) -> None:
        conn = self._conns.pop(conn_id, None)
        if conn is not None:
            conn.state = ConnState.CLOSED
            conn.scope.cancel()

    def set_deadline(self, deadline: float | None) -> None:
        self._deadline = deadline
        self._timer_scope.deadline = math.inf if deadline is None else deadline

    # -- tasks ------------------------------------------------------------
    async def run_timer(self) -> None:
        """Call ``handle_timeout`` whenever the core's deadline passes, until aborted."""
        with self._timer_stop:
            while True:
                with self._timer_scope:
                    await trio.sleep_forever()
                self._timer_scope = trio.CancelScope(
                    deadline=math.inf if self._deadline is None else self._deadline
                )
                if self._deadline is not None and trio.current_time() >= self._deadline:
                    self.bridge_().feed_timeout()

    def abort_all(self) -> None:
        """Stop the timer and every connection task (the nursery itself is left alone:
        its scope encloses the user's ``async with`` body)."""
        self._timer_stop.cancel()
        for conn in self._conns.values():
            conn.state = ConnState.CLOSED
            conn.scope.cancel()
        self._conns.clear()

    async def _run_conn(self, action: OpenConnection, conn: _Conn) -> None:
        with conn.scope:
            stream = await self._connect(action, conn)
            if stream is None:
                return
            try:
                if conn.state is not ConnState.CONNECTING:
                    return
                conn.state = ConnState.OPEN
                self.bridge_().feed_connected(conn.conn_id)
                error: BaseException | None = None
                async with trio.open_nursery() as inner:
                    inner.start_soon(self._writer, stream, conn)
                    try:
                        while True:
                            data = await stream.receive_some(READ_CHUNK)
                            if not data:
                                break
                            self.bridge_().feed_data(conn.conn_id, data)
                    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                        error = exc
                    inner.cancel_scope.cancel()
                if conn.state is ConnState.OPEN:
                    self._lost(conn, error)
            finally:
                await trio.aclose_forcefully(stream)

    async def _writer(self, stream: trio.abc.Stream, conn: _Conn) -> None:
        try:
            while True:
                await conn.out_ready.wait()
                conn.out_ready = trio.Event()
                chunks, conn.out = conn.out, []
                data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
                await stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            if conn.state is ConnState.OPEN:
                self._lost(conn, exc)
                conn.scope.cancel()

    def _lost(self, conn: _Conn, exc: BaseException | None) -> None:
        conn.state = ConnState.CLOSED
        self._conns.pop(conn.conn_id, None)
        err: BaseException | None = None
        if exc is not None:
            err = KafkaConnectionError(f"connection {conn.conn_id} lost: {exc}")
            err.__cause__ = exc
        self.bridge_().feed_lost(conn.conn_id, err)

    async def _connect(self, action: OpenConnection, conn: _Conn) -> trio.abc.Stream | None:
        host, port = action.host, action.port
        server_hostname = self._ssl_server_hostname or action.server_hostname or host
        try:
            infos = await trio.socket.getaddrinfo(
                host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
            )
            last: OSError | None = None
            tsock: trio.socket.SocketType | None = None
            for family, _t, _p, _n, addr in infos:
                if family not in (socket.AF_INET, socket.AF_INET6):
                    continue
                tsock = trio.socket.from_stdlib_socket(new_socket(family, self._sockets))
                try:
                    await tsock.connect(addr)
                except OSError as exc:
                    tsock.close()
                    tsock = None
                    last = exc
                    continue
                except BaseException:  # cancelled: the core closed it meanwhile
                    tsock.close()
                    raise
                break
            if tsock is None:
                raise last or OSError(f"no IPv4/IPv6 address for {host}")
        except OSError as exc:
            self._failed(conn, connect_error(host, port, exc))
            return None
        stream: trio.abc.Stream = trio.SocketStream(tsock)
        if action.tls:
            try:
                if self._ssl_context is None:
                    self._ssl_context = self._ssl_context_factory()
                tls = trio.SSLStream(stream, self._ssl_context, server_hostname=server_hostname)
                await tls.do_handshake()
            except BaseException as exc:
                await trio.aclose_forcefully(stream)
                if not isinstance(exc, trio.BrokenResourceError | OSError | ValueError):
                    raise  # cancelled: the core closed it meanwhile
                cause = exc.__cause__ if isinstance(exc, trio.BrokenResourceError) else exc
                self._failed(
                    conn,
                    describe_tls_failure(
                        cause or exc, host=host, port=port, server_hostname=server_hostname
                    ),
                )
                return None
            stream = tls
        return stream

    def _failed(self, conn: _Conn, err: BaseException) -> None:
        if conn.state is ConnState.CLOSED:
            return
        conn.state = ConnState.CLOSED
        self._conns.pop(conn.conn_id, None)
        self.bridge_().feed_failed(conn.conn_id, err)

"""Broker connections on an asyncio loop, for the asyncio transport.

Theory of operation
-------------------
Each connection the core asks for becomes one :class:`_KafkaProtocol`
(a plain ``asyncio.Protocol``: the loop hands us ``bytes`` it already
read, which is the fastest path asyncio has). Opening runs in a small task:
resolve, create the socket with the shared options, ``sock_connect`` and
then ``create_connection(sock=..., ssl=...)`` so TLS is asyncio's own.
The protocol reports ``connection_made``/``data_received``/``connection_lost``
facts through the :class:`~kafkacore.transports._bridge.Bridge`.

States of one connection (:class:`ConnState`)::

    CONNECTING --(protocol made)--> OPEN --(lost / closed by core)--> CLOSED
        \\--(error / cancelled)--> CLOSED

A connection the core closes reports nothing afterwards: its protocol is
marked CLOSED before the transport is told to close, so the late
``connection_lost`` callback is dropped. The single timer is one
``loop.call_at`` handle, re-armed lazily: only when the core's deadline
moves earlier than the armed one (a timer that fires early re-checks).
Writes made during one loop iteration are flushed together right after it.
"""

from __future__ import annotations

import asyncio
import enum
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafkacore.client.driver import ConnId, OpenConnection
from kafkacore.errors import KafkaConnectionError

from ._bridge import Bridge
from ._sockets import SocketConfig, connect_error, new_socket, numeric_address
from ._tls import describe_tls_failure

if TYPE_CHECKING:
    import ssl  # types only: ssl loads with the first TLS context (_tls)

__all__ = ["AsyncioIo", "ConnState"]


class ConnState(enum.Enum):
    CONNECTING = "connecting"
    OPEN = "open"
    CLOSED = "closed"


class _KafkaProtocol(asyncio.Protocol):
    __slots__ = ("conn_id", "flush_scheduled", "io", "pending", "state", "transport")

    def __init__(self, io: AsyncioIo, conn_id: ConnId) -> None:
        self.io = io
        self.conn_id = conn_id
        self.pending: list[bytes | bytearray | memoryview] = []
        self.flush_scheduled = False
        self.state = ConnState.CONNECTING
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if self.state is ConnState.CLOSED:  # closed by the core while connecting
            transport.abort()
            return
        self.state = ConnState.OPEN
        self.io.bridge_().feed_connected(self.conn_id)

    def data_received(self, data: bytes) -> None:
        if self.state is ConnState.OPEN:
            self.io.bridge_().feed_data(self.conn_id, data)

    def eof_received(self) -> bool:
        return False  # half-closed Kafka connections are useless: close fully

    def connection_lost(self, exc: Exception | None) -> None:
        if self.state is ConnState.CLOSED:
            return
        self.state = ConnState.CLOSED
        self.io.forget(self.conn_id)
        err: BaseException | None = None
        if exc is not None:
            err = KafkaConnectionError(f"connection {self.conn_id} lost: {exc}")
            err.__cause__ = exc
        self.io.bridge_().feed_lost(self.conn_id, err)


class AsyncioIo:
    """The asyncio transport's I/O backend; see the module docstring."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        sockets: SocketConfig,
        ssl_context: Callable[[], ssl.SSLContext],
        ssl_server_hostname: str | None = None,
    ) -> None:
        self._loop = loop
        self._sockets = sockets
        self._ssl_context_factory = ssl_context
        self._ssl_context: ssl.SSLContext | None = None
        self._ssl_server_hostname = ssl_server_hostname
        self._protocols: dict[ConnId, _KafkaProtocol] = {}
        self._connecting: dict[ConnId, asyncio.Task[None]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._deadline: float | None = None
        self.bridge: Bridge | None = None

    def clock(self) -> float:
        return self._loop.time()

    def bridge_(self) -> Bridge:
        if self.bridge is None:  # pragma: no cover - wiring bug
            raise RuntimeError("AsyncioIo: bridge not attached; set io.bridge first")
        return self.bridge

    # -- IoBackend ------------------------------------------------------
    def open(self, action: OpenConnection) -> None:
        proto = _KafkaProtocol(self, action.conn_id)
        self._protocols[action.conn_id] = proto
        task = self._loop.create_task(self._connect(action, proto))
        self._connecting[action.conn_id] = task

    def write(self, conn_id: ConnId, data: bytes | bytearray | memoryview) -> None:
        proto = self._protocols.get(conn_id)
        if proto is None or proto.state is not ConnState.OPEN or proto.transport is None:
            return  # the core learns of the loss through connection_lost
        # Written at once: a flush scheduled for after the loop iteration
        # costs every request one more iteration (a zero-timeout poll) before
        # its bytes leave, which is most of a single round trip's overhead
        # (issue 12). asyncio's transport sends right away when its buffer is
        # empty and queues otherwise, so a burst still coalesces under load.
        proto.transport.write(data)

    @staticmethod
    def _flush(proto: _KafkaProtocol) -> None:
        proto.flush_scheduled = False
        pending, proto.pending = proto.pending, []
        if proto.state is ConnState.OPEN and proto.transport is not None:
            proto.transport.writelines(pending)

    def close(self, conn_id: ConnId) -> None:
        proto = self._protocols.pop(conn_id, None)
        task = self._connecting.pop(conn_id, None)
        if task is not None:
            task.cancel()
        if proto is not None:
            proto.state = ConnState.CLOSED
            if proto.transport is not None:
                proto.transport.close()

    def set_deadline(self, deadline: float | None) -> None:
        # Lazy re-arming: the deadline moves on nearly every step, but a timer
        # already due earlier can stay; when it fires it re-checks the current
        # deadline. This saves a heap push and a cancel per step.
        self._deadline = deadline
        if deadline is None:
            return
        if self._timer is not None:
            if self._timer.when() <= deadline:
                return
            self._timer.cancel()
        self._timer = self._loop.call_at(deadline, self._on_timer)

    # -- internals ------------------------------------------------------
    def forget(self, conn_id: ConnId) -> None:
        self._protocols.pop(conn_id, None)

    def abort_all(self) -> None:
        """Drop every connection at once (bounded close)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._deadline = None
        for task in self._connecting.values():
            task.cancel()
        self._connecting.clear()
        for proto in self._protocols.values():
            proto.state = ConnState.CLOSED
            if proto.transport is not None:
                proto.transport.abort()
        self._protocols.clear()

    def _on_timer(self) -> None:
        self._timer = None
        deadline = self._deadline
        if deadline is None:
            return  # the core no longer needs a wake-up
        if self._loop.time() < deadline:
            self._timer = self._loop.call_at(deadline, self._on_timer)
            return
        self.bridge_().feed_timeout()

    async def _connect(self, action: OpenConnection, proto: _KafkaProtocol) -> None:
        host, port = action.host, action.port
        server_hostname = self._ssl_server_hostname or action.server_hostname or host
        sock: socket.socket | None = None
        try:
            try:
                numeric = numeric_address(host, port)
                addresses: list[tuple[int, Any]]
                if numeric is not None:
                    addresses = [numeric]
                else:
                    infos = await self._loop.getaddrinfo(
                        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
                    )
                    addresses = [(family, addr) for family, _t, _p, _n, addr in infos]
                last: OSError | None = None
                for family, addr in addresses:
                    if family not in (socket.AF_INET, socket.AF_INET6):
                        continue
                    sock = new_socket(family, self._sockets)
                    try:
                        await self._loop.sock_connect(sock, addr)
                    except OSError as exc:
                        sock.close()
                        sock = None
                        last = exc
                        continue
                    break
                if sock is None:
                    raise last or OSError(f"no IPv4/IPv6 address for {host}")
            except OSError as exc:
                self._failed(action.conn_id, connect_error(host, port, exc))
                return
            ctx: ssl.SSLContext | None = None
            if action.tls:
                if self._ssl_context is None:
                    self._ssl_context = self._ssl_context_factory()
                ctx = self._ssl_context
            try:
                await self._loop.create_connection(
                    lambda: proto,
                    sock=sock,
                    ssl=ctx,
                    server_hostname=server_hostname if ctx is not None else None,
                )
            except (OSError, ValueError) as exc:
                sock.close()
                err = (
                    describe_tls_failure(exc, host=host, port=port, server_hostname=server_hostname)
                    if ctx is not None
                    else connect_error(host, port, exc)
                )
                self._failed(action.conn_id, err)
                return
        except asyncio.CancelledError:
            if sock is not None:
                sock.close()
            raise
        finally:
            self._connecting.pop(action.conn_id, None)

    def _failed(self, conn_id: ConnId, err: BaseException) -> None:
        proto = self._protocols.pop(conn_id, None)
        if proto is None or proto.state is ConnState.CLOSED:
            return  # the core closed it meanwhile: no fact expected
        proto.state = ConnState.CLOSED
        self.bridge_().feed_failed(conn_id, err)

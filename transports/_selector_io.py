"""Non-blocking sockets and TLS on a ``selectors`` loop, for the selector transport.

Theory of operation
-------------------
One :class:`SelectorIo` owns a selector, every broker connection (a
:class:`~kafkacore.transports._selector_conn.SelectorConn`, which moves the bytes), a
wake-up socketpair and the single timer. It is driven by :meth:`run_once`,
called in a loop by exactly one thread (the driver's loop thread,
:mod:`kafkacore.transports._selector_driver`).

Names are resolved on a small helper thread pool (numeric addresses
inline), so a slow DNS answer never stalls the loop; a connection exists
as a ``SelectorConn`` only once an address is known.

Writes are queued per connection and sent at the end of the loop pass
that made them, joined into one buffer (one syscall for many requests);
what the socket does not take waits and goes out when writable.

Other threads talk to the loop only through :meth:`call_soon_threadsafe`:
a queue plus one byte on the wake-up socketpair.
"""

from __future__ import annotations

import concurrent.futures
import queue
import selectors
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafkacore.client.driver import ConnId, OpenConnection
from kafkacore.errors import KafkaConnectionError

from ._bridge import Bridge
from ._selector_conn import ConnState, SelectorConn
from ._sockets import (
    Address,
    SocketConfig,
    connect_error,
    new_socket,
    numeric_address,
    resolve,
)

if TYPE_CHECKING:
    import ssl  # types only: ssl loads with the first TLS context (_tls)

__all__ = ["ConnState", "SelectorIo"]


class SelectorIo:
    """The selector transport's I/O backend; see the module docstring."""

    def __init__(
        self,
        *,
        sockets: SocketConfig,
        ssl_context: Callable[[], ssl.SSLContext],
        ssl_server_hostname: str | None = None,
    ) -> None:
        self.sockets = sockets
        self._ssl_context_factory = ssl_context
        self._ssl_context: ssl.SSLContext | None = None
        self._ssl_server_hostname = ssl_server_hostname
        self.selector = selectors.DefaultSelector()
        self._conns: dict[ConnId, SelectorConn] = {}
        self._resolving: dict[ConnId, OpenConnection] = {}
        self._dirty: dict[ConnId, SelectorConn] = {}
        self._dns: concurrent.futures.ThreadPoolExecutor | None = None
        self.by_fd: dict[int, SelectorConn] = {}
        self._deadline: float | None = None
        self._calls: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self.selector.register(self._wake_r, selectors.EVENT_READ, None)
        self.bridge: Bridge | None = None
        self.closed = False

    @staticmethod
    def clock() -> float:
        return time.monotonic()

    # -- cross-thread entry ---------------------------------------------
    def call_soon_threadsafe(self, fn: Callable[[], None]) -> None:
        """Queue ``fn`` to run on the loop thread and wake the loop."""
        self._calls.put(fn)
        try:
            self._wake_w.send(b"\0")
        except (BlockingIOError, InterruptedError):
            pass  # the pipe is full: the loop is awake already
        except OSError:
            pass  # closed: the loop is gone; close() drains the queue itself

    # -- IoBackend ------------------------------------------------------
    def set_deadline(self, deadline: float | None) -> None:
        self._deadline = deadline

    def open(self, action: OpenConnection) -> None:
        numeric = numeric_address(action.host, action.port)
        if numeric is not None:
            # An address literal needs no lookup: open it here.
            self._open_resolved(action, lambda: [numeric])
            return
        # A name lookup may block for seconds: never on the loop thread, where
        # it would stall every connection's I/O and timers (heartbeats).
        self._resolving[action.conn_id] = action
        if self._dns is None:
            self._dns = concurrent.futures.ThreadPoolExecutor(
                max_workers=2, thread_name_prefix="kafkacore-dns"
            )
        fut = self._dns.submit(resolve, action.host, action.port)
        fut.add_done_callback(
            lambda f: self.call_soon_threadsafe(lambda: self._resolved(action, f))
        )

    def _resolved(
        self, action: OpenConnection, fut: concurrent.futures.Future[list[tuple[int, Address]]]
    ) -> None:
        if self._resolving.pop(action.conn_id, None) is None or self.closed:
            return  # the core closed it while we were resolving
        self._open_resolved(action, fut.result)

    def _open_resolved(
        self, action: OpenConnection, addresses_of: Callable[[], list[tuple[int, Address]]]
    ) -> None:
        bridge = self.bridge_()
        try:
            addresses = addresses_of()
        except KafkaConnectionError as exc:
            bridge.feed_failed(action.conn_id, exc)
            return
        except Exception as exc:  # an executor failure: report it, do not kill the loop
            bridge.feed_failed(action.conn_id, connect_error(action.host, action.port, exc))
            return
        family, addr = addresses.pop(0)
        try:
            sock = new_socket(family, self.sockets)
        except OSError as exc:
            bridge.feed_failed(action.conn_id, connect_error(action.host, action.port, exc))
            return
        conn = SelectorConn(
            self,
            conn_id=action.conn_id,
            host=action.host,
            port=action.port,
            server_hostname=self._ssl_server_hostname or action.server_hostname or action.host,
            tls=action.tls,
            addresses=addresses,
            sock=sock,
        )
        self._conns[conn.conn_id] = conn
        conn.start_connect(addr)

    def write(self, conn_id: ConnId, data: bytes | bytearray | memoryview) -> None:
        conn = self._conns.get(conn_id)
        if conn is None or conn.state is ConnState.CLOSED:
            return  # the core learns of the loss through connection_lost
        if not data:
            return
        conn.out.append(memoryview(data).cast("B"))
        # Sent at the end of this loop pass, together with whatever else the
        # pass wrote to this connection: one syscall for many requests.
        self._dirty[conn.conn_id] = conn

    def close(self, conn_id: ConnId) -> None:
        self._resolving.pop(conn_id, None)
        conn = self._conns.pop(conn_id, None)
        if conn is not None:
            conn.forget()

    # -- loop -------------------------------------------------------------
    def run_once(self, max_wait: float | None = None) -> None:
        """Wait for I/O, the timer or a call (at most ``max_wait`` s), handle them."""
        bridge = self.bridge_()
        # Writes issued between passes (commands run from outside a pass)
        # must reach the socket before select() may block on them.
        self._flush_dirty()
        timeout = max_wait
        if self._deadline is not None:
            until = max(0.0, self._deadline - self.clock())
            timeout = until if timeout is None else min(timeout, until)
        for key, mask in self.selector.select(timeout):
            conn: SelectorConn | None = key.data
            if conn is None:
                self._drain_wake()
                continue
            if self.by_fd.get(key.fd) is not conn or conn.state is ConnState.CLOSED:
                continue  # closed by an earlier event in this batch
            conn.on_ready(mask)
        while True:
            try:
                fn = self._calls.get_nowait()
            except queue.Empty:
                break
            fn()
        if self._deadline is not None and self.clock() >= self._deadline:
            bridge.feed_timeout()
        self._flush_dirty()

    def _flush_dirty(self) -> None:
        while self._dirty:
            dirty, self._dirty = self._dirty, {}
            for conn in dirty.values():
                if conn.state is ConnState.OPEN and conn.flush():
                    conn.update_mask()

    def close_all(self) -> None:
        """Close every socket and the selector; safe to call twice."""
        if self.closed:
            return
        self.closed = True
        self._resolving.clear()
        if self._dns is not None:
            self._dns.shutdown(wait=False, cancel_futures=True)
        for conn in list(self._conns.values()):
            conn.forget()
        self._conns.clear()
        self.selector.close()
        self._wake_r.close()
        self._wake_w.close()

    def drain_calls(self) -> list[Callable[[], None]]:
        """Calls queued but never run (after the loop stopped)."""
        out: list[Callable[[], None]] = []
        while True:
            try:
                out.append(self._calls.get_nowait())
            except queue.Empty:
                return out

    # -- for the connections ----------------------------------------------
    def bridge_(self) -> Bridge:
        if self.bridge is None:  # pragma: no cover - wiring bug
            raise RuntimeError("SelectorIo: bridge not attached; set io.bridge first")
        return self.bridge

    def ssl_context(self) -> ssl.SSLContext:
        """The one client context, built on the first TLS connection."""
        if self._ssl_context is None:
            self._ssl_context = self._ssl_context_factory()
        return self._ssl_context

    def drop(self, conn: SelectorConn) -> None:
        """``conn`` ended on its own (failed, lost): forget its id."""
        self._conns.pop(conn.conn_id, None)

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass

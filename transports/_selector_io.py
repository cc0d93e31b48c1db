"""Non-blocking sockets and TLS on a ``selectors`` loop, for the selector transport.

Theory of operation
-------------------
One :class:`SelectorIo` owns a selector, every broker socket, a wake-up
socketpair and the single timer. It is driven by :meth:`run_once`, called
in a loop by exactly one thread (the transport's loop thread). Each broker
connection is a :class:`_Conn` that moves through :class:`ConnState`::

    (resolving) --> CONNECTING --(TCP up)--> HANDSHAKING --(TLS up)--> OPEN --> CLOSED
              \\--(every address failed)--> CLOSED (connection_failed)

Names are resolved on a small helper thread pool (numeric addresses
inline), so a slow DNS answer never stalls the loop; the connection exists
as a :class:`_Conn` only once an address is known. Plain connections skip
HANDSHAKING. What a connection waits for (readable,
writable) is derived from its state and its unsent bytes each time
something changes, so a TLS renegotiation that wants to read while we
write is handled by the same code path.

Writes are queued per connection and sent at the end of the loop pass
that made them, joined into one buffer (one syscall for many requests);
what the socket does not take waits and goes out when writable.
Facts go to the :class:`~transports._bridge.Bridge`; a fact never re-enters
the core directly from here.

Other threads talk to the loop only through :meth:`call_soon_threadsafe`:
a queue plus one byte on the wake-up socketpair.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import enum
import errno
import ipaddress
import queue
import selectors
import socket
import ssl
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from kafkacore.client.driver import ConnId, OpenConnection
from kafkacore.errors import KafkaConnectionError

from ._bridge import Bridge
from ._sockets import READ_CHUNK, Address, SocketConfig, connect_error, new_socket, resolve
from ._tls import describe_tls_failure

__all__ = ["ConnState", "SelectorIo"]


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class ConnState(enum.Enum):
    CONNECTING = "connecting"
    HANDSHAKING = "handshaking"
    OPEN = "open"
    CLOSED = "closed"


@dataclass(slots=True, eq=False)
class _Conn:
    conn_id: ConnId
    host: str
    port: int
    server_hostname: str | None
    tls: bool
    addresses: list[tuple[int, Address]]
    sock: socket.socket
    state: ConnState = ConnState.CONNECTING
    out: deque[memoryview] = field(default_factory=deque)
    # During the TLS handshake: which readiness the handshake asked for.
    hs_wants_write: bool = False
    mask: int = 0


class SelectorIo:
    """The selector transport's I/O backend; see the module docstring."""

    def __init__(
        self,
        *,
        sockets: SocketConfig,
        ssl_context: Callable[[], ssl.SSLContext],
        ssl_server_hostname: str | None = None,
    ) -> None:
        self._sockets = sockets
        self._ssl_context_factory = ssl_context
        self._ssl_context: ssl.SSLContext | None = None
        self._ssl_server_hostname = ssl_server_hostname
        self._sel = selectors.DefaultSelector()
        self._conns: dict[ConnId, _Conn] = {}
        self._resolving: dict[ConnId, OpenConnection] = {}
        self._dirty: dict[ConnId, _Conn] = {}
        self._dns: concurrent.futures.ThreadPoolExecutor | None = None
        self._by_fd: dict[int, _Conn] = {}
        self._deadline: float | None = None
        self._calls: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._sel.register(self._wake_r, selectors.EVENT_READ, None)
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
        if _is_ip_literal(action.host):
            # A numeric lookup never blocks: do it here.
            self._open_resolved(action, lambda: resolve(action.host, action.port))
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
        bridge = self._require_bridge()
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
            sock = new_socket(family, self._sockets)
        except OSError as exc:
            bridge.feed_failed(action.conn_id, connect_error(action.host, action.port, exc))
            return
        conn = _Conn(
            conn_id=action.conn_id,
            host=action.host,
            port=action.port,
            server_hostname=self._ssl_server_hostname or action.server_hostname or action.host,
            tls=action.tls,
            addresses=addresses,
            sock=sock,
        )
        self._conns[conn.conn_id] = conn
        self._start_connect(conn, addr)

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
            self._forget(conn)

    # -- loop -------------------------------------------------------------
    def run_once(self, max_wait: float | None = None) -> None:
        """Wait for I/O, the timer or a call (at most ``max_wait`` s), handle them."""
        bridge = self._require_bridge()
        # Writes issued between passes (commands run from outside a pass)
        # must reach the socket before select() may block on them.
        self._flush_dirty()
        timeout = max_wait
        if self._deadline is not None:
            until = max(0.0, self._deadline - self.clock())
            timeout = until if timeout is None else min(timeout, until)
        for key, mask in self._sel.select(timeout):
            conn: _Conn | None = key.data
            if conn is None:
                self._drain_wake()
                continue
            if self._by_fd.get(key.fd) is not conn or conn.state is ConnState.CLOSED:
                continue  # closed by an earlier event in this batch
            self._on_ready(conn, mask)
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
                if conn.state is ConnState.OPEN and self._flush(conn):
                    self._update_mask(conn)

    def close_all(self) -> None:
        """Close every socket and the selector; safe to call twice."""
        if self.closed:
            return
        self.closed = True
        self._resolving.clear()
        if self._dns is not None:
            self._dns.shutdown(wait=False, cancel_futures=True)
        for conn in list(self._conns.values()):
            self._forget(conn)
        self._conns.clear()
        self._sel.close()
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

    # -- internals ------------------------------------------------------
    def _require_bridge(self) -> Bridge:
        if self.bridge is None:  # pragma: no cover - wiring bug
            raise RuntimeError("SelectorIo: bridge not attached; set io.bridge first")
        return self.bridge

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass

    def _start_connect(self, conn: _Conn, addr: Address) -> None:
        err = conn.sock.connect_ex(addr)
        if err in (0, errno.EISCONN):
            self._tcp_up(conn)
        elif err in (errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY):
            self._update_mask(conn)
        else:
            self._connect_failed(conn, OSError(err, errno.errorcode.get(err, str(err))))

    def _connect_failed(self, conn: _Conn, exc: OSError) -> None:
        self._unregister(conn)
        conn.sock.close()
        if conn.addresses:  # try the next address of the same name
            family, addr = conn.addresses.pop(0)
            try:
                conn.sock = new_socket(family, self._sockets)
            except OSError as exc2:
                exc = exc2
            else:
                self._start_connect(conn, addr)
                return
        conn.state = ConnState.CLOSED
        self._conns.pop(conn.conn_id, None)
        self._require_bridge().feed_failed(conn.conn_id, connect_error(conn.host, conn.port, exc))

    def _tcp_up(self, conn: _Conn) -> None:
        if not conn.tls:
            conn.state = ConnState.OPEN
            self._update_mask(conn)
            self._require_bridge().feed_connected(conn.conn_id)
            return
        try:
            if self._ssl_context is None:
                self._ssl_context = self._ssl_context_factory()
            self._unregister(conn)
            conn.sock = self._ssl_context.wrap_socket(
                conn.sock, server_hostname=conn.server_hostname, do_handshake_on_connect=False
            )
        except (OSError, ValueError) as exc:
            self._fail_handshake(conn, exc)
            return
        conn.state = ConnState.HANDSHAKING
        self._handshake(conn)

    def _handshake(self, conn: _Conn) -> None:
        sock = conn.sock
        assert isinstance(sock, ssl.SSLSocket)
        try:
            sock.do_handshake()
        except ssl.SSLWantReadError:
            conn.hs_wants_write = False
        except ssl.SSLWantWriteError:
            conn.hs_wants_write = True
        except (OSError, ValueError) as exc:
            self._fail_handshake(conn, exc)
            return
        else:
            conn.state = ConnState.OPEN
            self._update_mask(conn)
            self._require_bridge().feed_connected(conn.conn_id)
            if conn.state is ConnState.OPEN and conn.out:
                self._flush(conn)
                self._update_mask(conn)
            return
        self._update_mask(conn)

    def _fail_handshake(self, conn: _Conn, exc: BaseException) -> None:
        self._conns.pop(conn.conn_id, None)
        self._forget(conn)
        err = describe_tls_failure(
            exc, host=conn.host, port=conn.port, server_hostname=conn.server_hostname
        )
        self._require_bridge().feed_failed(conn.conn_id, err)

    def _on_ready(self, conn: _Conn, mask: int) -> None:
        if conn.state is ConnState.CONNECTING:
            err = conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                self._connect_failed(conn, OSError(err, errno.errorcode.get(err, str(err))))
            else:
                self._tcp_up(conn)
            return
        if conn.state is ConnState.HANDSHAKING:
            self._handshake(conn)
            return
        if mask & selectors.EVENT_WRITE and not self._flush(conn):
            return
        if mask & selectors.EVENT_READ and conn.state is ConnState.OPEN:
            self._read(conn)
        if conn.state is ConnState.OPEN:
            self._update_mask(conn)

    def _read(self, conn: _Conn) -> None:
        sock = conn.sock
        try:
            data = sock.recv(READ_CHUNK)
            # TLS may hold decrypted bytes the socket no longer signals.
            if data and isinstance(sock, ssl.SSLSocket):
                while sock.pending():
                    more = sock.recv(READ_CHUNK)
                    if not more:
                        break
                    data += more
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._lost(conn, exc)
            return
        if not data:
            self._lost(conn, None)
            return
        self._require_bridge().feed_data(conn.conn_id, data)

    def _flush(self, conn: _Conn) -> bool:
        """Send queued bytes until the socket would block; False if the conn died."""
        out = conn.out
        sock = conn.sock
        while out:
            if len(out) > 1:  # coalesce: a copy is cheaper than a syscall
                joined = memoryview(b"".join(out))
                out.clear()
                out.append(joined)
            chunk = out[0]
            try:
                sent = sock.send(chunk)
            except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError, InterruptedError):
                return True
            except OSError as exc:
                self._lost(conn, exc)
                return False
            if sent == len(chunk):
                out.popleft()
            else:
                out[0] = chunk[sent:]
        return True

    def _lost(self, conn: _Conn, exc: BaseException | None) -> None:
        self._conns.pop(conn.conn_id, None)
        self._forget(conn)
        err: BaseException | None = None
        if exc is not None:
            err = KafkaConnectionError(f"connection to {conn.host}:{conn.port} lost: {exc}")
            err.__cause__ = exc
        self._require_bridge().feed_lost(conn.conn_id, err)

    def _forget(self, conn: _Conn) -> None:
        conn.state = ConnState.CLOSED
        conn.out.clear()
        self._unregister(conn)
        with contextlib.suppress(OSError):
            conn.sock.close()

    def _update_mask(self, conn: _Conn) -> None:
        if conn.state is ConnState.CLOSED:
            return
        if conn.state is ConnState.CONNECTING:
            mask = selectors.EVENT_WRITE
        elif conn.state is ConnState.HANDSHAKING:
            mask = selectors.EVENT_WRITE if conn.hs_wants_write else selectors.EVENT_READ
        else:
            mask = selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.out else 0)
        if mask == conn.mask:
            return
        if conn.mask:
            self._sel.modify(conn.sock, mask, conn)
        else:
            self._sel.register(conn.sock, mask, conn)
            self._by_fd[conn.sock.fileno()] = conn
        conn.mask = mask

    def _unregister(self, conn: _Conn) -> None:
        if conn.mask:
            try:
                fd = conn.sock.fileno()
                self._sel.unregister(conn.sock)
                self._by_fd.pop(fd, None)
            except (KeyError, ValueError, OSError):
                pass
            conn.mask = 0

"""One broker connection on a ``selectors`` loop, for the selector transport.

Theory of operation
-------------------
A :class:`SelectorConn` exists once an address of the broker is known (the
loop, :class:`~kafkacore.transports._selector_io.SelectorIo`, resolves names) and
moves through :class:`ConnState`::

    CONNECTING --(TCP up)--> HANDSHAKING --(TLS up)--> OPEN --> CLOSED
        \\--(every address failed)--> CLOSED (connection_failed)

Plain connections skip HANDSHAKING. What the connection waits for
(readable, writable) is derived from its state and its unsent bytes each
time something changes (:meth:`update_mask`), so a TLS renegotiation that
wants to read while we write is handled by the same code path.

Unsent bytes are a queue of views; :meth:`flush` joins them into one buffer
(one syscall for many requests) and keeps what the socket did not take.
Every fact (connected, failed, data, lost) goes to the loop's
:class:`~kafkacore.transports._bridge.Bridge`; a fact never re-enters the core
directly from here.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import selectors
import socket
from collections import deque
from typing import TYPE_CHECKING, cast

from kafkacore.client.driver import ConnId
from kafkacore.errors import KafkaConnectionError

from ._sockets import READ_CHUNK, Address, connect_error, new_socket
from ._tls import describe_tls_failure, tls_would_block

if TYPE_CHECKING:
    # ssl loads with the first TLS context (_tls.build_ssl_context), not
    # here: a PLAINTEXT connection never needs it.
    import ssl

    from ._selector_io import SelectorIo

__all__ = ["ConnState", "SelectorConn"]


class ConnState(enum.Enum):
    CONNECTING = "connecting"
    HANDSHAKING = "handshaking"
    OPEN = "open"
    CLOSED = "closed"


class SelectorConn:
    """One connection's sockets and bytes; see the module docstring."""

    __slots__ = (
        "addresses",
        "conn_id",
        "host",
        "hs_wants_write",
        "io",
        "mask",
        "out",
        "port",
        "server_hostname",
        "sock",
        "state",
        "tls",
    )

    def __init__(
        self,
        io: SelectorIo,
        *,
        conn_id: ConnId,
        host: str,
        port: int,
        server_hostname: str | None,
        tls: bool,
        addresses: list[tuple[int, Address]],
        sock: socket.socket,
    ) -> None:
        self.io = io
        self.conn_id = conn_id
        self.host = host
        self.port = port
        self.server_hostname = server_hostname
        self.tls = tls
        self.addresses = addresses
        self.sock = sock
        self.state = ConnState.CONNECTING
        self.out: deque[memoryview] = deque()
        # During the TLS handshake: which readiness the handshake asked for.
        self.hs_wants_write = False
        self.mask = 0

    # -- connecting -------------------------------------------------------
    def start_connect(self, addr: Address) -> None:
        err = self.sock.connect_ex(addr)
        if err in (0, errno.EISCONN):
            self._tcp_up()
        elif err in (errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY):
            self.update_mask()
        else:
            self._connect_failed(OSError(err, errno.errorcode.get(err, str(err))))

    def _connect_failed(self, exc: OSError) -> None:
        self._unregister()
        self.sock.close()
        if self.addresses:  # try the next address of the same name
            family, addr = self.addresses.pop(0)
            try:
                self.sock = new_socket(family, self.io.sockets)
            except OSError as exc2:
                exc = exc2
            else:
                self.start_connect(addr)
                return
        self.state = ConnState.CLOSED
        self.io.drop(self)
        self.io.bridge_().feed_failed(self.conn_id, connect_error(self.host, self.port, exc))

    def _tcp_up(self) -> None:
        if not self.tls:
            self._open()
            return
        try:
            context = self.io.ssl_context()
            self._unregister()
            self.sock = context.wrap_socket(
                self.sock, server_hostname=self.server_hostname, do_handshake_on_connect=False
            )
        except (OSError, ValueError) as exc:
            self._fail_handshake(exc)
            return
        self.state = ConnState.HANDSHAKING
        self._handshake()

    def _handshake(self) -> None:
        import ssl  # loaded already: the socket was wrapped in a TLS context

        sock = self.sock
        assert isinstance(sock, ssl.SSLSocket)
        try:
            sock.do_handshake()
        except ssl.SSLWantReadError:
            self.hs_wants_write = False
        except ssl.SSLWantWriteError:
            self.hs_wants_write = True
        except (OSError, ValueError) as exc:
            self._fail_handshake(exc)
            return
        else:
            self._open()
            if self.state is ConnState.OPEN and self.out:
                self.flush()
                self.update_mask()
            return
        self.update_mask()

    def _open(self) -> None:
        self.state = ConnState.OPEN
        self.update_mask()
        self.io.bridge_().feed_connected(self.conn_id)

    def _fail_handshake(self, exc: BaseException) -> None:
        self.io.drop(self)
        self.forget()
        err = describe_tls_failure(
            exc, host=self.host, port=self.port, server_hostname=self.server_hostname
        )
        self.io.bridge_().feed_failed(self.conn_id, err)

    # -- moving bytes -----------------------------------------------------
    def on_ready(self, mask: int) -> None:
        if self.state is ConnState.CONNECTING:
            err = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                self._connect_failed(OSError(err, errno.errorcode.get(err, str(err))))
            else:
                self._tcp_up()
            return
        if self.state is ConnState.HANDSHAKING:
            self._handshake()
            return
        if mask & selectors.EVENT_WRITE and not self.flush():
            return
        if mask & selectors.EVENT_READ and self.state is ConnState.OPEN:
            self._read()
        if self.state is ConnState.OPEN:
            self.update_mask()

    def _read(self) -> None:
        sock = self.sock
        try:
            data = sock.recv(READ_CHUNK)
            # TLS may hold decrypted bytes the socket no longer signals.
            if data and self.tls:
                tls_sock = cast("ssl.SSLSocket", sock)
                while tls_sock.pending():
                    more = tls_sock.recv(READ_CHUNK)
                    if not more:
                        break
                    data += more
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            if not tls_would_block(exc):
                self._lost(exc)
            return
        if not data:
            self._lost(None)
            return
        self.io.bridge_().feed_data(self.conn_id, data)

    def flush(self) -> bool:
        """Send queued bytes until the socket would block; False if the conn died."""
        out = self.out
        sock = self.sock
        while out:
            if len(out) > 1:  # coalesce: a copy is cheaper than a syscall
                joined = memoryview(b"".join(out))
                out.clear()
                out.append(joined)
            chunk = out[0]
            try:
                sent = sock.send(chunk)
            except (BlockingIOError, InterruptedError):
                return True
            except OSError as exc:
                if tls_would_block(exc):
                    return True
                self._lost(exc)
                return False
            if sent == len(chunk):
                out.popleft()
            else:
                out[0] = chunk[sent:]
        return True

    def _lost(self, exc: BaseException | None) -> None:
        self.io.drop(self)
        self.forget()
        err: BaseException | None = None
        if exc is not None:
            err = KafkaConnectionError(f"connection to {self.host}:{self.port} lost: {exc}")
            err.__cause__ = exc
        self.io.bridge_().feed_lost(self.conn_id, err)

    # -- registration -----------------------------------------------------
    def forget(self) -> None:
        """Close the socket; nothing is reported (the caller reports, if anyone)."""
        self.state = ConnState.CLOSED
        self.out.clear()
        self._unregister()
        with contextlib.suppress(OSError):
            self.sock.close()

    def update_mask(self) -> None:
        if self.state is ConnState.CLOSED:
            return
        if self.state is ConnState.CONNECTING:
            mask = selectors.EVENT_WRITE
        elif self.state is ConnState.HANDSHAKING:
            mask = selectors.EVENT_WRITE if self.hs_wants_write else selectors.EVENT_READ
        else:
            mask = selectors.EVENT_READ | (selectors.EVENT_WRITE if self.out else 0)
        if mask == self.mask:
            return
        if self.mask:
            self.io.selector.modify(self.sock, mask, self)
        else:
            self.io.selector.register(self.sock, mask, self)
            self.io.by_fd[self.sock.fileno()] = self
        self.mask = mask

    def _unregister(self) -> None:
        if self.mask:
            try:
                fd = self.sock.fileno()
                self.io.selector.unregister(self.sock)
                self.io.by_fd.pop(fd, None)
            except (KeyError, ValueError, OSError):
                pass
            self.mask = 0

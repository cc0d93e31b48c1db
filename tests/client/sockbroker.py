"""The scripted :class:`~tests.client.fakebroker.FakeBroker` on a real localhost socket.

Small on purpose (the fault campaign's byte-level broker lives in
``tests/faults``): one listening socket, one thread per connection, every
frame answered by the fake broker's handlers (plus its ``after_reply``
garbage). ``reply_after`` holds the replies of a connection until that many
Produce requests arrived, so that pipelined requests are in flight together
when the answers (and any garbage behind them) come back.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Any

from kafkacore.protocol import framing
from tests.client.fakebroker import Cluster, FakeBroker, Topic


class SocketBroker:
    """One fake broker (node 0) listening on 127.0.0.1; close() when done."""

    def __init__(self, topics: list[Topic] | None = None, *, reply_after: int = 1) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.cluster = Cluster({0: ("127.0.0.1", self.port)}, topics)
        self.broker = FakeBroker(0, self.cluster)
        self.reply_after = reply_after
        self.connections = 0
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._closed = False
        accept = threading.Thread(target=self._accept, name="sockbroker-accept", daemon=True)
        accept.start()
        self._threads.append(accept)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept(self) -> None:
        self._listener.settimeout(0.05)  # so that close() is noticed promptly
        while not self._closed:
            try:
                sock, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            sock.settimeout(None)
            with self._lock:
                if self._closed:
                    sock.close()
                    return
                self.connections += 1
                self._socks.append(sock)
                serve = threading.Thread(
                    target=self._serve, args=(sock,), name="sockbroker-conn", daemon=True
                )
                self._threads.append(serve)
            serve.start()

    def _serve(self, sock: socket.socket) -> None:
        reader = framing.FrameReader(max_frame_size=1 << 24)
        session: dict[str, Any] = {}
        pending: list[bytes] = []
        # A broken client or a closed socket just ends this connection.
        with contextlib.suppress(Exception):
            while True:
                data = sock.recv(65536)
                if not data:
                    break
                for frame in reader.feed(data):
                    api_key = framing.decode_request(frame)[0].request_api_key
                    with self._lock:
                        reply = self.broker.respond(frame, session)
                    if reply is None:
                        continue
                    pending.append(reply)
                    # Produce answers wait until ``reply_after`` are queued.
                    if api_key == 0 and len(pending) < self.reply_after:
                        continue
                    sock.sendall(b"".join(pending))
                    pending.clear()
        with contextlib.suppress(OSError):
            sock.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            socks, self._socks = self._socks, []
        with contextlib.suppress(OSError):
            self._listener.close()
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
        for thread in self._threads:
            thread.join(timeout=5)

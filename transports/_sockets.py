"""Socket creation shared by the three transports.

Theory of operation
-------------------
The core asks for "a connection to host:port"; how the socket is made is
the transport's business and must be the same everywhere. :class:`SocketConfig`
holds the options (``TCP_NODELAY`` on by default, as every Kafka client
does for small request frames; ``receive_buffer_bytes`` /
``send_buffer_bytes``; a source address ``(host, port)``). :func:`resolve`
looks the address up and :func:`new_socket` creates one non-blocking
socket for one resolved address with the options applied *before*
``connect`` (the kernel fixes the TCP window scale at the handshake, so a
receive buffer set later is too late).

Errors become :class:`~kafkacore.errors.KafkaConnectionError` with the
address in the message; the original exception is kept as ``__cause__``.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkacore.errors import ConfigError, KafkaConnectionError

__all__ = [
    "READ_CHUNK",
    "Address",
    "SocketConfig",
    "connect_error",
    "new_socket",
    "numeric_address",
    "resolve",
]

#: Bytes read per ``recv`` call: one bound for every transport's reads.
READ_CHUNK = 256 * 1024

Address = tuple[str, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class SocketConfig:
    """Options applied to every broker socket."""

    tcp_nodelay: bool = True
    #: ``SO_RCVBUF`` / ``SO_SNDBUF``; ``None`` leaves the OS default
    #: (kafka-python and the Java client use -1 for the same meaning).
    receive_buffer_bytes: int | None = None
    send_buffer_bytes: int | None = None
    #: Local ``(host, port)`` to bind before connecting; port 0 = any.
    source_address: Address | None = None
    #: Extra ``(level, option, value)`` triples, applied last (the core's
    #: ``ClientConfig.socket_options``; it already holds TCP_NODELAY).
    socket_options: tuple[tuple[int, int, int], ...] = field(default=())

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> SocketConfig:
        """Build from ``ClientConfig.transport_options()``."""
        source = options.get("source_address")
        return cls(
            receive_buffer_bytes=options.get("receive_buffer_bytes"),
            send_buffer_bytes=options.get("send_buffer_bytes"),
            socket_options=tuple(options.get("socket_options") or ()),
            source_address=None if source is None else (str(source[0]), int(source[1])),
        )

    def __post_init__(self) -> None:
        for name in ("receive_buffer_bytes", "send_buffer_bytes"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value <= 0
            ):
                raise ConfigError(
                    f"SocketConfig: {name} must be a positive int or None (OS default), "
                    f"got {value!r}"
                )
        if self.source_address is not None:
            host, port = self.source_address
            if not isinstance(host, str) or not isinstance(port, int) or not 0 <= port < 65536:
                raise ConfigError(
                    "SocketConfig: source_address must be (host: str, port: int 0-65535), "
                    f"got {self.source_address!r}"
                )


def numeric_address(host: str, port: int) -> tuple[int, Address] | None:
    """``(family, sockaddr)`` when ``host`` is an IPv4 or IPv6 literal, else None.

    A literal needs no resolver: no lookup thread (asyncio's ``getaddrinfo``
    always takes one from its executor) and no IDNA codec (``getaddrinfo``
    encodes every name with it). Anything ``inet_pton`` does not take (a
    name, a scoped IPv6 address, a short IPv4 form) goes to :func:`resolve`.
    """
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except (OSError, ValueError):  # ValueError: not ASCII, or a NUL inside
            continue
        return family, (host, port)
    return None


def resolve(host: str, port: int) -> list[tuple[int, Address]]:
    """Blocking lookup of ``host:port``: ``[(family, sockaddr), ...]``."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    except OSError as exc:
        raise connect_error(host, port, exc) from exc
    out: list[tuple[int, Address]] = []
    for family, _type, _proto, _name, sockaddr in infos:
        if family in (socket.AF_INET, socket.AF_INET6):
            out.append((family, (str(sockaddr[0]), int(sockaddr[1]))))
    if not out:
        raise KafkaConnectionError(f"connect to {host}:{port}: no IPv4/IPv6 address found")
    return out


def new_socket(family: int, config: SocketConfig) -> socket.socket:
    """A non-blocking TCP socket of ``family`` with ``config`` applied, not yet connected."""
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        if config.tcp_nodelay:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if config.receive_buffer_bytes is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, config.receive_buffer_bytes)
        if config.send_buffer_bytes is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, config.send_buffer_bytes)
        for level, option, value in config.socket_options:
            sock.setsockopt(level, option, value)
        if config.source_address is not None:
            sock.bind(config.source_address)
    except BaseException:
        sock.close()
        raise
    return sock


def connect_error(host: str, port: int, exc: BaseException) -> KafkaConnectionError:
    """The error reported to the core when ``host:port`` cannot be reached."""
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or repr(exc)
    err = KafkaConnectionError(f"connect to {host}:{port} failed: {reason}")
    err.__cause__ = exc
    return err

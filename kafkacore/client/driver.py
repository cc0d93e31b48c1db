"""The driver contract between a sans-IO core machine and a transport.

Theory of operation
-------------------
A transport (selector, asyncio, trio, or the test pump) owns sockets, TLS and
a clock. The core owns everything else. They talk through this contract only:

1. The transport reports *facts*, each with the current monotonic time
   ``now`` (seconds, the transport's clock):

   - ``connection_made(conn_id, now=...)``
   - ``connection_failed(conn_id, error, now=...)``
   - ``data_received(conn_id, data, now=...)`` (any chunk size, even 1 byte)
   - ``connection_lost(conn_id, error, now=...)``
   - ``handle_timeout(now=...)`` (when the deadline it was given has passed)

2. User code issues *commands* on the core (send a request, close, ...).
   A command returns a plain handle at once; its completion comes later as
   an event.

3. After every fact or command the transport drains the core's outputs:

   - ``pull_actions()``: ordered :data:`Action` list: open a connection,
     write bytes to one, close one. Writes for one connection must reach the
     socket in order; the transport keeps any unsent remainder itself
     (partial writes are its business, not the core's).
   - ``pull_events()``: ordered events for the user layer, for example a
     request completed with its response or error. For the client core every
     item is a :class:`kafkacore.client.events.Event` (``RequestCompleted``,
     ``ConnectionStateChanged``, ``MetadataUpdated``, ...); the return type is
     ``list[object]`` so that other machines can add their own events.
   - ``next_deadline()``: the absolute time at which ``handle_timeout``
     must be called, or ``None`` when no timer is needed.

Ids and facts: ``conn_id`` values come from ``OpenConnection`` actions. A
fact about a conn_id the core no longer knows (it closed it meanwhile) is
ignored, so the transport need not race the core. After the core emits
``CloseConnection`` it expects no more facts for that id; after the transport
reports ``connection_failed``/``connection_lost`` the core emits no
``CloseConnection`` for it.

A core may act in its constructor (``KafkaClientCore`` starts bootstrapping
at once): drain its outputs right after creating it.

Changes (announced here for transports):

- ``Driven.pull_events()`` added (2026-11-21).

The core never blocks, never reads a clock and never draws randomness of its
own (an injected ``random.Random`` is used for jitter). It is single
threaded: only the transport's loop may call it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "Action",
    "CloseConnection",
    "ConnId",
    "Driven",
    "OpenConnection",
    "WriteData",
]

#: Identifies one connection for its whole life. Never reused by a core
#: instance, so a late fact about an old connection cannot be mistaken for
#: one about its successor.
ConnId = int


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenConnection:
    """Open a TCP connection (with TLS when ``tls`` is true) and report back.

    The transport answers with ``connection_made`` once the connection (and
    the TLS handshake) is up, or ``connection_failed`` if it cannot be made.
    ``server_hostname`` is the name TLS verifies the certificate against.
    """

    conn_id: ConnId
    host: str
    port: int
    tls: bool
    server_hostname: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteData:
    """Write ``data`` to the connection, after everything written before."""

    conn_id: ConnId
    data: bytes | bytearray | memoryview


@dataclass(frozen=True, slots=True, kw_only=True)
class CloseConnection:
    """Close the connection. No fact about it is expected afterwards."""

    conn_id: ConnId


Action = OpenConnection | WriteData | CloseConnection


class Driven(Protocol):
    """What every core machine a transport drives offers."""

    def connection_made(self, conn_id: ConnId, *, now: float) -> None: ...

    def connection_failed(self, conn_id: ConnId, error: BaseException, *, now: float) -> None: ...

    def data_received(
        self, conn_id: ConnId, data: bytes | bytearray | memoryview, *, now: float
    ) -> None: ...

    def connection_lost(
        self, conn_id: ConnId, error: BaseException | None, *, now: float
    ) -> None: ...

    def handle_timeout(self, *, now: float) -> None: ...

    def next_deadline(self) -> float | None: ...

    def pull_actions(self) -> list[Action]: ...

    def pull_events(self) -> Sequence[object]: ...

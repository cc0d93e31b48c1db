"""Credentials calls the client core hands to the transport, and who waits for them.

A SASL exchange that needs a token provider or a Kerberos step (which may
block) does not run it inside the core's step: the connection asks, the
core emits :class:`~kafkacore.client.events.CredentialsNeeded` with a
request id, the transport runs the call off its loop and answers with
``KafkaClientCore.credentials_ready(request_id, ...)``. :class:`CredentialsDesk`
numbers those requests and remembers which connection waits for each; a
connection that closes forgets its requests, so a late answer is ignored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkacore.client.driver import ConnId
from kafkacore.client.events import CredentialsNeeded

if TYPE_CHECKING:
    from kafkacore.client.connection import BrokerConnection
    from kafkacore.client.credentials import CredentialsCall
    from kafkacore.client.outputs import Outputs

__all__ = ["CredentialsDesk"]


class CredentialsDesk:
    """Open CredentialsNeeded requests: request id -> the waiting connection."""

    __slots__ = ("_next_id", "_out", "_waiting")

    def __init__(self, out: Outputs) -> None:
        self._out = out
        self._waiting: dict[int, ConnId] = {}
        self._next_id = 1

    def ask(self, conn: BrokerConnection, need: CredentialsCall) -> None:
        """Emit the request for ``need`` of ``conn``."""
        request_id = self._next_id
        self._next_id += 1
        self._waiting[request_id] = conn.conn_id
        deadline = conn.credentials_deadline
        assert deadline is not None
        self._out.trace(
            "credentials_needed",
            id=request_id,
            node_id=conn.node_id,
            peer=conn.peer,
            kind=need.kind.value,
            mechanism=need.mechanism,
        )
        self._out.emit(CredentialsNeeded.of(request_id, conn.node_id, conn.conn_id, need, deadline))

    def answered(self, request_id: int) -> ConnId | None:
        """The connection that waits for ``request_id`` (None: nobody any more)."""
        return self._waiting.pop(request_id, None)

    def forget(self, conn_id: ConnId) -> None:
        """``conn_id`` closed: its requests' answers, if any, are ignored."""
        for request_id in [r for r, c in self._waiting.items() if c == conn_id]:
            del self._waiting[request_id]

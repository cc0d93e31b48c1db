"""The client core's connections: one per (node, lane), with their health.

Theory of operation
-------------------
:class:`ConnectionPool` holds a :class:`Slot` per ``(node, lane)`` the core
ever used, each with at most one live
:class:`~kafkacore.client.connection.BrokerConnection`, and the
:class:`~kafkacore.client.health.NodeHealthTable` of every node (reconnect
backoff, last error). It opens connections (an ``OpenConnection`` action and
a CONNECTING event), notices their state changes (a
``ConnectionStateChanged`` event for each, and on READY the ApiVersions and
finalized features it remembers per node), forgets them once CLOSED, and
answers the questions the core's routing asks: which node is least loaded,
which can take a request, why none can be used.

What a failure *means* (a refused authentication stops the client, every
bootstrap address failing fails the waiting requests) is the core's
business; the pool only counts it against the node's health.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from kafkacore.client.config import ClientConfig
from kafkacore.client.connection import BrokerConnection, ConnectionState
from kafkacore.client.driver import CloseConnection, ConnId, OpenConnection
from kafkacore.client.events import ConnectionStateChanged
from kafkacore.client.handles import Answer
from kafkacore.client.health import NodeHealth, NodeHealthTable
from kafkacore.client.metadata import BrokerMetadata, ClusterMetadata
from kafkacore.client.outputs import Outputs
from kafkacore.errors import NoBrokersAvailable

if TYPE_CHECKING:
    from kafkacore.protocol.messages import MetadataResponse

__all__ = ["DEFAULT_LANE", "ConnectionPool", "Slot", "broker_address", "unreachable_within"]

#: The lane of requests that name none. Lanes (pykafka's connection ids) give
#: one broker several connections, so that e.g. group heartbeats (lane
#: ``"group"``) never wait behind long fetches.
DEFAULT_LANE = "default"

_M = TypeVar("_M")

#: How many nodes an "unavailable" message lists before "and N more".
_LISTED_NODES = 3


@dataclass(slots=True)
class Slot:
    """Connection bookkeeping of one (node, lane)."""

    node_id: int
    lane: str
    conn: BrokerConnection | None = None
    ever_connected: bool = False


def broker_address(broker: BrokerMetadata) -> str:
    host = f"[{broker.host}]" if ":" in broker.host else broker.host
    return f"{host}:{broker.port}"


def unreachable_within(what: str, unreachable: NoBrokersAvailable) -> NoBrokersAvailable:
    """The error of a caller whose own bound passed before the cluster was ever
    reached: ``what`` names the call and its bound, ``unreachable`` (from
    :meth:`KafkaClientCore.unreachable_from_the_start`) every bootstrap server and
    its last error; ``__cause__`` is the last connection error (ConnectionRefused
    to host:port...), as the summary's."""
    error = NoBrokersAvailable(f"{what}: {unreachable}")
    error.__cause__ = unreachable.__cause__
    return error


class ConnectionPool:
    """See the module docstring."""

    def __init__(
        self,
        config: ClientConfig,
        cluster: ClusterMetadata,
        health: NodeHealthTable,
        *,
        rng: random.Random,
        out: Outputs,
    ) -> None:
        self._config = config
        self._cluster = cluster
        self.health = health
        self._rng = rng
        self._out = out
        self.slots: dict[tuple[int, str], Slot] = {}
        self.conns: dict[ConnId, BrokerConnection] = {}
        self._reported: dict[ConnId, ConnectionState] = {}
        #: Connections handed a fact, a request or a close since the core last
        #: drained them: the only ones a step needs to look at (issue 12).
        self.touched: set[ConnId] = set()
        self._next_conn_id = 1
        self._api_versions: dict[int, dict[int, tuple[int, int]]] = {}
        self._features: dict[int, dict[str, int]] = {}

    # -- queries --------------------------------------------------------------
    def conn(self, node_id: int, lane: str) -> BrokerConnection | None:
        slot = self.slots.get((node_id, lane))
        return None if slot is None else slot.conn

    def any_ready(self) -> bool:
        return any(conn.ready for conn in self.conns.values())

    def is_disconnected(self, node_id: int, lane: str) -> bool:
        slot = self.slots.get((node_id, lane))
        if slot is None:
            return self._cluster.broker_metadata(node_id) is not None
        return slot.conn is None

    def connection_delay(self, node_id: int, lane: str, now: float) -> float:
        slot = self.slots.get((node_id, lane))
        if slot is None or slot.conn is None:
            return max(self.health.blackout_until(node_id) - now, 0.0) * 1000
        if slot.conn.state is ConnectionState.READY:
            return math.inf
        return 0.0

    def bootstrap_connected(self) -> bool:
        return any(
            slot.node_id < 0 and slot.conn is not None and slot.conn.ready
            for slot in self.slots.values()
        )

    def in_flight_count(self, node_id: int | None) -> int:
        return sum(
            slot.conn.in_flight_count
            for slot in self.slots.values()
            if slot.conn is not None and (node_id is None or slot.node_id == node_id)
        )

    def api_versions(self, node_id: int | None) -> dict[int, tuple[int, int]] | None:
        known = _remembered(self._api_versions, node_id)
        return None if known is None else dict(known)

    def features(self, node_id: int | None) -> dict[str, int] | None:
        known = _remembered(self._features, node_id)
        return None if known is None else dict(known)

    def describe_node(self, node_id: int) -> str:
        broker = self._cluster.broker_metadata(node_id)
        if broker is None:
            return f"node {node_id}"
        if node_id < 0:
            return f"bootstrap server {broker_address(broker)}"
        return f"broker {node_id} at {broker_address(broker)}"

    def describe_source(self, node_id: int | None, answer: Answer[MetadataResponse]) -> str | None:
        """Name the broker that answered a Metadata request (``answer``: its
        response, or the error it failed with); a bootstrap address by the
        broker id the response gives it, when it lists the same address."""
        if node_id is None:
            return None
        if node_id < 0 and not isinstance(answer, BaseException):
            address = self._cluster.broker_metadata(node_id)
            for b in answer.brokers or ():
                if address is not None and (b.host, b.port) == (address.host, address.port):
                    return f"broker {b.node_id} at {broker_address(address)}"
        return self.describe_node(node_id)

    def dirty(self) -> bool:
        """Some connection changed state or has output not drained yet."""
        return any(
            conn.state is not self._reported.get(cid) or conn.has_pending_output
            for cid, conn in self.conns.items()
        )

    def earliest_blackout(self, now: float) -> float | None:
        """When the first slot without a connection may connect again (None: no
        slot is backing off)."""
        times = [
            until
            for slot in self.slots.values()
            if slot.conn is None and (until := self.health.blackout_until(slot.node_id)) > now
        ]
        return min(times) if times else None

    def touch(self, conn: BrokerConnection) -> None:
        """``conn`` was handed something: the next drain looks at it."""
        self.touched.add(conn.conn_id)

    def take_touched(self) -> set[ConnId]:
        """The connections touched since the last call (and forget them)."""
        touched, self.touched = self.touched, set()
        return touched

    def changed(self, conn: BrokerConnection) -> bool:
        return conn.state is not self._reported.get(conn.conn_id)

    def least_loaded(self, now: float, lane: str) -> int | None:
        """See :meth:`KafkaClientCore.least_loaded_node`."""
        brokers = [b.node_id for b in self._cluster.brokers()]
        found = self._least_loaded(brokers, now, lane)
        if found is None and any(n >= 0 for n in brokers):
            # Every known broker is backing off: fall back to the bootstrap list.
            bootstrap = [b.node_id for b in self._cluster.bootstrap_brokers()]
            found = self._least_loaded(bootstrap, now, lane)
        return found

    def _least_loaded(self, nodes: list[int], now: float, lane: str) -> int | None:
        nodes = sorted(nodes)
        self._rng.shuffle(nodes)
        best_ready: tuple[int, int] | None = None  # (in flight, node) with room to send
        best_full: tuple[int, int] | None = None  # (in flight, node) at the in-flight limit
        connecting: int | None = None
        can_connect: int | None = None
        for node_id in nodes:
            conn = self.conn(node_id, lane)
            if conn is not None and conn.ready:
                count = conn.in_flight_count
                if count == 0 and conn.can_send:
                    return node_id
                if conn.can_send:
                    if best_ready is None or count < best_ready[0]:
                        best_ready = (count, node_id)
                elif best_full is None or count < best_full[0]:
                    best_full = (count, node_id)
            elif conn is not None:
                if connecting is None:
                    connecting = node_id
            elif can_connect is None and self.health.blackout_until(node_id) <= now:
                can_connect = node_id
        if best_ready is not None:
            return best_ready[1]
        if connecting is not None:
            return connecting
        if can_connect is not None:
            return can_connect
        return None if best_full is None else best_full[1]

    def unavailable(self, *, bootstrapping: bool) -> NoBrokersAvailable | None:
        """See :meth:`KafkaClientCore.unavailable_cause` (authentication aside)."""
        if self.any_ready():
            return None
        cluster = self._cluster
        if bootstrapping:
            nodes = sorted((b.node_id for b in cluster.bootstrap_brokers()), reverse=True)
        else:
            nodes = sorted(b.node_id for b in cluster.brokers())
        failed: list[tuple[int, NodeHealth]] = []
        for node_id in nodes:
            health = self.health.get(node_id)
            if health is None or health.last_error is None:
                return None  # never tried, or fine last time: it may work
            failed.append((node_id, health))
        if not failed:
            return None
        listed = "; ".join(
            f"{self.describe_node(node_id)}: {health.last_error}"
            for node_id, health in failed[:_LISTED_NODES]
        )
        more = len(failed) - _LISTED_NODES
        if more > 0:
            listed += f"; and {more} more"
        what = "bootstrap server" if bootstrapping else "known broker"
        error = NoBrokersAvailable(
            f"no {what} is reachable ({listed}); check that the brokers are up and "
            "that bootstrap_servers and the security settings match their listeners"
        )
        error.__cause__ = max(failed, key=lambda item: item[1].failed_at)[1].last_error
        return error

    def never_reached(self) -> NoBrokersAvailable | None:
        """:meth:`unavailable` for the bootstrap servers while no connection of this
        client ever became READY (None once one did): the cluster was never reached.

        A state, not a verdict: refused connections are retried with the
        reconnect backoff whatever it says; a caller reports it when its own
        bound passes (see :meth:`KafkaClientCore.unreachable_from_the_start`).
        """
        if self._out.counters.connections_ready:
            return None
        return self.unavailable(bootstrapping=True)

    # -- commands -------------------------------------------------------------
    def slot(self, node_id: int, lane: str) -> Slot:
        key = (node_id, lane)
        slot = self.slots.get(key)
        if slot is None:
            slot = self.slots[key] = Slot(node_id=node_id, lane=lane)
        return slot

    def open(self, slot: Slot, now: float) -> bool:
        """Open ``slot``'s connection unless it has one or its node backs off."""
        if slot.conn is not None or self.health.blackout_until(slot.node_id) > now:
            return False
        broker = self._cluster.broker_metadata(slot.node_id)
        if broker is None:
            return False
        conn_id = self._next_conn_id
        self._next_conn_id += 1
        conn = BrokerConnection(
            conn_id=conn_id,
            node_id=slot.node_id,
            lane=slot.lane,
            host=broker.host,
            port=broker.port,
            config=self._config,
            rng=self._rng,
            now=now,
        )
        slot.conn = conn
        self.conns[conn_id] = conn
        self.touched.add(conn_id)
        self._reported[conn_id] = ConnectionState.CONNECTING
        counters = self._out.counters
        counters.connections_opened += 1
        if slot.ever_connected:
            counters.reconnects += 1
        tls = self._config.tls
        self._out.act(
            OpenConnection(
                conn_id=conn_id,
                host=broker.host,
                port=broker.port,
                tls=tls,
                server_hostname=broker.host if tls else None,
            )
        )
        self._out.emit(
            ConnectionStateChanged(
                node_id=slot.node_id,
                lane=slot.lane,
                conn_id=conn_id,
                state=ConnectionState.CONNECTING,
            )
        )
        self._out.trace(
            "connect",
            node_id=slot.node_id,
            lane=slot.lane,
            host=broker.host,
            port=broker.port,
            conn_id=conn_id,
            peer=conn.peer,
        )
        return True

    def note_state(self, conn: BrokerConnection) -> None:
        """``conn`` moved to a new state (CLOSED is for :meth:`forget`)."""
        self._reported[conn.conn_id] = conn.state
        if conn.state is ConnectionState.READY:
            self._out.counters.connections_ready += 1
            self._api_versions.pop(conn.node_id, None)
            self._api_versions[conn.node_id] = dict(conn.broker_versions)
            self._features.pop(conn.node_id, None)
            self._features[conn.node_id] = dict(conn.finalized_features)
            slot = self.slots.get((conn.node_id, conn.lane))
            if slot is not None:
                slot.ever_connected = True
            # The failure count stays (see Backoff in kafkacore.client.core);
            # only the "last attempt failed" verdict is lifted.
            self.health.connected(conn.node_id)
        if conn.state is not ConnectionState.CLOSED:
            self._trace_state(conn, "connection_state", state=conn.state.value, error=None)
            self._out.emit(
                ConnectionStateChanged(
                    node_id=conn.node_id, lane=conn.lane, conn_id=conn.conn_id, state=conn.state
                )
            )

    def note_closed(self, conn: BrokerConnection) -> None:
        """Record that we closed ``conn`` (its CLOSED state needs no report)."""
        self._reported[conn.conn_id] = ConnectionState.CLOSED

    def forget(self, conn: BrokerConnection, now: float, *, reported: bool, by_user: bool) -> bool:
        """Drop closed ``conn``; count its error against its node unless ``by_user``.
        False if it was forgotten already."""
        if self.conns.pop(conn.conn_id, None) is None:
            return False
        self._reported.pop(conn.conn_id, None)
        if not reported:
            self._out.act(CloseConnection(conn_id=conn.conn_id))
        error = conn.close_error
        self._out.counters.connections_closed += 1
        slot = self.slots.get((conn.node_id, conn.lane))
        if slot is not None and slot.conn is conn:
            slot.conn = None
        self._trace_state(
            conn,
            "connection_state",
            state=ConnectionState.CLOSED.value,
            error=None if by_user else error,
        )
        if error is not None and not by_user:
            self._count_failure(conn, error, now)
        return True

    def _count_failure(self, conn: BrokerConnection, error: BaseException, now: float) -> None:
        """One more failure of ``conn``'s node: back off before connecting to it again."""
        self._out.counters.connection_failures += 1
        started = self.health.failed(conn.node_id, error, now=now, ready_since=conn.ready_since)
        if started is not None:
            failures, delay = started
            self._out.trace(
                "reconnect_backoff",
                node_id=conn.node_id,
                peer=conn.peer,
                failures=failures,
                delay_ms=delay,
                error=error,
            )

    def strays(self) -> Iterator[Slot]:
        """Slots of nodes that left the cluster (coordinators excepted)."""
        live = set(self._cluster)
        for slot in list(self.slots.values()):
            if slot.node_id not in live and not self._cluster.is_coordinator(slot.node_id):
                yield slot

    def drop_strays(self) -> None:
        """Forget stray slots without a connection, and the health of gone nodes."""
        for slot in list(self.strays()):
            if slot.conn is None:
                del self.slots[(slot.node_id, slot.lane)]
        live = set(self._cluster)
        in_use = {slot.node_id for slot in self.slots.values()}
        # Bootstrap addresses keep their health (a rebootstrap uses them again).
        self.health.forget(
            n
            for n, _ in self.health
            if n >= 0 and n not in live | in_use and not self._cluster.is_coordinator(n)
        )

    def _trace_state(self, conn: BrokerConnection, name: str, **fields: object) -> None:
        self._out.trace(
            name,
            node_id=conn.node_id,
            lane=conn.lane,
            conn_id=conn.conn_id,
            peer=conn.peer,
            **fields,
        )


def _remembered(by_node: dict[int, _M], node_id: int | None) -> _M | None:
    """A node's remembered map, or the most recently negotiated one (node_id None)."""
    if node_id is None:
        return next(reversed(by_node.values())) if by_node else None
    return by_node.get(node_id)

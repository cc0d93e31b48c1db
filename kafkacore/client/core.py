"""The client machine over all connections (seed 004 ``KafkaClient``, seed 000 ``Cluster``).

Theory of operation
-------------------
:class:`KafkaClientCore` implements :class:`~kafkacore.client.driver.Driven`.
It owns the :class:`~kafkacore.client.metadata.ClusterMetadata`, one
:class:`~kafkacore.client.connection.BrokerConnection` per (node, lane) at a
time, and one queue of requests waiting to be written.

Commands (``send``, ``cancel``, ``add_topic``, ``close``...) and facts
(``connection_made``, ``data_received``, ``handle_timeout``...) each end in
one *step*:

1. drain every connection: bytes become ``WriteData`` actions; finished
   requests become ``RequestCompleted`` events (or feed the core's own
   metadata and coordinator lookups); state changes become
   ``ConnectionStateChanged`` events; closed connections get a reconnect
   backoff (exponential with jitter from the injected rng);
2. start a metadata refresh when one is due (age, on demand, after errors
   that invalidate metadata, KIP-580-style ``retry_backoff_ms`` between
   attempts) and coordinator lookups (FindCoordinator, batched at v4+,
   KIP-699) for targets that need them;
3. dispatch waiting requests in order: resolve each target to a node (any
   node = least loaded; a node; a partition leader; a group or transaction
   coordinator; the controller), write it if that node's connection on the
   request's lane is READY and below the in-flight limit, else ask for a
   connection. A request never overtakes an earlier one for the same
   (node, lane).

Every request completes exactly once: with its response, or with
``KafkaTimeoutError`` (deadline), ``KafkaConnectionError`` (connection lost
or failed while in flight), ``RequestCancelled`` (``cancel``, ``close``,
``shutdown``), ``AuthenticationError``, ``UnsupportedVersionError`` or
``NoBrokersAvailable`` (no bootstrap address answered).

Lanes (pykafka's connection ids) give one broker several connections, so
that e.g. group heartbeats (lane ``"group"``) never wait behind long fetches
(lane ``"default"``).
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkacore.client import _codec
from kafkacore.client._waitqueue import GroupKey, Pending, WaitQueue
from kafkacore.client.backoff import ExponentialBackoff
from kafkacore.client.config import ClientConfig
from kafkacore.client.connection import (
    BrokerConnection,
    Completion,
    ConnectionState,
    negotiate_version,
)
from kafkacore.client.driver import Action, CloseConnection, ConnId, OpenConnection, WriteData
from kafkacore.client.events import (
    BootstrapFailed,
    ConnectionStateChanged,
    MetadataUpdated,
    MetadataUpdateFailed,
    RequestCompleted,
)
from kafkacore.client.handles import MetadataWaiter, RequestHandle
from kafkacore.client.metadata import ClusterMetadata, TopicPartition
from kafkacore.client.metrics import ClientMetrics, Counters
from kafkacore.client.routing import (
    AnyNode,
    Controller,
    GroupCoordinator,
    Node,
    PartitionLeader,
    Target,
    TransactionCoordinator,
)
from kafkacore.errors import (
    AuthenticationError,
    KafkaConnectionError,
    KafkaTimeoutError,
    LocalProtocolError,
    NoBrokersAvailable,
    RequestCancelled,
    UnsupportedVersionError,
)

__all__ = ["DEFAULT_LANE", "KafkaClientCore", "TraceHook"]

DEFAULT_LANE = "default"

#: ``trace(name, fields)``: called synchronously at notable points.
TraceHook = Callable[[str, Mapping[str, object]], None]

_METADATA = 3
_FIND_COORDINATOR = 10
_PRODUCE = 0
_KEY_GROUP = 0
_KEY_TXN = 1
# Codes after which a coordinator must be looked up again.
_COORDINATOR_MOVED = frozenset({14, 15, 16})  # LOAD_IN_PROGRESS, NOT_AVAILABLE, NOT_COORDINATOR


@dataclass(slots=True)
class _Slot:
    """Connection bookkeeping of one (node, lane)."""

    node_id: int
    lane: str
    conn: BrokerConnection | None = None
    failures: int = 0
    blackout_until: float = -math.inf
    ever_connected: bool = False


class KafkaClientCore:
    """Sans-IO Kafka network client; see the module docstring."""

    def __init__(
        self,
        config: ClientConfig | None = None,
        *,
        now: float,
        rng: random.Random,
        trace: TraceHook | None = None,
    ) -> None:
        self._config = config if config is not None else ClientConfig()
        if not isinstance(rng, random.Random):
            raise LocalProtocolError("KafkaClientCore: rng must be a random.Random instance")
        self._rng = rng
        self._trace = trace
        cfg = self._config
        self.cluster = ClusterMetadata(
            retry_backoff_ms=cfg.retry_backoff_ms,
            metadata_max_age_ms=cfg.metadata_max_age_ms,
            bootstrap_servers=list(
                f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in cfg.bootstrap_addresses
            ),
        )
        self._backoff = ExponentialBackoff(cfg.reconnect_backoff_ms, cfg.reconnect_backoff_max_ms)
        self._slots: dict[tuple[int, str], _Slot] = {}
        self._conns: dict[ConnId, BrokerConnection] = {}
        self._reported: dict[ConnId, ConnectionState] = {}
        self._next_conn_id = 1
        self._next_handle_id = 1
        self._queue = WaitQueue()
        self._in_flight: dict[int, Pending] = {}  # handle id -> pending
        self._actions: list[Action] = []
        self._events: list[object] = []
        self._topics: set[str] = set()
        self._metadata_pending: Pending | None = None
        self._coord_wanted: dict[tuple[int, str], float] = {}  # key -> not before
        self._coord_busy: set[int] = set()  # key types with a lookup in flight
        self._bootstrap_failed: set[int] = set()
        self._api_versions: dict[int, dict[int, tuple[int, int]]] = {}
        self._features: dict[int, dict[str, int]] = {}
        self._wake_at: float | None = None
        self._counters = Counters(cfg.metric_group_prefix)
        self._closed = False
        self._heal_due = False
        self._step(now)

    # ------------------------------------------------------------------ queries
    @property
    def config(self) -> ClientConfig:
        return self._config

    @property
    def client_id(self) -> str:
        return self._config.client_id

    @property
    def topics(self) -> frozenset[str]:
        """Topics tracked through metadata (``add_topic``/``set_topics``)."""
        return frozenset(self._topics)

    def metrics(self) -> ClientMetrics:
        """An immutable snapshot of the counters."""
        return self._counters.snapshot()

    def _conn(self, node_id: int, lane: str) -> BrokerConnection | None:
        slot = self._slots.get((node_id, lane))
        return None if slot is None else slot.conn

    def connected(self, node_id: int, *, lane: str = DEFAULT_LANE) -> bool:
        """True iff the node's connection on ``lane`` is READY."""
        conn = self._conn(node_id, lane)
        return conn is not None and conn.ready

    def is_ready(
        self, node_id: int, *, now: float, lane: str = DEFAULT_LANE, metadata_priority: bool = True
    ) -> bool:
        """READY with room for a request, and (by default) no metadata refresh due."""
        conn = self._conn(node_id, lane)
        if conn is None or not conn.can_send:
            return False
        return not (
            metadata_priority
            and (self._metadata_pending is not None or self.cluster.ttl(now=now) == 0)
        )

    def ready(
        self, node_id: int, *, now: float, lane: str = DEFAULT_LANE, metadata_priority: bool = True
    ) -> bool:
        """Like :meth:`is_ready`, and start connecting if disconnected (seed 004)."""
        self.maybe_connect(node_id, now=now, lane=lane)
        return self.is_ready(node_id, now=now, lane=lane, metadata_priority=metadata_priority)

    def is_disconnected(self, node_id: int, *, lane: str = DEFAULT_LANE) -> bool:
        """True iff the node is known and has no live connection on ``lane``."""
        slot = self._slots.get((node_id, lane))
        if slot is None:
            return self.cluster.broker_metadata(node_id) is not None
        return slot.conn is None

    def connection_delay(self, node_id: int, *, now: float, lane: str = DEFAULT_LANE) -> float:
        """Milliseconds before it is worth trying to send (seed 004 semantics)."""
        slot = self._slots.get((node_id, lane))
        if slot is None or slot.conn is None:
            if slot is None:
                return 0.0
            return max(slot.blackout_until - now, 0.0) * 1000
        if slot.conn.state is ConnectionState.READY:
            return math.inf
        return 0.0

    def bootstrap_connected(self) -> bool:
        """True if a connection to a bootstrap address is READY."""
        return any(
            slot.node_id < 0 and slot.conn is not None and slot.conn.ready
            for slot in self._slots.values()
        )

    def in_flight_request_count(self, node_id: int | None = None) -> int:
        """Requests written and not yet answered, for one node or all."""
        return sum(
            slot.conn.in_flight_count
            for slot in self._slots.values()
            if slot.conn is not None and (node_id is None or slot.node_id == node_id)
        )

    def queued_request_count(self) -> int:
        """Requests waiting for a route or a ready connection."""
        return self._queue.user_count

    def get_api_versions(self, node_id: int | None = None) -> dict[int, tuple[int, int]] | None:
        """The broker's ApiVersions map ``{api_key: (min, max)}`` of a node (or the
        most recently negotiated one); remembered after the connection closes."""
        if node_id is None:
            if not self._api_versions:
                return None
            return dict(next(reversed(self._api_versions.values())))
        known = self._api_versions.get(node_id)
        return None if known is None else dict(known)

    def finalized_features(self, node_id: int | None = None) -> dict[str, int] | None:
        """Finalized feature levels ``{name: max_version_level}`` (KIP-584) a node
        (or the most recently negotiated one) reported in ApiVersions; None before any."""
        if node_id is None:
            if not self._features:
                return None
            return dict(next(reversed(self._features.values())))
        known = self._features.get(node_id)
        return None if known is None else dict(known)

    def check_version(self, node_id: int | None = None) -> dict[int, tuple[int, int]] | None:
        """Seed 004's ``check_version``: no guessing, the negotiated ApiVersions map."""
        return self.get_api_versions(node_id)

    def api_version(self, api_key: int, node_id: int | None = None) -> int:
        """The version kafkacore would use for ``api_key`` (min of both maxima)."""
        theirs = self.get_api_versions(node_id)
        if theirs is None:
            raise LocalProtocolError(
                "api_version: no connection has finished ApiVersions yet; connect first"
            )
        return negotiate_version(api_key, _codec.our_version_range(api_key), theirs.get(api_key))

    def least_loaded_node(self, *, now: float, lane: str = DEFAULT_LANE) -> int | None:
        """The seed 004 rule: ready and idle first, then ready with the fewest in
        flight, then a node already connecting, then a disconnected node out of
        backoff, then a ready node at its in-flight limit (the request waits
        there); bootstrap addresses only when no broker can be used at all.
        None if every candidate is backing off."""
        brokers = [b.node_id for b in self.cluster.brokers()]
        found = self._least_loaded(brokers, now, lane)
        if found is None and any(n >= 0 for n in brokers):
            # Every known broker is backing off: fall back to the bootstrap list.
            bootstrap = [b.node_id for b in self.cluster.bootstrap_brokers()]
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
            slot = self._slots.get((node_id, lane))
            conn = None if slot is None else slot.conn
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
            elif (slot is None or slot.blackout_until <= now) and can_connect is None:
                can_connect = node_id
        if best_ready is not None:
            return best_ready[1]
        if connecting is not None:
            return connecting
        if can_connect is not None:
            return can_connect
        return None if best_full is None else best_full[1]

    # ----------------------------------------------------------------- commands
    def send(
        self,
        request: Any,
        *,
        now: float,
        target: Target | None = None,
        lane: str = DEFAULT_LANE,
        timeout_ms: int | None = None,
        max_version: int | None = None,
    ) -> RequestHandle:
        """Queue ``request`` (a generated request message) for ``target``.

        Returns at once; a ``RequestCompleted`` event for the handle follows.
        The version is negotiated per connection. ``timeout_ms`` (default
        ``request_timeout_ms``) bounds the wait for a ready connection and,
        separately, the wait for the response once written. ``max_version``
        caps the negotiated version (e.g. Produce <= v11 for transactions v1,
        KIP-890); a cap below what both sides accept fails the request with
        UnsupportedVersionError.
        """
        self._check_open("send")
        api_key = getattr(type(request), "API_KEY", None)
        if not isinstance(api_key, int):
            raise LocalProtocolError(
                f"send: {type(request).__name__} is not a request message (no API_KEY)"
            )
        if _codec.our_version_range(api_key) is None:
            raise LocalProtocolError(f"send: API key {api_key} has no codec in kafkacore")
        if target is None:
            target = AnyNode()
        if not isinstance(
            target,
            AnyNode
            | Node
            | PartitionLeader
            | GroupCoordinator
            | TransactionCoordinator
            | Controller,
        ):
            raise LocalProtocolError(f"send: {target!r} is not a routing target")
        if not isinstance(lane, str) or not lane:
            raise LocalProtocolError("send: lane must be a non-empty string")
        if timeout_ms is not None and (isinstance(timeout_ms, bool) or timeout_ms <= 0):
            raise LocalProtocolError(f"send: timeout_ms {timeout_ms!r} must be a positive int")
        # Produce with acks=0 gets no response from the broker.
        expect = not (api_key == _PRODUCE and getattr(request, "acks", -1) == 0)
        if max_version is not None and (isinstance(max_version, bool) or max_version < 0):
            raise LocalProtocolError(f"send: max_version {max_version!r} must be an int >= 0")
        handle = self._enqueue(
            request,
            api_key,
            target,
            lane,
            now,
            timeout_ms=timeout_ms,
            expect_response=expect,
            max_version=max_version,
        )
        self._step(now)
        return handle

    def _enqueue(
        self,
        request: Any,
        api_key: int,
        target: Target,
        lane: str,
        now: float,
        *,
        timeout_ms: int | None = None,
        expect_response: bool = True,
        build: Callable[[int], Any] | None = None,
        on_done: Callable[[Any, BaseException | None, float], None] | None = None,
        front: bool = False,
        max_version: int | None = None,
    ) -> RequestHandle:
        limit = self._config.max_queued_requests
        if on_done is None and self._queue.user_count >= limit:
            raise LocalProtocolError(
                f"send: {self._queue.user_count} requests already wait for a connection "
                f"(max_queued_requests={limit}); wait for completions"
            )
        handle = RequestHandle(
            id=self._next_handle_id, request=request, api_key=api_key, target=target, lane=lane
        )
        self._next_handle_id += 1
        timeout_s = (timeout_ms or self._config.request_timeout_ms) / 1000
        pending = Pending(
            handle=handle,
            deadline=now + timeout_s,
            timeout_s=timeout_s,
            expect_response=expect_response,
            build=build,
            on_done=on_done,
            max_version=max_version,
        )
        self._queue.push(pending, front=front)
        return handle

    def cancel(self, handle: RequestHandle, *, now: float) -> bool:
        """Complete ``handle`` with RequestCancelled unless it is done already.

        A request already written cannot be unsent: its response, when it
        comes, is dropped. Returns False if the handle was already done.
        """
        if handle.done:
            return False
        queued = self._queue.get(handle.id)
        if queued is not None and queued.handle is handle:
            self._queue.remove(queued)
            pending = queued
        else:
            in_flight = self._in_flight.pop(handle.id, None)
            if in_flight is None or in_flight.handle is not handle:
                raise LocalProtocolError(f"cancel: {handle!r} does not belong to this client")
            pending = in_flight
        self._finish(pending, None, RequestCancelled(f"request #{handle.id} cancelled"), now)
        self._step(now)
        return True

    def request_metadata_update(self, *, now: float) -> MetadataWaiter:
        """Refresh metadata soon; the waiter completes with the next update."""
        waiter = self.cluster.request_update()
        self._step(now)
        return waiter

    def add_topic(self, topic: str, *, now: float) -> MetadataWaiter:
        """Track ``topic`` in metadata; the waiter completes with the next update."""
        if not isinstance(topic, str) or not topic:
            raise LocalProtocolError(f"add_topic: {topic!r} is not a topic name")
        self._topics.add(topic)
        waiter = self.cluster.request_update(new_topics=True)
        self._step(now)
        return waiter

    def set_topics(self, topics: Iterable[str], *, now: float) -> MetadataWaiter:
        """Track exactly ``topics``; the waiter completes with the next update."""
        new = set(topics)
        for topic in new:
            if not isinstance(topic, str) or not topic:
                raise LocalProtocolError(f"set_topics: {topic!r} is not a topic name")
        self._topics = new
        waiter = self.cluster.request_update(new_topics=True)
        self._step(now)
        return waiter

    def maybe_connect(self, node_id: int, *, now: float, lane: str = DEFAULT_LANE) -> bool:
        """Start connecting to ``node_id`` unless connected or backing off. True if started."""
        self._check_open("maybe_connect")
        if self.cluster.broker_metadata(node_id) is None:
            raise LocalProtocolError(f"maybe_connect: node {node_id} is not in the metadata")
        slot = self._slot(node_id, lane)
        started = self._connect(slot, now)
        self._step(now)
        return started

    def close(self, node_id: int | None = None, *, now: float, lane: str | None = None) -> None:
        """Close one node's connections (all lanes unless ``lane``), or all of them.

        Requests in flight on them complete with RequestCancelled. Requests
        still waiting stay queued and will reconnect.
        """
        for slot in list(self._slots.values()):
            if node_id is not None and slot.node_id != node_id:
                continue
            if lane is not None and slot.lane != lane:
                continue
            if slot.conn is not None:
                self._close_conn(
                    slot.conn, RequestCancelled("connection closed by close()"), now, by_user=True
                )
        self._step(now)

    def shutdown(self, *, now: float) -> None:
        """Close everything and cancel every request; the core is unusable afterwards."""
        if self._closed:
            return
        self._closed = True
        for slot in list(self._slots.values()):
            if slot.conn is not None:
                self._close_conn(slot.conn, RequestCancelled("client shut down"), now, by_user=True)
        for pending in self._queue.take_where(lambda key: True):
            self._finish(pending, None, RequestCancelled("client shut down"), now)
        self._coord_wanted.clear()
        self.cluster.failed_update(RequestCancelled("client shut down"), now=now)
        self._announce_waiters(None, None)

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise LocalProtocolError(f"{what}: the client core is shut down; make a new one")

    # -------------------------------------------------------------------- facts
    def connection_made(self, conn_id: ConnId, *, now: float) -> None:
        conn = self._conns.get(conn_id)
        if conn is None:
            return  # we closed it meanwhile; the transport will see our CloseConnection
        conn.connection_made(now=now)
        self._step(now)

    def connection_failed(self, conn_id: ConnId, error: BaseException, *, now: float) -> None:
        conn = self._conns.get(conn_id)
        if conn is None:
            return
        exc: BaseException
        if isinstance(error, AuthenticationError):
            # A transport's TLS verdict (bad certificate, hostname mismatch):
            # not retriable, so it must stay an AuthenticationError.
            exc = error
        else:
            exc = KafkaConnectionError(
                f"connect to node {conn.node_id} ({conn.host}) failed: {error}"
            )
            exc.__cause__ = error
        self._close_conn(conn, exc, now, reported=True)
        self._step(now)

    def data_received(
        self, conn_id: ConnId, data: bytes | bytearray | memoryview, *, now: float
    ) -> None:
        conn = self._conns.get(conn_id)
        if conn is None:
            return
        self._counters.bytes_received += len(data)
        conn.data_received(data, now=now)
        self._step(now)

    def connection_lost(self, conn_id: ConnId, error: BaseException | None, *, now: float) -> None:
        conn = self._conns.get(conn_id)
        if conn is None:
            return
        exc = KafkaConnectionError(
            f"connection to node {conn.node_id} lost" + (f": {error}" if error else "")
        )
        if error is not None:
            exc.__cause__ = error
        self._close_conn(conn, exc, now, reported=True)
        self._step(now)

    def handle_timeout(self, *, now: float) -> None:
        for conn in list(self._conns.values()):
            conn.handle_timeout(now=now)
        self._expire_waiting(now)
        self._step(now)

    def next_deadline(self) -> float | None:
        return self._wake_at

    def pull_actions(self) -> list[Action]:
        out, self._actions = self._actions, []
        return out

    def pull_events(self) -> list[object]:
        out, self._events = self._events, []
        return out

    # ---------------------------------------------------------------- the step
    def _step(self, now: float) -> None:
        for _ in range(4):  # completions may enqueue work that writes more
            self._drain_connections(now)
            if self._closed:
                break
            self._maybe_refresh_metadata(now)
            self._maybe_lookup_coordinators(now)
            self._dispatch(now)
            if not self._dirty() and not self._lookups_due(now):
                break
        self._drain_connections(now)
        if self._heal_due:
            # After every completion of this step is drained, so that no
            # answered-but-undelivered response is on a connection we close.
            self._heal_due = False
            self._heal(now)
            self._drain_connections(now)
        self._wake_at = self._compute_deadline(now)

    def _lookups_due(self, now: float) -> bool:
        # Dispatch may discover unknown routes; start their lookups in this step.
        if self._metadata_pending is None and self.cluster.ttl(now=now) == 0:
            return True
        return any(
            kt not in self._coord_busy and not_before <= now
            for (kt, _), not_before in self._coord_wanted.items()
        )

    def _dirty(self) -> bool:
        return any(
            conn.state is not self._reported.get(cid) or conn.has_pending_output
            for cid, conn in self._conns.items()
        )

    def _drain_connections(self, now: float) -> None:
        for conn_id, conn in list(self._conns.items()):
            writes = conn.pull_writes()
            for data in writes:
                self._actions.append(WriteData(conn_id=conn_id, data=data))
                self._counters.bytes_sent += len(data)
            for completion in conn.pull_completions():
                self._on_completion(completion, now)
            for ms in conn.latencies_ms:
                self._counters.latency(ms)
            conn.latencies_ms.clear()
            if conn.state is not self._reported.get(conn_id):
                self._on_state(conn, now)

    def _on_state(self, conn: BrokerConnection, now: float) -> None:
        self._reported[conn.conn_id] = conn.state
        slot = self._slots.get((conn.node_id, conn.lane))
        if conn.state is ConnectionState.READY:
            self._counters.connections_ready += 1
            self._api_versions.pop(conn.node_id, None)
            self._api_versions[conn.node_id] = dict(conn.broker_versions)
            self._features.pop(conn.node_id, None)
            self._features[conn.node_id] = dict(conn.finalized_features)
            if slot is not None:
                slot.failures = 0
                slot.ever_connected = True
            if conn.node_id < 0:
                self._bootstrap_failed.clear()
        self._emit_trace(
            "connection_state", node_id=conn.node_id, lane=conn.lane, state=conn.state.value
        )
        if conn.state is ConnectionState.CLOSED:
            self._on_closed(conn, now, reported=False)
        else:
            self._events.append(
                ConnectionStateChanged(
                    node_id=conn.node_id, lane=conn.lane, conn_id=conn.conn_id, state=conn.state
                )
            )

    def _close_conn(
        self,
        conn: BrokerConnection,
        error: BaseException | None,
        now: float,
        *,
        reported: bool = False,
        by_user: bool = False,
    ) -> None:
        """Close ``conn`` on our side (or record the transport's report of it)."""
        if by_user:
            for completion_handle in [
                p.handle
                for p in self._in_flight.values()
                if p.handle.node_id == conn.node_id
                and p.handle.lane == conn.lane
                and not p.handle.done
            ]:
                pending = self._in_flight.pop(completion_handle.id)
                self._finish(
                    pending,
                    None,
                    RequestCancelled(
                        f"request #{completion_handle.id} cancelled: connection closed"
                    ),
                    now,
                )
        conn.close(error)
        for completion in conn.pull_completions():
            self._on_completion(completion, now)
        self._reported[conn.conn_id] = ConnectionState.CLOSED
        self._on_closed(conn, now, reported=reported, by_user=by_user)

    def _on_closed(
        self, conn: BrokerConnection, now: float, *, reported: bool, by_user: bool = False
    ) -> None:
        if self._conns.pop(conn.conn_id, None) is None:
            return
        self._reported.pop(conn.conn_id, None)
        if not reported:
            self._actions.append(CloseConnection(conn_id=conn.conn_id))
        error = conn.close_error
        self._counters.connections_closed += 1
        slot = self._slots.get((conn.node_id, conn.lane))
        if slot is not None and slot.conn is conn:
            slot.conn = None
            if error is not None and not by_user:
                slot.failures += 1
                delay = self._backoff.delay_ms(slot.failures, self._rng)
                slot.blackout_until = now + delay / 1000
                self._counters.connection_failures += 1
        if isinstance(error, AuthenticationError):
            self._counters.authentication_failures += 1
            self._fail_waiting_for_node(conn.node_id, error, now)
        if error is not None and not by_user:
            # A broker that vanished may have taken leadership with it.
            self.cluster.need_update = True
            if conn.node_id < 0 and self.cluster.update_count == 0:
                self._bootstrap_failed.add(conn.node_id)
                self._check_bootstrap_exhausted(now, error)
        self._events.append(
            ConnectionStateChanged(
                node_id=conn.node_id,
                lane=conn.lane,
                conn_id=conn.conn_id,
                state=ConnectionState.CLOSED,
                error=error,
            )
        )

    def _check_bootstrap_exhausted(self, now: float, last_error: BaseException) -> None:
        all_ids = {b.node_id for b in self.cluster.bootstrap_brokers()}
        if not all_ids <= self._bootstrap_failed:
            return
        self._bootstrap_failed.clear()
        addresses = ", ".join(f"{b.host}:{b.port}" for b in self.cluster.bootstrap_brokers())
        error = NoBrokersAvailable(
            f"no bootstrap server answered ({addresses}); check bootstrap_servers "
            f"and that the brokers are up (last error: {last_error})"
        )
        error.__cause__ = last_error
        self._events.append(BootstrapFailed(error=error))
        for pending in self._queue.take_where(lambda key: True):
            self._finish(pending, None, error, now)

    def _fail_waiting_for_node(self, node_id: int, error: BaseException, now: float) -> None:
        # Authentication failures are not retriable (same credentials, same
        # answer): fail what would go to that node, and what would go anywhere.
        def doomed(key: GroupKey) -> bool:
            target = key[0]
            return isinstance(target, AnyNode) or self._peek_route(target) == node_id

        for pending in self._queue.take_where(doomed):
            self._finish(pending, None, error, now)

    def _slot(self, node_id: int, lane: str) -> _Slot:
        key = (node_id, lane)
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = _Slot(node_id=node_id, lane=lane)
        return slot

    def _connect(self, slot: _Slot, now: float) -> bool:
        if slot.conn is not None or slot.blackout_until > now or self._closed:
            return False
        broker = self.cluster.broker_metadata(slot.node_id)
        if broker is None:
            return False
        conn_id = self._next_conn_id
        self._next_conn_id += 1
        conn = BrokerConnection(
            conn_id=conn_id,
            node_id=slot.node_id,
            lane=slot.lane,
            host=broker.host,
            config=self._config,
            rng=self._rng,
            now=now,
        )
        slot.conn = conn
        self._conns[conn_id] = conn
        self._reported[conn_id] = ConnectionState.CONNECTING
        self._counters.connections_opened += 1
        if slot.ever_connected:
            self._counters.reconnects += 1
        tls = self._config.tls
        self._actions.append(
            OpenConnection(
                conn_id=conn_id,
                host=broker.host,
                port=broker.port,
                tls=tls,
                server_hostname=broker.host if tls else None,
            )
        )
        self._events.append(
            ConnectionStateChanged(
                node_id=slot.node_id,
                lane=slot.lane,
                conn_id=conn_id,
                state=ConnectionState.CONNECTING,
            )
        )
        self._emit_trace(
            "connect",
            node_id=slot.node_id,
            lane=slot.lane,
            host=broker.host,
            port=broker.port,
            conn_id=conn_id,
        )
        return True

    # ------------------------------------------------------------- completions
    def _on_completion(self, completion: Completion, now: float) -> None:
        handle = completion.handle
        pending = self._in_flight.pop(handle.id, None)
        if pending is None or handle.done:
            return  # cancelled while in flight: the late response is dropped
        if completion.error is None:
            self._counters.responses_received += 1
            if pending.on_done is None:
                self._inspect_response(handle, completion.response)
        self._finish(pending, completion.response, completion.error, now)

    def _finish(
        self, pending: Pending, response: Any, error: BaseException | None, now: float
    ) -> None:
        handle = pending.handle
        if error is not None:
            self._counters.requests_failed += 1
            if isinstance(error, KafkaTimeoutError):
                self._counters.requests_timed_out += 1
            elif isinstance(error, RequestCancelled):
                self._counters.requests_cancelled += 1
        handle._complete(response, error)
        self._emit_trace(
            "complete", id=handle.id, api_key=handle.api_key, node_id=handle.node_id, error=error
        )
        if pending.on_done is not None:
            pending.on_done(response, error, now)
        else:
            self._events.append(RequestCompleted(handle=handle, response=response, error=error))

    def _inspect_response(self, handle: RequestHandle, response: Any) -> None:
        codes = _error_codes(response)
        if not codes:
            return
        if any(_codec.invalidates_metadata(code) for code in codes):
            self.cluster.need_update = True
        if codes & _COORDINATOR_MOVED:
            target = handle.target
            if isinstance(target, GroupCoordinator):
                self.cluster.mark_coordinator_unknown(_KEY_GROUP, target.group_id)
            elif isinstance(target, TransactionCoordinator):
                self.cluster.mark_coordinator_unknown(_KEY_TXN, target.transactional_id)

    # ----------------------------------------------------------------- metadata
    def _maybe_refresh_metadata(self, now: float) -> None:
        if self._metadata_pending is not None or self._closed:
            return
        if self.cluster.ttl(now=now) > 0:
            return
        topics = None if self._config.metadata_all_topics else sorted(self._topics)
        allow = self._config.allow_auto_create_topics

        def build(version: int) -> Any:
            return _codec.metadata_request(topics, allow_auto_create=allow, version=version)

        handle = self._enqueue(
            None,
            _METADATA,
            AnyNode(),
            DEFAULT_LANE,
            now,
            build=build,
            on_done=self._on_metadata,
            front=True,
        )
        self._metadata_pending = self._queue.get(handle.id)
        self.cluster.update_started()
        self._emit_trace("metadata_request", topics=topics)

    def _on_metadata(self, response: Any, error: BaseException | None, now: float) -> None:
        self._metadata_pending = None
        if error is not None:
            self._counters.metadata_failures += 1
            self.cluster.failed_update(error, now=now)
            self._announce_waiters(None, error)
            return
        before = self.cluster.update_count
        self.cluster.update_metadata(response, now=now)
        if self.cluster.update_count == before:
            self._counters.metadata_failures += 1
            self._announce_waiters(None, KafkaConnectionError("metadata had no brokers"))
            return
        self._counters.metadata_updates += 1
        self._bootstrap_failed.clear()
        self._heal_due = True
        self._announce_waiters(response, None)

    def _announce_waiters(self, response: Any, error: BaseException | None) -> None:
        waiters = tuple(self.cluster.take_finished_waiters())
        cluster = self.cluster
        if error is not None:
            self._events.append(MetadataUpdateFailed(error=error, waiters=waiters))
        elif response is not None:
            self._events.append(
                MetadataUpdated(
                    cluster_id=cluster.cluster_id,
                    controller_id=cluster.controller_id,
                    broker_ids=frozenset(cluster),
                    topics=frozenset(cluster.topics(exclude_internal_topics=False)),
                    waiters=waiters,
                )
            )
        elif waiters:
            self._events.append(
                MetadataUpdateFailed(error=RequestCancelled("client shut down"), waiters=waiters)
            )

    def _heal(self, now: float) -> None:
        """Seed 000 ``heal``: drop idle connections to nodes that left the cluster."""
        live = set(self.cluster)
        for key, slot in list(self._slots.items()):
            if slot.node_id in live or self.cluster.is_coordinator(slot.node_id):
                continue
            conn = slot.conn
            if conn is not None and conn.idle and not conn.has_pending_output:
                self._close_conn(conn, None, now, by_user=True)
            if slot.conn is None:
                del self._slots[key]

    # ------------------------------------------------------------- coordinators
    def _maybe_lookup_coordinators(self, now: float) -> None:
        if not self._coord_wanted or self._closed:
            return
        for key_type in (_KEY_GROUP, _KEY_TXN):
            if key_type in self._coord_busy:
                continue
            keys = sorted(
                k
                for (kt, k), not_before in self._coord_wanted.items()
                if kt == key_type and not_before <= now
            )
            if not keys:
                continue
            self._coord_busy.add(key_type)
            included: list[str] = []

            def build(
                version: int, kt: int = key_type, ks: list[str] = keys, inc: list[str] = included
            ) -> Any:
                inc[:] = ks if version >= 4 else ks[:1]
                return _codec.find_coordinator_request(kt, inc, version=version)

            def done(
                response: Any,
                error: BaseException | None,
                t: float,
                kt: int = key_type,
                inc: list[str] = included,
            ) -> None:
                self._on_coordinator(kt, inc, response, error, t)

            self._enqueue(
                None, _FIND_COORDINATOR, AnyNode(), DEFAULT_LANE, now, build=build, on_done=done
            )

    def _on_coordinator(
        self, key_type: int, keys: list[str], response: Any, error: BaseException | None, now: float
    ) -> None:
        self._coord_busy.discard(key_type)
        retry_at = now + self._config.retry_backoff_ms / 1000
        needed = self._coordinator_keys_waited_for()
        for key in keys or [k for kt, k in self._coord_wanted if kt == key_type]:
            found = None
            if error is None and response is not None:
                found = self.cluster.add_coordinator(key_type, key, response)
            if found is None and (key_type, key) in needed:
                self._coord_wanted[(key_type, key)] = retry_at
            else:
                # Found, or nobody waits any more: stop looking it up.
                self._coord_wanted.pop((key_type, key), None)

    def _coordinator_keys_waited_for(self) -> set[tuple[int, str]]:
        keys: set[tuple[int, str]] = set()
        for target in self._queue.targets():
            if isinstance(target, GroupCoordinator):
                keys.add((_KEY_GROUP, target.group_id))
            elif isinstance(target, TransactionCoordinator):
                keys.add((_KEY_TXN, target.transactional_id))
        return keys

    # ----------------------------------------------------------------- dispatch
    def _peek_route(self, target: Target) -> int | None:
        """Resolve a target without side effects (None when unknown)."""
        cluster = self.cluster
        if isinstance(target, Node):
            return target.node_id
        if isinstance(target, PartitionLeader):
            leader = cluster.leader_for_partition(TopicPartition(target.topic, target.partition))
            return leader if leader is not None and leader >= 0 else None
        if isinstance(target, GroupCoordinator):
            return cluster.coordinator_for_group(target.group_id)
        if isinstance(target, TransactionCoordinator):
            return cluster.coordinator_for_transaction(target.transactional_id)
        if isinstance(target, Controller):
            return cluster.controller_id
        return None

    def _route(self, target: Target, lane: str, now: float) -> tuple[int | None, str]:
        """The node for ``target`` now, or None and why (asking for what is missing)."""
        if isinstance(target, AnyNode):
            node = self.least_loaded_node(now=now, lane=lane)
            return node, "every node is backing off after failures"
        node = self._peek_route(target)
        if node is not None:
            if self.cluster.broker_metadata(node) is None:
                self.cluster.need_update = True
                return None, f"node {node} is not in the metadata"
            return node, ""
        # Unknown route: ask for what would make it known.
        if isinstance(target, PartitionLeader):
            if target.topic not in self._topics and not self._config.metadata_all_topics:
                self._topics.add(target.topic)
            self.cluster.need_update = True
            return None, f"no known leader for {target.topic}-{target.partition}"
        if isinstance(target, GroupCoordinator):
            self._coord_wanted.setdefault((_KEY_GROUP, target.group_id), now)
            return None, f"no known coordinator for group {target.group_id!r}"
        if isinstance(target, TransactionCoordinator):
            self._coord_wanted.setdefault((_KEY_TXN, target.transactional_id), now)
            return None, f"no known coordinator for transactional id {target.transactional_id!r}"
        self.cluster.need_update = True
        return None, "no known controller"

    def _dispatch(self, now: float) -> None:
        """Write what can be written, merging groups by the age of their heads."""
        queue = self._queue
        if not queue:
            return
        order = queue.keys_by_head()
        blocked: dict[tuple[int, str], str] = {}  # (node, lane) -> why it cannot send
        while order:
            _, key = heapq.heappop(order)
            target, lane = key
            pending = queue.head(key)
            if pending is None:
                continue
            node, reason = self._route(target, lane, now)
            if node is None:
                queue.set_reason(key, reason)
                continue
            slot_key = (node, lane)
            why = blocked.get(slot_key)
            if why is not None:
                queue.set_reason(key, why)
                continue
            slot = self._slot(node, lane)
            conn = slot.conn
            if conn is None or not conn.can_send:
                if conn is None:
                    self._connect(slot, now)
                    why = f"node {node} is not connected"
                else:
                    why = f"node {node} is {conn.state.value}" + (
                        " at its in-flight limit" if conn.ready else ""
                    )
                blocked[slot_key] = why
                queue.set_reason(key, why)
                continue
            queue.pop_head(key)
            self._write(pending, conn, node, now)
            following = queue.head(key)
            if following is not None:
                heapq.heappush(order, (following.seq, key))

    def _write(self, pending: Pending, conn: BrokerConnection, node: int, now: float) -> None:
        handle = pending.handle
        try:
            version = conn.version_for(handle.api_key)
            if pending.max_version is not None and version > pending.max_version:
                version = self._capped_version(conn, handle.api_key, pending.max_version)
            message = pending.build(version) if pending.build else handle.request
            conn.send(
                handle,
                message,
                version=version,
                now=now,
                expect_response=pending.expect_response,
                timeout_s=pending.timeout_s,
            )
        except (UnsupportedVersionError, LocalProtocolError) as exc:
            self._finish(pending, None, exc, now)
            return
        self._in_flight[handle.id] = pending
        self._counters.requests_sent += 1
        self._counters.by_api[handle.api_key] += 1
        self._emit_trace(
            "send",
            id=handle.id,
            api_key=handle.api_key,
            version=version,
            node_id=node,
            lane=handle.lane,
        )

    def _capped_version(self, conn: BrokerConnection, api_key: int, cap: int) -> int:
        ours = _codec.our_version_range(api_key)
        theirs = conn.broker_versions.get(api_key)
        low = max(ours[0] if ours else 0, theirs[0] if theirs else 0)
        if cap < low:
            raise UnsupportedVersionError(
                f"{_codec.api_name(api_key)}: the caller caps the version at v{cap}, below "
                f"the lowest version both sides accept (v{low}) on node {conn.node_id}"
            )
        return cap

    def _expire_waiting(self, now: float) -> None:
        for pending, reason in self._queue.pop_expired(now):
            handle = pending.handle
            error = KafkaTimeoutError(
                f"request #{handle.id} ({_codec.api_name(handle.api_key)}) "
                f"to {_describe(handle.target)} "
                f"not sent within {pending.timeout_s * 1000:.0f} ms: {reason}"
            )
            self._finish(pending, None, error, now)

    def _compute_deadline(self, now: float) -> float | None:
        times: list[float] = []
        for conn in self._conns.values():
            deadline = conn.next_deadline()
            if deadline is not None:
                times.append(deadline)
        queued_deadline = self._queue.next_deadline()
        if queued_deadline is not None:
            times.append(queued_deadline)
            for slot in self._slots.values():
                if slot.conn is None and slot.blackout_until > now:
                    times.append(slot.blackout_until)
        if not self._closed and self._metadata_pending is None:
            times.append(max(self.cluster.next_refresh_at(), now))
        for not_before in self._coord_wanted.values():
            if not_before > now:
                times.append(not_before)
        return min(times) if times else None

    def _emit_trace(self, name: str, **fields: object) -> None:
        if self._trace is not None:
            self._trace(name, fields)


def _describe(target: Target) -> str:
    if isinstance(target, AnyNode):
        return "any node"
    if isinstance(target, Node):
        return f"node {target.node_id}"
    if isinstance(target, PartitionLeader):
        return f"leader of {target.topic}-{target.partition}"
    if isinstance(target, GroupCoordinator):
        return f"coordinator of group {target.group_id!r}"
    if isinstance(target, TransactionCoordinator):
        return f"coordinator of transactional id {target.transactional_id!r}"
    return "the controller"


# Per generated class: (has an ``error_code`` field, struct-typed fields whose
# subtree can hold one). Computed once per class, so scanning a response
# visits only the parts that can carry error codes.
_SCAN_PLAN: dict[type, tuple[bool, tuple[str, ...]]] = {}


def _scan_plan(cls: type, depth: int = 0) -> tuple[bool, tuple[str, ...]]:
    plan = _SCAN_PLAN.get(cls)
    if plan is None:
        fields = getattr(cls, "FIELDS", ())
        has_code = any(meta.attr == "error_code" for meta in fields)
        nested = tuple(
            meta.attr
            for meta in fields
            if meta.struct is not None
            and depth < 4
            and _subtree_has_code(_scan_plan(meta.struct, depth + 1))
        )
        plan = _SCAN_PLAN[cls] = (has_code, nested)
    return plan


def _subtree_has_code(plan: tuple[bool, tuple[str, ...]]) -> bool:
    return plan[0] or bool(plan[1])


def _error_codes(obj: Any) -> set[int]:
    """Every non-zero ``error_code`` in a decoded response (structs and arrays of them)."""
    codes: set[int] = set()
    stack = [obj]
    while stack:
        item = stack.pop()
        has_code, nested = _scan_plan(type(item))
        if has_code:
            code = item.error_code
            if code:
                codes.add(code)
        for attr in nested:
            value = getattr(item, attr)
            if isinstance(value, list):
                stack.extend(value)
            elif value is not None:
                stack.append(value)
    return codes

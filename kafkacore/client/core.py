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
   ``ConnectionStateChanged`` events; a connection that closed on an error
   puts its node in a reconnect backoff (see *Backoff* below);
2. start a metadata refresh when one is due (age, on demand, after errors
   that invalidate metadata, never sooner than the metadata backoff) and
   coordinator lookups (FindCoordinator, batched at v4+, KIP-699) for
   targets that need them;
3. dispatch waiting requests in order: resolve each target to a node (any
   node = least loaded; a node; a partition leader; a group or transaction
   coordinator; the controller), write it if that node's connection on the
   request's lane is READY and below the in-flight limit, else ask for a
   connection. A request never overtakes an earlier one for the same
   (node, lane).

Every request completes exactly once: with its response, or with
``KafkaTimeoutError`` (deadline), ``KafkaConnectionError`` (connection lost
or failed while in flight), ``RequestCancelled`` (``cancel``, ``close``,
``shutdown``), ``AuthenticationError``, ``NoCommonVersionError`` or
``NoBrokersAvailable`` (no bootstrap address answered).

Lanes (pykafka's connection ids) give one broker several connections, so
that e.g. group heartbeats (lane ``"group"``) never wait behind long fetches
(lane ``"default"``).

Backoff (KIP-144, KIP-580): every retry the core makes itself waits
exponentially longer, with +-20% jitter from the injected rng.

* Reconnects, per node (all lanes): every connection that closes on an
  error (refused, lost, timed out, a protocol error on an established
  connection, a failed handshake) counts one failure of its node, and the
  node is not connected again for ``reconnect_backoff_ms * 2**(n-1)``
  (capped at ``reconnect_backoff_max_ms``). Reaching READY does not clear
  the count: a broker that accepts connections and then breaks the
  protocol keeps backing off. A connection that stayed READY for
  ``reconnect_backoff_max_ms`` before failing restarts the count at one.
  Failures while the node is already backing off (its other lanes) count
  once.
* Metadata refreshes: see :mod:`kafkacore.client.metadata` (from
  ``retry_backoff_ms`` to ``retry_backoff_max_ms`` over consecutive
  attempts that did not settle the cluster).
* Coordinator lookups, per key: the same schedule over consecutive misses.

Failures keep their cause: requests that expire waiting for a node name the
node's last connection error (and carry it as ``__cause__``);
:meth:`KafkaClientCore.unavailable_cause` says why no broker can be used;
an AuthenticationError (wrong credentials, a rejected certificate) stops
the client: no more connections, every waiting and later request fails
with it (retrying with the same credentials cannot succeed).

Rebootstrap (KIP-899, KIP-1102, ``metadata_recovery_strategy="rebootstrap"``):
a response carrying REBOOTSTRAP_REQUIRED, or no successful metadata for
``metadata_recovery_rebootstrap_trigger_ms`` while refreshes fail, makes the
core forget the known brokers and bootstrap again.

Nothing here logs (no I/O in the core): notable moments go to the trace
hooks (:meth:`KafkaClientCore.add_trace`), which transports turn into
``logging`` lines; the names and fields are listed in ``docs/client.md``.
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
    AuthenticationFailed,
    BootstrapFailed,
    ConnectionStateChanged,
    MetadataUpdated,
    MetadataUpdateFailed,
    RequestCompleted,
)
from kafkacore.client.handles import MetadataWaiter, RequestHandle
from kafkacore.client.health import NodeHealth, NodeHealthTable
from kafkacore.client.metadata import BrokerMetadata, ClusterMetadata, TopicPartition
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
    NoCommonVersionError,
    RequestCancelled,
)
from kafkacore.protocol.enums import COORDINATOR_MOVED, ApiKey, CoordinatorType, ErrorCode
from kafkacore.protocol.error_codes import error_class

__all__ = ["DEFAULT_LANE", "KafkaClientCore", "TraceHook"]

DEFAULT_LANE = "default"
#: Consecutive failures of every bootstrap server, before any broker was ever
#: reached, after which :meth:`KafkaClientCore.unreachable_from_the_start`
#: reports the cluster unreachable (with the reconnect backoff's defaults,
#: about half a second of trying).
FIRST_CONTACT_ATTEMPTS = 3

#: ``trace(name, fields)``: called synchronously at notable points.
TraceHook = Callable[[str, Mapping[str, object]], None]

#: How many nodes an "unavailable" message lists before "and N more".
_LISTED_NODES = 3


@dataclass(slots=True)
class _Slot:
    """Connection bookkeeping of one (node, lane)."""

    node_id: int
    lane: str
    conn: BrokerConnection | None = None
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
        self._traces: tuple[TraceHook, ...] = () if trace is None else (trace,)
        cfg = self._config
        self.cluster = ClusterMetadata(
            retry_backoff_ms=cfg.retry_backoff_ms,
            retry_backoff_max_ms=cfg.retry_backoff_max_ms,
            rng=rng,
            metadata_max_age_ms=cfg.metadata_max_age_ms,
            bootstrap_servers=list(
                f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in cfg.bootstrap_addresses
            ),
        )
        self._retry_backoff = ExponentialBackoff(cfg.retry_backoff_ms, cfg.retry_backoff_max_ms)
        # A connection READY for reconnect_backoff_max_ms before it fails
        # restarts its node's count (see kafkacore.client.health).
        self._health = NodeHealthTable(
            ExponentialBackoff(cfg.reconnect_backoff_ms, cfg.reconnect_backoff_max_ms),
            rng=rng,
            stable_s=cfg.reconnect_backoff_max_ms / 1000,
        )
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
        self._coord_misses: dict[tuple[int, str], int] = {}  # key -> consecutive misses
        # key -> a FindCoordinator refusal that waiting will not fix
        # (GROUP_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED...):
        # the requests waiting for that coordinator fail with it, once.
        self._coord_failures: dict[tuple[int, str], BaseException] = {}
        self._coord_busy: set[int] = set()  # key types with a lookup in flight
        self._bootstrap_failed: set[int] = set()
        # True until the first metadata, and again after a rebootstrap.
        self._bootstrapping = True
        self._auth_error: AuthenticationError | None = None
        self._last_metadata_error: BaseException | None = None
        # Since when metadata refreshes fail (None: the last one succeeded).
        self._metadata_failing_since: float | None = None
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

    def add_trace(self, hook: TraceHook) -> None:
        """Call ``hook(name, fields)`` at every notable point (see ``docs/client.md``).

        Transports attach their logging here. A hook runs synchronously
        inside the core's step: it must be quick and must not call the core.
        """
        if not callable(hook):
            raise LocalProtocolError(f"add_trace: {hook!r} is not callable")
        self._traces = (*self._traces, hook)

    @property
    def trace_hooks(self) -> tuple[TraceHook, ...]:
        """The hooks called at every trace point, in the order they were added."""
        return self._traces

    def remove_trace(self, hook: TraceHook) -> None:
        if hook not in self._traces:
            raise LocalProtocolError("remove_trace: that hook was never added")
        self._traces = tuple(h for h in self._traces if h is not hook)

    @property
    def authentication_error(self) -> AuthenticationError | None:
        """The AuthenticationError that stopped this client, or None.

        Once set, the core opens no connection and fails every request with
        it: the same credentials (or certificate) would be refused again.
        """
        return self._auth_error

    def node_error(self, node_id: int) -> BaseException | None:
        """The error that closed ``node_id``'s last failed connection.

        None when the node never failed, or connected (READY) since.
        """
        return self._health.last_error(node_id)

    def unavailable_cause(self) -> BaseException | None:
        """Why no broker can be used right now, or None if one can (or may).

        * the :attr:`authentication_error` once authentication failed;
        * :class:`~kafkacore.errors.NoBrokersAvailable` when no connection is
          READY and every candidate failed its last attempt: the bootstrap
          addresses before the first metadata (and after a rebootstrap), the
          known brokers afterwards. Its message names each node and its last
          error; ``__cause__`` is the most recent of those errors.

        Higher layers (producer, consumer) call it when their own timeout
        passes, to report the real cause instead of a bare timeout.
        """
        if self._auth_error is not None:
            return self._auth_error
        if any(conn.ready for conn in self._conns.values()):
            return None
        cluster = self.cluster
        if self._bootstrapping:
            nodes = sorted((b.node_id for b in cluster.bootstrap_brokers()), reverse=True)
        else:
            nodes = sorted(b.node_id for b in cluster.brokers())
        failed: list[tuple[int, NodeHealth]] = []
        for node_id in nodes:
            health = self._health.get(node_id)
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
        what = "bootstrap server" if self._bootstrapping else "known broker"
        error = NoBrokersAvailable(
            f"no {what} is reachable ({listed}); check that the brokers are up and "
            "that bootstrap_servers and the security settings match their listeners"
        )
        error.__cause__ = max(failed, key=lambda item: item[1].failed_at)[1].last_error
        return error

    def unreachable_from_the_start(self) -> NoBrokersAvailable | None:
        """NoBrokersAvailable when this client never reached any broker and every
        bootstrap server failed :data:`FIRST_CONTACT_ATTEMPTS` times in a row.

        A wrong address or port, or a cluster that is down when the program
        starts, is then reported at once (as kafka-python and aiokafka do at
        start) instead of when a request's own timeout passes. Once any
        broker has answered, outages are transient: callers wait for their
        timeouts (and :meth:`unavailable_cause` explains them).
        """
        ever_ready = self._counters.connections_ready > 0
        if ever_ready or self._auth_error is not None or not self._bootstrapping:
            return None
        for broker in self.cluster.bootstrap_brokers():
            health = self._health.get(broker.node_id)
            if health is None or health.failures < FIRST_CONTACT_ATTEMPTS:
                return None
        cause = self.unavailable_cause()
        return cause if isinstance(cause, NoBrokersAvailable) else None

    def describe_node(self, node_id: int) -> str:
        """How errors and logs name a node: 'broker 1 at host:port' or 'bootstrap server h:p'."""
        broker = self.cluster.broker_metadata(node_id)
        if broker is None:
            return f"node {node_id}"
        if node_id < 0:
            return f"bootstrap server {_address(broker)}"
        return f"broker {node_id} at {_address(broker)}"

    def _blackout_until(self, node_id: int) -> float:
        return self._health.blackout_until(node_id)

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
            return max(self._blackout_until(node_id) - now, 0.0) * 1000
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
            elif can_connect is None and self._blackout_until(node_id) <= now:
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
        build: Callable[[int], Any] | None = None,
    ) -> RequestHandle[Any]:
        """Queue ``request`` (a generated request message) for ``target``.

        Returns at once; a ``RequestCompleted`` event for the handle follows.
        The version is negotiated per connection. ``timeout_ms`` (default
        ``request_timeout_ms``) bounds the wait for a ready connection and,
        separately, the wait for the response once written. ``max_version``
        caps the negotiated version (e.g. Produce <= v11 for transactions v1,
        KIP-890); a cap below what both sides accept fails the request with
        NoCommonVersionError.

        ``build``, when given, is called with the version negotiated on the
        connection that will carry the request, just before it is written,
        and returns the message to send (``request`` is then the template
        that names the API): the way to fill version-dependent fields without
        guessing the version before the connection is known.
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
        expect = not (api_key == ApiKey.PRODUCE and getattr(request, "acks", -1) == 0)
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
            build=build,
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
    ) -> RequestHandle[Any]:
        limit = self._config.max_queued_requests
        if on_done is None and self._queue.user_count >= limit:
            raise LocalProtocolError(
                f"send: {self._queue.user_count} requests already wait for a connection "
                f"(max_queued_requests={limit}); wait for completions"
            )
        handle: RequestHandle[Any] = RequestHandle(
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

    def cancel(self, handle: RequestHandle[Any], *, now: float) -> bool:
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
        new = topic not in self._topics
        self._topics.add(topic)
        # Only a topic not tracked yet is a new question for the metadata (an
        # answer already on its way covers the others).
        waiter = self.cluster.request_update(new_topics=new)
        self._step(now)
        return waiter

    def set_topics(self, topics: Iterable[str], *, now: float) -> MetadataWaiter:
        """Track exactly ``topics``; the waiter completes with the next update."""
        new = set(topics)
        for topic in new:
            if not isinstance(topic, str) or not topic:
                raise LocalProtocolError(f"set_topics: {topic!r} is not a topic name")
        grew = not new <= self._topics
        self._topics = new
        waiter = self.cluster.request_update(new_topics=grew)
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
            exc = KafkaConnectionError(f"connect to {conn.peer} failed: {_reason(error)}")
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
        exc: BaseException
        if isinstance(error, AuthenticationError):
            # The transport's TLS verdict (the broker refused our
            # certificate): not retriable.
            exc = AuthenticationError(f"{conn.peer}: {error}")
        else:
            exc = KafkaConnectionError(
                f"connection to {conn.peer} lost"
                + (f": {_reason(error)}" if error else " (closed by the broker)")
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
                slot.ever_connected = True
            # The failure count stays (see Backoff in the module docstring);
            # only the "last attempt failed" verdict is lifted.
            self._health.connected(conn.node_id)
            if conn.node_id < 0:
                self._bootstrap_failed.clear()
        if conn.state is ConnectionState.CLOSED:
            self._on_closed(conn, now, reported=False)
        else:
            self._emit_trace(
                "connection_state",
                node_id=conn.node_id,
                lane=conn.lane,
                conn_id=conn.conn_id,
                peer=conn.peer,
                state=conn.state.value,
                error=None,
            )
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
        self._emit_trace(
            "connection_state",
            node_id=conn.node_id,
            lane=conn.lane,
            conn_id=conn.conn_id,
            peer=conn.peer,
            state=ConnectionState.CLOSED.value,
            error=None if by_user else error,
        )
        failed = error is not None and not by_user
        if failed:
            assert error is not None
            self._count_failure(conn, error, now)
        if isinstance(error, AuthenticationError):
            self._counters.authentication_failures += 1
            self._authentication_failed(conn, error, now)
        elif failed:
            assert error is not None
            # A broker that vanished may have taken leadership with it.
            self.cluster.need_update = True
            if conn.node_id < 0 and self._bootstrapping:
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

    def _count_failure(self, conn: BrokerConnection, error: BaseException, now: float) -> None:
        """One more failure of ``conn``'s node: back off before connecting to it again."""
        self._counters.connection_failures += 1
        started = self._health.failed(conn.node_id, error, now=now, ready_since=conn.ready_since)
        if started is not None:
            failures, delay = started
            self._emit_trace(
                "reconnect_backoff",
                node_id=conn.node_id,
                peer=conn.peer,
                failures=failures,
                delay_ms=delay,
                error=error,
            )

    def _authentication_failed(
        self, conn: BrokerConnection, error: AuthenticationError, now: float
    ) -> None:
        """Stop the client: the same credentials would be refused again."""
        first = self._auth_error is None
        if first:
            self._auth_error = error
            self._emit_trace(
                "authentication_failed", node_id=conn.node_id, peer=conn.peer, error=error
            )
            self._events.append(AuthenticationFailed(node_id=conn.node_id, error=error))
        self._bootstrap_failed.clear()
        self._coord_wanted.clear()
        self._coord_misses.clear()
        self._coord_failures.clear()
        for pending in self._queue.take_where(lambda key: True):
            self._finish(pending, None, error, now)
        if self.cluster.waiting:
            self.cluster.failed_update(error, now=now)
            self._announce_waiters(None, error)

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
        self._emit_trace("bootstrap_failed", error=error)
        self._events.append(BootstrapFailed(error=error))
        for pending in self._queue.take_where(lambda key: True):
            self._finish(pending, None, error, now)

    def _slot(self, node_id: int, lane: str) -> _Slot:
        key = (node_id, lane)
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = _Slot(node_id=node_id, lane=lane)
        return slot

    def _connect(self, slot: _Slot, now: float) -> bool:
        if (
            slot.conn is not None
            or self._blackout_until(slot.node_id) > now
            or self._closed
            or self._auth_error is not None
        ):
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
            port=broker.port,
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
            peer=conn.peer,
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
                self._inspect_response(handle, completion.response, now)
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

    def _inspect_response(self, handle: RequestHandle[Any], response: Any, now: float) -> None:
        codes = _error_codes(response)
        if not codes:
            return
        if (
            getattr(response, "error_code", ErrorCode.NONE) == ErrorCode.REBOOTSTRAP_REQUIRED
            and self._rebootstrap_enabled
            and not self._bootstrapping
        ):
            node = "a broker" if handle.node_id is None else self.describe_node(handle.node_id)
            self._rebootstrap(f"{node} answered REBOOTSTRAP_REQUIRED", now)
        if any(_codec.invalidates_metadata(code) for code in codes):
            self.cluster.need_update = True
        if codes & COORDINATOR_MOVED:
            target = handle.target
            if isinstance(target, GroupCoordinator):
                self.cluster.mark_coordinator_unknown(CoordinatorType.GROUP, target.group_id)
            elif isinstance(target, TransactionCoordinator):
                self.cluster.mark_coordinator_unknown(
                    CoordinatorType.TRANSACTION, target.transactional_id
                )

    # ----------------------------------------------------------------- metadata
    def _maybe_refresh_metadata(self, now: float) -> None:
        if self._metadata_pending is not None or self._closed:
            return
        if self._auth_error is not None:
            if self.cluster.waiting:  # asked for after the client stopped
                self.cluster.failed_update(self._auth_error, now=now)
                self._announce_waiters(None, self._auth_error)
            return
        if self.cluster.ttl(now=now) > 0:
            return
        self._maybe_rebootstrap_on_timer(now)
        topics = None if self._config.metadata_all_topics else sorted(self._topics)
        allow = self._config.allow_auto_create_topics

        def build(version: int) -> Any:
            return _codec.metadata_request(topics, allow_auto_create=allow, version=version)

        box: list[RequestHandle[Any]] = []

        def done(response: Any, error: BaseException | None, t: float) -> None:
            self._on_metadata(box[0], response, error, t)

        handle = self._enqueue(
            None,
            ApiKey.METADATA,
            AnyNode(),
            DEFAULT_LANE,
            now,
            build=build,
            on_done=done,
            front=True,
        )
        box.append(handle)
        self._metadata_pending = self._queue.get(handle.id)
        self.cluster.update_started()
        self._emit_trace("metadata_request", topics=topics, attempts=self.cluster.refresh_attempts)

    def _on_metadata(
        self, handle: RequestHandle[Any], response: Any, error: BaseException | None, now: float
    ) -> None:
        self._metadata_pending = None
        source = self._metadata_source(handle.node_id, response)
        if error is None:
            # The top-level code: Metadata v13+ (KIP-1102).
            code = getattr(response, "error_code", ErrorCode.NONE)
            if (
                code == ErrorCode.REBOOTSTRAP_REQUIRED
                and self._rebootstrap_enabled
                and not self._bootstrapping
            ):
                # KIP-1102: ask the bootstrap servers instead; whoever
                # waits for metadata waits for that answer.
                self._rebootstrap(f"{source or 'a broker'} answered REBOOTSTRAP_REQUIRED", now)
                self.cluster.update_abandoned()
                return
            if code:
                error = _codec.error_for_code(
                    code, f"{source or 'the broker'} refused the Metadata request"
                )
        if error is not None:
            self._metadata_failed(error, now)
            return
        before = self.cluster.update_count
        # Topics that already had a failure: their error is traced once, not per refresh.
        failing_before = {t for t in self._topics if self.cluster.topic_failure(t) is not None}
        self.cluster.update_metadata(response, now=now, source=source)
        if self.cluster.update_count == before:
            error = self.cluster.last_failure or KafkaConnectionError("Metadata failed")
            self._counters.metadata_failures += 1
            self._note_metadata_failure(error, now)
            self._announce_waiters(None, error)
            return
        self._counters.metadata_updates += 1
        self._bootstrap_failed.clear()
        self._bootstrapping = False
        self._last_metadata_error = None
        self._metadata_failing_since = None
        self._heal_due = True
        cluster = self.cluster
        for topic in sorted(self._topics):
            failure = cluster.topic_failure(topic)
            if failure is not None and topic not in failing_before:
                self._emit_trace("topic_error", topic=topic, error=failure)
        self._emit_trace(
            "metadata_updated",
            source=source,
            brokers=len(cluster),
            topics=len(cluster.topics(exclude_internal_topics=False)),
            incomplete=cluster.incomplete,
            retry_in_ms=cluster.retry_delay_ms if cluster.incomplete else None,
        )
        self._announce_waiters(response, None)

    def _metadata_source(self, node_id: int | None, response: Any) -> str | None:
        """Name the broker that answered; a bootstrap address by the broker id
        the answer gives it, when it lists the same address."""
        if node_id is None:
            return None
        if node_id < 0 and response is not None:
            address = self.cluster.broker_metadata(node_id)
            for b in getattr(response, "brokers", None) or ():
                if address is not None and (b.host, b.port) == (address.host, address.port):
                    return f"broker {b.node_id} at {_address(address)}"
        return self.describe_node(node_id)

    def _metadata_failed(self, error: BaseException, now: float) -> None:
        self._counters.metadata_failures += 1
        self.cluster.failed_update(error, now=now)
        self._note_metadata_failure(error, now)
        self._announce_waiters(None, error)

    def _note_metadata_failure(self, error: BaseException, now: float) -> None:
        self._last_metadata_error = error
        if self._metadata_failing_since is None:
            self._metadata_failing_since = now
        self._emit_trace(
            "metadata_failed",
            error=error,
            attempts=self.cluster.refresh_attempts,
            retry_in_ms=self.cluster.retry_delay_ms,
        )

    # ---------------------------------------------------------------- rebootstrap
    @property
    def _rebootstrap_enabled(self) -> bool:
        return self._config.metadata_recovery_strategy == "rebootstrap"

    def _maybe_rebootstrap_on_timer(self, now: float) -> None:
        """KIP-1102: no known broker gave metadata for the trigger time: bootstrap again."""
        since = self._metadata_failing_since
        if since is None or self._bootstrapping or not self._rebootstrap_enabled:
            return
        trigger_ms = self._config.metadata_recovery_rebootstrap_trigger_ms
        if (now - since) * 1000 >= trigger_ms:
            self._rebootstrap(
                f"no metadata from any known broker for {trigger_ms} ms "
                f"(last error: {self._last_metadata_error})",
                now,
            )

    def _rebootstrap(self, reason: str, now: float) -> None:
        """Forget the brokers and start again from bootstrap_servers (KIP-899/KIP-1102)."""
        self._emit_trace("rebootstrap", reason=reason)
        self.cluster.rebootstrap()
        self._bootstrapping = True
        self._bootstrap_failed.clear()
        self._metadata_failing_since = now
        self._counters.rebootstraps += 1

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
        # Bootstrap addresses keep their health (a rebootstrap uses them again).
        in_use = {slot.node_id for slot in self._slots.values()}
        self._health.forget(
            n
            for n, _ in self._health
            if n >= 0 and n not in live | in_use and not self.cluster.is_coordinator(n)
        )

    # ------------------------------------------------------------- coordinators
    def _maybe_lookup_coordinators(self, now: float) -> None:
        if not self._coord_wanted or self._closed:
            return
        for key_type in (CoordinatorType.GROUP, CoordinatorType.TRANSACTION):
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
                None,
                ApiKey.FIND_COORDINATOR,
                AnyNode(),
                DEFAULT_LANE,
                now,
                build=build,
                on_done=done,
            )

    def _on_coordinator(
        self, key_type: int, keys: list[str], response: Any, error: BaseException | None, now: float
    ) -> None:
        self._coord_busy.discard(key_type)
        needed = self._coordinator_keys_waited_for()
        for key in keys or [k for kt, k in self._coord_wanted if kt == key_type]:
            found = None
            wanted = (key_type, key)
            if error is None and response is not None:
                found = self.cluster.add_coordinator(key_type, key, response)
                refusal = _coordinator_refusal(key_type, key, response)
                if refusal is not None:
                    if wanted in needed:
                        self._coord_failures[wanted] = refusal
                    self._coord_wanted.pop(wanted, None)
                    self._coord_misses.pop(wanted, None)
                    continue
            if found is None and wanted in needed:
                # KIP-580: each consecutive miss doubles the wait (jittered).
                misses = self._coord_misses.get(wanted, 0) + 1
                self._coord_misses[wanted] = misses
                delay = self._retry_backoff.delay_ms(misses, self._rng)
                self._coord_wanted[wanted] = now + delay / 1000
                self._emit_trace(
                    "coordinator_retry",
                    key_type=key_type,
                    key=key,
                    misses=misses,
                    delay_ms=delay,
                    error=error,
                )
            else:
                # Found, or nobody waits any more: stop looking it up.
                self._coord_wanted.pop(wanted, None)
                self._coord_misses.pop(wanted, None)

    def _coordinator_keys_waited_for(self) -> set[tuple[int, str]]:
        keys: set[tuple[int, str]] = set()
        for target in self._queue.targets():
            if isinstance(target, GroupCoordinator):
                keys.add((CoordinatorType.GROUP, target.group_id))
            elif isinstance(target, TransactionCoordinator):
                keys.add((CoordinatorType.TRANSACTION, target.transactional_id))
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

    def _route(
        self, target: Target, lane: str, now: float
    ) -> tuple[int | None, str, BaseException | None]:
        """The node for ``target`` now, or None, why, and the error behind it
        (asking for what is missing)."""
        if isinstance(target, AnyNode):
            node = self.least_loaded_node(now=now, lane=lane)
            if node is not None:
                return node, "", None
            return (
                None,
                "every node is backing off after failures",
                self._health.latest_error(),
            )
        node = self._peek_route(target)
        if node is not None:
            if self.cluster.broker_metadata(node) is None:
                self.cluster.need_update = True
                return None, f"node {node} is not in the metadata", self._last_metadata_error
            return node, "", None
        # Unknown route: ask for what would make it known.
        if isinstance(target, PartitionLeader):
            if target.topic not in self._topics and not self._config.metadata_all_topics:
                self._topics.add(target.topic)
            self.cluster.need_update = True
            return (
                None,
                f"no known leader for {target.topic}-{target.partition}",
                self._last_metadata_error,
            )
        if isinstance(target, GroupCoordinator):
            self._coord_wanted.setdefault((CoordinatorType.GROUP, target.group_id), now)
            return None, f"no known coordinator for group {target.group_id!r}", None
        if isinstance(target, TransactionCoordinator):
            self._coord_wanted.setdefault(
                (CoordinatorType.TRANSACTION, target.transactional_id), now
            )
            return (
                None,
                f"no known coordinator for transactional id {target.transactional_id!r}",
                None,
            )
        self.cluster.need_update = True
        return None, "no known controller", self._last_metadata_error

    def _dispatch(self, now: float) -> None:
        """Write what can be written, merging groups by the age of their heads."""
        queue = self._queue
        if not queue:
            return
        auth_error = self._auth_error
        if auth_error is not None:
            # Nothing can be sent with credentials the cluster refused.
            for refused in queue.take_where(lambda _key: True):
                self._finish(refused, None, auth_error, now)
            return
        order = queue.keys_by_head()
        # (node, lane) -> why it cannot send, and the error behind that
        blocked: dict[tuple[int, str], tuple[str, BaseException | None]] = {}
        while order:
            _, key = heapq.heappop(order)
            target, lane = key
            pending = queue.head(key)
            if pending is None:
                continue
            if isinstance(target, PartitionLeader):
                failure = self.cluster.topic_failure(target.topic)
                if failure is not None:
                    # Not retriable (authorization, an unknown error code...):
                    # fail now rather than when the request's deadline passes.
                    for doomed in queue.take_where(_same_group(key)):
                        self._finish(doomed, None, failure, now)
                    continue
            elif isinstance(target, (GroupCoordinator, TransactionCoordinator)):
                refusal = self._coord_failures.pop(_coordinator_key(target), None)
                if refusal is not None:
                    for doomed in queue.take_where(_same_group(key)):
                        self._finish(doomed, None, refusal, now)
                    continue
            node, reason, cause = self._route(target, lane, now)
            if node is None:
                queue.set_reason(key, reason, cause)
                continue
            slot_key = (node, lane)
            blocker = blocked.get(slot_key)
            if blocker is not None:
                queue.set_reason(key, *blocker)
                continue
            slot = self._slot(node, lane)
            conn = slot.conn
            if conn is None or not conn.can_send:
                cause = None
                if conn is None:
                    self._connect(slot, now)
                    why = f"{self.describe_node(node)} is not connected"
                    cause = self.node_error(node)
                    if cause is not None:
                        why += f" (last error: {cause})"
                else:
                    why = f"{self.describe_node(node)} is {conn.state.value}" + (
                        " at its in-flight limit" if conn.ready else ""
                    )
                blocked[slot_key] = (why, cause)
                queue.set_reason(key, why, cause)
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
        except (NoCommonVersionError, LocalProtocolError) as exc:
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
            raise NoCommonVersionError(
                f"{_codec.api_name(api_key)}: the caller caps the version at v{cap}, below "
                f"the lowest version both sides accept (v{low}) on node {conn.node_id}"
            )
        return cap

    def _expire_waiting(self, now: float) -> None:
        for pending, reason, cause in self._queue.pop_expired(now):
            handle = pending.handle
            if cause is not None and str(cause) not in reason:
                reason = f"{reason} (last error: {cause})"
            error = KafkaTimeoutError(
                f"request #{handle.id} ({_codec.api_name(handle.api_key)}) "
                f"to {_describe(handle.target)} "
                f"not sent within {pending.timeout_s * 1000:.0f} ms: {reason}"
            )
            if cause is not None:
                error.__cause__ = cause
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
                blackout = self._blackout_until(slot.node_id)
                if slot.conn is None and blackout > now:
                    times.append(blackout)
        if not self._closed and self._metadata_pending is None:
            times.append(max(self.cluster.next_refresh_at(), now))
        for not_before in self._coord_wanted.values():
            if not_before > now:
                times.append(not_before)
        return min(times) if times else None

    def _emit_trace(self, name: str, **fields: object) -> None:
        for hook in self._traces:
            hook(name, fields)


def _reason(error: BaseException) -> str:
    """What went wrong, without the transport's own "connect to h:p failed" wrapper
    (the core names the broker itself; the wrapper stays in the cause chain)."""
    cause = error.__cause__
    if isinstance(error, KafkaConnectionError) and cause is not None and str(cause):
        return str(cause)
    return str(error) or type(error).__name__


def _address(broker: BrokerMetadata) -> str:
    host = f"[{broker.host}]" if ":" in broker.host else broker.host
    return f"{host}:{broker.port}"


def _coordinator_key(target: GroupCoordinator | TransactionCoordinator) -> tuple[int, str]:
    if isinstance(target, GroupCoordinator):
        return (CoordinatorType.GROUP, target.group_id)
    return (CoordinatorType.TRANSACTION, target.transactional_id)


def _coordinator_refusal(key_type: int, key: str, response: Any) -> BaseException | None:
    """A FindCoordinator error for ``key`` that retrying will not fix, or None."""
    code = ClusterMetadata.coordinator_error_code(key, response)
    cls = error_class(code) if code else None
    if cls is None or cls.retriable:
        return None
    what = "group" if key_type == CoordinatorType.GROUP else "transactional id"
    return cls(f"FindCoordinator for {what} {key!r} refused: error code {code}")


def _same_group(key: GroupKey) -> Callable[[GroupKey], bool]:
    return lambda other: other == key


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

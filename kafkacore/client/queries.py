"""The read-only half of the client core's facade (seed 004 ``KafkaClient`` queries).

:class:`ClientQueries` answers questions about the connections, the
negotiated versions and why no broker can be used, from the state of the
core's sub-machines (:mod:`kafkacore.client.pool`,
:mod:`kafkacore.client.refresh`, :mod:`kafkacore.client.dispatch`). It
changes nothing; :class:`~kafkacore.client.core.KafkaClientCore` derives
from it and adds the commands and the facts.
"""

from __future__ import annotations

from kafkacore.client import _codec
from kafkacore.client.config import ClientConfig
from kafkacore.client.connection import negotiate_version
from kafkacore.client.dispatch import Dispatcher
from kafkacore.client.metadata import ClusterMetadata
from kafkacore.client.metrics import ClientMetrics
from kafkacore.client.outputs import Outputs, TraceHook
from kafkacore.client.pool import DEFAULT_LANE, ConnectionPool, unreachable_within
from kafkacore.client.refresh import MetadataRefresh
from kafkacore.errors import (
    AuthenticationError,
    KafkaTimeoutError,
    LocalProtocolError,
    NoBrokersAvailable,
)

__all__ = ["ClientQueries"]


class ClientQueries:
    """Queries of :class:`~kafkacore.client.core.KafkaClientCore`; see the module docstring."""

    # Set by KafkaClientCore.__init__.
    cluster: ClusterMetadata
    _config: ClientConfig
    _topics: set[str]
    _out: Outputs
    _pool: ConnectionPool
    _refresh: MetadataRefresh
    _requests: Dispatcher
    _auth_error: AuthenticationError | None

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
        return self._out.counters.snapshot()

    def add_trace(self, hook: TraceHook) -> None:
        """Call ``hook(name, fields)`` at every notable point (see ``docs/client.md``).

        Transports attach their logging here. A hook runs synchronously
        inside the core's step: it must be quick and must not call the core.
        """
        if not callable(hook):
            raise LocalProtocolError(f"add_trace: {hook!r} is not callable")
        self._out.traces = (*self._out.traces, hook)

    @property
    def trace_hooks(self) -> tuple[TraceHook, ...]:
        """The hooks called at every trace point, in the order they were added."""
        return self._out.traces

    def remove_trace(self, hook: TraceHook) -> None:
        if hook not in self._out.traces:
            raise LocalProtocolError("remove_trace: that hook was never added")
        self._out.traces = tuple(h for h in self._out.traces if h is not hook)

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
        return self._pool.health.last_error(node_id)

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
        return self._pool.unavailable(bootstrapping=self._refresh.bootstrapping)

    def unreachable_from_the_start(self) -> NoBrokersAvailable | None:
        """NoBrokersAvailable while this client never reached any broker and every
        bootstrap server failed its last attempt (None once a broker answered,
        after an authentication failure, or while an address is still untried).

        It says what is, not that waiting is useless: the core keeps retrying
        refused connections with the reconnect backoff (exponential with
        jitter) for as long as anything waits, because a cluster started a
        moment after its clients (a compose file, a test fixture) comes up
        soon (issue 26). Each caller waits for its own bound (``max_block_ms``,
        a poll's or a call's timeout, ``request_timeout_ms``) and, when that
        passes with this set, reports it (:func:`unreachable_within`) instead
        of a bare timeout. A refused login or certificate is not absence: it
        stops the client at once (:attr:`authentication_error`).
        """
        if self._auth_error is not None:
            return None
        return self._pool.never_reached()

    def bound_passed(self, what: str) -> BaseException:
        """The error of a caller that waited for the cluster until its bound
        (``what`` names the call and the bound): NoBrokersAvailable when the
        cluster was never reached, else a KafkaTimeoutError naming why no broker
        can be used, or the last failed refresh (``__cause__``: that error)."""
        unreachable = self.unreachable_from_the_start()
        if unreachable is not None:
            return unreachable_within(what, unreachable)
        cause = self.unavailable_cause() or self._refresh.last_error
        if cause is None:
            return KafkaTimeoutError(what)
        error = KafkaTimeoutError(f"{what}; last error: {type(cause).__name__}: {cause}")
        error.__cause__ = cause
        return error

    def describe_node(self, node_id: int) -> str:
        """How errors and logs name a node: 'broker 1 at host:port' or 'bootstrap server h:p'."""
        return self._pool.describe_node(node_id)

    def connected(self, node_id: int, *, lane: str = DEFAULT_LANE) -> bool:
        """True iff the node's connection on ``lane`` is READY."""
        conn = self._pool.conn(node_id, lane)
        return conn is not None and conn.ready

    def is_ready(
        self, node_id: int, *, now: float, lane: str = DEFAULT_LANE, metadata_priority: bool = True
    ) -> bool:
        """READY with room for a request, and (by default) no metadata refresh due."""
        conn = self._pool.conn(node_id, lane)
        if conn is None or not conn.can_send:
            return False
        return not (
            metadata_priority and (self._refresh.in_flight or self.cluster.ttl(now=now) == 0)
        )

    def is_disconnected(self, node_id: int, *, lane: str = DEFAULT_LANE) -> bool:
        """True iff the node is known and has no live connection on ``lane``."""
        return self._pool.is_disconnected(node_id, lane)

    def connection_delay(self, node_id: int, *, now: float, lane: str = DEFAULT_LANE) -> float:
        """Milliseconds before it is worth trying to send (seed 004 semantics)."""
        return self._pool.connection_delay(node_id, lane, now)

    def bootstrap_connected(self) -> bool:
        """True if a connection to a bootstrap address is READY."""
        return self._pool.bootstrap_connected()

    def in_flight_request_count(self, node_id: int | None = None) -> int:
        """Requests written and not yet answered, for one node or all."""
        return self._pool.in_flight_count(node_id)

    def queued_request_count(self) -> int:
        """Requests waiting for a route or a ready connection."""
        return self._requests.queue.user_count

    def get_api_versions(self, node_id: int | None = None) -> dict[int, tuple[int, int]] | None:
        """The broker's ApiVersions map ``{api_key: (min, max)}`` of a node (or the
        most recently negotiated one); remembered after the connection closes."""
        return self._pool.api_versions(node_id)

    def finalized_features(self, node_id: int | None = None) -> dict[str, int] | None:
        """Finalized feature levels ``{name: max_version_level}`` (KIP-584) a node
        (or the most recently negotiated one) reported in ApiVersions; None before any."""
        return self._pool.features(node_id)

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
        return self._pool.least_loaded(now, lane)

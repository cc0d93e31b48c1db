"""The client machine over all connections (seed 004 ``KafkaClient``, seed 000 ``Cluster``).

Theory of operation
-------------------
:class:`KafkaClientCore` implements :class:`~kafkacore.client.driver.Driven`.
It is a facade over small machines that share one
:class:`~kafkacore.client.outputs.Outputs` (actions, events, counters,
traces):

* :class:`~kafkacore.client.pool.ConnectionPool`: one
  :class:`~kafkacore.client.connection.BrokerConnection` per (node, lane)
  at a time, and every node's health (reconnect backoff, last error);
* :class:`~kafkacore.client.refresh.MetadataRefresh`: the
  :class:`~kafkacore.client.metadata.ClusterMetadata` refreshes, bootstrap
  and rebootstrap;
* :class:`~kafkacore.client.coordinators.CoordinatorLookups`: FindCoordinator;
* :class:`~kafkacore.client.dispatch.Dispatcher`: the requests from ``send``
  to their completion, and their routing;
* :mod:`~kafkacore.client.response_errors`: what the error codes in a
  response mean for the core (refresh metadata, forget a coordinator,
  rebootstrap).

Facts (``connection_made``, ``data_received``, ``handle_timeout``...) and,
on a bare core, commands (``send``, ``cancel``, ``add_topic``...) end in
one *step* (a stacked owner runs it: :meth:`KafkaClientCore.set_stacked`):

1. drain the connections touched since the last drain: bytes become
   ``WriteData`` actions, finished requests ``RequestCompleted`` events (or
   feed the core's own lookups), state changes ``ConnectionStateChanged``;
   a connection closed on an error puts its node in a reconnect backoff;
2. start a metadata refresh when one is due (age, on demand, after errors
   that invalidate metadata, never sooner than the metadata backoff) and
   coordinator lookups (FindCoordinator, batched at v4+, KIP-699);
3. dispatch waiting requests in order: resolve each target to a node,
   write it if that node's connection on the request's lane is READY and
   below the in-flight limit, else ask for a connection. A request never
   overtakes an earlier one for the same (node, lane).

Every request completes exactly once: with its response, or with
``KafkaTimeoutError`` (deadline), ``KafkaConnectionError`` (connection lost
or failed while in flight), ``RequestCancelled`` (``cancel``, ``close``,
``shutdown``), ``AuthenticationError``, ``NoCommonVersionError`` or
``NoBrokersAvailable`` (its timeout passed and no broker was ever reached;
until then refused connections are retried with the reconnect backoff).

Lanes (pykafka's connection ids) give one broker several connections (group
heartbeats on lane ``"group"`` never wait behind long fetches).

Backoff (KIP-144, KIP-580): every retry the core makes itself waits
exponentially longer, with +-20% jitter from the injected rng.

* Reconnects, per node (all lanes): every connection that closes on an
  error counts one failure of its node, which is not connected again for
  ``reconnect_backoff_ms * 2**(n-1)`` (capped at ``reconnect_backoff_max_ms``);
  the rules (READY does not clear the count, a long healthy connection
  restarts it) are :mod:`kafkacore.client.health`'s and docs/client.md's.
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

Closing (KIP-714 *Client termination*, :meth:`KafkaClientCore.begin_close`,
:meth:`KafkaClientCore.shutdown`): :mod:`kafkacore.client.closing`.

Rebootstrap (KIP-899, KIP-1102, ``metadata_recovery_strategy="rebootstrap"``):
a response carrying REBOOTSTRAP_REQUIRED, or no successful metadata for
``metadata_recovery_rebootstrap_trigger_ms`` while refreshes fail, makes the
core forget the known brokers and bootstrap again.

Nothing here logs (no I/O in the core): notable moments go to the trace
hooks (:meth:`KafkaClientCore.add_trace`), which transports turn into
``logging`` lines; the names and fields are listed in ``docs/client.md``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from kafkacore.client._waitqueue import Pending
from kafkacore.client.backoff import ExponentialBackoff
from kafkacore.client.closing import ClientClosing
from kafkacore.client.config import ClientConfig
from kafkacore.client.connection import BrokerConnection, Completion, ConnectionState
from kafkacore.client.coordinators import CoordinatorLookups, Lookup, coordinator_keys
from kafkacore.client.credentials_desk import CredentialsDesk
from kafkacore.client.dispatch import Dispatcher, check_request
from kafkacore.client.driver import Action, ConnId, WriteData
from kafkacore.client.events import (
    AuthenticationFailed,
    BootstrapFailed,
    ClientEvent,
    ConnectionStateChanged,
)
from kafkacore.client.handles import Answer, MetadataWaiter, OnAnswer, R, RequestHandle
from kafkacore.client.health import NodeHealthTable
from kafkacore.client.listener_hints import sasl_close_hint_for
from kafkacore.client.metadata import ClusterMetadata
from kafkacore.client.metrics import Counters
from kafkacore.client.outputs import Outputs, TraceHook
from kafkacore.client.pool import DEFAULT_LANE, ConnectionPool
from kafkacore.client.refresh import MetadataRefresh
from kafkacore.client.response_errors import classify
from kafkacore.client.routing import AnyNode, Target, default_target
from kafkacore.client.wakeups import (
    BLACKOUT,
    BOOTSTRAP,
    CLOSE,
    LOOKUP,
    QUEUE,
    REFRESH,
    STEP,
    TELEMETRY,
    Wakeups,
)
from kafkacore.errors import (
    AuthenticationError,
    KafkaConnectionError,
    LocalProtocolError,
    RequestCancelled,
)
from kafkacore.protocol.enums import ApiKey
from kafkacore.protocol.messages import FindCoordinatorRequest, MetadataRequest

if TYPE_CHECKING:
    from kafkacore.protocol._base import Request
    from kafkacore.protocol.messages import FindCoordinatorResponse, MetadataResponse

__all__ = ["DEFAULT_LANE", "KafkaClientCore", "TraceHook"]


class KafkaClientCore(ClientClosing):
    """Sans-IO Kafka network client; see the module docstring."""

    def __init__(
        self,
        config: ClientConfig | None = None,
        *,
        now: float,
        rng: random.Random,
        trace: TraceHook | None = None,
        stacked: bool = False,
        wall_offset: float = 0.0,
    ) -> None:
        """``stacked``: the owner's loop steps this core (:meth:`set_stacked`) from
        its first step on, so what it asks before (a subscription) rides on it.

        ``wall_offset``: Unix time minus the transport's clock (the ``now`` it
        passes), in seconds, measured by the transport: the core reads no wall
        clock, and KIP-714 telemetry dates its points ``now + wall_offset``
        (:meth:`set_wall_offset` sets it later, for a core built by a producer
        or a consumer)."""
        self._config = cfg = config if config is not None else ClientConfig()
        if not isinstance(rng, random.Random):
            raise LocalProtocolError("KafkaClientCore: rng must be a random.Random instance")
        self._rng = rng
        self._out = Outputs(Counters(cfg.metric_group_prefix), () if trace is None else (trace,))
        #: The driver contract's ``pull_actions()``: the one sink's list, handed
        #: over without a frame of ours (issue 11 counts each hop of a produce).
        self.pull_actions: Callable[[], list[Action]] = self._out.take_actions
        self._init_connections(cfg, rng)
        # Mutated in place only: the dispatcher adds the topics of leaders it needs.
        self._topics: set[str] = set()
        self._requests = Dispatcher(
            cfg,
            self.cluster,
            self._pool,
            self._coordinators,
            self._refresh,
            topics=self._topics,
            out=self._out,
        )
        self._auth_error: AuthenticationError | None = None
        # CredentialsNeeded request id -> the connection waiting for the answer.
        self._credentials = CredentialsDesk(self._out)
        #: Every reason to wake (docs/stacking.md section 5).
        self._deadlines = Wakeups()
        #: Driven by a stacked machine's loop: commands only queue (see ``stacked``).
        self._stacked = False
        self._heal_due = False
        self._init_closing(cfg, rng, now=now, wall_offset=wall_offset)
        if stacked:
            self._stacked = True
            self._deadlines.set(STEP, now)  # the first step, due at once
        else:
            self._step(now)

    def _init_connections(self, cfg: ClientConfig, rng: random.Random) -> None:
        """The cluster view and the machines that reach it: connections, refreshes, lookups."""
        self.cluster = ClusterMetadata(
            retry_backoff_ms=cfg.retry_backoff_ms,
            retry_backoff_max_ms=cfg.retry_backoff_max_ms,
            rng=rng,
            metadata_max_age_ms=cfg.metadata_max_age_ms,
            bootstrap_servers=list(
                f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in cfg.bootstrap_addresses
            ),
        )
        # A connection READY for reconnect_backoff_max_ms before it fails
        # restarts its node's count (see kafkacore.client.health).
        health = NodeHealthTable(
            ExponentialBackoff(cfg.reconnect_backoff_ms, cfg.reconnect_backoff_max_ms),
            rng=rng,
            stable_s=cfg.reconnect_backoff_max_ms / 1000,
        )
        self._pool = ConnectionPool(cfg, self.cluster, health, rng=rng, out=self._out)
        self._refresh = MetadataRefresh(self.cluster, cfg, self._out)
        self._coordinators = CoordinatorLookups(
            self.cluster,
            ExponentialBackoff(cfg.retry_backoff_ms, cfg.retry_backoff_max_ms),
            rng=rng,
            out=self._out,
        )

    # ------------------------------------------------------------ the owner's loop
    def set_stacked(self) -> None:
        """A stacked machine drives this core (docs/stacking.md §2): commands only
        queue and mark a step due, which the owner's loop runs (:meth:`step`);
        facts still step at once. A bare core steps after every command."""
        self._stacked = True

    @property
    def step_due(self) -> bool:
        """A command queued work that no step has looked at yet."""
        return self._deadlines.step_due

    def step(self, *, now: float) -> bool:
        """Run the step a command left due (the owner's loop calls it); False if none was."""
        if not self._deadlines.step_due or self._closed:
            return False
        self._step(now)
        return True

    def _commanded(self, now: float) -> None:
        if self._closed:
            return
        if self._stacked:  # due at once: handle_timeout steps us if the owner does not
            self._deadlines.set_earliest(STEP, now)
        else:
            self._step(now)

    def _write_alone(self, now: float) -> bool:
        """A bare send with nothing else waiting: write it and drain its connection,
        without the rest of a step (issue 12). False when a full step is needed
        (others queued, heal or auth failure pending, or it could not be written)."""
        queue = self._requests.queue
        if len(queue) != 1 or self._heal_due or self._auth_error is not None or self._closed:
            return False
        self._requests.dispatch(now)
        if queue:
            return False
        if self._pool.touched:
            self._drain_connections(now)
        self._deadlines.cancel(QUEUE)
        self._deadlines.cancel(BLACKOUT)
        return True

    def _metadata_wanted(self, now: float) -> None:
        """Stacked, a metadata command makes a step due only if a refresh may start
        now: asking while one waits (backoff, answer) must not keep a loop busy."""
        if not self._stacked or self._closed:
            self._commanded(now)
            return
        at = self._refresh.next_deadline(now)
        self._deadlines.arm(REFRESH, at)
        if at is not None and at <= now:
            self._deadlines.set_earliest(STEP, now)

    @property
    def _in_flight(self) -> dict[int, Pending]:
        """Requests written and not answered (tests look at it)."""
        return self._requests.in_flight

    # ----------------------------------------------------------------- commands
    def ready(
        self, node_id: int, *, now: float, lane: str = DEFAULT_LANE, metadata_priority: bool = True
    ) -> bool:
        """Like :meth:`is_ready`, and start connecting if disconnected (seed 004)."""
        self.maybe_connect(node_id, now=now, lane=lane)
        return self.is_ready(node_id, now=now, lane=lane, metadata_priority=metadata_priority)

    def send(
        self,
        request: Request[R],
        *,
        now: float,
        target: Target | None = None,
        lane: str = DEFAULT_LANE,
        timeout_ms: int | None = None,
        max_version: int | None = None,
        build: Callable[[int], Request[R]] | None = None,
    ) -> RequestHandle[R]:
        """Queue ``request`` (a generated request message) for ``target``.

        Without ``target`` the request goes where its API's routing kind says
        (:func:`~kafkacore.client.routing.default_target`): a group or
        transaction coordinator by the request's ``group_id`` or
        ``transactional_id``, the controller, or else any node.

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

        The handle is typed by the request's response: ``send(MetadataRequest())``
        is a ``RequestHandle[MetadataResponse]`` for a type checker.
        """
        self._check_open("send")
        api_key = check_request(request, target, lane, timeout_ms, max_version)
        if target is None:
            target = default_target(api_key, request)
        # Produce with acks=0 gets no response from the broker.
        expect = not (api_key == ApiKey.PRODUCE and getattr(request, "acks", -1) == 0)
        handle: RequestHandle[R] = self._requests.enqueue(
            request,
            api_key,
            target,
            lane,
            now,
            timeout_ms=timeout_ms,
            expect_response=expect,
            max_version=max_version,
            build=build,
            write_now=not (self._heal_due or self._auth_error is not None),
        )
        if handle.node_id is not None or handle.done:  # written (or refused) at once
            if self._stacked:
                self._commanded(now)  # the stacked loop's step drains the connection
            else:
                self._drain_connections(now)
        elif self._stacked or not self._write_alone(now):
            self._commanded(now)
        return handle

    def cancel(self, handle: RequestHandle[Any], *, now: float) -> bool:
        """Complete ``handle`` with RequestCancelled unless it is done already.

        A request already written cannot be unsent: its response, when it
        comes, is dropped. Returns False if the handle was already done.
        """
        if handle.done:
            return False
        pending = self._requests.take(handle)
        self._requests.finish(
            pending, None, RequestCancelled(f"request #{handle.id} cancelled"), now
        )
        self._commanded(now)
        return True

    def request_metadata_update(self, *, now: float) -> MetadataWaiter:
        """Refresh metadata soon; the waiter completes with the next update."""
        waiter = self.cluster.request_update()
        self._metadata_wanted(now)
        return waiter

    def wait_bootstrapped(self, *, now: float, timeout_ms: int | None = None) -> MetadataWaiter:
        """A waiter completed by the next metadata (``KafkaClient.connect()``), failed
        by an authentication failure, shutdown, or ``timeout_ms`` (default
        ``request_timeout_ms``) from now with :meth:`bound_passed`."""
        self._check_open("wait_bootstrapped")
        ms = self._config.request_timeout_ms if timeout_ms is None else timeout_ms
        if isinstance(ms, bool) or not isinstance(ms, int) or ms < 0:
            raise LocalProtocolError(f"wait_bootstrapped: timeout_ms {ms!r} must be an int >= 0")
        waiter = self.cluster.new_waiter()
        self._refresh.wait_bootstrapped(waiter, now + ms / 1000, ms)
        self.cluster.need_update = True
        self._metadata_wanted(now)
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
        self._metadata_wanted(now)
        return waiter

    def set_topics(self, topics: Iterable[str], *, now: float) -> MetadataWaiter:
        """Track exactly ``topics``; the waiter completes with the next update."""
        new = set(topics)
        for topic in new:
            if not isinstance(topic, str) or not topic:
                raise LocalProtocolError(f"set_topics: {topic!r} is not a topic name")
        grew = not new <= self._topics
        self._topics.clear()
        self._topics.update(new)
        waiter = self.cluster.request_update(new_topics=grew)
        self._metadata_wanted(now)
        return waiter

    def maybe_connect(self, node_id: int, *, now: float, lane: str = DEFAULT_LANE) -> bool:
        """Start connecting to ``node_id`` unless connected or backing off. True if started."""
        self._check_open("maybe_connect")
        if self.cluster.broker_metadata(node_id) is None:
            raise LocalProtocolError(f"maybe_connect: node {node_id} is not in the metadata")
        slot = self._pool.slot(node_id, lane)
        started = self._auth_error is None and self._pool.open(slot, now)
        self._commanded(now)
        return started

    def close(self, node_id: int | None = None, *, now: float, lane: str | None = None) -> None:
        """Close one node's connections (all lanes unless ``lane``), or all of them.

        Requests in flight on them complete with RequestCancelled. Requests
        still waiting stay queued and will reconnect.
        """
        for slot in list(self._pool.slots.values()):
            if node_id is not None and slot.node_id != node_id:
                continue
            if lane is not None and slot.lane != lane:
                continue
            if slot.conn is not None:
                self._close_conn(
                    slot.conn, RequestCancelled("connection closed by close()"), now, by_user=True
                )
        self._commanded(now)

    def credentials_ready(
        self,
        request_id: int,
        result: Any = None,
        *,
        error: BaseException | None = None,
        now: float,
    ) -> bool:
        """Answer a :class:`~kafkacore.client.events.CredentialsNeeded` event:
        ``result`` is what its ``call`` returned, or ``error`` what it raised.

        False (and nothing done) when the connection no longer waits for it:
        it closed, or its auth deadline passed.
        """
        conn_id = self._credentials.answered(request_id)
        conn = None if conn_id is None else self._pool.conns.get(conn_id)
        if conn is None:
            return False
        self._pool.touch(conn)
        conn.credentials_ready(result, error, now=now)
        self._step(now)
        return True

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise LocalProtocolError(f"{what}: the client core is shut down; make a new one")

    # -------------------------------------------------------------------- facts
    def connection_made(self, conn_id: ConnId, *, now: float) -> None:
        conn = self._pool.conns.get(conn_id)
        if conn is None:
            return  # we closed it meanwhile; the transport will see our CloseConnection
        self._pool.touch(conn)
        conn.connection_made(now=now)
        self._step(now)

    def connection_failed(self, conn_id: ConnId, error: BaseException, *, now: float) -> None:
        conn = self._pool.conns.get(conn_id)
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
        conn = self._pool.conns.get(conn_id)
        if conn is None:
            return
        self._out.counters.bytes_received += len(data)
        self._pool.touched.add(conn_id)  # (ConnectionPool.touch, inline on every read)
        conn.data_received(data, now=now)
        self._step(now)

    def connection_lost(self, conn_id: ConnId, error: BaseException | None, *, now: float) -> None:
        conn = self._pool.conns.get(conn_id)
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
                + ("" if error else sasl_close_hint_for(self._config, conn))
            )
        if error is not None:
            exc.__cause__ = error
        self._close_conn(conn, exc, now, reported=True)
        self._step(now)

    def handle_timeout(self, *, now: float) -> None:
        if self._closed:
            return
        until = self._closing_until
        if until is not None and until <= now:
            self._close_expired = True  # begin_close's timeout: stop waiting
        for conn in list(self._pool.conns.values()):
            at = conn.next_deadline()
            if at is not None and at <= now:
                self._pool.touch(conn)
                conn.handle_timeout(now=now)
        self._requests.expire(now)
        self._refresh.expire_waits(
            now, lambda ms: self.bound_passed(f"no cluster metadata within {ms} ms")
        )
        self._step(now)

    def next_deadline(self) -> float | None:
        return None if self._closed else self._deadlines.next()

    def pull_events(self) -> list[ClientEvent]:
        out = self._out
        events, out.events = out.events, []
        return events

    # ---------------------------------------------------------------- the step
    def _step(self, now: float) -> None:
        self._deadlines.cancel(STEP)
        pool = self._pool
        for _ in range(4):  # completions may enqueue work that writes more
            if pool.touched:  # (issue 12: a step looks only where something happened)
                self._drain_connections(now)
            if self._closed:
                break
            self._maybe_refresh_metadata(now)
            self._maybe_lookup_coordinators(now)
            self._maybe_send_telemetry(now)
            self._dispatch(now)
            if not pool.touched and not self._lookups_due(now):
                break
        if pool.touched:
            self._drain_connections(now)
        if self._heal_due:
            # After every completion of this step is drained, so that no
            # answered-but-undelivered response is on a connection we close.
            self._heal_due = False
            self._heal(now)
            self._drain_connections(now)
        self._update_deadlines(now)

    def _lookups_due(self, now: float) -> bool:
        # Dispatch may discover unknown routes; start their lookups in this step.
        return self._refresh.due(now) or self._coordinators.due(now)

    def _drain_connections(self, now: float) -> None:
        """Drain the connections touched since the last drain (issue 12: a step
        does not walk every connection), and update their deadlines."""
        out = self._out
        conns = self._pool.conns
        for conn_id in self._pool.take_touched():
            conn = conns.get(conn_id)
            if conn is None:
                self._deadlines.connection(conn_id, None)
                continue
            for data in conn.pull_writes():
                out.act(WriteData(conn_id=conn_id, data=data))
                out.counters.bytes_sent += len(data)
            completions = conn.completions
            if completions:
                conn.completions = []
                for completion in completions:
                    self._on_completion(completion, now)
            if conn.credentials_calls:
                for need in conn.pull_credentials():
                    self._credentials.ask(conn, need)
            for ms in conn.latencies_ms:
                out.counters.latency(ms)
            conn.latencies_ms.clear()
            if self._pool.changed(conn):
                self._on_state(conn, now)
            self._deadlines.connection(conn_id, conn.next_deadline() if conn_id in conns else None)

    def _on_state(self, conn: BrokerConnection, now: float) -> None:
        self._pool.note_state(conn)
        if conn.state is ConnectionState.READY and conn.node_id < 0:
            self._refresh.reset_bootstrap_failures()
        if conn.state is ConnectionState.CLOSED:
            self._on_closed(conn, now, reported=False)

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
            self._requests.cancel_in_flight(conn.node_id, conn.lane, now)
        self._pool.touch(conn)
        conn.close(error)
        for completion in conn.pull_completions():
            self._on_completion(completion, now)
        self._pool.note_closed(conn)
        self._on_closed(conn, now, reported=reported, by_user=by_user)

    def _on_closed(
        self, conn: BrokerConnection, now: float, *, reported: bool, by_user: bool = False
    ) -> None:
        if not self._pool.forget(conn, now, reported=reported, by_user=by_user):
            return
        self._credentials.forget(conn.conn_id)  # its answers, if any, are ignored
        error = conn.close_error
        if isinstance(error, AuthenticationError):
            self._out.counters.authentication_failures += 1
            self._authentication_failed(conn, error, now)
        elif error is not None and not by_user:
            # A broker that vanished may have taken leadership with it.
            self.cluster.need_update = True
            if conn.node_id < 0:
                # Reported, not fatal: whoever waits does so until its own
                # bound, while the reconnect backoff retries (issue 26).
                exhausted = self._refresh.bootstrap_failed(conn.node_id, error)
                if exhausted is not None:
                    self._out.trace("bootstrap_failed", error=exhausted)
                    self._out.emit(BootstrapFailed(error=exhausted))
        self._out.emit(
            ConnectionStateChanged(
                node_id=conn.node_id,
                lane=conn.lane,
                conn_id=conn.conn_id,
                state=ConnectionState.CLOSED,
                error=error,
            )
        )

    def _authentication_failed(
        self, conn: BrokerConnection, error: AuthenticationError, now: float
    ) -> None:
        """Stop the client: the same credentials would be refused again."""
        if self._auth_error is None:
            self._auth_error = error
            self._out.trace(
                "authentication_failed", node_id=conn.node_id, peer=conn.peer, error=error
            )
            self._out.emit(AuthenticationFailed(node_id=conn.node_id, error=error))
        self._refresh.reset_bootstrap_failures()
        self._coordinators.clear()
        self._requests.fail_queued(error, now)
        self._refresh.fail_waiters(error, now)

    # ------------------------------------------------------------- completions
    def _on_completion(self, completion: Completion, now: float) -> None:
        handle = completion.handle
        pending = self._requests.in_flight.pop(handle.id, None)
        if pending is None or handle.done:
            return  # cancelled while in flight: the late response is dropped
        response = completion.response
        if completion.error is None:
            self._out.counters.responses_received += 1
            # What the response's error codes ask of the client (internal
            # requests read their own); inline: every response passes here.
            verdict = None if pending.on_done is not None else classify(response, handle.node_id)
            if verdict is not None:
                if verdict.rebootstrap and self._refresh.may_rebootstrap:
                    who = "a broker" if (n := handle.node_id) is None else self.describe_node(n)
                    self._refresh.rebootstrap(f"{who} answered REBOOTSTRAP_REQUIRED", now)
                if verdict.refresh_metadata:
                    self.cluster.need_update = True
                if verdict.coordinator_moved:
                    self._coordinators.coordinator_moved(handle.target)
        self._requests.finish(pending, response, completion.error, now)

    # ---------------------------------------------------- metadata, coordinators
    def _maybe_refresh_metadata(self, now: float) -> None:
        if self._refresh.in_flight or self._closed:
            return
        if self._auth_error is not None:
            # Asked for after the client stopped.
            self._refresh.fail_waiters(self._auth_error, now)
            return
        if self.cluster.ttl(now=now) > 0:
            return
        build = self._refresh.start(now, self._topics)
        box: list[RequestHandle[MetadataResponse]] = []

        def done(answer: Answer[MetadataResponse], t: float) -> None:
            source = self._pool.describe_source(box[0].node_id, answer)
            node_id = box[0].node_id
            if self._refresh.finished(source, answer, t, self._topics, node_id):
                self._heal_due = True

        box.append(
            self._requests.enqueue(
                MetadataRequest(),  # names the API; build makes the message
                ApiKey.METADATA,
                AnyNode(),
                DEFAULT_LANE,
                now,
                build=build,
                on_done=done,
                front=True,
            )
        )

    def _heal(self, now: float) -> None:
        """Seed 000 ``heal``: drop idle connections to nodes that left the cluster."""
        for slot in self._pool.strays():
            conn = slot.conn
            if conn is not None and conn.idle and not conn.has_pending_output:
                self._close_conn(conn, None, now, by_user=True)
        self._pool.drop_strays()

    def _maybe_lookup_coordinators(self, now: float) -> None:
        if self._closed:
            return
        for lookup in self._coordinators.start(now):
            box: list[RequestHandle[FindCoordinatorResponse]] = []
            box.append(
                self._requests.enqueue(
                    FindCoordinatorRequest(),  # names the API; build makes the message
                    ApiKey.FIND_COORDINATOR,
                    AnyNode(),
                    DEFAULT_LANE,
                    now,
                    build=lookup.build,
                    on_done=self._lookup_done(lookup, box),
                )
            )

    def _lookup_done(
        self, lookup: Lookup, box: list[RequestHandle[FindCoordinatorResponse]]
    ) -> OnAnswer[FindCoordinatorResponse]:
        def done(answer: Answer[FindCoordinatorResponse], now: float) -> None:
            needed = coordinator_keys(self._requests.queue.targets())
            node_id = box[0].node_id
            self._coordinators.finished(lookup, answer, now, needed=needed, node_id=node_id)

        return done

    # ----------------------------------------------------------------- dispatch
    def _dispatch(self, now: float) -> None:
        if not self._requests.queue:
            return
        if self._auth_error is not None:
            # Nothing can be sent with credentials the cluster refused.
            self._requests.fail_queued(self._auth_error, now)
            return
        self._requests.dispatch(now)

    def _update_deadlines(self, now: float) -> None:
        """The core-wide deadlines (the connections' are kept by the drain)."""
        deadlines = self._deadlines
        queued = self._requests.queue.next_deadline()
        deadlines.arm(QUEUE, queued)
        # A request waits for a node that backs off: wake when it may connect.
        deadlines.arm(BLACKOUT, None if queued is None else self._pool.earliest_blackout(now))
        closed = self._closed
        deadlines.arm(REFRESH, None if closed else self._refresh.next_deadline(now))
        deadlines.arm(LOOKUP, self._coordinators.next_deadline(now))
        telemetry = None if closed else self.telemetry
        deadlines.arm(TELEMETRY, None if telemetry is None else telemetry.next_deadline())
        deadlines.arm(CLOSE, None if self.closing_done else self._closing_until)
        deadlines.arm(BOOTSTRAP, self._refresh.waits_deadline())


def _reason(error: BaseException) -> str:
    """What went wrong, without the transport's own "connect to h:p failed" wrapper
    (the core names the broker itself; the wrapper stays in the cause chain)."""
    cause = error.__cause__
    if isinstance(error, KafkaConnectionError) and cause is not None and str(cause):
        return str(cause)
    return str(error) or type(error).__name__

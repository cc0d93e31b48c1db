"""Hypothesis drives random interleavings of connect, fail, data, timer, close and
cancel across several nodes and lanes, and checks the core's invariants:

* every request completes exactly once (one RequestCompleted per handle, and all
  complete once the world calms down);
* in-flight requests per connection never exceed the limit;
* correlation ids are never reused while in flight on a connection;
* reconnect backoff stays within its bounds;
* nothing but ApiVersions/SASL is written to a connection before its handshake
  replies were delivered (no request to a node that is not ready), including
  during SASL re-authentication (KIP-368).
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from kafkacore.client import (
    AnyNode,
    ClientConfig,
    GroupCoordinator,
    KafkaClientCore,
    Node,
    PartitionLeader,
    RequestCompleted,
)
from kafkacore.client.backoff import ExponentialBackoff
from kafkacore.client.driver import CloseConnection, OpenConnection, WriteData
from kafkacore.protocol import framing
from kafkacore.protocol import messages as m
from tests.client.fakebroker import Topic, make_cluster, parse_request

HANDSHAKE_APIS = (17, 18, 36)
MAX_IN_FLIGHT = 2


class World:
    """A hand-driven transport: nothing happens unless an operation says so."""

    def __init__(self, *, sasl: bool, seed: int, session_ms: int = 0) -> None:
        self.cluster, fakes = make_cluster(3, [Topic("t", 3, {0: 0, 1: 1, 2: 2})])
        self.cluster.coordinators[(0, "g")] = 1
        self.fakes = fakes
        for broker in fakes.values():
            broker.require_auth = sasl
            broker.session_lifetime_ms = session_ms
        extra: dict[str, Any] = {}
        if sasl:
            extra = dict(
                security_protocol="SASL_PLAINTEXT",
                sasl_mechanism="PLAIN",
                sasl_plain_username="alice",
                sasl_plain_password="alice-secret",
            )
        self.config = ClientConfig(
            bootstrap_servers="127.0.0.1:9092,127.0.0.1:9093",
            max_in_flight_requests_per_connection=MAX_IN_FLIGHT,
            request_timeout_ms=2000,
            socket_connection_setup_timeout_ms=1000,
            connections_max_idle_ms=5000,
            metadata_max_age_ms=3000,
            reconnect_backoff_ms=50,
            reconnect_backoff_max_ms=400,
            **extra,
        )
        self.backoff = ExponentialBackoff(50, 400)
        self.now = 0.0
        self.core = KafkaClientCore(self.config, now=self.now, rng=random.Random(seed))
        self.pending_opens: list[OpenConnection] = []
        self.conns: dict[int, dict[str, Any]] = {}
        self.handles: list[Any] = []
        self.completions: dict[int, int] = {}
        self.reauths = 0
        self.drain()

    # -- plumbing ---------------------------------------------------------------
    def drain(self) -> None:
        for action in self.core.pull_actions():
            if isinstance(action, OpenConnection):
                self.pending_opens.append(action)
            elif isinstance(action, WriteData):
                self.on_write(action.conn_id, bytes(action.data))
            elif isinstance(action, CloseConnection):
                self.conns.pop(action.conn_id, None)
                self.pending_opens = [o for o in self.pending_opens if o.conn_id != action.conn_id]
        for ev in self.core.pull_events():
            if isinstance(ev, RequestCompleted):
                hid = ev.handle.id
                self.completions[hid] = self.completions.get(hid, 0) + 1
                assert self.completions[hid] == 1, f"request #{hid} completed twice"
        self.check()

    def on_write(self, conn_id: int, data: bytes) -> None:
        conn = self.conns.get(conn_id)
        assert conn is not None, f"core wrote to conn {conn_id}, which is not open"
        for frame in conn["reader"].feed(data):
            api_key = parse_request(frame)[0]
            if api_key == 17:
                conn["handshakes"] += 1
                self.reauths += conn["handshakes"] > 1
            if api_key not in HANDSHAKE_APIS:
                assert conn["delivered"] >= conn["handshake_end"] and conn["handshake_done"], (
                    f"API {api_key} written to conn {conn_id} before its handshake finished"
                )
            reply = conn["broker"].respond(frame, conn["session"])
            if reply is not None:
                conn["out"].extend(reply)
                if api_key in HANDSHAKE_APIS:
                    conn["handshake_end"] = conn["sent"] + len(conn["out"])
                    # ApiVersions ends the handshake without SASL; SASL ends it
                    # with the authenticate reply that authenticates.
                    conn["handshake_done"] = (api_key == 18 and not self.config.sasl) or conn[
                        "session"
                    ].get("authenticated", False)

    def check(self) -> None:
        core = self.core
        for slot in core._pool.slots.values():
            conn = slot.conn
            if conn is None:
                continue
            ids = conn.in_flight_correlation_ids
            assert len(ids) <= MAX_IN_FLIGHT, f"{len(ids)} in flight on conn {conn.conn_id}"
            assert len(set(ids)) == len(ids), f"correlation ids reused: {ids}"
        for node_id, health in core._pool.health:
            if health.failures:
                _, high = self.backoff.bounds_ms(health.failures)
                assert health.blackout_until - self.now <= high / 1000 + 1e-9, node_id

    def blackout(self, key: tuple[int, str] | None) -> float | None:
        """When the backoff of ``key``'s node ends (None: no record of it)."""
        slot = self.core._pool.slots.get(key) if key is not None else None
        health = self.core._pool.health.get(slot.node_id) if slot is not None else None
        return None if health is None else health.blackout_until

    def check_backoff_after_failure(
        self, key: tuple[int, str] | None, before: float | None
    ) -> None:
        """The slot that just failed backs off within the bounds of its failure
        count; ``before`` is its node's blackout end before the failure."""
        slot = self.core._pool.slots.get(key) if key is not None else None
        if slot is None or slot.conn is not None:
            return
        health = self.core._pool.health.get(slot.node_id)
        if health is None or not health.failures:
            return
        delay = self.core.connection_delay(slot.node_id, now=self.now, lane=slot.lane)
        if before is not None and before > self.now:
            # Another lane of the node failed first and its backoff still runs:
            # the same incident, and the backoff drawn then is kept.
            assert health.blackout_until == before, (health, before)
            return
        low, high = self.backoff.bounds_ms(health.failures)
        assert low - 1e-6 <= delay <= high + 1e-6, (health.failures, delay)

    def slot_of(self, conn_id: int) -> tuple[int, str] | None:
        conn = self.core._pool.conns.get(conn_id)
        return None if conn is None else (conn.node_id, conn.lane)

    # -- operations ---------------------------------------------------------------
    def send(self, kind: int, node: int, lane: str) -> None:
        target: Any = [
            AnyNode(),
            Node(node),
            PartitionLeader("t", node),
            GroupCoordinator("g"),
        ][kind]
        try:
            h = self.core.send(m.MetadataRequest(topics=[]), target=target, lane=lane, now=self.now)
        except Exception as exc:  # only the queue bound may refuse
            raise AssertionError(f"send refused: {exc}") from exc
        self.handles.append(h)
        self.drain()

    def accept(self, index: int, refuse: bool) -> None:
        if not self.pending_opens:
            return
        action = self.pending_opens.pop(index % len(self.pending_opens))
        broker = self.fakes.get((action.host, action.port))
        if refuse or broker is None:
            key = self.slot_of(action.conn_id)
            before = self.blackout(key)
            self.core.connection_failed(action.conn_id, ConnectionRefusedError(), now=self.now)
            self.drain()
            self.check_backoff_after_failure(key, before)
            return
        self.conns[action.conn_id] = {
            "broker": broker,
            "reader": framing.FrameReader(),
            "session": {},
            "out": bytearray(),
            "sent": 0,
            "delivered": 0,
            "handshake_end": 0,
            "handshake_done": False,
            "handshakes": 0,
        }
        self.core.connection_made(action.conn_id, now=self.now)
        self.drain()

    def deliver(self, index: int, size: int) -> None:
        ready = sorted(cid for cid, c in self.conns.items() if c["out"])
        if not ready:
            return
        cid = ready[index % len(ready)]
        conn = self.conns[cid]
        piece = bytes(conn["out"][:size])
        del conn["out"][:size]
        conn["sent"] += len(piece)
        conn["delivered"] += len(piece)
        self.core.data_received(cid, piece, now=self.now)
        self.drain()

    def lose(self, index: int) -> None:
        if not self.conns:
            return
        cid = sorted(self.conns)[index % len(self.conns)]
        del self.conns[cid]
        key = self.slot_of(cid)
        before = self.blackout(key)
        self.core.connection_lost(cid, ConnectionResetError(), now=self.now)
        self.drain()
        self.check_backoff_after_failure(key, before)

    def timer(self) -> None:
        deadline = self.core.next_deadline()
        if deadline is None:
            return
        self.now = max(self.now, deadline)
        self.core.handle_timeout(now=self.now)
        self.drain()

    def advance(self, ms: int) -> None:
        self.now += ms / 1000
        self.core.handle_timeout(now=self.now)
        self.drain()

    def cancel(self, index: int) -> None:
        if self.handles:
            self.core.cancel(self.handles[index % len(self.handles)], now=self.now)
            self.drain()

    def close(self, node: int) -> None:
        self.core.close(node, now=self.now)
        self.drain()

    def let_time_pass(self, timers: int) -> None:
        """A well-behaved network while the clock runs (refreshes, idle closes,
        re-authentication)."""
        for _ in range(timers):
            self.timer()
            for _ in range(200):
                if self.pending_opens:
                    self.accept(0, refuse=False)
                elif any(c["out"] for c in self.conns.values()):
                    self.deliver(0, 1 << 20)
                else:
                    break

    def settle(self) -> None:
        """Let the world behave: accept, deliver and jump time until all are done."""
        for _ in range(2000):
            if all(h.done for h in self.handles):
                return
            if self.pending_opens:
                self.accept(0, refuse=False)
            elif any(c["out"] for c in self.conns.values()):
                self.deliver(0, 1 << 20)
            else:
                self.timer()
        raise AssertionError("requests still pending after settling")


OPS = st.one_of(
    st.tuples(st.just("send"), st.integers(0, 3), st.integers(0, 2), st.sampled_from(["a", "b"])),
    st.tuples(st.just("accept"), st.integers(0, 7), st.booleans()),
    st.tuples(st.just("deliver"), st.integers(0, 7), st.sampled_from([1, 2, 3, 7, 50, 4096])),
    st.tuples(st.just("lose"), st.integers(0, 7)),
    st.tuples(st.just("timer")),
    st.tuples(st.just("advance"), st.integers(1, 800)),
    st.tuples(st.just("cancel"), st.integers(0, 30)),
    st.tuples(st.just("close"), st.integers(-2, 2)),
)


@settings(max_examples=150, deadline=None)
@given(
    ops=st.lists(OPS, min_size=1, max_size=60),
    sasl=st.booleans(),
    session_ms=st.sampled_from([0, 0, 1500, 4000]),
    seed=st.integers(0, 2**16),
)
def test_random_interleavings_keep_invariants(
    ops: list[tuple[Any, ...]], sasl: bool, session_ms: int, seed: int
) -> None:
    world = World(sasl=sasl, seed=seed, session_ms=session_ms if sasl else 0)
    for op in ops:
        name, *args = op
        getattr(world, name)(*args)
    world.settle()
    world.let_time_pass(12)
    assert all(h.done for h in world.handles)
    event(f"answered: {sum(1 for h in world.handles if h.error is None) > 0}")
    event(f"failed: {sum(1 for h in world.handles if h.error is not None) > 0}")
    event(f"re-authenticated: {world.reauths > 0}")
    for h in world.handles:
        assert world.completions.get(h.id) == 1, (
            f"request #{h.id} completed {world.completions.get(h.id, 0)} times"
        )

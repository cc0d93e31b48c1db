"""A scripted broker and a pump for driving KafkaClientCore without sockets.

The broker decodes each request frame with the generated codec and answers
with a handler per API key (overridable per test), encoding the response at
the request's version. The pump moves bytes between the core and the
brokers, in chunks of a chosen size, with a bounded number of rounds, and
jumps time to ``next_deadline()`` when nothing else can happen.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkacore.client.core import KafkaClientCore
from kafkacore.client.driver import CloseConnection, OpenConnection, WriteData
from kafkacore.protocol import framing
from kafkacore.protocol import messages as m
from kafkacore.protocol.api import APIS
from kafkacore.protocol.enums import ApiKey
from kafkacore.protocol.messages.api_versions_response import ApiVersion
from kafkacore.protocol.messages.find_coordinator_response import Coordinator
from kafkacore.protocol.messages.metadata_response import (
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from tests.client.scram_server import ScramServer

#: GetTelemetrySubscriptions and PushTelemetry: offered only with a plugin.
TELEMETRY_APIS = frozenset({ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY})

Handler = Callable[["FakeBroker", Any, int, dict[str, Any]], Any]


def parse_request(frame: bytes) -> tuple[int, int, int, str | None, Any]:
    header, body = framing.decode_request(frame)
    return (
        header.request_api_key,
        header.request_api_version,
        header.correlation_id,
        header.client_id,
        body,
    )


def encode_response(api_key: int, version: int, corr: int, response: Any) -> bytes:
    return framing.encode_response(response, version=version, correlation_id=corr)


@dataclass
class Topic:
    name: str
    partitions: int = 1
    leaders: dict[int, int] = field(default_factory=dict)  # partition -> leader id
    epoch: int = 0
    #: A topic-level error code to answer Metadata with instead of partitions.
    error_code: int = 0


class Cluster:
    """What the fake brokers answer Metadata and FindCoordinator with."""

    def __init__(self, brokers: dict[int, tuple[str, int]], topics: list[Topic] | None = None):
        self.brokers = brokers
        self.topics = {t.name: t for t in topics or []}
        self.controller_id = min(brokers)
        self.cluster_id = "fake-cluster"
        #: Metadata's top-level error code (v13+, e.g. REBOOTSTRAP_REQUIRED, KIP-1102).
        self.error_code = 0
        self.coordinators: dict[tuple[int, str], int] = {}
        # Like a Kafka broker without a client-telemetry plugin, the fake does
        # not offer KIP-714's APIs (tests/telemetry adds them where it wants them).
        self.api_ranges: dict[int, tuple[int, int]] = {
            key: (info.min_version, info.max_version)
            for key, info in APIS.items()
            if key not in TELEMETRY_APIS
        }

    def metadata(self, request: Any) -> Any:
        names = list(self.topics) if request.topics is None else [t.name for t in request.topics]
        topics = []
        for name in names:
            t = self.topics.get(name)
            if t is None or t.error_code:
                code = 3 if t is None else t.error_code
                topics.append(MetadataResponseTopic(error_code=code, name=name))
                continue
            parts = [
                MetadataResponsePartition(
                    partition_index=p,
                    leader_id=t.leaders.get(p, min(self.brokers)),
                    leader_epoch=t.epoch,
                    replica_nodes=[t.leaders.get(p, min(self.brokers))],
                    isr_nodes=[t.leaders.get(p, min(self.brokers))],
                )
                for p in range(t.partitions)
            ]
            topics.append(MetadataResponseTopic(name=name, partitions=parts))
        return m.MetadataResponse(
            brokers=[
                MetadataResponseBroker(node_id=n, host=h, port=p)
                for n, (h, p) in sorted(self.brokers.items())
            ],
            cluster_id=self.cluster_id,
            controller_id=self.controller_id,
            topics=topics,
            error_code=self.error_code,
        )


class FakeBroker:
    """One broker process: answers frames on each of its connections."""

    def __init__(self, node_id: int, cluster: Cluster) -> None:
        self.node_id = node_id
        self.cluster = cluster
        self.handlers: dict[int, Handler] = {}
        self.received: list[tuple[int, int, Any]] = []  # (api_key, version, body)
        self.hold: bool = False  # when True, replies wait in Pump.held until released
        self.client_ids: set[str | None] = set()
        #: SASL: mechanisms offered and the user accepted; set require_auth to enforce.
        self.require_auth = False
        self.sasl_mechanisms = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
        self.sasl_user: tuple[str, str] = ("alice", "alice-secret")
        self.oauth_token = "good-token"
        #: SaslAuthenticate's SessionLifetimeMs (KIP-368); 0 = no re-authentication.
        self.session_lifetime_ms = 0
        #: Bytes written right after every reply to an API key (garbage behind
        #: a valid response, as a broken broker or proxy might send).
        self.after_reply: dict[int, bytes] = {}

    def respond(self, frame: bytes, session: dict[str, Any]) -> bytes | None:
        api_key, version, corr, client_id, body = parse_request(frame)
        self.received.append((api_key, version, body))
        self.client_ids.add(client_id)
        if self.require_auth and not session.get("authenticated") and api_key not in (17, 18, 36):
            raise AssertionError(f"fake broker {self.node_id}: API {api_key} before SASL finished")
        if api_key != 18 and "api_versions" not in session:
            raise AssertionError(f"fake broker {self.node_id}: API {api_key} before ApiVersions")
        handler = self.handlers.get(api_key) or DEFAULT_HANDLERS.get(api_key)
        if handler is None:
            raise AssertionError(f"fake broker {self.node_id}: no handler for API {api_key}")
        if api_key == 18:
            session["api_versions"] = version
        response = handler(self, body, version, session)
        if response is None:
            return None
        if isinstance(response, tuple):  # (response, version to encode it at)
            response, version = response
        return encode_response(api_key, version, corr, response) + self.after_reply.get(
            api_key, b""
        )


def _api_versions(broker: FakeBroker, body: Any, version: int, session: dict[str, Any]) -> Any:
    return m.ApiVersionsResponse(
        api_keys=[
            ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(broker.cluster.api_ranges.items())
        ]
    )


def _metadata(broker: FakeBroker, body: Any, version: int, session: dict[str, Any]) -> Any:
    return broker.cluster.metadata(body)


def _find_coordinator(broker: FakeBroker, body: Any, version: int, session: dict[str, Any]) -> Any:
    cluster = broker.cluster

    def one(key: str) -> tuple[int, str, int]:
        node = cluster.coordinators.get((body.key_type, key), min(cluster.brokers))
        host, port = cluster.brokers[node]
        return node, host, port

    if version >= 4:
        coords = []
        for key in body.coordinator_keys:
            node, host, port = one(key)
            coords.append(Coordinator(key=key, node_id=node, host=host, port=port))
        return m.FindCoordinatorResponse(coordinators=coords)
    node, host, port = one(body.key)
    return m.FindCoordinatorResponse(node_id=node, host=host, port=port)


def _produce(broker: FakeBroker, body: Any, version: int, session: dict[str, Any]) -> Any:
    if body.acks == 0:
        return None
    return m.ProduceResponse()


def _sasl_handshake(broker: FakeBroker, body: Any, version: int, session: dict[str, Any]) -> Any:
    if body.mechanism not in broker.sasl_mechanisms:
        return m.SaslHandshakeResponse(error_code=33, mechanisms=list(broker.sasl_mechanisms))
    session["mechanism"] = body.mechanism
    session.pop("scram", None)  # a new exchange (also on re-authentication)
    # KIP-368: nothing but SASL may arrive until re-authentication completes.
    session["authenticated"] = False
    return m.SaslHandshakeResponse(mechanisms=list(broker.sasl_mechanisms))


def _sasl_authenticate(broker: FakeBroker, body: Any, version: int, session: dict[str, Any]) -> Any:
    mech = session.get("mechanism")
    token = bytes(body.auth_bytes)
    user, password = broker.sasl_user
    fail = m.SaslAuthenticateResponse(error_code=58, error_message="Authentication failed")
    if mech == "PLAIN":
        if token != b"\x00" + user.encode() + b"\x00" + password.encode():
            return fail
        session["authenticated"] = True
        return m.SaslAuthenticateResponse(
            auth_bytes=b"", session_lifetime_ms=broker.session_lifetime_ms
        )
    if mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        server = session.get("scram")
        if server is None:
            hash_name = "sha256" if mech.endswith("256") else "sha512"
            server = session["scram"] = ScramServer(hash_name, user, password)
            return m.SaslAuthenticateResponse(auth_bytes=server.first(token))
        reply = server.final(token)
        if not server.authenticated:
            return fail
        session["authenticated"] = True
        return m.SaslAuthenticateResponse(
            auth_bytes=reply, session_lifetime_ms=broker.session_lifetime_ms
        )
    if mech == "OAUTHBEARER":
        if token == b"\x01":
            return fail
        if token == f"n,,\x01auth=Bearer {broker.oauth_token}\x01\x01".encode():
            session["authenticated"] = True
            return m.SaslAuthenticateResponse(auth_bytes=b"")
        return m.SaslAuthenticateResponse(auth_bytes=b'{"status":"invalid_token"}')
    raise AssertionError(f"SaslAuthenticate without handshake (mechanism {mech})")


DEFAULT_HANDLERS: dict[int, Handler] = {
    17: _sasl_handshake,
    36: _sasl_authenticate,
    18: _api_versions,
    3: _metadata,
    10: _find_coordinator,
    0: _produce,
}


class Pump:
    """Moves bytes between a core and fake brokers; see the module docstring."""

    def __init__(
        self,
        core: KafkaClientCore,
        brokers: dict[tuple[str, int], FakeBroker],
        *,
        now: float = 0.0,
        chunk: int | None = None,
        rng: random.Random | None = None,
        refuse: set[tuple[str, int]] | None = None,
    ) -> None:
        self.core = core
        self.brokers = brokers
        self.now = now
        self.chunk = chunk
        self.rng = rng
        self.refuse = refuse if refuse is not None else set()
        self.conns: dict[int, tuple[FakeBroker, framing.FrameReader]] = {}
        self.sessions: dict[int, dict[str, Any]] = {}
        self.to_client: dict[int, bytearray] = {}
        self.pending_open: list[OpenConnection] = []
        self.events: list[object] = []
        self.opened: list[OpenConnection] = []
        self.closed: list[int] = []
        self.writes: list[tuple[int, bytes]] = []
        self.held: list[tuple[int, bytes]] = []
        #: Addresses whose connects never finish (neither made nor failed).
        self.stall: set[tuple[str, int]] = set()

    def release(self) -> None:
        """Deliver every held reply (to connections still open)."""
        held, self.held = self.held, []
        for conn_id, reply in held:
            if conn_id in self.conns:
                self.to_client.setdefault(conn_id, bytearray()).extend(reply)

    def lose_cluster(self) -> None:
        """Every broker goes away: open connections are lost, new connects refused."""
        self.refuse = set(self.brokers)
        for conn_id in list(self.conns):
            del self.conns[conn_id]
            self.to_client.pop(conn_id, None)
            self.core.connection_lost(conn_id, ConnectionResetError("reset"), now=self.now)
            self.drain()

    def inject(self, conn_id: int, data: bytes) -> None:
        """Queue raw bytes from the broker side of ``conn_id``."""
        self.to_client.setdefault(conn_id, bytearray()).extend(data)

    def _chunks(self, data: bytes) -> list[bytes]:
        if self.chunk is None:
            return [data]
        size = self.chunk
        out = []
        pos = 0
        while pos < len(data):
            step = size if self.rng is None else self.rng.randint(1, size)
            out.append(data[pos : pos + step])
            pos += step
        return out

    def drain(self) -> bool:
        """Apply the core's actions; True if anything happened."""
        moved = False
        for action in self.core.pull_actions():
            moved = True
            if isinstance(action, OpenConnection):
                self.opened.append(action)
                self.pending_open.append(action)
            elif isinstance(action, WriteData):
                self.writes.append((action.conn_id, bytes(action.data)))
                entry = self.conns.get(action.conn_id)
                assert entry is not None, f"write to unknown conn {action.conn_id}"
                broker, reader = entry
                session = self.sessions.setdefault(action.conn_id, {})
                for frame in reader.feed(bytes(action.data)):
                    reply = broker.respond(frame, session)
                    if reply is None:
                        continue
                    if broker.hold:
                        self.held.append((action.conn_id, reply))
                    else:
                        self.to_client.setdefault(action.conn_id, bytearray()).extend(reply)
            elif isinstance(action, CloseConnection):
                self.closed.append(action.conn_id)
                self.conns.pop(action.conn_id, None)
                self.to_client.pop(action.conn_id, None)
        self.events.extend(self.core.pull_events())
        return moved

    def step(self) -> bool:
        """One round: open pending connections, deliver replies. True if progress."""
        progress = self.drain()
        opens, self.pending_open = self.pending_open, []
        for action in opens:
            address = (action.host, action.port)
            broker = self.brokers.get(address)
            if address in self.stall:
                continue
            if broker is None or address in self.refuse:
                self.core.connection_failed(
                    action.conn_id, ConnectionRefusedError(f"{address} refused"), now=self.now
                )
            else:
                self.conns[action.conn_id] = (broker, framing.FrameReader(max_frame_size=1 << 30))
                self.core.connection_made(action.conn_id, now=self.now)
            progress = True
            self.drain()
        for conn_id in list(self.to_client):
            data = bytes(self.to_client.pop(conn_id))
            for piece in self._chunks(data):
                if conn_id not in self.conns:
                    break
                self.core.data_received(conn_id, piece, now=self.now)
                self.drain()
            progress = True
        return progress

    def run(
        self,
        *,
        rounds: int = 200,
        until: Callable[[], bool] | None = None,
        jump: bool = True,
        max_time: float = 3600.0,
    ) -> None:
        """Pump until ``until()`` or quiescence; jump time to deadlines if ``jump``."""
        for _ in range(rounds):
            if until is not None and until():
                return
            if self.step():
                continue
            if not jump:
                break
            deadline = self.core.next_deadline()
            if deadline is None or deadline > max_time:
                break
            self.now = max(self.now, deadline)
            self.core.handle_timeout(now=self.now)
            self.drain()
        if until is not None and not until():
            raise AssertionError(f"pump: condition not reached in {rounds} rounds")

    def completed(self) -> list[Any]:
        from kafkacore.client.events import RequestCompleted

        return [e for e in self.events if isinstance(e, RequestCompleted)]


def make_cluster(
    n: int = 1, topics: list[Topic] | None = None, *, port0: int = 9092
) -> tuple[Cluster, dict[tuple[str, int], FakeBroker]]:
    brokers = {i: ("127.0.0.1", port0 + i) for i in range(n)}
    cluster = Cluster(brokers, topics)
    fakes = {addr: FakeBroker(i, cluster) for i, addr in brokers.items()}
    return cluster, fakes


def boot(
    n: int = 1,
    topics: list[Topic] | None = None,
    *,
    seed: int = 0,
    chunk: int | None = None,
    **config: Any,
) -> tuple[KafkaClientCore, Pump, Cluster]:
    """A core bootstrapped against ``n`` fake brokers (first metadata done)."""
    from kafkacore.client.config import ClientConfig

    cluster, fakes = make_cluster(n, topics)
    config.setdefault("bootstrap_servers", "127.0.0.1:9092")
    rng = random.Random(seed)
    core = KafkaClientCore(ClientConfig(**config), now=0.0, rng=rng)
    pump = Pump(core, fakes, chunk=chunk, rng=random.Random(seed + 1) if chunk else None)
    pump.run(until=lambda: core.cluster.update_count > 0 or bool(pump.held))
    return core, pump, cluster

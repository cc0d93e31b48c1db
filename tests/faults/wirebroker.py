"""A misbehaving Kafka broker on a loopback socket, for unit-speed fault tests.

Theory of operation
-------------------
:class:`WireBroker` listens on 127.0.0.1 and serves every connection on its
own thread with blocking sockets. It speaks just enough Kafka for a client to
bootstrap, produce and look up coordinators: ApiVersions (kafkacore's own
ranges), Metadata (every requested topic led by this broker, node id 1),
Produce (acks with a per-partition offset counter), InitProducerId,
FindCoordinator (itself), Fetch (empty), ListOffsets (offset 0) and SASL
PLAIN (OAUTHBEARER is offered, and every token refused). Requests are
decoded and responses encoded with kafkacore's generated codec, so only the
misbehaviour is hand-made.

Misbehaviour is a script: ``broker.faults[api_key]`` is a callable that gets
the :class:`Seen` request (its api key, version, per-API count, connection
number) and returns a :class:`Fault` (or None: answer normally). A fault
decides *how* the response bytes go out: with garbage or a bad size prefix
after the frame in the same write, truncated then closed, reset mid-frame,
one byte at a time, with a wrong correlation id, twice, as a raw body, or
not at all (stall, close). ``broker.bodies[api_key]`` replaces the response
object itself (e.g. a Metadata answer carrying error code 32767).

Everything the broker saw is kept with monotonic timestamps
(``connections``, ``requests``) so tests can count reconnects and metadata
refreshes over a window. :meth:`close` shuts every socket and joins every
thread (bounded); a thread that does not end is a test failure.
"""

from __future__ import annotations

import contextlib
import enum
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kafkacore.protocol import framing
from kafkacore.protocol import messages as m
from kafkacore.protocol.api import APIS
from kafkacore.protocol.enums import ApiKey
from kafkacore.protocol.messages.api_versions_response import ApiVersion
from kafkacore.protocol.messages.fetch_response import FetchableTopicResponse, PartitionData
from kafkacore.protocol.messages.find_coordinator_response import Coordinator
from kafkacore.protocol.messages.list_offsets_response import (
    ListOffsetsPartitionResponse,
    ListOffsetsTopicResponse,
)
from kafkacore.protocol.messages.metadata_response import (
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kafkacore.protocol.messages.produce_response import (
    PartitionProduceResponse,
    TopicProduceResponse,
)

__all__ = ["API", "Fault", "Kind", "Seen", "WireBroker"]

NODE_ID = 1
_JOIN_S = 5.0


class API:
    """API keys the fake answers (names for readability in tests)."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    FIND_COORDINATOR = 10
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    INIT_PRODUCER_ID = 22
    SASL_AUTHENTICATE = 36


class Kind(enum.Enum):
    """How one response is (mis)delivered."""

    NORMAL = "the frame, once"
    GARBAGE_AFTER = "the frame, then bytes that are not a frame, in one write"
    BAD_SIZE_AFTER = "the frame, then a negative size prefix, in one write"
    ABSURD_SIZE = "a size prefix of 2**31-1 instead of the frame"
    TRUNCATE_CLOSE = "half the frame, then a clean close"
    RESET_MID_FRAME = "half the frame, then a TCP reset"
    STALL = "nothing; the connection stays open"
    CLOSE = "nothing; the connection is closed"
    DRIP = "the frame one byte per write"
    WRONG_CORRELATION = "the frame with another correlation id"
    DUPLICATE = "the frame twice"
    RAW_BODY = "the response header followed by the given body bytes"


@dataclass(frozen=True, slots=True)
class Fault:
    kind: Kind
    payload: bytes = b""  # GARBAGE_AFTER: the garbage; RAW_BODY: the body


@dataclass(frozen=True, slots=True)
class Seen:
    """One request as the broker saw it."""

    at: float
    conn: int  # 1-based connection number
    api_key: int
    version: int
    nth: int  # 1-based count of this API key across all connections
    body: Any


FaultScript = Callable[[Seen], Fault | None]
BodyScript = Callable[["WireBroker", Seen], Any]


@dataclass
class _Partitions:
    count: int = 1
    leader: int = NODE_ID  # -1: no leader (LEADER_NOT_AVAILABLE)
    error_code: int = 0  # topic-level error code answered in Metadata
    topic_id: uuid.UUID = field(default_factory=uuid.uuid4)


class WireBroker:
    """See the module docstring. Use as a context manager."""

    def __init__(self, *, sasl_user: tuple[str, str] | None = None) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self.host = "127.0.0.1"
        self.port: int = self._sock.getsockname()[1]
        self.faults: dict[int, FaultScript] = {}
        self.bodies: dict[int, BodyScript] = {}
        self.topics: dict[str, _Partitions] = {}
        #: PLAIN user and password accepted; None: SASL is not asked for.
        self.sasl_user = sasl_user
        #: Where Metadata says node 1 is (default: here). Pointing it at another
        #: fake makes this one a bootstrap-only broker.
        self.advertise: tuple[str, int] | None = None
        #: Top-level Metadata error code (v13+, KIP-1102), per request: 0 for none.
        self.metadata_error: Callable[[Seen], int] = lambda seen: 0
        self.connections: list[float] = []
        self.requests: list[Seen] = []
        self.errors: list[BaseException] = []  # bugs in the fake itself
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._conns: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._offsets: dict[tuple[str, int], int] = {}
        self._mechanisms: dict[int, str] = {}  # connection number -> SASL mechanism
        self._acceptor = threading.Thread(target=self._accept, name="wirebroker-accept")
        self._acceptor.start()

    # -- test surface ----------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def topic(
        self, name: str, *, partitions: int = 1, leader: int = NODE_ID, error_code: int = 0
    ) -> None:
        self.topics[name] = _Partitions(partitions, leader, error_code)

    def seen(self, api_key: int, *, since: float = 0.0) -> list[Seen]:
        with self._lock:
            return [s for s in self.requests if s.api_key == api_key and s.at >= since]

    def connections_since(self, since: float) -> list[float]:
        with self._lock:
            return [t for t in self.connections if t >= since]

    def appended(self, topic: str, partition: int = 0) -> int:
        """Records acknowledged so far on ``topic-partition`` (the next offset)."""
        with self._lock:
            return self._offsets.get((topic, partition), 0)

    def __enter__(self) -> WireBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._closing.set()
        self._sock.close()
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
            c.close()
        self._acceptor.join(_JOIN_S)
        for t in self._threads:
            t.join(_JOIN_S)
        alive = [t.name for t in [self._acceptor, *self._threads] if t.is_alive()]
        assert not alive, f"wire broker threads still running: {alive}"
        if self.errors:
            raise AssertionError(f"the fake broker itself failed: {self.errors[0]!r}")

    # -- serving ---------------------------------------------------------

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.connections.append(time.monotonic())
                number = len(self.connections)
                self._conns.append(conn)
            t = threading.Thread(
                target=self._serve, args=(conn, number), name=f"wirebroker-conn-{number}"
            )
            self._threads.append(t)
            t.start()

    def _serve(self, conn: socket.socket, number: int) -> None:
        reader = framing.FrameReader()
        try:
            while not self._closing.is_set():
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                for frame in reader.feed(data):
                    if not self._answer(conn, number, frame):
                        return
        except OSError:
            return  # the client went away mid-write: its business, not a fake's bug
        except Exception as exc:  # a bug in the fake: surface it at close()
            self.errors.append(exc)
        finally:
            conn.close()

    def _answer(self, conn: socket.socket, number: int, frame: bytes) -> bool:
        """Answer one request; False when the connection must end."""
        header, body = framing.decode_request(frame)
        key, version = header.request_api_key, header.request_api_version
        with self._lock:
            nth = 1 + sum(1 for s in self.requests if s.api_key == key)
            seen = Seen(time.monotonic(), number, key, version, nth, body)
            self.requests.append(seen)
        script = self.faults.get(key)
        fault = script(seen) if script is not None else None
        kind = Kind.NORMAL if fault is None else fault.kind
        if kind is Kind.STALL:
            self._closing.wait()
            return False
        if kind is Kind.CLOSE:
            return False
        responder = self.bodies.get(key)
        response = responder(self, seen) if responder is not None else self._default(seen)
        if response is None:  # acks=0
            return True
        corr = header.correlation_id
        if kind is Kind.WRONG_CORRELATION:
            corr += 1000
        out = framing.encode_response(response, version=version, correlation_id=corr)
        assert fault is None or kind is not Kind.RAW_BODY or fault.payload
        return self._write(conn, out, key, version, fault)

    def _write(
        self, conn: socket.socket, out: bytes, key: int, version: int, fault: Fault | None
    ) -> bool:
        kind = Kind.NORMAL if fault is None else fault.kind
        if kind is Kind.RAW_BODY:
            assert fault is not None
            head = 4 + (1 if APIS[key].response_header_version(version) == 1 else 0)
            raw = out[4 : 4 + head] + fault.payload
            conn.sendall(struct.pack(">i", len(raw)) + raw)
        elif kind is Kind.GARBAGE_AFTER:
            assert fault is not None
            conn.sendall(out + (fault.payload or b"\x7f\xffgarbage"))
        elif kind is Kind.BAD_SIZE_AFTER:
            conn.sendall(out + struct.pack(">i", -5) + b"junk")
        elif kind is Kind.ABSURD_SIZE:
            conn.sendall(struct.pack(">i", 0x7FFFFFFF) + out[4:])
        elif kind is Kind.TRUNCATE_CLOSE:
            conn.sendall(out[: max(5, len(out) // 2)])
            return False
        elif kind is Kind.RESET_MID_FRAME:
            conn.sendall(out[: max(5, len(out) // 2)])
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return False
        elif kind is Kind.DRIP:
            for i in range(len(out)):
                if self._closing.is_set():
                    return False
                conn.sendall(out[i : i + 1])
                time.sleep(0.001)
        elif kind is Kind.DUPLICATE:
            conn.sendall(out + out)
        else:
            conn.sendall(out)
        return True

    # -- default answers -------------------------------------------------

    def _default(self, seen: Seen) -> Any:
        handler = _HANDLERS.get(seen.api_key)
        if handler is None:
            raise AssertionError(f"wire broker: no handler for API {seen.api_key}")
        return handler(self, seen)

    def _api_versions(self, seen: Seen) -> Any:
        return m.ApiVersionsResponse(
            api_keys=[
                ApiVersion(api_key=k, min_version=info.min_version, max_version=info.max_version)
                for k, info in sorted(APIS.items())
                # As a broker without a client-telemetry plugin (KIP-714).
                if k not in (ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY)
            ]
        )

    def _metadata(self, seen: Seen) -> Any:
        req = seen.body
        names = list(self.topics) if req.topics is None else [t.name for t in req.topics]
        topics = []
        for name in names:
            t = self.topics.get(name)
            if t is None:
                topics.append(MetadataResponseTopic(error_code=3, name=name))
                continue
            if t.error_code:
                topics.append(MetadataResponseTopic(error_code=t.error_code, name=name))
                continue
            replicas = [NODE_ID]
            parts = [
                MetadataResponsePartition(
                    error_code=5 if t.leader < 0 else 0,
                    partition_index=p,
                    leader_id=t.leader,
                    leader_epoch=0,
                    replica_nodes=replicas,
                    isr_nodes=replicas if t.leader >= 0 else [],
                )
                for p in range(t.count)
            ]
            topics.append(MetadataResponseTopic(name=name, topic_id=t.topic_id, partitions=parts))
        host, port = self.advertise or (self.host, self.port)
        return m.MetadataResponse(
            brokers=[MetadataResponseBroker(node_id=NODE_ID, host=host, port=port)],
            cluster_id="wirebroker",
            controller_id=NODE_ID,
            topics=topics,
            error_code=self.metadata_error(seen),
        )

    def _produce(self, seen: Seen) -> Any:
        req = seen.body
        out = []
        for t in req.topic_data:
            parts = []
            for p in t.partition_data:
                name = t.name or next(
                    (n for n, d in self.topics.items() if d.topic_id == t.topic_id), ""
                )
                count = sum(1 for _ in _records(bytes(p.records or b"")))
                with self._lock:
                    base = self._offsets.get((name, p.index), 0)
                    self._offsets[(name, p.index)] = base + count
                parts.append(PartitionProduceResponse(index=p.index, base_offset=base))
            out.append(
                TopicProduceResponse(name=t.name, topic_id=t.topic_id, partition_responses=parts)
            )
        if req.acks == 0:
            return None
        return m.ProduceResponse(responses=out)

    def _init_producer_id(self, seen: Seen) -> Any:
        return m.InitProducerIdResponse(producer_id=4242, producer_epoch=0)

    def _find_coordinator(self, seen: Seen) -> Any:
        req = seen.body
        if seen.version >= 4:
            return m.FindCoordinatorResponse(
                coordinators=[
                    Coordinator(key=k, node_id=NODE_ID, host=self.host, port=self.port)
                    for k in req.coordinator_keys
                ]
            )
        return m.FindCoordinatorResponse(node_id=NODE_ID, host=self.host, port=self.port)

    def _fetch(self, seen: Seen) -> Any:
        req = seen.body
        return m.FetchResponse(
            responses=[
                FetchableTopicResponse(
                    topic=t.topic,
                    topic_id=t.topic_id,
                    partitions=[
                        PartitionData(
                            partition_index=p.partition, high_watermark=0, last_stable_offset=0
                        )
                        for p in t.partitions
                    ],
                )
                for t in req.topics
            ]
        )

    def _list_offsets(self, seen: Seen) -> Any:
        return m.ListOffsetsResponse(
            topics=[
                ListOffsetsTopicResponse(
                    name=t.name,
                    partitions=[
                        ListOffsetsPartitionResponse(
                            partition_index=p.partition_index, timestamp=-1, offset=0
                        )
                        for p in t.partitions
                    ],
                )
                for t in seen.body.topics
            ]
        )

    def _sasl_handshake(self, seen: Seen) -> Any:
        mechanisms = ["PLAIN", "OAUTHBEARER"]
        if seen.body.mechanism not in mechanisms:
            return m.SaslHandshakeResponse(error_code=33, mechanisms=mechanisms)
        with self._lock:
            self._mechanisms[seen.conn] = seen.body.mechanism
        return m.SaslHandshakeResponse(mechanisms=mechanisms)

    def _sasl_authenticate(self, seen: Seen) -> Any:
        assert self.sasl_user is not None, "wire broker: SASL not configured"
        user, password = self.sasl_user
        with self._lock:
            mechanism = self._mechanisms.get(seen.conn)
        if mechanism == "OAUTHBEARER":  # every token is refused
            return m.SaslAuthenticateResponse(
                error_code=58, error_message="Authentication failed: invalid token"
            )
        if bytes(seen.body.auth_bytes) == b"\0" + user.encode() + b"\0" + password.encode():
            return m.SaslAuthenticateResponse(auth_bytes=b"")
        return m.SaslAuthenticateResponse(
            error_code=58, error_message="Authentication failed: Invalid username or password"
        )


def _records(data: bytes) -> Iterator[object]:
    from kafkacore.records import iter_batches

    for batch in iter_batches(data):
        yield from batch


_HANDLERS: dict[int, Callable[[WireBroker, Seen], Any]] = {
    API.API_VERSIONS: WireBroker._api_versions,
    API.METADATA: WireBroker._metadata,
    API.PRODUCE: WireBroker._produce,
    API.INIT_PRODUCER_ID: WireBroker._init_producer_id,
    API.FIND_COORDINATOR: WireBroker._find_coordinator,
    API.FETCH: WireBroker._fetch,
    API.LIST_OFFSETS: WireBroker._list_offsets,
    API.SASL_HANDSHAKE: WireBroker._sasl_handshake,
    API.SASL_AUTHENTICATE: WireBroker._sasl_authenticate,
}


def once(fault: Fault, *, nth: int = 1) -> FaultScript:
    """A script that misbehaves on the ``nth`` request of its API only."""
    return lambda seen: fault if seen.nth == nth else None


def always(fault: Fault) -> FaultScript:
    return lambda seen: fault

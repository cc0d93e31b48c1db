"""Hand-encoded Kafka requests the launcher uses to probe a broker.

Theory of operation: the launcher must not depend on kafkacore's codec (it is
the thing under test), so the few requests it needs are encoded here by hand
with ``struct``: ApiVersions v0 (is the broker answering?), Metadata v4
(which brokers are registered and unfenced, do a topic's partitions have
leaders?), CreateTopics v4 (a topic without starting a JVM tool),
SaslHandshake v1 (which mechanisms does a listener offer?) and
SaslAuthenticate v0 (do the users the launcher created log in?). All
use request header v1 and response header v0, the non-flexible forms, so no
compact encodings or tagged fields are involved. Each probe opens a blocking
socket with a timeout, sends one size-prefixed request, reads one
size-prefixed response and checks the correlation id. Responses are bounded
(``MAX_RESPONSE``) so a confused peer cannot make us allocate without limit.
"""

from __future__ import annotations

import socket
import ssl
import struct
from dataclasses import dataclass

__all__ = [
    "MAX_RESPONSE",
    "ApiVersionRange",
    "BrokerInfo",
    "MetadataAnswer",
    "PartitionInfo",
    "ProbeError",
    "TopicInfo",
    "api_versions",
    "connect",
    "create_topics",
    "metadata",
    "metadata_on",
    "parse_api_versions",
    "roundtrip",
    "sasl_authenticate_on",
    "sasl_handshake",
    "sasl_handshake_on",
]

MAX_RESPONSE = 8 * 1024 * 1024
_CLIENT_ID = b"localkafka"

API_METADATA = 3
API_CREATE_TOPICS = 19
API_SASL_HANDSHAKE = 17
API_SASL_AUTHENTICATE = 36
API_VERSIONS = 18


class ProbeError(Exception):
    """A probe got no answer or an answer it could not read."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersionRange:
    api_key: int
    min_version: int
    max_version: int


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionInfo:
    error_code: int
    partition: int
    leader: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicInfo:
    error_code: int
    name: str
    partitions: tuple[PartitionInfo, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class MetadataAnswer:
    brokers: tuple[BrokerInfo, ...]
    controller_id: int
    topics: tuple[TopicInfo, ...]


class _Reader:
    """Bounds-checked reader over one response body."""

    def __init__(self, data: bytes, what: str) -> None:
        self._data = data
        self._pos = 0
        self._what = what

    def take(self, n: int) -> bytes:
        if n < 0 or self._pos + n > len(self._data):
            raise ProbeError(
                f"{self._what} response: truncated at byte {self._pos} (wanted {n} more)"
            )
        chunk = self._data[self._pos : self._pos + n]
        self._pos += n
        return chunk

    def int8(self) -> int:
        return int(struct.unpack(">b", self.take(1))[0])

    def int16(self) -> int:
        return int(struct.unpack(">h", self.take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self.take(4))[0])

    def string(self) -> str | None:
        n = self.int16()
        return None if n == -1 else self.take(n).decode()

    def array_len(self) -> int:
        n = self.int32()
        if n > len(self._data):  # each element takes at least one byte
            raise ProbeError(f"{self._what} response: array length {n} exceeds the response")
        return max(n, 0)


def _string(value: str | None) -> bytes:
    if value is None:
        return struct.pack(">h", -1)
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def _request(api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation_id, len(_CLIENT_ID)) + _CLIENT_ID
    frame = header + body
    return struct.pack(">i", len(frame)) + frame


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 65536))
        if not chunk:
            raise ProbeError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def roundtrip(
    sock: socket.socket,
    api_key: int,
    version: int,
    body: bytes,
    *,
    correlation_id: int = 1,
) -> bytes:
    """Send one request on ``sock`` and return the response body (header stripped)."""
    sock.sendall(_request(api_key, version, correlation_id, body))
    (size,) = struct.unpack(">i", _recv_exact(sock, 4))
    if not 4 <= size <= MAX_RESPONSE:
        raise ProbeError(f"api {api_key} v{version}: response size {size} out of bounds")
    frame = _recv_exact(sock, size)
    (got,) = struct.unpack(">i", frame[:4])
    if got != correlation_id:
        raise ProbeError(
            f"api {api_key} v{version}: correlation id {got}, expected {correlation_id}"
        )
    return frame[4:]


def connect(host: str, port: int, timeout: float, tls: ssl.SSLContext | None) -> socket.socket:
    """Open a blocking socket (TLS-wrapped when ``tls`` is given) with ``timeout``."""
    sock = socket.create_connection((host, port), timeout=timeout)
    if tls is None:
        return sock
    try:
        return tls.wrap_socket(sock, server_hostname=host)
    except BaseException:
        sock.close()
        raise


def parse_api_versions(body: bytes) -> list[ApiVersionRange]:
    r = _Reader(body, "ApiVersions v0")
    error = r.int16()
    if error != 0:
        raise ProbeError(f"ApiVersions v0: broker answered error code {error}")
    out = []
    for _ in range(r.array_len()):
        out.append(ApiVersionRange(api_key=r.int16(), min_version=r.int16(), max_version=r.int16()))
    return out


def api_versions(
    host: str, port: int, *, timeout: float = 5.0, tls: ssl.SSLContext | None = None
) -> list[ApiVersionRange]:
    """Ask the broker for its supported API version ranges (ApiVersions v0)."""
    with connect(host, port, timeout, tls) as sock:
        return parse_api_versions(roundtrip(sock, API_VERSIONS, 0, b""))


# Metadata v4 is the first version with allow_auto_topic_creation (so a probe
# never creates a topic by accident) and is still non-flexible (v9 starts the
# KIP-482 tagged fields). Kafka 4.x serves Metadata v0-v12.
METADATA_VERSION = 4


def metadata(
    host: str,
    port: int,
    topics: list[str] | None = None,
    *,
    timeout: float = 5.0,
) -> MetadataAnswer:
    """Connect and fetch brokers (and ``topics``, if given) with Metadata v4.

    ``topics=None`` asks for no topics at all (an empty list on the wire), not
    for every topic. Auto-creation is never requested.
    """
    with connect(host, port, timeout, None) as sock:
        return metadata_on(sock, topics)


def metadata_on(
    sock: socket.socket, topics: list[str] | None = None, *, correlation_id: int = 1
) -> MetadataAnswer:
    """Metadata v4 on an open (possibly authenticated) socket."""
    names = topics or []
    body = struct.pack(">i", len(names)) + b"".join(_string(t) for t in names)
    body += b"\x00"  # allow_auto_topic_creation = false
    raw = roundtrip(sock, API_METADATA, METADATA_VERSION, body, correlation_id=correlation_id)
    r = _Reader(raw, f"Metadata v{METADATA_VERSION}")
    r.int32()  # throttle_time_ms
    brokers = []
    for _ in range(r.array_len()):
        node_id = r.int32()
        bhost = r.string() or ""
        bport = r.int32()
        r.string()  # rack
        brokers.append(BrokerInfo(node_id=node_id, host=bhost, port=bport))
    r.string()  # cluster_id
    controller_id = r.int32()
    out_topics = []
    for _ in range(r.array_len()):
        terr = r.int16()
        name = r.string() or ""
        r.int8()  # is_internal
        parts = []
        for _ in range(r.array_len()):
            perr = r.int16()
            index = r.int32()
            leader = r.int32()
            for _ in range(r.array_len()):  # replica_nodes
                r.int32()
            for _ in range(r.array_len()):  # isr_nodes
                r.int32()
            parts.append(PartitionInfo(error_code=perr, partition=index, leader=leader))
        out_topics.append(TopicInfo(error_code=terr, name=name, partitions=tuple(parts)))
    return MetadataAnswer(
        brokers=tuple(brokers), controller_id=controller_id, topics=tuple(out_topics)
    )


def sasl_handshake_on(
    sock: socket.socket, mechanism: str, *, correlation_id: int = 1
) -> tuple[int, list[str]]:
    """SaslHandshake v1 on an open socket: return (error code, enabled mechanisms)."""
    raw = roundtrip(sock, API_SASL_HANDSHAKE, 1, _string(mechanism), correlation_id=correlation_id)
    r = _Reader(raw, "SaslHandshake v1")
    error = r.int16()
    mechanisms = [r.string() or "" for _ in range(r.array_len())]
    return error, mechanisms


def sasl_handshake(
    host: str,
    port: int,
    mechanism: str,
    *,
    timeout: float = 5.0,
    tls: ssl.SSLContext | None = None,
) -> tuple[int, list[str]]:
    """Connect and send SaslHandshake v1 naming ``mechanism``."""
    with connect(host, port, timeout, tls) as sock:
        return sasl_handshake_on(sock, mechanism)


def sasl_authenticate_on(
    sock: socket.socket, token: bytes, *, correlation_id: int
) -> tuple[int, str | None, bytes]:
    """SaslAuthenticate v0 (KIP-152): return (error code, error message, server bytes)."""
    body = struct.pack(">i", len(token)) + token
    raw = roundtrip(sock, API_SASL_AUTHENTICATE, 0, body, correlation_id=correlation_id)
    r = _Reader(raw, "SaslAuthenticate v0")
    error = r.int16()
    message = r.string()
    n = r.int32()
    return error, message, r.take(max(n, 0))


# CreateTopics v4: the newest non-flexible version (v5 starts KIP-482 tags);
# Kafka 4.x serves v2-v7. Any broker forwards it to the active controller.
CREATE_TOPICS_VERSION = 4


def create_topics(
    host: str,
    port: int,
    topics: list[tuple[str, int, int, dict[str, str]]],
    *,
    timeout_ms: int = 30000,
    timeout: float = 60.0,
) -> list[tuple[str, int, str | None]]:
    """Create ``(name, partitions, replication_factor, configs)`` topics.

    Returns ``(name, error code, error message)`` per topic, as the broker
    answered (0 = created).
    """
    body = struct.pack(">i", len(topics))
    for name, partitions, replication, configs in topics:
        body += _string(name) + struct.pack(">ih", partitions, replication)
        body += struct.pack(">i", 0)  # no manual replica assignments
        body += struct.pack(">i", len(configs))
        for key, value in configs.items():
            body += _string(key) + _string(value)
    body += struct.pack(">i?", timeout_ms, False)  # timeout_ms, validate_only
    with connect(host, port, timeout, None) as sock:
        raw = roundtrip(sock, API_CREATE_TOPICS, CREATE_TOPICS_VERSION, body)
    r = _Reader(raw, f"CreateTopics v{CREATE_TOPICS_VERSION}")
    r.int32()  # throttle_time_ms
    out = []
    for _ in range(r.array_len()):
        name = r.string() or ""
        error = r.int16()
        out.append((name, error, r.string()))
    return out

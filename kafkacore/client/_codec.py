"""The client's only doorway to the generated codec.

Request/response headers (KIP-482) are small and fixed, so they are written
and read here directly: request header v1 (api key, version, correlation
id, int16-length client id) or v2 (v1 plus an empty tagged-field section)
for flexible versions; response header v0 (correlation id) or v1 (plus a
tagged-field section), except ApiVersions responses, which always use v0
so that a client can read a refusal of a version it sent (KIP-511).
"""

from __future__ import annotations

import struct
from typing import Any

from kafkacore.errors import DecodeError, LocalProtocolError

__all__ = [
    "API_VERSIONS_KEY",
    "encode_request",
    "our_version_range",
    "parse_response",
    "peek_error_code",
    "response_type",
]

API_VERSIONS_KEY = 18

_HEADER = struct.Struct(">hhi")


_REGISTRY: dict[int, tuple[Any, Any]] = {}


def _registry() -> dict[int, tuple[Any, Any]]:
    """api_key -> (request class, response class), built once from the codec."""
    if not _REGISTRY:
        from kafkacore.protocol import messages

        for name in messages.MODULES:
            if not name.endswith("Request"):
                continue
            request = getattr(messages, name)
            response = getattr(messages, name[: -len("Request")] + "Response", None)
            key = getattr(request, "API_KEY", None)
            if isinstance(key, int) and response is not None:
                _REGISTRY[key] = (request, response)
    return _REGISTRY


def our_version_range(api_key: int) -> tuple[int, int] | None:
    """The versions kafkacore can encode for ``api_key``, or None if unknown."""
    entry = _registry().get(api_key)
    if entry is None:
        return None
    return (entry[0].MIN_VERSION, entry[0].MAX_VERSION)


def response_type(api_key: int) -> Any:
    return _registry()[api_key][1]


def _flexible(api_key: int, version: int) -> bool:
    first = _registry()[api_key][0].FLEXIBLE_VERSION
    return first is not None and version >= first


def encode_request(
    msg: Any, *, api_key: int, version: int, correlation_id: int, client_id: str | None
) -> bytes:
    """The size-prefixed frame of ``msg`` at ``version``."""
    out = bytearray(4)
    out += _HEADER.pack(api_key, version, correlation_id)
    if client_id is None:
        out += b"\xff\xff"
    else:
        raw = client_id.encode()
        if len(raw) > 0x7FFF:
            raise LocalProtocolError("client_id is longer than 32767 bytes; shorten it")
        out += len(raw).to_bytes(2, "big") + raw
    if _flexible(api_key, version):
        out.append(0)  # request header v2: empty tagged-field section
    msg.encode_into(out, version)
    out[0:4] = (len(out) - 4).to_bytes(4, "big", signed=True)
    return bytes(out)


def _read_uvarint(buf: bytes, pos: int, what: str) -> tuple[int, int]:
    value = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise DecodeError("truncated varint", api="ResponseHeader", field=what, offset=pos)
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise DecodeError("varint too long", api="ResponseHeader", field=what, offset=pos)


def peek_correlation_id(frame: bytes) -> int:
    if len(frame) < 4:
        raise DecodeError("frame shorter than a correlation id", api="ResponseHeader", offset=0)
    return int.from_bytes(frame[0:4], "big", signed=True)


def header_length(frame: bytes, api_key: int, version: int) -> int:
    """Bytes taken by the response header at the start of ``frame``."""
    if api_key == API_VERSIONS_KEY or not _flexible(api_key, version):
        return 4
    count, pos = _read_uvarint(frame, 4, "tagged fields")
    for _ in range(count):
        _tag, pos = _read_uvarint(frame, pos, "tag")
        size, pos = _read_uvarint(frame, pos, "tag size")
        pos += size
        if pos > len(frame):
            raise DecodeError("tagged field overruns the frame", api="ResponseHeader", offset=pos)
    return pos


def parse_response(frame: bytes, api_key: int, version: int) -> Any:
    """Decode the body of a response frame whose header was checked."""
    start = header_length(frame, api_key, version)
    body = memoryview(frame)[start:]
    return response_type(api_key).decode(body, version)


def peek_error_code(frame: bytes) -> int:
    """The int16 right after a v0 response header (ApiVersions' ErrorCode)."""
    if len(frame) < 6:
        raise DecodeError("ApiVersions response too short", api="ApiVersionsResponse", offset=4)
    return int.from_bytes(frame[4:6], "big", signed=True)


def metadata_request(topics: list[str] | None, *, allow_auto_create: bool, version: int) -> Any:
    """A Metadata request for ``topics`` (None = every topic) at ``version``."""
    from kafkacore.protocol.messages.metadata_request import (
        MetadataRequest,
        MetadataRequestTopic,
    )

    entries = None if topics is None else [MetadataRequestTopic(name=t) for t in topics]
    return MetadataRequest(
        topics=entries,
        allow_auto_topic_creation=allow_auto_create if version >= 4 else True,
    )


def find_coordinator_request(key_type: int, keys: list[str], *, version: int) -> Any:
    """FindCoordinator for ``keys``: batched at v4+ (KIP-699), one key before."""
    from kafkacore.protocol.messages import FindCoordinatorRequest

    if version >= 4:
        return FindCoordinatorRequest(key_type=key_type, coordinator_keys=list(keys))
    if key_type != 0 and version < 1:
        raise LocalProtocolError("FindCoordinator v0 cannot look up transaction coordinators")
    return FindCoordinatorRequest(key=keys[0], key_type=key_type)


def is_zero_uuid(value: Any) -> bool:
    return value is None or getattr(value, "int", 1) == 0


# Codes whose Java exception extends InvalidMetadataException
# (shared/kafka-protocol/errors.tsv, column refresh_metadata); used until the
# generated error table is importable.
_INVALID_METADATA_FALLBACK = frozenset({3, 5, 6, 9, 13, 56, 72, 74, 80, 83, 84, 100, 103})


def invalidates_metadata(code: int) -> bool:
    """True when error ``code`` means the client's metadata is stale."""
    try:
        from kafkacore.protocol.error_codes import error_for_code
    except ImportError:
        return code in _INVALID_METADATA_FALLBACK
    err = error_for_code(code, None)
    return bool(err is not None and err.invalid_metadata)


def error_name(code: int) -> str:
    try:
        from kafkacore.protocol.error_codes import error_for_code
    except ImportError:
        return f"error code {code}"
    err = error_for_code(code, None)
    return f"error code {code}" if err is None else f"{err.name} ({code})"

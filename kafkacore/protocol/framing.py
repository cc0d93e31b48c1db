"""Kafka's TCP framing: size-prefixed frames of header + body.

Theory of operation
-------------------
Every request and response on a Kafka connection is one frame: an int32
size, then that many bytes holding a header and a body (KIP-482 header
versions: request v1/v2, response v0/v1; the version follows from the
API's first flexible version, see :class:`~kafkacore.protocol.api.ApiInfo`).

* :func:`encode_request` builds the whole frame of a request.
* :class:`FrameReader` splits a byte stream (chunks of any size, even one
  byte) into frame bodies, refusing sizes above ``max_frame_size`` before
  buffering them. Its states (reading the size, reading the body, failed)
  are the enum :class:`FrameReader.State`. A bad size prefix never costs
  the frames completed before it: they are returned first, and the error
  (kept in :attr:`FrameReader.error`) is raised by the next ``feed``; a
  caller that must act at once checks ``error`` after handling the frames.
* :func:`expects_response`: Produce with ``acks=0`` gets no response, so the
  connection must not wait for one (as Java's ``expectResponse``).
* On a frame body, :func:`peek_correlation_id` reads the correlation id
  (the first int32 of every response header) before the API is known; the
  connection matches it with its in-flight request and then calls
  :func:`decode_response` with that request's API key and version.

:func:`decode_request` and :func:`encode_response` are the broker's side,
used by test fakes. Trailing bytes after a body are a DecodeError.
"""

from __future__ import annotations

import struct
from enum import Enum
from typing import Any

from kafkacore.errors import DecodeError, LocalProtocolError
from kafkacore.protocol._base import Request, Response
from kafkacore.protocol.api import APIS, ApiInfo
from kafkacore.protocol.enums import ApiKey
from kafkacore.protocol.messages.request_header import RequestHeader
from kafkacore.protocol.messages.response_header import ResponseHeader

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "FrameReader",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "expects_response",
    "peek_correlation_id",
]

_I32 = struct.Struct(">i")
_HEADER_PREFIX = struct.Struct(">hhi")
#: Java's default ``socket.request.max.bytes`` is 100 MiB; responses (Fetch)
#: are bounded by fetch.max.bytes (50 MiB by default). Leave headroom.
DEFAULT_MAX_FRAME_SIZE = 128 * 1024 * 1024


def _api(api_key: int) -> ApiInfo:
    info = APIS.get(api_key)
    if info is None:
        raise LocalProtocolError(f"API key {api_key} is unknown to kafkacore; check the key")
    return info


def encode_request(
    msg: Request[Any], *, version: int, correlation_id: int, client_id: str | None
) -> bytes:
    """The full frame (size prefix, request header, body) of ``msg`` at ``version``."""
    info = _api(msg.API_KEY)
    out = bytearray(b"\0\0\0\0")
    header = RequestHeader(
        request_api_key=msg.API_KEY,
        request_api_version=version,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    header.encode_into(out, info.request_header_version(version))
    msg.encode_into(out, version)
    _I32.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def expects_response(msg: Request[Any]) -> bool:
    """False for a Produce request with ``acks=0``: the broker sends no response."""
    return not (msg.API_KEY == ApiKey.PRODUCE and getattr(msg, "acks", 1) == 0)


def peek_correlation_id(frame: bytes | bytearray | memoryview) -> int:
    """The correlation id at the start of a response frame body."""
    if len(frame) < 4:
        raise DecodeError("frame shorter than a correlation id", api="ResponseHeader", offset=0)
    (cid,) = _I32.unpack_from(frame, 0)
    return int(cid)


def decode_response(
    frame: bytes | bytearray | memoryview, api_key: int, version: int
) -> tuple[int, Response]:
    """Decode a response frame body (no size prefix): (correlation id, message).

    ApiVersions: a broker that does not support the requested version answers
    with a v0 body carrying UNSUPPORTED_VERSION (KIP-511), so a body that does
    not parse at ``version`` is retried at v0, as the Java client does.
    """
    info = _api(api_key)
    buf = frame if isinstance(frame, memoryview) else memoryview(frame)
    header, pos = ResponseHeader.decode_from(buf, info.response_header_version(version))
    cls = info.response_type
    try:
        return header.correlation_id, cls.decode(buf[pos:], version)
    except DecodeError:
        if api_key != ApiKey.API_VERSIONS or version == 0:
            raise
        try:
            return header.correlation_id, cls.decode(buf[pos:], 0)
        except DecodeError:
            pass
        raise


def decode_request(
    frame: bytes | bytearray | memoryview,
) -> tuple[RequestHeader, Request[Response]]:
    """Decode a request frame body (no size prefix): (header, message). Broker side."""
    buf = frame if isinstance(frame, memoryview) else memoryview(frame)
    if len(buf) < _HEADER_PREFIX.size:
        raise DecodeError("frame shorter than a request header", api="RequestHeader", offset=0)
    api_key, version, _ = _HEADER_PREFIX.unpack_from(buf, 0)
    info = APIS.get(api_key)
    if info is None or not info.min_version <= version <= info.max_version:
        raise DecodeError(
            f"unsupported API key {api_key} version {version}", api="RequestHeader", offset=0
        )
    header, pos = RequestHeader.decode_from(buf, info.request_header_version(version))
    return header, info.request_type.decode(buf[pos:], version)


def encode_response(msg: Response, *, version: int, correlation_id: int) -> bytes:
    """The full frame of a response. Broker side, for test fakes."""
    info = _api(msg.API_KEY)
    out = bytearray(b"\0\0\0\0")
    ResponseHeader(correlation_id=correlation_id).encode_into(
        out, info.response_header_version(version)
    )
    msg.encode_into(out, version)
    _I32.pack_into(out, 0, len(out) - 4)
    return bytes(out)


class FrameReader:
    """Split a byte stream into frame bodies; bounded by ``max_frame_size``."""

    class State(Enum):
        SIZE = "reading the 4-byte size"
        BODY = "reading the frame body"
        #: A size prefix was out of bounds: the stream cannot be resynchronised.
        FAILED = "failed on a bad size prefix"

    __slots__ = ("_buf", "_need", "_pos", "error", "max_frame_size", "state")

    def __init__(self, *, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        if max_frame_size < 0:
            raise ValueError(f"max_frame_size must be >= 0, got {max_frame_size}")
        self.max_frame_size = max_frame_size
        self.state = FrameReader.State.SIZE
        self._buf = bytearray()
        self._pos = 0
        self._need = 4
        #: The DecodeError that failed the stream (None while it is sound).
        self.error: DecodeError | None = None

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as a frame."""
        return len(self._buf) - self._pos

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Add received bytes; return the frame bodies completed by them, in order.

        A size prefix outside ``0..max_frame_size`` fails the stream: the
        frames completed before it in this call are still returned (a
        response that arrived whole must not be lost to garbage behind it)
        and :attr:`error` is set; the error is raised at once when no frame
        came first, and by every later call.
        """
        if self.error is not None:
            raise self.error
        self._buf += data
        frames: list[bytes] = []
        buf = self._buf
        while len(buf) - self._pos >= self._need:
            if self.state is FrameReader.State.SIZE:
                (size,) = _I32.unpack_from(buf, self._pos)
                if size < 0 or size > self.max_frame_size:
                    self.error = DecodeError(
                        f"frame size {size} outside 0..{self.max_frame_size}; "
                        "the peer is not speaking Kafka or max_frame_size is too small",
                        api="frame",
                        offset=self._pos,
                    )
                    self.state = FrameReader.State.FAILED
                    buf.clear()  # nothing after a bad prefix can be framed
                    self._pos = 0
                    if frames:
                        return frames
                    raise self.error
                self._pos += 4
                self._need = size
                self.state = FrameReader.State.BODY
            else:
                end = self._pos + self._need
                frames.append(bytes(buf[self._pos : end]))
                self._pos = end
                self._need = 4
                self.state = FrameReader.State.SIZE
        if self._pos:
            # Drop consumed bytes so the buffer holds at most one partial frame.
            del buf[: self._pos]
            self._pos = 0
        return frames

"""The client's only doorway to the generated codec (``kafkacore.protocol``).

Everything the connection and client machines need from the codec goes
through these few functions, so a change of codec names is a change here.
Framing and headers are the codec's (:mod:`kafkacore.protocol.framing`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from kafkacore.errors import BrokerError, DecodeError, LocalProtocolError
from kafkacore.protocol import error_codes, framing
from kafkacore.protocol.api import APIS
from kafkacore.protocol.enums import ApiKey, CoordinatorType
from kafkacore.protocol.error_codes import error_class

if TYPE_CHECKING:
    from kafkacore.protocol._base import Request, Response
    from kafkacore.protocol.messages import FindCoordinatorRequest, MetadataRequest

#: A response class (:func:`parse_as`).
T = TypeVar("T", bound="Response")

__all__ = [
    "FrameReader",
    "api_name",
    "encode_request",
    "error_for_code",
    "error_name",
    "find_coordinator_request",
    "invalidates_metadata",
    "metadata_request",
    "our_version_range",
    "parse_response",
    "peek_correlation_id",
    "peek_error_code",
]

FrameReader = framing.FrameReader
peek_correlation_id = framing.peek_correlation_id


def our_version_range(api_key: int) -> tuple[int, int] | None:
    """The versions kafkacore can encode for ``api_key``, or None if unknown."""
    info = APIS.get(api_key)
    return None if info is None else (info.min_version, info.max_version)


def api_name(api_key: int) -> str:
    info = APIS.get(api_key)
    return f"API key {api_key}" if info is None else info.name


def encode_request(
    msg: Request[Response], *, version: int, correlation_id: int, client_id: str | None
) -> bytes:
    """The size-prefixed frame of ``msg`` at ``version``."""
    return framing.encode_request(
        msg, version=version, correlation_id=correlation_id, client_id=client_id
    )


#: Per (API key, version): the generated body decoder and whether the
#: response header is v1 (a tagged-field section after the correlation id).
_PLANS: dict[tuple[int, int], tuple[Callable[..., tuple[Response, int]], bool]] = {}


def parse_response(frame: bytes | bytearray | memoryview, api_key: int, version: int) -> Response:
    """Decode the body of a response frame whose correlation id was matched.

    The hot path of every response (issue 12): the header is stepped over in
    place and the generated decoder of ``version`` runs on a view of the
    frame, the work of :func:`kafkacore.protocol.framing.decode_response`
    without its four layers of calls. Anything unusual (ApiVersions and its
    v0 fallback, header tagged fields, an unknown version, any decode error)
    goes through ``decode_response``, which raises the located error.
    """
    plan = _PLANS.get((api_key, version))
    if plan is None:
        plan = _plan(api_key, version)
        if plan is None:
            return framing.decode_response(frame, api_key, version)[1]
    decoder, flexible_header = plan
    buf = frame if type(frame) is memoryview else memoryview(frame)
    end = len(buf)
    pos = 4
    if flexible_header:
        if end < 5 or buf[4] != 0:  # header tagged fields (none in practice)
            return framing.decode_response(frame, api_key, version)[1]
        pos = 5
    try:
        response, stop = decoder(buf, pos, end, version)
    except (DecodeError, RecursionError, IndexError):
        stop = -1
    if stop != end:
        return framing.decode_response(frame, api_key, version)[1]  # raises, located
    return response


def _plan(api_key: int, version: int) -> tuple[Callable[..., tuple[Response, int]], bool] | None:
    info = APIS.get(api_key)
    if info is None or api_key == ApiKey.API_VERSIONS:
        return None
    decoder = info.response_type._DECODERS.get(version)
    if decoder is None:
        return None
    plan = _PLANS[(api_key, version)] = (decoder, info.response_header_version(version) >= 1)
    return plan


def parse_as(cls: type[T], frame: bytes | memoryview, version: int) -> T:
    """:func:`parse_response` for a frame known to answer ``cls``'s API (the
    connection's own ApiVersions and SASL requests), typed as ``cls``."""
    response = parse_response(frame, cls.API_KEY, version)
    if not isinstance(response, cls):  # pragma: no cover - the API key decides the class
        raise DecodeError(f"expected {cls.__name__}", api=cls.STRUCT_NAME, version=version)
    return response


def peek_error_code(frame: bytes | memoryview) -> int:
    """The int16 right after a v0 response header (ApiVersions' ErrorCode, KIP-511)."""
    if len(frame) < 6:
        raise DecodeError("ApiVersions response too short", api="ApiVersionsResponse", offset=4)
    return int.from_bytes(frame[4:6], "big", signed=True)


def invalidates_metadata(code: int) -> bool:
    """True when error ``code`` means the client's metadata is stale."""
    cls = error_class(code)
    return bool(cls is not None and cls.invalid_metadata)


def error_for_code(
    code: int, message: str | None = None, *, node_id: int | None = None
) -> BrokerError | None:
    """The exception of error ``code`` (None for 0), unknown codes included;
    ``node_id``: the broker that answered with it (kept on the error)."""
    error = error_codes.error_for_code(code, message)
    if error is not None:
        error.node_id = node_id
    return error


def error_name(code: int) -> str:
    cls = error_class(code)
    return f"error code {code}" if cls is None else f"{cls.name} ({code})"


def metadata_request(
    topics: list[str] | None, *, allow_auto_create: bool, version: int
) -> MetadataRequest:
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


def find_coordinator_request(
    key_type: int, keys: list[str], *, version: int
) -> FindCoordinatorRequest:
    """FindCoordinator for ``keys``: batched at v4+ (KIP-699), one key before."""
    from kafkacore.protocol.messages import FindCoordinatorRequest

    if version >= 4:
        return FindCoordinatorRequest(key_type=key_type, coordinator_keys=list(keys))
    if key_type != CoordinatorType.GROUP and version < 1:
        raise LocalProtocolError("FindCoordinator v0 cannot look up transaction coordinators")
    return FindCoordinatorRequest(key=keys[0], key_type=key_type)

"""The consumer's embedded protocol: subscriptions and assignments in groups.

Theory of operation
-------------------
Classic consumer groups (JoinGroup / SyncGroup) carry opaque bytes that the
consumer protocol fills with ``ConsumerProtocolSubscription`` and
``ConsumerProtocolAssignment`` (generated from their ``data`` schemas). Unlike
request bodies, these blobs start with their own int16 version. A member
may be newer than us: as in the Java client, a version above our highest is
read as our highest (newer versions only append fields) and bytes after the
known fields are ignored. A version below the lowest is a DecodeError.
"""

from __future__ import annotations

import struct
from typing import TypeVar

from kafkacore.errors import DecodeError
from kafkacore.protocol._base import Message
from kafkacore.protocol.messages.consumer_protocol_assignment import ConsumerProtocolAssignment
from kafkacore.protocol.messages.consumer_protocol_subscription import (
    ConsumerProtocolSubscription,
)

__all__ = [
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
]

_I16 = struct.Struct(">h")
_M = TypeVar("_M", bound=Message)


def _encode(msg: Message, version: int | None) -> bytes:
    v = msg.MAX_VERSION if version is None else version
    out = bytearray(_I16.pack(v))
    msg.encode_into(out, v)
    return bytes(out)


def _decode(cls: type[_M], data: bytes | bytearray | memoryview) -> tuple[int, _M]:
    if len(data) < 2:
        raise DecodeError("missing the int16 version", api=cls.STRUCT_NAME, offset=0)
    (version,) = _I16.unpack_from(data, 0)
    if version < cls.MIN_VERSION:
        raise DecodeError(
            f"version {version} is below the lowest supported {cls.MIN_VERSION}",
            api=cls.STRUCT_NAME,
            field="Version",
            offset=0,
        )
    read_as = min(version, cls.MAX_VERSION)
    msg, _ = cls.decode_from(data, read_as, 2)
    return version, msg


def encode_subscription(sub: ConsumerProtocolSubscription, version: int | None = None) -> bytes:
    """Version prefix + body; ``version`` defaults to the highest we know."""
    return _encode(sub, version)


def decode_subscription(
    data: bytes | bytearray | memoryview,
) -> tuple[int, ConsumerProtocolSubscription]:
    """(version found on the wire, subscription)."""
    return _decode(ConsumerProtocolSubscription, data)


def encode_assignment(assignment: ConsumerProtocolAssignment, version: int | None = None) -> bytes:
    """Version prefix + body; ``version`` defaults to the highest we know."""
    return _encode(assignment, version)


def decode_assignment(
    data: bytes | bytearray | memoryview,
) -> tuple[int, ConsumerProtocolAssignment]:
    """(version found on the wire, assignment)."""
    return _decode(ConsumerProtocolAssignment, data)

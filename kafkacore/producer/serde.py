"""Turning a user's ``send(...)`` arguments into checked bytes, without hidden encoding.

Serializers are plain callables ``(value) -> bytes``, or objects with a
``serialize(topic, headers, data)`` method (kafka-python 3's
``kafka.serializer.Serializer``; ``serialize(topic, data)`` too, as older
ones have): :func:`as_serde` tells them apart once, when the client is made,
by the method and its arity, never per record. The consumer's deserializers
take the same two shapes (``deserialize``). Without a serializer a key, value
or header value must already be bytes-like or None; anything else is a
``TypeError`` naming the argument and its type, never a silent ``str``
encoding. Header keys are ``str`` (the protocol says UTF-8 strings).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from kafkacore.serde import SerdeObject

__all__ = ["PreparedRecord", "Serializer", "check_bytes", "prepare_headers", "prepare_record"]

Serializer = Callable[[Any], bytes | None]
_BYTES = (bytes, bytearray, memoryview)


class PreparedRecord(NamedTuple):
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] | None


def check_bytes(obj: object, what: str, owner: str) -> bytes | None:
    if obj is None or type(obj) is bytes:
        return obj
    if isinstance(obj, _BYTES):
        return bytes(obj)
    raise TypeError(
        f"{owner}: {what} must be bytes or None, got {type(obj).__name__}; "
        f"pass {what.split()[0]}_serializer= or encode it yourself"
    )


def prepare_headers(
    headers: Iterable[tuple[str, object]] | None, owner: str
) -> list[tuple[str, bytes | None]] | None:
    if not headers:
        return None
    out: list[tuple[str, bytes | None]] = []
    for item in headers:
        try:
            hkey, hvalue = item
        except (TypeError, ValueError):
            raise TypeError(
                f"{owner}: each header must be a (str, bytes) pair, got {item!r}"
            ) from None
        if not isinstance(hkey, str):
            raise TypeError(f"{owner}: header key must be str, got {type(hkey).__name__}")
        out.append((hkey, check_bytes(hvalue, "header value", owner)))
    return out


def prepare_record(
    value: object,
    key: object,
    headers: Iterable[tuple[str, object]] | None,
    *,
    key_serializer: Serializer | None,
    value_serializer: Serializer | None,
    owner: str = "send",
    topic: str = "",
) -> PreparedRecord:
    """Serialize and check one record's parts; see the module docstring."""
    if value_serializer is not None:
        if isinstance(value_serializer, SerdeObject):
            value = value_serializer(topic, headers, value)
        else:
            value = value_serializer(value)
    if key_serializer is not None and key is not None:
        if isinstance(key_serializer, SerdeObject):
            key = key_serializer(topic, headers, key)
        else:
            key = key_serializer(key)
    return PreparedRecord(
        check_bytes(key, "key", owner),
        check_bytes(value, "value", owner),
        prepare_headers(headers, owner),
    )

"""Serializer and deserializer objects, as the clients call them.

A serializer is a plain callable ``(data) -> bytes`` or an object with
``serialize(topic, headers, data)`` (kafka-python 3's
``kafka.serializer.Serializer``; ``serialize(topic, data)``, as older ones
have, works too); a deserializer likewise with ``deserialize``.
:func:`as_serde` tells the shapes apart once, when a client is made (by the
method and its arity), so no record pays for the question. Used by the
producer (:mod:`kafkacore.producer.serde`) and the consumers' surfaces.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from kafkacore.errors import ConfigError

__all__ = ["SerdeObject", "as_serde"]


class SerdeObject:
    """A serializer or deserializer object's method, called ``(topic, headers, data)``."""

    __slots__ = ("_call", "close")

    def __init__(self, method: Callable[..., Any], close: Callable[[], Any] | None) -> None:
        try:
            arity = len(inspect.signature(method).parameters)
        except (TypeError, ValueError):  # a builtin without a signature: the current shape
            arity = 3
        self._call: Callable[[str, Any, Any], Any] = (
            method if arity >= 3 else lambda topic, _headers, data: method(topic, data)
        )
        #: The object's ``close()`` (kafka-python calls it when the client closes), or None.
        self.close = close

    def __call__(self, topic: str, headers: Any, data: Any) -> Any:
        return self._call(topic, headers, data)


def as_serde(obj: object, what: str, owner: str, method: str) -> Any:
    """``obj`` as the client calls it: None, a plain callable ``(data)``, or a
    :class:`SerdeObject` for an object with ``method`` (``serialize`` or
    ``deserialize``); ConfigError naming ``what`` for anything else."""
    bound = getattr(obj, method, None)
    if obj is not None and callable(bound):
        closer = getattr(obj, "close", None)
        return SerdeObject(bound, closer if callable(closer) else None)
    if obj is None or callable(obj):
        return obj
    raise ConfigError(
        f"{owner}: {what} must be a callable, an object with {method}(topic, headers, data), "
        f"or None; got {obj!r}"
    )

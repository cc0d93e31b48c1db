"""kafka-python 3's ``kafka.serializer``: the base classes and the stock serializers.

kafkacore's producers and consumers call an object with ``serialize(topic,
headers, data)`` / ``deserialize(topic, headers, data)`` (these classes,
kafka-python's own, or any with those methods) as kafka-python does, and a
plain callable with the data alone.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Callable
from typing import Any

__all__ = [
    "DefaultSerializer",
    "DeserializeWrapper",
    "Deserializer",
    "JsonSerializer",
    "SerializeWrapper",
    "Serializer",
]


class Serializer(abc.ABC):
    @abc.abstractmethod
    def serialize(self, topic: str, headers: Any, data: Any) -> bytes | None:
        """``data`` as bytes (None stays None where the subclass says so)."""

    def close(self) -> None:  # noqa: B027 - optional, as in kafka-python
        """Called when the producer closes."""


class Deserializer(abc.ABC):
    @abc.abstractmethod
    def deserialize(self, topic: str, headers: Any, data: bytes | None) -> Any:
        """``data`` (a record's key or value) as the application wants it."""

    def close(self) -> None:  # noqa: B027 - optional, as in kafka-python
        """Called when the consumer closes."""


class DefaultSerializer(Serializer, Deserializer):
    """Bytes pass through; ``str`` is encoded (and decoded) with ``encoding``."""

    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = encoding

    def serialize(self, topic: str, headers: Any, data: Any) -> bytes | None:
        if data is None or isinstance(data, bytes | bytearray | memoryview):
            return None if data is None else bytes(data)
        return str(data).encode(self.encoding)

    def deserialize(self, topic: str, headers: Any, data: bytes | None) -> Any:
        return None if data is None else data.decode(self.encoding)


class JsonSerializer(Serializer, Deserializer):
    """JSON documents, encoded with ``encoding``; None stays None."""

    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = encoding

    def serialize(self, topic: str, headers: Any, data: Any) -> bytes | None:
        return None if data is None else json.dumps(data).encode(self.encoding)

    def deserialize(self, topic: str, headers: Any, data: bytes | None) -> Any:
        return None if data is None else json.loads(data.decode(self.encoding))


class SerializeWrapper(Serializer):
    """A plain callable ``fn(data)`` as a Serializer."""

    def __init__(self, fn: Callable[[Any], bytes | None] | None) -> None:
        self.fn = fn

    def serialize(self, topic: str, headers: Any, data: Any) -> bytes | None:
        return data if self.fn is None else self.fn(data)


class DeserializeWrapper(Deserializer):
    """A plain callable ``fn(data)`` as a Deserializer."""

    def __init__(self, fn: Callable[[bytes | None], Any] | None) -> None:
        self.fn = fn

    def deserialize(self, topic: str, headers: Any, data: bytes | None) -> Any:
        return data if self.fn is None else self.fn(data)

"""Base classes and field metadata of the generated message classes.

Theory of operation
-------------------
Every generated class is a slotted, keyword-only dataclass deriving from
:class:`Struct`. A top-level message (request, response, header or ``data``
type) derives from :class:`Message`, which adds ``encode(version)`` and
``decode(data, version)``. The actual work is done by straight-line functions
generated per distinct wire layout; a message class only carries the tables
``_ENCODERS``/``_DECODERS`` mapping each valid version to its function.

``FIELDS`` describes each field (schema name, attribute, type, version
ranges) for tooling: the property tests and the Java differential test build
their inputs from it. It carries facts only, no documentation.
"""

from __future__ import annotations

import builtins
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Self, TypeVar

from kafkacore.errors import DecodeError, LocalProtocolError

__all__ = ["FieldMeta", "Message", "Request", "Response", "Struct", "VersionRange"]

#: Inclusive version range; ``None`` where a property applies to no version.
VersionRange = tuple[int, int]

Decoder = Callable[[memoryview, int, int, int], tuple[Any, int]]
Encoder = Callable[[Any, bytearray, int], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldMeta:
    """Schema facts of one field (see docs/codec.md)."""

    name: str  # schema name, CamelCase (the key used in Kafka's JSON form)
    attr: str  # Python attribute, snake_case
    type: str  # schema type: "int32", "string", "[]int32", "[]SomeStruct", "SomeStruct", ...
    versions: VersionRange | None
    nullable: VersionRange | None
    tagged: VersionRange | None
    tag: int | None
    ignorable: bool
    struct: builtins.type[Struct] | None  # element / value class of struct-typed fields
    flexible_override: VersionRange | bool | None = False  # False: follows the message


class Struct:
    """Base of every generated class."""

    __slots__ = ()
    FIELDS: ClassVar[tuple[FieldMeta, ...]] = ()
    STRUCT_NAME: ClassVar[str] = ""


class Message(Struct):
    """A top-level schema: encode/decode with the version as a parameter."""

    __slots__ = ()
    MIN_VERSION: ClassVar[int]
    MAX_VERSION: ClassVar[int]
    #: First flexible version (compact encodings, tagged fields), or None.
    FLEXIBLE_VERSION: ClassVar[int | None]
    _ENCODERS: ClassVar[Mapping[int, Encoder]]
    _DECODERS: ClassVar[Mapping[int, Decoder]]

    def encode(self, version: int) -> bytes:
        """Return the body bytes of this message at ``version``."""
        out = bytearray()
        self.encode_into(out, version)
        return bytes(out)

    def encode_into(self, out: bytearray, version: int) -> None:
        """Append the body bytes of this message at ``version`` to ``out``."""
        encoder = self._ENCODERS.get(version)
        if encoder is None:
            raise LocalProtocolError(
                f"{self.STRUCT_NAME}: version {version} is not in "
                f"{self.MIN_VERSION}..{self.MAX_VERSION}; pick a supported version"
            )
        try:
            encoder(self, out, version)
        except LocalProtocolError:
            raise
        except (struct.error, TypeError, AttributeError, ValueError, OverflowError) as exc:
            # struct.error: a number out of its wire range; the others: a value
            # of the wrong type. Both are the caller's to fix.
            raise LocalProtocolError(
                f"{self.STRUCT_NAME} v{version}: cannot encode ({exc}); check the field values"
            ) from None

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview, version: int) -> Self:
        """Decode a whole body; trailing bytes are a DecodeError."""
        buf = data if type(data) is memoryview else memoryview(data)
        obj, end = cls._decode_at(buf, 0, version)
        if end != len(buf):
            raise DecodeError(
                f"{len(buf) - end} trailing bytes after the message",
                api=cls.STRUCT_NAME,
                version=version,
                offset=end,
            )
        return obj

    @classmethod
    def decode_from(
        cls, data: bytes | bytearray | memoryview, version: int, offset: int = 0
    ) -> tuple[Self, int]:
        """Decode one message starting at ``offset``; return it and the end offset."""
        buf = data if type(data) is memoryview else memoryview(data)
        return cls._decode_at(buf, offset, version)

    @classmethod
    def _decode_at(cls, buf: memoryview, pos: int, version: int) -> tuple[Self, int]:
        decoder = cls._DECODERS.get(version)
        if decoder is None:
            raise LocalProtocolError(
                f"{cls.STRUCT_NAME}: version {version} is not in "
                f"{cls.MIN_VERSION}..{cls.MAX_VERSION}; pick a supported version"
            )
        if buf.format != "B" or buf.ndim != 1:
            buf = buf.cast("B")
        try:
            obj, end = decoder(buf, pos, len(buf), version)
        except DecodeError as exc:
            if exc.api == cls.STRUCT_NAME:
                raise
            field = exc.field if exc.api is None else f"{exc.api}.{exc.field}"
            raise DecodeError(
                exc.reason, api=cls.STRUCT_NAME, version=version, field=field, offset=exc.offset
            ) from None
        except RecursionError:
            raise DecodeError(
                "structure nested too deeply", api=cls.STRUCT_NAME, version=version
            ) from None
        return obj, end


#: The response class answering a request class (type checkers only).
R_co = TypeVar("R_co", bound="Response", covariant=True)


class Request(Message, Generic[R_co]):
    """A request body. ``API_KEY`` identifies the API on the wire.

    Generic in the response that answers it: the generated
    ``MetadataRequest`` derives from ``Request[MetadataResponse]``, so
    ``client.send(MetadataRequest(...))`` is a ``RequestHandle[MetadataResponse]``
    for a type checker. The parameter exists for type checkers only.
    """

    __slots__ = ()
    API_KEY: ClassVar[int]


class Response(Message):
    """A response body."""

    __slots__ = ()
    API_KEY: ClassVar[int]

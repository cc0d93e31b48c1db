"""Hypothesis strategies for every generated message, built from ``FIELDS``.

A value is drawn only for fields present at the version; the others keep
their defaults (an absent field cannot round-trip). Nulls are drawn only
where the version allows them, and unknown tagged fields (tags above every
known tag of the struct) only in flexible versions.
"""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import strategies as st

from kafkacore.protocol import messages
from kafkacore.protocol._base import FieldMeta, Message, Struct

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


def contains(r: tuple[int, int] | None, v: int) -> bool:
    return r is not None and r[0] <= v <= r[1]


def all_messages() -> list[type[Message]]:
    return [getattr(messages, name) for name in sorted(messages.MODULES)]


def all_cases() -> list[tuple[str, int]]:
    """Every (message class name, version)."""
    return [
        (cls.__name__, v)
        for cls in all_messages()
        for v in range(cls.MIN_VERSION, cls.MAX_VERSION + 1)
    ]


def is_flexible(cls: type[Message], version: int) -> bool:
    return cls.FLEXIBLE_VERSION is not None and version >= cls.FLEXIBLE_VERSION


def _scalar(type_name: str, flexible: bool, struct: type[Struct] | None, v: int, java: bool) -> Any:
    if type_name in INT_RANGES:
        lo, hi = INT_RANGES[type_name]
        return st.integers(lo, hi)
    if type_name == "bool":
        return st.booleans()
    if type_name == "float64":
        # Kafka's JSON reader (the Java oracle) has no infinities.
        return st.floats(allow_nan=False, allow_infinity=not java)
    if type_name == "string":
        return st.text(max_size=6)
    if type_name in ("bytes", "records"):
        return st.binary(max_size=12)
    if type_name == "uuid":
        return st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))
    assert struct is not None, type_name
    return struct_strategy(struct, v, flexible, java)


def field_strategy(f: FieldMeta, v: int, flexible: bool, java: bool = False) -> Any:
    base = f.type.removeprefix("[]")
    elem = _scalar(base, flexible, f.struct, v, java)
    s = st.lists(elem, max_size=3) if f.type.startswith("[]") else elem
    if contains(f.nullable, v):
        s = st.none() | s
    return s


_CACHE: dict[tuple[type[Struct], int, bool, bool], Any] = {}


def struct_strategy(cls: type[Struct], v: int, flexible: bool, java: bool = False) -> Any:
    """``java``: only what Kafka's JSON form can express (no unknown tags, no infinities)."""
    key = (cls, v, flexible, java)
    if key not in _CACHE:
        _CACHE[key] = _struct_strategy(cls, v, flexible, java)
    return _CACHE[key]


def _struct_strategy(cls: type[Struct], v: int, flexible: bool, java: bool) -> Any:
    kwargs: dict[str, Any] = {}
    for f in cls.FIELDS:
        if contains(f.versions, v):
            kwargs[f.attr] = field_strategy(f, v, flexible, java)
    if flexible and not java:
        first = max((f.tag for f in cls.FIELDS if f.tag is not None), default=-1) + 1
        kwargs["unknown_tagged_fields"] = st.lists(
            st.tuples(st.integers(first, first + 200), st.binary(max_size=6)),
            max_size=2,
            unique_by=lambda t: t[0],
        ).map(lambda tags: tuple(sorted(tags)))
    return st.builds(cls, **kwargs)


def message_strategy(cls: type[Message], v: int, java: bool = False) -> Any:
    return struct_strategy(cls, v, is_flexible(cls, v), java)

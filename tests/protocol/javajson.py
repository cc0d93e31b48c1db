"""Kafka's JSON form of a generated message (what ``<Name>JsonConverter.read`` takes).

Keys are the schema field names with a lower-case first letter; bytes and
records are base64; uuids use Kafka's ``Uuid.toString()`` form (URL-safe
base64 of the 16 bytes, no padding). Only fields present at the version
are written: the Java reader demands exactly those.
"""

from __future__ import annotations

import base64
import json
import math
import uuid
from typing import Any

from kafkacore.protocol._base import FieldMeta, Struct
from tests.protocol.strategies import contains


def _camel(name: str) -> str:
    return name[0].lower() + name[1:]


def _value(f: FieldMeta, value: Any, v: int, scalar_type: str) -> Any:
    if value is None:
        return None
    if f.struct is not None:
        return to_json(value, v)
    if scalar_type in ("bytes", "records"):
        return base64.b64encode(bytes(value)).decode("ascii")
    if scalar_type == "uuid":
        assert isinstance(value, uuid.UUID)
        return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")
    if scalar_type == "float64":
        assert math.isfinite(value)
    return value


def to_json(obj: Struct, v: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in obj.FIELDS:
        if not contains(f.versions, v):
            continue
        value = getattr(obj, f.attr)
        base = f.type.removeprefix("[]")
        if f.type.startswith("[]") and value is not None:
            out[_camel(f.name)] = [_value(f, x, v, base) for x in value]
        else:
            out[_camel(f.name)] = _value(f, value, v, base)
    return out


def dumps(obj: Struct, v: int) -> str:
    return json.dumps(to_json(obj, v), separators=(",", ":"))

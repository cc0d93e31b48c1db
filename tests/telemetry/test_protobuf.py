"""The hand-written protobuf writer against the protobuf runtime's own decoder."""

from __future__ import annotations

import pytest
from google.protobuf import any_pb2, wrappers_pb2
from hypothesis import given
from hypothesis import strategies as st

from kafkacore.telemetry.protobuf import (
    WireType,
    bool_field,
    bytes_field,
    double_field,
    fixed64_field,
    message_field,
    sfixed64_field,
    string_field,
    tag,
    uvarint,
    varint_field,
)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"), (300, b"\xac\x02")],
)
def test_uvarint_known_values(value: int, encoded: bytes) -> None:
    assert uvarint(value) == encoded


def test_uvarint_largest_takes_ten_bytes() -> None:
    assert uvarint((1 << 64) - 1) == b"\xff" * 9 + b"\x01"


@pytest.mark.parametrize("value", [-1, 1 << 64])
def test_uvarint_out_of_range(value: int) -> None:
    with pytest.raises(ValueError, match="outside 0"):
        uvarint(value)


@pytest.mark.parametrize("field", [0, 1 << 29])
def test_tag_field_number_out_of_range(field: int) -> None:
    with pytest.raises(ValueError, match="field number"):
        tag(field, WireType.VARINT)


def test_tag_packs_field_and_wire_type() -> None:
    assert tag(1, WireType.LEN) == b"\x0a"
    assert tag(16, WireType.I64) == b"\x81\x01"


@pytest.mark.parametrize("value", [-(1 << 63) - 1, 1 << 64])
def test_varint_field_needs_64_bits(value: int) -> None:
    with pytest.raises(ValueError, match="does not fit in 64 bits"):
        varint_field(1, value)


@given(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1))
def test_int64_round_trips_through_the_runtime(value: int) -> None:
    assert wrappers_pb2.Int64Value.FromString(varint_field(1, value)).value == value


@given(st.integers(min_value=0, max_value=(1 << 64) - 1))
def test_uint64_round_trips(value: int) -> None:
    assert wrappers_pb2.UInt64Value.FromString(varint_field(1, value)).value == value


@given(st.floats(allow_nan=False))
def test_double_round_trips(value: float) -> None:
    assert wrappers_pb2.DoubleValue.FromString(double_field(1, value)).value == value


@given(st.text())
def test_string_round_trips(value: str) -> None:
    assert wrappers_pb2.StringValue.FromString(string_field(1, value)).value == value


@given(st.binary())
def test_bytes_round_trip(value: bytes) -> None:
    assert wrappers_pb2.BytesValue.FromString(bytes_field(1, value)).value == value


def test_bool_both_ways() -> None:
    assert wrappers_pb2.BoolValue.FromString(bool_field(1, True)).value is True
    assert wrappers_pb2.BoolValue.FromString(bool_field(1, False)).value is False


def test_embedded_message() -> None:
    inner = string_field(1, "type.googleapis.com/x") + bytes_field(2, b"\x01\x02")
    outer = any_pb2.Any.FromString(inner)
    assert outer.type_url.endswith("/x") and outer.value == b"\x01\x02"
    assert message_field(3, inner) == b"\x1a" + bytes([len(inner)]) + inner


def test_fixed_width_fields_are_little_endian() -> None:
    assert fixed64_field(2, 1) == b"\x11" + (1).to_bytes(8, "little")
    assert sfixed64_field(6, -2) == b"\x31" + (-2).to_bytes(8, "little", signed=True)

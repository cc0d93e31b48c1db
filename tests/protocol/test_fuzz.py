"""Hostile bytes: every decoder raises DecodeError and nothing else."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkacore.errors import DecodeError
from kafkacore.protocol import messages
from kafkacore.protocol._base import Message
from kafkacore.protocol.messages import (
    ApiVersionsRequest,
    FetchResponse,
    MetadataResponse,
    ProduceRequest,
)
from tests.protocol.strategies import all_cases, message_strategy

FUZZ = settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize(("name", "version"), all_cases())
def test_arbitrary_bytes_raise_only_decode_error(name: str, version: int) -> None:
    cls = getattr(messages, name)

    @FUZZ
    @given(st.binary(max_size=80))
    def check(data: bytes) -> None:
        try:
            cls.decode(data, version)
        except DecodeError as exc:
            assert exc.api == cls.STRUCT_NAME
            assert exc.version == version
            assert exc.offset is not None and 0 <= exc.offset <= len(data)

    check()


@pytest.mark.parametrize(
    ("cls", "version"),
    [(MetadataResponse, 12), (FetchResponse, 17), (ProduceRequest, 9), (MetadataResponse, 5)],
)
def test_mutated_valid_messages_raise_only_decode_error(cls: type[Message], version: int) -> None:
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(message_strategy(cls, version), st.data())
    def check(msg: Message, data: st.DataObject) -> None:
        raw = bytearray(msg.encode(version))
        if not raw:
            return
        for _ in range(data.draw(st.integers(1, 4))):
            i = data.draw(st.integers(0, len(raw) - 1))
            raw[i] = data.draw(st.integers(0, 255))
        with contextlib.suppress(DecodeError):
            cls.decode(bytes(raw), version)

    check()


def test_huge_array_count_fails_before_allocating() -> None:
    # MetadataResponse v1 begins with the Brokers array: claim 2**31-1 of them.
    data = struct.pack(">i", 0x7FFFFFFF) + b"\0" * 16
    with pytest.raises(DecodeError) as info:
        MetadataResponse.decode(data, 1)
    assert info.value.field == "Brokers"
    assert "count" in info.value.reason


def test_huge_compact_array_count_fails() -> None:
    # v12 (flexible): throttle_time_ms then a compact array with count ~2**32.
    data = b"\0\0\0\0" + b"\xff\xff\xff\xff\x0f" + b"\0" * 8
    with pytest.raises(DecodeError) as info:
        MetadataResponse.decode(data, 12)
    assert info.value.field == "Brokers"


def test_huge_bytes_length_fails() -> None:
    # ProduceRequest v3: transactional_id (null), acks, timeout, one topic,
    # one partition whose records claim 2 GiB.
    body = (
        struct.pack(">hhi", -1, 1, 1000)
        + struct.pack(">i", 1)
        + struct.pack(">h", 1)
        + b"t"
        + struct.pack(">i", 1)
        + struct.pack(">i", 0)
        + struct.pack(">i", 0x7FFFFFFF)
        + b"abc"
    )
    with pytest.raises(DecodeError) as info:
        ProduceRequest.decode(body, 3)
    assert info.value.field is not None and info.value.field.endswith("Records")
    assert info.value.offset is not None


def test_overlong_varint_fails() -> None:
    data = b"\xff" * 12
    with pytest.raises(DecodeError):
        ApiVersionsRequest.decode(data, 3)


def test_invalid_utf8_fails() -> None:
    data = b"\x03\xff\xfe\x01\x00"
    with pytest.raises(DecodeError) as info:
        ApiVersionsRequest.decode(data, 3)
    assert "UTF-8" in info.value.reason
    assert info.value.field == "ClientSoftwareName"


def test_negative_length_for_non_nullable_string_fails() -> None:
    with pytest.raises(DecodeError) as info:
        # MetadataResponse v1: zero brokers, then a null controller... the
        # first broker's host must not be null.
        MetadataResponse.decode(struct.pack(">iih", 1, 7, -1) + b"\0" * 8, 1)
    assert "null" in info.value.reason

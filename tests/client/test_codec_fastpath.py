"""The client's direct response decoder against the codec's reference path.

``kafkacore.client._codec.parse_response`` steps over the response header in
place and calls the generated decoder itself (issue 12: four layers of calls
less per response). On every input it must give what
``framing.decode_response`` gives: the same message, or the same
``DecodeError`` (it falls back to the reference path for anything unusual).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkacore.client import _codec
from kafkacore.errors import DecodeError, LocalProtocolError
from kafkacore.protocol import framing
from kafkacore.protocol._base import Message
from kafkacore.protocol.messages import (
    ApiVersionsResponse,
    FetchResponse,
    FindCoordinatorResponse,
    MetadataResponse,
    ProduceResponse,
)
from tests.protocol.strategies import message_strategy

CASES = [
    (MetadataResponse, 12),
    (MetadataResponse, 5),
    (FetchResponse, 17),
    (FetchResponse, 11),
    (ProduceResponse, 9),
    (ProduceResponse, 7),
    (FindCoordinatorResponse, 4),
    (ApiVersionsResponse, 3),
]
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _body(cls: type[Message], msg: Message, version: int, cid: int = 7) -> bytes:
    return framing.encode_response(msg, version=version, correlation_id=cid)[4:]


def _reference(frame: bytes, api_key: int, version: int) -> object:
    try:
        return framing.decode_response(frame, api_key, version)[1]
    except DecodeError as exc:
        return ("error", str(exc))


def _fast(frame: bytes, api_key: int, version: int) -> object:
    try:
        return _codec.parse_response(frame, api_key, version)
    except DecodeError as exc:
        return ("error", str(exc))


@pytest.mark.parametrize(("cls", "version"), CASES)
def test_valid_responses_decode_the_same(cls: type[Message], version: int) -> None:
    @SETTINGS
    @given(message_strategy(cls, version))
    def check(msg: Message) -> None:
        frame = _body(cls, msg, version)
        assert _fast(frame, cls.API_KEY, version) == _reference(frame, cls.API_KEY, version)

    check()


@pytest.mark.parametrize(("cls", "version"), CASES)
def test_hostile_responses_fail_the_same(cls: type[Message], version: int) -> None:
    @SETTINGS
    @given(message_strategy(cls, version), st.data())
    def check(msg: Message, data: st.DataObject) -> None:
        frame = bytearray(_body(cls, msg, version))
        for _ in range(data.draw(st.integers(1, 4))):
            i = data.draw(st.integers(0, len(frame) - 1))
            frame[i] = data.draw(st.integers(0, 255))
        cut = data.draw(st.integers(0, len(frame)))
        raw = bytes(frame[:cut])
        assert _fast(raw, cls.API_KEY, version) == _reference(raw, cls.API_KEY, version)

    check()


def test_trailing_bytes_and_header_tags_take_the_reference_path() -> None:
    msg = MetadataResponse()
    frame = _body(MetadataResponse, msg, 12)
    assert _fast(frame + b"\x00", 3, 12) == _reference(frame + b"\x00", 3, 12)
    assert isinstance(_fast(frame + b"\x00", 3, 12), tuple)  # trailing bytes: an error
    tagged = frame[:4] + b"\x01\x00\x00" + frame[5:]  # one empty header tag
    assert _fast(tagged, 3, 12) == _reference(tagged, 3, 12)
    with pytest.raises(LocalProtocolError, match="version 99"):
        _codec.parse_response(frame, 3, 99)  # an unknown version: the codec's own error

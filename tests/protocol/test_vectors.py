"""Response frames captured from a real Kafka 4.3.1 broker (tests/protocol/vectors/).

Refresh them with ``KAFKACORE_CAPTURE_VECTORS=1 pytest tests/protocol/test_broker.py``.
Each file is the hex of one whole response frame (size prefix included).
Trailing bytes after a body are rejected (DecodeError): kafkacore is stricter
than the Java client, whose generated readers ignore what follows a message.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafkacore.errors import DecodeError
from kafkacore.protocol.api import APIS
from kafkacore.protocol.framing import FrameReader, decode_response, peek_correlation_id
from kafkacore.protocol.messages import ApiVersionsResponse, MetadataResponse

VECTORS = Path(__file__).resolve().parent / "vectors"
API_KEYS = {"api_versions": 18, "metadata": 3}


def _vectors() -> list[tuple[str, int, int, bytes]]:
    out = []
    for path in sorted(VECTORS.glob("*.hex")):
        m = re.fullmatch(r"(api_versions|metadata)(?:_unsupported)?_v(\d+)", path.stem)
        assert m, path.name
        version = int(m.group(2))
        api_key = API_KEYS[m.group(1)]
        if version > APIS[api_key].max_version:
            version = APIS[api_key].max_version  # we asked for an unknown version
        out.append((path.name, api_key, version, bytes.fromhex(path.read_text())))
    return out


VECTOR_CASES = _vectors()


def test_vectors_exist() -> None:
    names = {name for name, *_ in VECTOR_CASES}
    assert {f"api_versions_v{v}.hex" for v in range(5)} <= names
    assert {"metadata_v1.hex", "metadata_v13.hex", "api_versions_unsupported_v99.hex"} <= names


@pytest.mark.parametrize(("name", "api_key", "version", "frame"), VECTOR_CASES)
def test_decode_whole_and_byte_by_byte(name: str, api_key: int, version: int, frame: bytes) -> None:
    body = frame[4:]
    whole = decode_response(body, api_key, version)
    assert whole[0] == peek_correlation_id(body)
    reader = FrameReader()
    frames: list[bytes] = []
    for i in range(len(frame)):
        assert not frames
        frames += reader.feed(frame[i : i + 1])
    assert frames == [body]
    assert decode_response(frames[0], api_key, version) == whole
    # Re-encoding what we decoded gives the broker's bytes back.
    cls = APIS[api_key].response_type
    header_len = 4 if APIS[api_key].response_header_version(version) == 0 else 5
    msg = whole[1]
    wire_version = version
    if isinstance(msg, ApiVersionsResponse) and "unsupported" in name:
        wire_version = 0
    assert msg.encode(wire_version) == body[header_len:]
    assert cls.decode(body[header_len:], wire_version) == msg


@pytest.mark.parametrize(("name", "api_key", "version", "frame"), VECTOR_CASES)
def test_trailing_and_truncated_bodies_fail(
    name: str, api_key: int, version: int, frame: bytes
) -> None:
    body = frame[4:]
    header_len = 4 if APIS[api_key].response_header_version(version) == 0 else 5
    cls = APIS[api_key].response_type
    wire_version = 0 if "unsupported" in name else version
    with pytest.raises(DecodeError):
        cls.decode(body[header_len:] + b"\x00", wire_version)
    for cut in range(header_len, len(body)):
        with pytest.raises(DecodeError):
            cls.decode(body[header_len:cut], wire_version)


def test_vector_contents() -> None:
    by_name = {name: (api_key, version, frame) for name, api_key, version, frame in VECTOR_CASES}
    _, resp = decode_response(by_name["api_versions_v4.hex"][2][4:], 18, 4)
    assert isinstance(resp, ApiVersionsResponse) and resp.error_code == 0
    ranges = {a.api_key: (a.min_version, a.max_version) for a in resp.api_keys}
    assert ranges[3] == (0, 13) and ranges[1][1] == 18
    assert {f.name for f in resp.finalized_features} >= {"metadata.version"}
    _, unsupported = decode_response(by_name["api_versions_unsupported_v99.hex"][2][4:], 18, 4)
    assert isinstance(unsupported, ApiVersionsResponse) and unsupported.error_code == 35
    for version in (1, 4, 9, 12, 13):
        _, meta = decode_response(by_name[f"metadata_v{version}.hex"][2][4:], 3, version)
        assert isinstance(meta, MetadataResponse)
        (topic,) = meta.topics
        assert topic.error_code == 0 and len(topic.partitions) == 3
        assert len(meta.brokers) == 1

"""The API registry, headers, framing, error codes and the consumer protocol."""

from __future__ import annotations

import struct
import uuid

import pytest

from kafkacore.errors import BrokerError, DecodeError, LocalProtocolError
from kafkacore.protocol import error_codes, messages
from kafkacore.protocol.api import APIS, APIS_BY_NAME, REMOVED_APIS, Routing
from kafkacore.protocol.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kafkacore.protocol.framing import (
    FrameReader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    expects_response,
    peek_correlation_id,
)
from kafkacore.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    CreateTopicsRequest,
    FetchRequest,
    JoinGroupRequest,
    MetadataRequest,
    MetadataResponse,
)
from kafkacore.protocol.messages.api_versions_response import ApiVersion
from kafkacore.protocol.messages.consumer_protocol_assignment import TopicPartition
from kafkacore.protocol.messages.fetch_request import ReplicaState
from kafkacore.protocol.messages.metadata_request import MetadataRequestTopic


def test_registry_covers_every_api_key_of_the_schemas() -> None:
    requests = {getattr(messages, n).API_KEY for n in messages.MODULES if n.endswith("Request")} - {
        None
    }
    assert set(APIS) == requests
    assert set(APIS).isdisjoint(REMOVED_APIS)
    assert sorted(REMOVED_APIS) == [4, 5, 6, 7]  # ZooKeeper-era APIs, gone in 4.x
    for key, info in APIS.items():
        assert info.api_key == key
        req, resp = info.request_type, info.response_type
        assert req.API_KEY == resp.API_KEY == key
        assert (info.min_version, info.max_version) == (req.MIN_VERSION, req.MAX_VERSION)
        assert (info.min_version, info.max_version) == (resp.MIN_VERSION, resp.MAX_VERSION)
        assert info.first_flexible_version == req.FLEXIBLE_VERSION
        assert APIS_BY_NAME[info.name] is info
        if "broker" not in info.listeners:
            assert info.routing is Routing.INTERNAL


def test_registry_facts_of_4_3_1() -> None:
    assert (APIS[0].min_version, APIS[0].max_version) == (3, 13)  # KIP-896 baseline
    assert APIS[18].first_flexible_version == 3
    assert APIS[47].first_flexible_version is None  # OffsetDelete is never flexible
    assert APIS[22].latest_unstable and APIS[22].max_stable_version == APIS[22].max_version - 1
    assert APIS[1].routing is Routing.PARTITION_LEADER
    assert APIS[10].routing is Routing.ANY_NODE
    assert APIS[11].routing is Routing.GROUP_COORDINATOR
    assert APIS[26].routing is Routing.TXN_COORDINATOR
    assert APIS[19].routing is Routing.CONTROLLER
    assert APIS[52].routing is Routing.INTERNAL  # Vote: controller listener only


def test_header_versions() -> None:
    assert APIS[3].request_header_version(8) == 1
    assert APIS[3].request_header_version(9) == 2
    assert APIS[3].response_header_version(8) == 0
    assert APIS[3].response_header_version(9) == 1
    # KIP-511: ApiVersions responses always use header v0, requests do not.
    assert APIS[18].request_header_version(3) == 2
    assert APIS[18].response_header_version(4) == 0
    assert APIS[17].request_header_version(1) == 1  # SaslHandshake, never flexible


def test_encode_request_matches_hand_computed_bytes() -> None:
    frame = encode_request(
        ApiVersionsRequest(client_software_name="kafkacore", client_software_version="0.1"),
        version=3,
        correlation_id=1,
        client_id="kc",
    )
    expected = "0000001c001200030000000100026b63000a6b61666b61636f726504302e3100"
    assert frame.hex() == expected


def test_request_frame_round_trip_through_the_broker_side() -> None:
    req = MetadataRequest(topics=[MetadataRequestTopic(name="t", topic_id=uuid.uuid4())])
    for version in (4, 9, 13):
        frame = encode_request(req, version=version, correlation_id=7, client_id=None)
        (size,) = struct.unpack_from(">i", frame)
        assert size == len(frame) - 4
        header, body = decode_request(frame[4:])
        assert (header.request_api_key, header.request_api_version) == (3, version)
        assert header.correlation_id == 7 and header.client_id is None
        assert isinstance(body, MetadataRequest)
        assert body.topics is not None and body.topics[0].name == "t"


def test_response_frames_stream_byte_by_byte() -> None:
    responses = [
        (MetadataResponse(throttle_time_ms=5, cluster_id="c"), 12, 11),
        (MetadataResponse(throttle_time_ms=6), 3, 12),
    ]
    stream = b"".join(
        encode_response(msg, version=v, correlation_id=cid) for msg, v, cid in responses
    )
    reader = FrameReader()
    frames: list[bytes] = []
    for i in range(len(stream)):
        frames += reader.feed(stream[i : i + 1])
        assert reader.buffered <= len(stream)
    assert reader.buffered == 0 and reader.state is FrameReader.State.SIZE
    assert len(frames) == 2
    for frame, (msg, v, cid) in zip(frames, responses, strict=True):
        assert peek_correlation_id(frame) == cid
        assert decode_response(frame, 3, v) == (cid, msg)


def test_frame_reader_refuses_oversized_and_negative_frames() -> None:
    with pytest.raises(DecodeError):
        FrameReader(max_frame_size=100).feed(struct.pack(">i", 101))
    with pytest.raises(DecodeError):
        FrameReader().feed(struct.pack(">i", -5))
    with pytest.raises(DecodeError):
        peek_correlation_id(b"\0\0")


def test_decode_response_rejects_trailing_bytes() -> None:
    frame = encode_response(MetadataResponse(), version=12, correlation_id=1)[4:]
    with pytest.raises(DecodeError) as info:
        decode_response(frame + b"\0", 3, 12)
    assert "trailing" in info.value.reason


def test_api_versions_falls_back_to_v0_body() -> None:
    # A broker that does not know v4 answers UNSUPPORTED_VERSION in a v0 body (KIP-511).
    v0 = ApiVersionsResponse(error_code=35, api_keys=[ApiVersion(api_key=18, max_version=3)])
    frame = encode_response(v0, version=0, correlation_id=9)[4:]
    cid, resp = decode_response(frame, 18, 4)
    assert cid == 9 and resp == v0


def test_writing_a_non_default_field_the_version_lacks_is_refused() -> None:
    req = CreateTopicsRequest(validate_only=True)
    assert CreateTopicsRequest.decode(req.encode(2), 2).validate_only
    with pytest.raises(LocalProtocolError) as info:
        JoinGroupRequest(group_instance_id="static-1").encode(4)  # from v5, not ignorable
    assert "GroupInstanceId" in str(info.value) and "4" in str(info.value)
    with pytest.raises(LocalProtocolError):
        FetchRequest(replica_state=ReplicaState(replica_id=1)).encode(14)  # tagged from v15
    # Ignorable fields are dropped silently, as in Java.
    MetadataRequest(topics=[MetadataRequestTopic(name="t", topic_id=uuid.uuid4())]).encode(9)


def test_null_in_a_non_nullable_version_is_refused() -> None:
    with pytest.raises(LocalProtocolError) as info:
        MetadataRequest(topics=None).encode(0)
    assert "Topics" in str(info.value)


def test_unknown_tags_need_a_flexible_version() -> None:
    msg = MetadataRequest(unknown_tagged_fields=((99, b"x"),))
    assert MetadataRequest.decode(msg.encode(12), 12) == msg
    with pytest.raises(LocalProtocolError):
        msg.encode(8)


def test_out_of_range_values_are_local_errors() -> None:
    with pytest.raises(LocalProtocolError):
        MetadataResponse(throttle_time_ms=2**31).encode(12)
    with pytest.raises(LocalProtocolError):
        MetadataRequest().encode(99)
    with pytest.raises(LocalProtocolError):
        MetadataRequest.decode(b"", 99)


def test_error_codes() -> None:
    assert error_codes.error_for_code(0) is None
    err = error_codes.error_for_code(6, "moved")
    assert isinstance(err, error_codes.NotLeaderOrFollowerError)
    assert isinstance(err, BrokerError)
    assert err.retriable and err.invalid_metadata and err.code == 6
    assert "moved" in str(err)
    assert not error_codes.ERRORS[29].retriable  # TOPIC_AUTHORIZATION_FAILED
    assert error_codes.ERRORS[-1].name == "UNKNOWN_SERVER_ERROR"
    assert error_codes.RebalanceInProgressError.code == 27
    unknown = error_codes.error_for_code(31000)
    assert isinstance(unknown, error_codes.UnknownErrorCodeError) and unknown.code == 31000
    assert type(error_codes.error_for_code(31000)) is type(unknown)
    codes = sorted(error_codes.ERRORS)
    assert codes == [-1, *range(1, codes[-1] + 1)]
    assert len({cls.__name__ for cls in error_codes.ERRORS.values()}) == len(codes)


def test_consumer_protocol_version_prefix() -> None:
    sub = ConsumerProtocolSubscription(topics=["a", "b"], user_data=b"u", rack_id="r1")
    data = encode_subscription(sub)
    assert data[:2] == b"\x00\x03"
    version, back = decode_subscription(data)
    assert version == 3 and back == sub
    # A newer member's blob: read at our highest version, extra bytes ignored.
    version, back = decode_subscription(b"\x00\x07" + data[2:] + b"future")
    assert version == 7 and back == sub
    asg = ConsumerProtocolAssignment(
        assigned_partitions=[TopicPartition(topic="a", partitions=[0, 2])]
    )
    version, back_asg = decode_assignment(encode_assignment(asg, 0))
    assert version == 0 and back_asg == asg
    with pytest.raises(DecodeError):
        decode_subscription(b"\xff\xff")
    with pytest.raises(DecodeError):
        decode_assignment(b"\x00")


def test_encode_errors_name_the_field() -> None:
    from kafkacore.protocol.messages.metadata_response import (
        MetadataResponsePartition,
        MetadataResponseTopic,
    )

    with pytest.raises(LocalProtocolError, match=r"MetadataResponse\.ThrottleTimeMs"):
        MetadataResponse(throttle_time_ms=2**40).encode(12)
    bad = MetadataResponse(
        topics=[
            MetadataResponseTopic(
                name="a",
                partitions=[MetadataResponsePartition(replica_nodes=["x"])],  # type: ignore[list-item]
            )
        ]
    )
    with pytest.raises(LocalProtocolError, match=r"MetadataResponsePartition\.ReplicaNodes"):
        bad.encode(12)
    with pytest.raises(LocalProtocolError, match=r"MetadataResponse\.ClusterId"):
        MetadataResponse(cluster_id="\udc80").encode(12)


def test_produce_with_acks_0_expects_no_response() -> None:
    from kafkacore.protocol.messages import ProduceRequest

    assert not expects_response(ProduceRequest(acks=0))
    assert expects_response(ProduceRequest(acks=-1))
    assert expects_response(MetadataRequest())

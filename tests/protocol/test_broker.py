"""The codec against a real Kafka 4.3.1 broker over a plain blocking socket.

Each API is used at the highest version both sides support (ApiVersions
negotiation). Set KAFKACORE_CAPTURE_VECTORS=1 to refresh the captured
response frames in tests/protocol/vectors/ (see test_vectors.py).
"""

from __future__ import annotations

import os
import struct
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kafkacore.protocol import error_codes
from kafkacore.protocol.api import APIS
from kafkacore.protocol.framing import decode_response
from kafkacore.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafkacore.protocol.messages.create_topics_request import CreatableTopic
from kafkacore.protocol.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic
from kafkacore.protocol.messages.metadata_request import MetadataRequestTopic
from tests.protocol.brokerconn import BrokerConn

pytestmark = pytest.mark.broker
CAPTURE = os.environ.get("KAFKACORE_CAPTURE_VECTORS") == "1"


@pytest.fixture
def conn(kafka_broker: Any) -> Iterator[BrokerConn]:
    c = BrokerConn(kafka_broker.host, kafka_broker.port, capture=CAPTURE)
    try:
        yield c
    finally:
        c.close()


def test_api_versions(conn: BrokerConn) -> None:
    for version in range(APIS[18].min_version, APIS[18].max_version + 1):
        resp = conn.call(
            ApiVersionsRequest(client_software_name="kafkacore", client_software_version="0.1"),
            version,
            save_as=f"api_versions_v{version}.hex",
        )
        assert isinstance(resp, ApiVersionsResponse)
        assert resp.error_code == 0
        advertised = {a.api_key: (a.min_version, a.max_version) for a in resp.api_keys}
        assert advertised[18] == (APIS[18].min_version, APIS[18].max_version)
        for key, (lo, hi) in advertised.items():
            # Same release: every advertised API is known and its maximum is
            # ours (brokers hide unstable latest versions by default). The
            # minimum may be lower: 4.x brokers still advertise Produce v0
            # (KAFKA-18659) although they reject v0-v2.
            assert key in APIS, key
            assert lo <= APIS[key].max_version
            expected = APIS[key].max_stable_version
            assert hi in (expected, APIS[key].max_version), (key, hi)
        assert {k for k, (lo, _) in advertised.items() if lo < APIS[k].min_version} <= {0}
        if version >= 3:
            assert any(f.name == "metadata.version" for f in resp.finalized_features)


def test_api_versions_newer_than_the_broker_gets_a_v0_answer(conn: BrokerConn) -> None:
    # KIP-511: a version the broker does not know is answered in a v0 body
    # with UNSUPPORTED_VERSION and the broker's ApiVersions range.
    body = ApiVersionsRequest(
        client_software_name="kafkacore", client_software_version="0.1"
    ).encode(4)
    client_id = b"kafkacore-tests"
    header = struct.pack(">hhih", 18, 99, 4242, len(client_id)) + client_id + b"\x00"
    frame = struct.pack(">i", len(header) + len(body)) + header + body
    raw = conn.send_raw(frame)
    if CAPTURE:
        (conn_vectors := __import__("pathlib").Path(__file__).parent / "vectors").mkdir(
            exist_ok=True
        )
        (conn_vectors / "api_versions_unsupported_v99.hex").write_text(
            (struct.pack(">i", len(raw)) + raw).hex() + "\n", encoding="ascii"
        )
    cid, resp = decode_response(raw, 18, 4)
    assert cid == 4242
    assert isinstance(resp, ApiVersionsResponse)
    assert resp.error_code == error_codes.UnsupportedVersionError.code
    assert [(a.api_key, a.max_version) for a in resp.api_keys] == [(18, APIS[18].max_version)]


def _create(conn: BrokerConn, version: int, name: str, partitions: int) -> CreateTopicsResponse:
    resp = conn.call(
        CreateTopicsRequest(
            topics=[CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)],
            timeout_ms=30000,
        ),
        version,
    )
    assert isinstance(resp, CreateTopicsResponse)
    return resp


def _metadata_until_led(
    conn: BrokerConn, version: int, name: str, *, save: bool = False
) -> MetadataResponse:
    # Leaders are elected asynchronously after CreateTopics; poll a bounded
    # number of times (this waits on a real broker, not on kafkacore).
    for _ in range(100):
        resp = conn.call(
            MetadataRequest(topics=[MetadataRequestTopic(name=name)]),
            version,
            save_as=f"metadata_v{version}.hex" if save else None,
        )
        assert isinstance(resp, MetadataResponse)
        topic = resp.topics[0]
        if topic.error_code == 0 and all(p.leader_id >= 0 for p in topic.partitions):
            return resp
        time.sleep(0.1)
    raise AssertionError(f"topic {name} got no leaders")


def test_create_topics_then_metadata(conn: BrokerConn, kafka_broker: Any) -> None:
    versions = conn.negotiate()
    name = f"codec-{uuid.uuid4().hex[:8]}"
    created = _create(conn, versions[19], name, 3)
    assert created.topics[0].name == name
    assert created.topics[0].error_code == 0, created
    assert created.topics[0].num_partitions == 3
    topic_id = created.topics[0].topic_id

    again = _create(conn, versions[19], name, 3)
    err = error_codes.error_for_code(again.topics[0].error_code, again.topics[0].error_message)
    assert isinstance(err, error_codes.TopicAlreadyExistsError)

    for version in sorted({versions[3], 12, 9, 4, 1}):
        meta = _metadata_until_led(conn, version, name, save=True)
        assert any(b.port == kafka_broker.port for b in meta.brokers)
        node_ids = {b.node_id for b in meta.brokers}
        (topic,) = meta.topics
        assert topic.name == name
        if version >= 10:
            assert topic.topic_id == topic_id
        assert sorted(p.partition_index for p in topic.partitions) == [0, 1, 2]
        assert all(p.leader_id in node_ids for p in topic.partitions)
        assert all(p.replica_nodes == [p.leader_id] for p in topic.partitions)


def test_list_offsets(conn: BrokerConn) -> None:
    versions = conn.negotiate()
    name = f"codec-{uuid.uuid4().hex[:8]}"
    assert _create(conn, versions[19], name, 2).topics[0].error_code == 0
    _metadata_until_led(conn, versions[3], name)
    req = ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsTopic(
                name=name,
                partitions=[ListOffsetsPartition(partition_index=p, timestamp=-1) for p in (0, 1)],
            )
        ],
    )
    # A fresh leader may answer NOT_LEADER_OR_FOLLOWER for a moment after
    # Metadata shows it (the replica is still being made leader): retriable,
    # so retry a bounded number of times as a client would.
    for _ in range(100):
        resp = conn.call(req, versions[2])
        assert isinstance(resp, ListOffsetsResponse)
        (topic,) = resp.topics
        assert topic.name == name
        errors = [error_codes.error_for_code(p.error_code) for p in topic.partitions]
        if all(e is None for e in errors):
            break
        assert all(e is None or e.retriable for e in errors), errors
        time.sleep(0.1)
    assert sorted((p.partition_index, p.error_code, p.offset) for p in topic.partitions) == [
        (0, 0, 0),
        (1, 0, 0),
    ]


def test_find_coordinator(conn: BrokerConn, kafka_broker: Any) -> None:
    versions = conn.negotiate()
    assert versions[10] >= 4
    group = f"codec-group-{uuid.uuid4().hex[:8]}"
    # The offsets topic is created on first use: COORDINATOR_NOT_AVAILABLE until then.
    for _ in range(100):
        resp = conn.call(FindCoordinatorRequest(key_type=0, coordinator_keys=[group]), versions[10])
        assert isinstance(resp, FindCoordinatorResponse)
        (coordinator,) = resp.coordinators
        assert coordinator.key == group
        err = error_codes.error_for_code(coordinator.error_code)
        if err is None:
            assert coordinator.port == kafka_broker.port
            assert coordinator.node_id >= 0
            return
        assert err.retriable, err
        time.sleep(0.1)
    raise AssertionError("no group coordinator became available")

"""A client on the wrong listener is told which security protocol to set.

Unit tests feed a BrokerConnection the bytes a TLS port answers with; the
SASL case runs through the client core with the fake broker. The real
listeners are exercised in tests/transports/test_security.py.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from kafkacore.client import ClientConfig, KafkaClientCore, Node
from kafkacore.client.connection import BrokerConnection
from kafkacore.client.listener_hints import (
    frame_size_error,
    sasl_close_hint,
    tls_answer,
    wrong_protocol_error,
)
from kafkacore.errors import DecodeError, KafkaConnectionError
from kafkacore.protocol import messages as m
from tests.client.fakebroker import Pump, boot

#: What a TLS 1.2/1.3 engine sends to a clear-text ApiVersions: a fatal alert record.
TLS_ALERT = bytes([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x32])


def _conn(**config: object) -> BrokerConnection:
    conn = BrokerConnection(
        conn_id=1,
        node_id=1,
        lane="default",
        host="10.0.0.1",
        port=9093,
        config=ClientConfig(**config),  # type: ignore[arg-type]
        rng=random.Random(0),
        now=0.0,
    )
    conn.connection_made(now=0.0)
    conn.pull_writes()
    return conn


@pytest.mark.parametrize(
    ("first", "expected"),
    [
        (TLS_ALERT, True),
        (bytes([0x16, 0x03, 0x01]), True),  # a handshake record
        (bytes([0x15, 0x03]), False),  # too short to tell
        (bytes([0x00, 0x00, 0x01, 0x00]), False),  # a Kafka size prefix
        (bytes([0x15, 0x02, 0x00]), False),  # not TLS 1.x
        (bytes([0x15, 0x03, 0x05]), False),
    ],
)
def test_tls_record_headers_are_recognised(first: bytes, expected: bool) -> None:
    assert tls_answer(first) is expected


@pytest.mark.parametrize(("ours", "wanted"), [("PLAINTEXT", "SSL"), ("SASL_PLAINTEXT", "SASL_SSL")])
def test_a_tls_answer_closes_the_connection_naming_the_protocol_to_set(
    ours: str, wanted: str
) -> None:
    extra = {"sasl_mechanism": "PLAIN", "sasl_plain_username": "u", "sasl_plain_password": "p"}
    conn = _conn(security_protocol=ours, **(extra if ours.startswith("SASL") else {}))
    conn.data_received(TLS_ALERT, now=0.1)
    assert conn.closed
    error = conn.close_error
    assert isinstance(error, KafkaConnectionError)
    assert str(error) == (
        f"the broker 1 at 10.0.0.1:9093 answered with TLS: set security_protocol={wanted} "
        f"(this client uses {ours}, which does not encrypt)"
    )
    assert "max_frame_size" not in str(error)


def test_tls_bytes_later_in_the_stream_are_a_frame_error_naming_the_real_option() -> None:
    conn = _conn(max_response_bytes=1000)
    conn.data_received(b"\x00\x00", now=0.1)  # half a size prefix first
    conn.data_received(b"\xff\xff", now=0.2)
    error = conn.close_error
    assert isinstance(error, DecodeError)
    assert "max_response_bytes=1000" in str(error) and "max_frame_size" not in str(error)
    assert "10.0.0.1:9093" in str(error)


def test_frame_size_error_keeps_where_it_failed() -> None:
    original = DecodeError(
        "frame size 5 outside 0..1; the peer is not speaking Kafka or max_frame_size is too small",
        api="frame",
        offset=0,
    )
    rewritten = frame_size_error(original, max_response_bytes=1)
    assert rewritten.api == "frame" and rewritten.offset == 0
    assert rewritten.reason.startswith("frame size 5 outside 0..1; the broker is not speaking")


def test_wrong_protocol_and_sasl_hint_texts() -> None:
    assert "SSL" in str(wrong_protocol_error("broker 1", security_protocol="PLAINTEXT"))
    assert "security_protocol=SASL_SSL" in sasl_close_hint("SSL")
    assert "security_protocol=SASL_PLAINTEXT" in sasl_close_hint("PLAINTEXT")


def _silent_after_api_versions(pump: Pump) -> None:
    """The fake brokers answer ApiVersions and nothing else (a SASL listener's way)."""
    for broker in pump.brokers.values():
        real = broker.respond

        def respond(frame: bytes, session: dict[str, Any], real: Any = real) -> bytes | None:
            reply: bytes | None = real(frame, session)
            return reply if frame[0:2] == API_VERSIONS_KEY else None

        broker.respond = respond  # type: ignore[method-assign]


API_VERSIONS_KEY = (18).to_bytes(2, "big")


def _lost_after_api_versions(**config: Any) -> tuple[KafkaClientCore, Pump, BrokerConnection]:
    core, pump, _ = boot(**config)
    _silent_after_api_versions(pump)
    core.send(m.MetadataRequest(topics=[]), now=pump.now, target=Node(0))

    def waiting() -> bool:
        conn = core._pool.conn(0, "default")
        return conn is not None and conn.ready and conn.in_flight_count > 0

    pump.run(until=waiting, jump=False)
    conn = core._pool.conn(0, "default")
    assert conn is not None and conn.answered == 0
    core.connection_lost(conn.conn_id, None, now=pump.now)
    return core, pump, conn


def test_a_close_right_after_api_versions_hints_at_a_sasl_listener() -> None:
    core, _, _conn = _lost_after_api_versions()
    error = core._pool.health.last_error(0)
    assert error is not None
    assert str(error).startswith("connection to broker 0 at 127.0.0.1:9092 lost (closed by the")
    assert "SASL listener" in str(error) and "security_protocol=SASL_PLAINTEXT" in str(error)


def test_no_sasl_hint_once_the_broker_answered_a_request() -> None:
    core, pump, _ = boot()
    handle = core.send(m.MetadataRequest(topics=[]), now=pump.now, target=Node(0))
    pump.run(until=lambda: handle.done)
    conn = core._pool.conn(0, "default")
    assert conn is not None and conn.answered == 1
    core.send(m.MetadataRequest(topics=[]), now=pump.now, target=Node(0))
    core.connection_lost(conn.conn_id, None, now=pump.now)
    error = core._pool.health.last_error(0)
    assert error is not None and "SASL" not in str(error)

"""The users the launcher creates really log in, over PLAIN and SCRAM (RFC 5802/7677).

The SCRAM client here is a minimal test-only one, written to check the
launcher's format-time ``--add-scram`` users, not kafkacore's SASL machine.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import socket
import ssl
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from kafkacore.testing import LocalKafka, wire

SASL_AUTHENTICATION_FAILED = 58
TOPIC_AUTHORIZATION_FAILED = 29


@contextmanager
def sasl_socket(kafka: LocalKafka, listener: str) -> Iterator[socket.socket]:
    host, port = kafka.listener(listener)
    tls = None
    if listener == "SASL_SSL":
        assert kafka.ca_file is not None
        tls = ssl.create_default_context(cafile=str(kafka.ca_file))
    with wire.connect(host, port, 10.0, tls) as sock:
        yield sock


def plain_login(sock: socket.socket, user: str, password: str) -> tuple[int, str | None]:
    error, _ = wire.sasl_handshake_on(sock, "PLAIN", correlation_id=1)
    assert error == 0
    token = b"\0" + user.encode() + b"\0" + password.encode()
    code, message, _ = wire.sasl_authenticate_on(sock, token, correlation_id=2)
    return code, message


def scram_login(sock: socket.socket, mechanism: str, user: str, password: str) -> int:
    """Run a SCRAM exchange; return the final error code (0: logged in and server verified)."""
    algo = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
    error, _ = wire.sasl_handshake_on(sock, mechanism, correlation_id=1)
    assert error == 0
    client_nonce = base64.b64encode(os.urandom(18)).decode()  # test code: real randomness is fine
    first_bare = f"n={user},r={client_nonce}"
    code, message, server_first_raw = wire.sasl_authenticate_on(
        sock, b"n,," + first_bare.encode(), correlation_id=2
    )
    assert code == 0, message
    server_first = server_first_raw.decode()
    fields = dict(item.split("=", 1) for item in server_first.split(","))
    assert fields["r"].startswith(client_nonce)
    salted = hashlib.pbkdf2_hmac(
        algo, password.encode(), base64.b64decode(fields["s"]), int(fields["i"])
    )
    client_key = hmac.digest(salted, b"Client Key", algo)
    stored_key = hashlib.new(algo, client_key).digest()
    without_proof = f"c=biws,r={fields['r']}"
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac.digest(stored_key, auth_message, algo)
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    final = f"{without_proof},p={base64.b64encode(proof).decode()}"
    code, _, server_final = wire.sasl_authenticate_on(sock, final.encode(), correlation_id=3)
    if code != 0:
        return code
    server_key = hmac.digest(salted, b"Server Key", algo)
    expected = base64.b64encode(hmac.digest(server_key, auth_message, algo)).decode()
    assert server_final.decode() == f"v={expected}"
    return 0


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_plain_login_then_metadata(kafka_broker: LocalKafka, listener: str) -> None:
    with sasl_socket(kafka_broker, listener) as sock:
        assert plain_login(sock, "alice", kafka_broker.users["alice"])[0] == 0
        answer = wire.metadata_on(sock, correlation_id=3)
    assert [b.node_id for b in answer.brokers] == [1]


def test_plain_login_with_wrong_password_fails(kafka_broker: LocalKafka) -> None:
    with sasl_socket(kafka_broker, "SASL_PLAINTEXT") as sock:
        code, message = plain_login(sock, "alice", "not-the-password")
    assert code == SASL_AUTHENTICATION_FAILED
    assert message


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("user", ["alice", "admin"])
def test_scram_users_created_at_format_time_log_in(
    kafka_broker: LocalKafka, listener: str, mechanism: str, user: str
) -> None:
    with sasl_socket(kafka_broker, listener) as sock:
        assert scram_login(sock, mechanism, user, kafka_broker.users[user]) == 0
        answer = wire.metadata_on(sock, correlation_id=4)
    assert [b.node_id for b in answer.brokers] == [1]


def test_scram_login_with_wrong_password_fails(kafka_broker: LocalKafka) -> None:
    with sasl_socket(kafka_broker, "SASL_PLAINTEXT") as sock:
        assert scram_login(sock, "SCRAM-SHA-256", "alice", "wrong") == SASL_AUTHENTICATION_FAILED


def test_authorizer_denies_alice_and_lets_admin_through() -> None:
    """With the authorizer on and no ACLs, alice sees nothing; admin (super user) does."""
    with LocalKafka(listeners=("PLAINTEXT", "SASL_PLAINTEXT"), authorizer=True) as kafka:
        name = f"lk-{uuid.uuid4().hex[:8]}"
        # PLAINTEXT is ANONYMOUS, a super user (inter-broker traffic needs it).
        kafka.create_topic(name)
        results = {}
        for user in ("alice", "admin"):
            with sasl_socket(kafka, "SASL_PLAINTEXT") as sock:
                assert plain_login(sock, user, kafka.users[user])[0] == 0
                (topic,) = wire.metadata_on(sock, [name], correlation_id=3).topics
                results[user] = topic.error_code
    assert results == {"alice": TOPIC_AUTHORIZATION_FAILED, "admin": 0}

"""Failures that must surface as themselves, against real sockets, once per transport.

Issue 10, fault 8: a producer with a dead bootstrap address or a wrong
SASL password waited 60 s and then said "topic not present in metadata
... (is auto-creation off?)". Now the refused credentials fail the record
at once with an AuthenticationError naming the broker, and a cluster never
reached fails it with NoBrokersAvailable naming the address when
``max_block_ms`` runs out (not before: issue 26, a broker may be late).
"""

from __future__ import annotations

import socket
import time
import uuid
from typing import Any

import pytest

from kafkacore.errors import (
    AuthenticationError,
    KafkaConnectionError,
    NoBrokersAvailable,
)
from tests.producer.drivers import FLAVORS, run


def _dead_port() -> int:
    """A local port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.mark.parametrize("flavor", FLAVORS)
def test_a_dead_bootstrap_address_fails_the_send_at_max_block_ms(flavor: str) -> None:
    """A cluster never reached is reported when max_block_ms runs out, as itself
    (a broker that comes up before is used: tests/faults/test_late_broker.py)."""
    port = _dead_port()
    start = time.monotonic()
    results = run(
        flavor,
        f"127.0.0.1:{port}",
        [("send", "anything", b"x", None, None, None)],
        max_block_ms=2000,
        reconnect_backoff_ms=50,
    )
    elapsed = time.monotonic() - start
    error = results[0]
    assert isinstance(error, NoBrokersAvailable), repr(error)
    assert isinstance(error.__cause__, KafkaConnectionError), repr(error.__cause__)
    assert "not present" not in str(error)
    assert f"127.0.0.1:{port}" in str(error) and "max_block_ms=2000" in str(error)
    assert 2.0 <= elapsed < 2.0 + 3.0  # the bound, plus a busy machine's start and stop


@pytest.mark.parametrize("flavor", FLAVORS)
def test_a_wrong_password_fails_the_send_at_once(kafka_broker: Any, flavor: str) -> None:
    topic = f"auth-{uuid.uuid4().hex[:8]}"
    start = time.monotonic()
    results = run(
        flavor,
        kafka_broker.bootstrap_for("SASL_PLAINTEXT"),
        [("send", topic, b"x", None, None, None)],
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="alice",
        sasl_plain_password="wrong-password",
        # max_block_ms stays at its default, 60 s: it must not be waited for.
    )
    elapsed = time.monotonic() - start
    error = results[0]
    assert isinstance(error, AuthenticationError), repr(error)
    assert "authentication failed" in str(error).lower(), str(error)
    assert "node -1" in str(error)  # the bootstrap broker that refused us
    assert "wrong-password" not in str(error)
    assert elapsed < 20.0

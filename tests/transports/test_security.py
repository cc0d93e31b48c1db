"""Security conformance: SASL and TLS against the broker's real listeners, per transport."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from kafkacore.errors import AuthenticationError
from kafkacore.protocol.messages import MetadataRequest

from .conftest import Flavor

pytestmark = pytest.mark.anyio

USER, PASSWORD = "alice", "alice-secret"


def _sasl(mechanism: str, password: str = PASSWORD) -> dict[str, Any]:
    return {
        "sasl_mechanism": mechanism,
        "sasl_plain_username": USER,
        "sasl_plain_password": password,
    }


async def _round_trip(flavor: Flavor, bootstrap: str, **options: Any) -> None:
    async with flavor.client(bootstrap, **options) as client:
        cluster = await client.metadata()
        assert set(cluster) == {1}
        response = await client.send(MetadataRequest(topics=[]), node_id=1)
        assert [b.node_id for b in response.brokers] == [1]
        # The broker advertises the listener we came in on.
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        assert (response.brokers[0].host, response.brokers[0].port) == (host, int(port))


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
async def test_sasl_plaintext(flavor: Flavor, kafka_broker: Any, mechanism: str) -> None:
    await _round_trip(
        flavor,
        kafka_broker.bootstrap_for("SASL_PLAINTEXT"),
        security_protocol="SASL_PLAINTEXT",
        **_sasl(mechanism),
    )


async def test_ssl(flavor: Flavor, kafka_broker: Any) -> None:
    await _round_trip(
        flavor,
        kafka_broker.bootstrap_for("SSL"),
        security_protocol="SSL",
        ssl_cafile=str(kafka_broker.ca_file),
    )


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
async def test_sasl_ssl(flavor: Flavor, kafka_broker: Any, mechanism: str) -> None:
    await _round_trip(
        flavor,
        kafka_broker.bootstrap_for("SASL_SSL"),
        security_protocol="SASL_SSL",
        ssl_cafile=str(kafka_broker.ca_file),
        **_sasl(mechanism),
    )


async def test_ssl_hostname_mismatch_is_rejected(flavor: Flavor, kafka_broker: Any) -> None:
    err = await flavor.connect_error(
        kafka_broker.bootstrap_for("SSL"),
        security_protocol="SSL",
        ssl_cafile=str(kafka_broker.ca_file),
        ssl_server_hostname="not-this-broker.invalid",
    )
    assert isinstance(err, AuthenticationError), repr(err)
    assert "not-this-broker.invalid" in str(err)


async def test_ssl_unknown_ca_is_rejected(flavor: Flavor, kafka_broker: Any) -> None:
    # No ssl_cafile: the system trust store does not know the test CA.
    err = await flavor.connect_error(kafka_broker.bootstrap_for("SSL"), security_protocol="SSL")
    assert isinstance(err, AuthenticationError), repr(err)
    assert "certificate" in str(err)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
async def test_wrong_password_fails_once_with_authentication_error(
    flavor: Flavor, kafka_broker: Any, mechanism: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="kafkacore")
    secret = "wrong-password-4f1c9"
    err, (metrics, config_repr) = await flavor.failed_connect(
        kafka_broker.bootstrap_for("SASL_PLAINTEXT"),
        lambda core: (core.metrics(), repr(core.config)),
        settle=1.0,  # the client stays open a while: it must not retry
        security_protocol="SASL_PLAINTEXT",
        reconnect_backoff_ms=1,
        reconnect_backoff_max_ms=1,
        **_sasl(mechanism, password=secret),
    )
    assert isinstance(err, AuthenticationError), repr(err)
    assert "authentication failed" in str(err).lower()
    # One connection, one refusal, and no retry loop afterwards (with a 1 ms
    # backoff, a loop would have made hundreds of connections in that second).
    assert metrics.authentication_failures == 1
    assert metrics.connections_opened == 1
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert any("authentication" in r.getMessage() for r in errors), caplog.text
    # The password is in no log line, error message or repr.
    for text in (caplog.text, str(err), repr(err), config_repr):
        assert secret not in text

"""ClientConfig: seed names and defaults, validation with clear errors."""

from __future__ import annotations

import pytest

from kafkacore.client.config import ClientConfig, parse_bootstrap_servers
from kafkacore.errors import LocalProtocolError


def test_seed_defaults() -> None:
    c = ClientConfig()
    assert c.bootstrap_addresses == (("localhost", 9092),)
    assert c.reconnect_backoff_ms == 50
    assert c.reconnect_backoff_max_ms == 1000
    assert c.request_timeout_ms == 30000
    assert c.connections_max_idle_ms == 540000
    assert c.retry_backoff_ms == 100
    assert c.max_in_flight_requests_per_connection == 5
    assert c.metadata_max_age_ms == 300000
    assert c.security_protocol == "PLAINTEXT"
    assert c.ssl_check_hostname is True
    assert c.sasl_kerberos_service_name == "kafka"
    assert c.socket_options == ((6, 1, 1),)  # IPPROTO_TCP, TCP_NODELAY, 1
    assert not c.tls and not c.sasl


@pytest.mark.parametrize(
    ("servers", "expected"),
    [
        (None, (("localhost", 9092),)),
        ([], (("localhost", 9092),)),
        ("", (("localhost", 9092),)),
        ("kafka1", (("kafka1", 9092),)),
        ("kafka1:19092", (("kafka1", 19092),)),
        ("a:1,b:2", (("a", 1), ("b", 2))),
        (["a:1", "b"], (("a", 1), ("b", 9092))),
        ("[::1]:9093", (("::1", 9093),)),
        ("[::1]", (("::1", 9092),)),
        ("[fe80::1]:1, h:2", (("fe80::1", 1), ("h", 2))),
        ("a:1,a:1", (("a", 1),)),
        ("127.0.0.1:9092", (("127.0.0.1", 9092),)),
    ],
)
def test_bootstrap_parsing(servers: object, expected: tuple[tuple[str, int], ...]) -> None:
    assert parse_bootstrap_servers(servers) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("servers", "match"),
    [
        ("::1:9092", "brackets"),
        ("[::1", "without"),
        ("[::1]x", "junk"),
        ("[zz]:1", "IPv6"),
        ("host:", "empty port"),
        ("host:abc", "not a number"),
        ("host:0", "out of range"),
        ("host:70000", "out of range"),
        ("ho st:1", "bad host"),
        ([1], "not a 'host"),
        (42, "expected"),
    ],
)
def test_bootstrap_errors(servers: object, match: str) -> None:
    with pytest.raises(LocalProtocolError, match=match):
        ClientConfig(bootstrap_servers=servers)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"request_timeout_ms": 0}, "request_timeout_ms"),
        ({"max_in_flight_requests_per_connection": 0}, "max_in_flight"),
        ({"retry_backoff_ms": -1}, "retry_backoff_ms"),
        ({"reconnect_backoff_ms": 2000}, "reconnect_backoff_max_ms"),
        ({"metadata_max_age_ms": True}, "expected an int"),
        ({"security_protocol": "TLS"}, "security_protocol"),
        ({"security_protocol": "SASL_PLAINTEXT"}, "needs sasl_mechanism"),
        ({"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN"}, "sasl_plain_username"),
        (
            {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "OAUTHBEARER"},
            "token_provider",
        ),
        ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "GSSAPI"}, "not built in"),
        ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "NOPE"}, "not one of"),
        ({"client_id": 5}, "client_id"),
    ],
)
def test_validation_errors(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(LocalProtocolError, match=match):
        ClientConfig(**kwargs)  # type: ignore[arg-type]


def test_security_flags_and_transport_options() -> None:
    c = ClientConfig(
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="u",
        sasl_plain_password="p",
        ssl_cafile="/ca.pem",
    )
    assert c.tls and c.sasl
    assert c.transport_options()["ssl_cafile"] == "/ca.pem"
    assert ClientConfig(security_protocol="SSL").tls


def test_gssapi_through_factory_is_accepted() -> None:
    c = ClientConfig(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="GSSAPI",
        sasl_mechanism_factory=lambda name, host: None,  # type: ignore[arg-type,return-value]
    )
    assert c.sasl_mechanism == "GSSAPI"


def test_config_is_frozen() -> None:
    c = ClientConfig()
    with pytest.raises(AttributeError):
        c.client_id = "x"  # type: ignore[misc]

"""The single local broker: it answers real Kafka requests on every listener."""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from kafkacore.testing import LocalKafka, TopicError, wire


def test_plaintext_answers_api_versions(kafka_broker: LocalKafka) -> None:
    versions = {v.api_key: v for v in wire.api_versions(kafka_broker.host, kafka_broker.port)}
    api = versions[wire.API_VERSIONS]
    assert api.min_version == 0
    assert api.max_version >= 3  # flexible ApiVersions (KIP-511) exists since 2.4
    produce = versions[0]
    assert 0 <= produce.min_version <= produce.max_version
    assert len(versions) > 20
    assert kafka_broker.bootstrap == f"127.0.0.1:{kafka_broker.port}"
    assert kafka_broker.listener("PLAINTEXT") == ("127.0.0.1", kafka_broker.port)


def test_metadata_lists_the_broker(kafka_broker: LocalKafka) -> None:
    answer = wire.metadata(kafka_broker.host, kafka_broker.port)
    assert [(b.node_id, b.host, b.port) for b in answer.brokers] == [
        (1, "127.0.0.1", kafka_broker.port)
    ]
    assert answer.controller_id == 1


def test_create_topic_waits_for_leaders(kafka_broker: LocalKafka) -> None:
    name = f"lk-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(name, partitions=3, configs={"cleanup.policy": "compact"})
    answer = wire.metadata(kafka_broker.host, kafka_broker.port, [name])
    (topic,) = answer.topics
    assert topic.error_code == 0
    assert sorted(p.partition for p in topic.partitions) == [0, 1, 2]
    assert all(p.leader == 1 for p in topic.partitions)


def _tls_context(kafka_broker: LocalKafka) -> ssl.SSLContext:
    assert kafka_broker.ca_file is not None
    ctx = ssl.create_default_context(cafile=str(kafka_broker.ca_file))
    assert ctx.check_hostname and ctx.verify_mode is ssl.CERT_REQUIRED
    return ctx


@pytest.mark.parametrize("server_name", ["127.0.0.1", "localhost"])
def test_ssl_listener_verifies_against_generated_ca(
    kafka_broker: LocalKafka, server_name: str
) -> None:
    host, port = kafka_broker.listener("SSL")
    ctx = _tls_context(kafka_broker)
    with (
        socket.create_connection((host, port), timeout=10) as raw,
        ctx.wrap_socket(raw, server_hostname=server_name) as tls,
    ):
        cert = tls.getpeercert()
        assert cert is not None
        sans = {str(entry[1]) for entry in cert.get("subjectAltName", ())}
        assert {"127.0.0.1", "localhost"} <= sans
        body = wire.roundtrip(tls, wire.API_VERSIONS, 0, b"")
    keys = {v.api_key for v in wire.parse_api_versions(body)}
    assert wire.API_VERSIONS in keys


def test_ssl_listener_rejects_a_wrong_hostname(kafka_broker: LocalKafka) -> None:
    host, port = kafka_broker.listener("SSL")
    ctx = _tls_context(kafka_broker)
    with (
        socket.create_connection((host, port), timeout=10) as raw,
        pytest.raises(ssl.SSLCertVerificationError),
    ):
        ctx.wrap_socket(raw, server_hostname="not-this-host.example")


def test_ssl_listener_rejects_an_unknown_ca(kafka_broker: LocalKafka) -> None:
    host, port = kafka_broker.listener("SSL")
    ctx = ssl.create_default_context()  # system CAs only: our CA is not among them
    with (
        socket.create_connection((host, port), timeout=10) as raw,
        pytest.raises(ssl.SSLCertVerificationError),
    ):
        ctx.wrap_socket(raw, server_hostname=host)


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_listener_offers_mechanisms(
    kafka_broker: LocalKafka, listener: str, mechanism: str
) -> None:
    host, port = kafka_broker.listener(listener)
    tls = _tls_context(kafka_broker) if listener == "SASL_SSL" else None
    error, mechanisms = wire.sasl_handshake(host, port, mechanism, tls=tls)
    assert error == 0
    assert set(mechanisms) == {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}


def test_sasl_listener_refuses_an_unknown_mechanism(kafka_broker: LocalKafka) -> None:
    host, port = kafka_broker.listener("SASL_PLAINTEXT")
    error, mechanisms = wire.sasl_handshake(host, port, "GSSAPI")
    assert error == 33  # UNSUPPORTED_SASL_MECHANISM
    assert "PLAIN" in mechanisms


def test_fixture_exposes_users_and_jars(kafka_broker: LocalKafka) -> None:
    assert kafka_broker.users["alice"] == "alice-secret"
    assert "admin" in kafka_broker.users
    assert kafka_broker.classpath.endswith("*")
    assert kafka_broker.log_path.is_file()


def test_create_topic_refuses_an_existing_name(kafka_broker: LocalKafka) -> None:
    name = f"lk-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(name)
    with pytest.raises(TopicError) as info:
        kafka_broker.create_topic(name)
    assert info.value.error_code == 36  # TOPIC_ALREADY_EXISTS
    assert name in str(info.value)


def test_create_topic_rejects_a_bad_config(kafka_broker: LocalKafka) -> None:
    with pytest.raises(TopicError) as info:
        kafka_broker.create_topic(f"lk-{uuid.uuid4().hex[:8]}", configs={"no.such.config": "1"})
    assert info.value.error_code == 40  # INVALID_CONFIG


def test_java_tools_run_against_the_broker(kafka_broker: LocalKafka) -> None:
    name = f"lk-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(name, partitions=2)
    out = kafka_broker.run_tool(
        "org.apache.kafka.tools.TopicCommand",
        "--bootstrap-server",
        kafka_broker.bootstrap,
        "--describe",
        "--topic",
        name,
    ).stdout
    assert f"Topic: {name}" in out
    assert "PartitionCount: 2" in out


def test_cli_probe_and_libs(kafka_broker: LocalKafka, kafka_libs: Path) -> None:
    probe = subprocess.run(
        [sys.executable, "-m", "kafkacore.testing", "probe", kafka_broker.bootstrap],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    rows = [line.split() for line in probe.stdout.splitlines()[1:]]
    assert ["18", "0", "4"] in rows
    libs = subprocess.run(
        [sys.executable, "-m", "kafkacore.testing", "libs"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert Path(libs.stdout.strip()) == kafka_libs

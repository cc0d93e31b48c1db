"""Connection options: a Kafka properties file, KAFKACORE_* variables and -X flags,
mapped onto kafkacore's options (no broker), then used for real by a subprocess."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from kafkacore import KafkaAdminClient
from kafkacore.admin import NewTopic
from kafkacore.testing import LocalKafka
from kafkacore.transports.cli._options import env_name, parse_properties, resolve_connection
from tests.cli.conftest import Cli, clean_env, run_cli

JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
    '    username="alice" password="a b;c";\n'
)


def test_properties_file_maps_onto_options(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text(
        "# comment\n! also a comment\n\n"
        "bootstrap.servers = h1:9092,h2:9092\n"
        "security.protocol: SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        f"sasl.jaas.config={JAAS}"
        "ssl.truststore.type=PEM\n"
        "ssl.truststore.location=/etc/ca.pem\n"
        "ssl.endpoint.identification.algorithm=\n"
        "request.timeout.ms=1234\n"
        "acks=all\n"
        "enable.auto.commit=false\n"
    )
    conn = resolve_connection(
        bootstrap_server=None, command_config=str(path), properties=(), environ={}
    )
    assert conn.bootstrap_servers == "h1:9092,h2:9092"
    assert conn.client == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "alice",
        "sasl_plain_password": "a b;c",
        "ssl_cafile": "/etc/ca.pem",
        "ssl_check_hostname": False,
        "request_timeout_ms": 1234,
    }
    assert conn.options("producer")["acks"] == "all"
    assert "acks" not in conn.options("admin")
    assert conn.options("consumer")["enable_auto_commit"] is False


def test_precedence_flags_then_environment_then_file(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text("bootstrap.servers=file:1\nclient.id=from-file\nrequest.timeout.ms=1\n")
    env = {
        "KAFKACORE_COMMAND_CONFIG": str(path),
        env_name("bootstrap.servers"): "env:1",
        env_name("client.id"): "from-env",
        "KAFKACORE_PURE": "1",  # not a property: left alone
    }
    conn = resolve_connection(
        bootstrap_server=None, command_config=None, properties=("client.id=flag",), environ=env
    )
    assert conn.bootstrap_servers == "env:1"
    assert conn.client == {"client_id": "flag", "request_timeout_ms": 1}
    flagged = resolve_connection(
        bootstrap_server="flag:1", command_config=None, properties=(), environ=env
    )
    assert flagged.bootstrap_servers == "flag:1"
    assert (
        resolve_connection(
            bootstrap_server=None, command_config=None, properties=(), environ={}
        ).bootstrap_servers
        == "localhost:9092"
    )


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (
            {"sasl.mechanisms": "PLAIN"},
            "unknown property 'sasl.mechanisms'; did you mean sasl.mechanism",
        ),
        ({"request.timeout.ms": "soon"}, "request.timeout.ms must be a whole number"),
        ({"ssl.truststore.location": "/x.jks"}, "only PEM files"),
        ({"sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required;"}, "GSSAPI"),
        ({"sasl.jaas.config": 'x.PlainLoginModule required username="a";'}, "has no password"),
        ({"check.crcs": "maybe"}, "must be true or false"),
    ],
)
def test_bad_properties_are_usage_errors(props: dict[str, str], message: str) -> None:
    text = "".join(f"{k}={v}\n" for k, v in props.items())
    with pytest.raises(click.UsageError, match=None) as raised:
        resolve_connection(
            bootstrap_server=None,
            command_config=None,
            properties=tuple(f"{k}={v}" for k, v in parse_properties(text, source="t").items()),
            environ={},
        )
    assert message in raised.value.message


def test_usage_errors_from_the_command_line(tmp_path: Path) -> None:
    missing = run_cli("--command-config", str(tmp_path / "nope.properties"), "topics", "list")
    assert missing.code == 2 and "No such file or directory" in missing.err
    typo = run_cli("-X", "bootstrap.server=x:1", "topics", "list")
    assert typo.code == 2 and "did you mean bootstrap.servers" in typo.err
    shape = run_cli("-X", "acks", "topics", "list")
    assert shape.code == 2 and "expected name=value" in shape.err
    bad_value = run_cli("-X", "security.protocol=SASL_TLS", "topics", "list")
    assert bad_value.code == 2 and "SASL_TLS" in bad_value.err
    unknown = run_cli("topicz")
    assert unknown.code == 2 and "No such command 'topicz'" in unknown.err


@pytest.mark.broker
def test_environment_and_producer_properties(
    kafka_broker: LocalKafka, cli: Cli, unique: str
) -> None:
    topic = f"cli-env-{unique}"
    with KafkaAdminClient(kafka_broker.bootstrap) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result()
    env = clean_env(KAFKACORE_BOOTSTRAP_SERVERS=kafka_broker.bootstrap, KAFKACORE_ACKS="all")
    sent = run_cli("-X", "compression.type=lz4", "produce", topic, input="x\n", env=env).ok()
    assert "warning" not in sent.err
    got = run_cli("consume", topic, "-e", env=env).ok()
    assert got.out == "x\n"
    assert "acks (environment) is not a consumer property; ignored" in got.err

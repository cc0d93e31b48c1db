"""``kafkacore configs``, ``cluster`` and ``acls`` against real brokers. The ACL
commands run on the SASL listener of a broker with the authorizer on, as the
super user ``admin`` named by a Kafka properties file (``--command-config``),
and are checked by what ``alice`` may then do."""

from __future__ import annotations

import json

import pytest

from kafkacore import KafkaAdminClient
from kafkacore.admin import ConfigResource, ConfigResourceType, NewTopic
from kafkacore.testing import LocalKafka
from tests.cli.conftest import Cli, Result, run_cli

pytestmark = pytest.mark.broker


def _config(admin: KafkaAdminClient, topic: str, name: str) -> str | None:
    resource = ConfigResource(ConfigResourceType.TOPIC, topic)
    value: str | None = next(iter(admin.describe_configs([resource]).values())).result()[name].value
    return value


def test_configs(cli: Cli, admin: KafkaAdminClient, unique: str) -> None:
    topic = f"cli-configs-{unique}"
    admin.create_topics([NewTopic(topic, 1, 1, configs={"cleanup.policy": "compact"})])[
        topic
    ].result()
    shown = json.loads(cli("configs", "describe", "--topic", topic, "--json").ok().out)
    assert shown["cleanup.policy"]["value"] == "compact"
    assert "retention.ms" not in shown  # defaults only with --all
    every = json.loads(cli("configs", "describe", "--topic", topic, "--all", "--json").ok().out)
    assert every["retention.ms"]["source"] == "DEFAULT_CONFIG"
    picked = cli("configs", "describe", "--topic", topic, "segment.bytes").ok().out
    assert "segment.bytes" in picked and "cleanup.policy" not in picked

    altered = cli(
        "configs",
        "alter",
        "--topic",
        topic,
        "--set",
        "retention.ms=1234",
        "--delete",
        "cleanup.policy",
    ).ok()
    assert "2 config(s) altered" in altered.out
    assert _config(admin, topic, "retention.ms") == "1234"
    assert _config(admin, topic, "cleanup.policy") == "delete"
    cli("configs", "alter", "--topic", topic, "--set", "retention.ms=99", "--validate-only").ok()
    assert _config(admin, topic, "retention.ms") == "1234"

    broker = cli("configs", "describe", "--broker", "1", "--all", "--json").ok()
    assert "num.io.threads" in json.loads(broker.out)

    for args, code, message in (
        (
            ("--set", "retention.msx=5"),
            2,
            "has no config 'retention.msx'; did you mean retention.ms",
        ),
        (("--set", "retention.ms=abc", "--set", "segment.ms=100000"), 1, "INVALID_CONFIG"),
        (("--set", "retention.ms"), 2, "expected name=value"),
        ((), 2, "nothing to change"),
    ):
        result = cli("configs", "alter", "--topic", topic, *args)
        assert result.code == code and message in result.err, (args, result)
    assert _config(admin, topic, "retention.ms") == "1234"
    assert _config(admin, topic, "segment.ms") == "604800000"
    unknown_name = cli("configs", "describe", "--topic", topic, "retention.msx")
    assert unknown_name.code == 2 and "did you mean retention.ms" in unknown_name.err
    missing = cli("configs", "describe", "--topic", f"nope-{unique}")
    assert missing.code == 3 and "UNKNOWN_TOPIC_OR_PARTITION" in missing.err
    both = cli("configs", "describe", "--topic", topic, "--broker", "1")
    assert both.code == 2 and "exactly one of" in both.err


def test_cluster(cli: Cli, kafka_broker: LocalKafka) -> None:
    described = json.loads(cli("cluster", "describe", "--json").ok().out)
    assert described["controller"] == 1 and [b["id"] for b in described["brokers"]] == [1]
    assert "Cluster: " in cli("cluster", "describe").ok().out
    features = json.loads(cli("cluster", "features", "--json").ok().out)
    levels = {f["feature"]: f["finalized"] for f in features["features"]}
    assert levels["transaction.version"] == 2 and levels["metadata.version"] >= 1
    assert "metadata.version" in cli("cluster", "features").ok().out
    dead = run_cli("-b", "127.0.0.1:9", "--timeout", "3", "cluster", "describe")
    assert dead.code == 4 and "127.0.0.1:9" in dead.err


def _alice(kafka_acl_broker: LocalKafka) -> KafkaAdminClient:
    host, port = kafka_acl_broker.listener("SASL_PLAINTEXT")
    return KafkaAdminClient(
        f"{host}:{port}",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="alice",
        sasl_plain_password=kafka_acl_broker.users["alice"],
    )


def test_acls(kafka_acl_broker: LocalKafka, admin_properties: str, unique: str) -> None:
    def acl(*args: str) -> Result:
        return run_cli("--command-config", admin_properties, "acls", *args)

    topic = f"cli-acl-{unique}"
    run_cli("--command-config", admin_properties, "topics", "create", topic).ok()
    with _alice(kafka_acl_broker) as alice:
        assert topic not in alice.list_topics()  # no ACL yet: alice sees nothing
        made = acl(
            "create",
            "--principal",
            "User:alice",
            "--topic",
            topic,
            "--operation",
            "Describe",
            "--operation",
            "read",
        ).ok()
        assert "DESCRIBE" in made.out and "READ" in made.out
        assert topic in alice.list_topics()

        listed = json.loads(acl("list", "--topic", topic, "--json").ok().out)
        assert {(r["principal"], r["operation"], r["permission"]) for r in listed} == {
            ("User:alice", "DESCRIBE", "ALLOW"),
            ("User:alice", "READ", "ALLOW"),
        }
        everyone = json.loads(acl("list", "--principal", "User:alice", "--json").ok().out)
        assert len([r for r in everyone if r["resource_name"] == topic]) == 2

        for args, code, message in (
            (
                ("create", "--principal", "alice", "--topic", topic, "--operation", "Read"),
                2,
                "expected TYPE:NAME",
            ),
            (
                ("create", "--principal", "User:alice", "--topic", topic, "--operation", "Reed"),
                2,
                "'Reed' is not one of",
            ),
            (("create", "--principal", "User:alice", "--operation", "Read"), 2, "a resource"),
            (("delete", "--operation", "Read"), 2, "never deletes every ACL"),
            (("delete", "--principal", f"User:nobody-{unique}"), 3, "nothing deleted"),
            (
                (
                    "create",
                    "--principal",
                    "User:alice",
                    "--topic",
                    topic,
                    "--group",
                    "g",
                    "--operation",
                    "Read",
                ),
                2,
                "at most one of",
            ),
        ):
            result = acl(*args)
            assert result.code == code and message in result.err, (args, result)
        after = json.loads(acl("list", "--topic", topic, "--json").ok().out)
        assert after == listed  # the refused commands changed nothing

        deleted = json.loads(
            acl(
                "delete",
                "--topic",
                topic,
                "--principal",
                "User:alice",
                "--operation",
                "Describe",
                "--json",
            )
            .ok()
            .out
        )
        assert [(r["operation"], r["resource_name"]) for r in deleted] == [("DESCRIBE", topic)]
        acl("delete", "--topic", topic).ok()
        assert json.loads(acl("list", "--topic", topic, "--json").ok().out) == []

    plain_alice = run_cli(
        "-b",
        ":".join(map(str, kafka_acl_broker.listener("SASL_PLAINTEXT"))),
        "-X",
        "security.protocol=SASL_PLAINTEXT",
        "-X",
        "sasl.mechanism=PLAIN",
        "-X",
        "sasl.jaas.config=org.apache.kafka.common.security.plain."
        'PlainLoginModule required username="alice" password="wrong";',
        "topics",
        "list",
    )
    assert plain_alice.code == 5 and "Authentication" in plain_alice.err
    denied = run_cli(
        "-b",
        ":".join(map(str, kafka_acl_broker.listener("SASL_PLAINTEXT"))),
        "-X",
        "security.protocol=SASL_PLAINTEXT",
        "-X",
        "sasl.mechanism=PLAIN",
        "-X",
        "sasl.jaas.config=org.apache.kafka.common.security.plain."
        f'PlainLoginModule required username="alice" password="{kafka_acl_broker.users["alice"]}";',
        "acls",
        "create",
        "--principal",
        "User:alice",
        "--topic",
        topic,
        "--operation",
        "Write",
    )
    assert denied.code == 5 and "AUTHORIZATION_FAILED" in denied.err

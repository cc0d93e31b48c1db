"""``kafkacore topics`` against the shared broker: every subcommand, and bad input
refused with its message and exit status while the broker stays as it was."""

from __future__ import annotations

import json

import pytest

from kafkacore import KafkaAdminClient
from kafkacore.admin import ConfigResource, ConfigResourceType
from tests.cli.conftest import Cli

pytestmark = pytest.mark.broker


def _partitions(admin: KafkaAdminClient, topic: str) -> int:
    return len(admin.describe_topics([topic])[topic].result().partitions)


def test_create_list_describe_alter_delete(cli: Cli, admin: KafkaAdminClient, unique: str) -> None:
    topic = f"cli-topic-{unique}"
    made = cli("topics", "create", topic, "-p", "2", "-c", "retention.ms=3600000").ok()
    assert f"topic {topic} created: 2 partition(s)" in made.out
    assert topic in cli("topics", "list").ok().out.split()
    assert topic in json.loads(cli("topics", "list", "--json").ok().out)

    described = json.loads(cli("topics", "describe", topic, "--json").ok().out)
    assert [p["partition"] for p in described[0]["partitions"]] == [0, 1]
    assert described[0]["partitions"][0]["leader"] == 1
    text = cli("topics", "describe", topic).ok().out
    assert "PartitionCount: 2" in text and "PARTITION  LEADER  REPLICAS  ISR" in text
    configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    assert next(iter(configs.values())).result()["retention.ms"].value == "3600000"

    assert (
        cli("topics", "create", topic, "--if-not-exists")
        .ok()
        .err.strip()
        .endswith("already exists")
    )
    assert "2 -> 4 partitions" in cli("topics", "alter", topic, "-p", "4").ok().out
    assert _partitions(admin, topic) == 4

    assert f"topic {topic} deleted" in cli("topics", "delete", topic).ok().out
    assert cli("topics", "delete", topic, "--if-exists").code == 0


def test_bad_input_changes_nothing(cli: Cli, admin: KafkaAdminClient, unique: str) -> None:
    topic = f"cli-topic-bad-{unique}"
    bad_config = cli("topics", "create", topic, "-c", "retention.msx=5")
    assert bad_config.code == 1
    assert "INVALID_CONFIG" in bad_config.err and "retention.msx" in bad_config.err
    assert topic not in admin.list_topics()

    shape = cli("topics", "create", topic, "-c", "retention.ms")
    assert shape.code == 2 and "expected name=value" in shape.err
    assert topic not in admin.list_topics()

    cli("topics", "create", topic, "-p", "3").ok()
    twice = cli("topics", "create", topic)
    assert twice.code == 1 and "TOPIC_ALREADY_EXISTS" in twice.err

    shrink = cli("topics", "alter", topic, "-p", "2")
    assert shrink.code == 2 and "can only add partitions" in shrink.err
    assert _partitions(admin, topic) == 3

    missing = f"cli-missing-{unique}"
    for args in (
        ("topics", "describe", missing),
        ("topics", "delete", missing),
        ("topics", "alter", missing, "-p", "5"),
    ):
        result = cli(*args)
        assert result.code == 3, (args, result)
        assert "UNKNOWN_TOPIC_OR_PARTITION" in result.err and missing in result.err
    assert missing not in admin.list_topics()
    assert cli("topics", "create", topic, "-p", "0").code == 2
    cli("topics", "delete", topic).ok()

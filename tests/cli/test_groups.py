"""``kafkacore groups`` against the shared broker: list, describe (offsets and lag),
reset-offsets in every mode with the dry run changing nothing, delete; an active
group, a missing topic or partition and bad specs refused with nothing changed."""

from __future__ import annotations

import json

import pytest

from kafkacore import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafkacore.admin import NewTopic
from kafkacore.testing import LocalKafka
from tests.cli.conftest import Cli

pytestmark = pytest.mark.broker


def _committed(admin: KafkaAdminClient, group: str) -> dict[int, int]:
    return {
        tp.partition: meta.offset
        for tp, meta in admin.list_consumer_group_offsets(group).items()
        if meta is not None
    }


@pytest.fixture
def consumed(cli: Cli, admin: KafkaAdminClient, unique: str) -> tuple[str, str]:
    """A 2-partition topic with 10 records per partition and a group that read them all."""
    topic, group = f"cli-groups-{unique}", f"cli-groups-g-{unique}"
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result()
    lines = "".join(json.dumps({"value": str(i), "partition": i % 2}) + "\n" for i in range(20))
    cli("produce", topic, "--json", input=lines).ok()
    cli("consume", topic, "-g", group, "-e", "-q").ok()
    assert _committed(admin, group) == {0: 10, 1: 10}
    return topic, group


def test_list_describe_delete(cli: Cli, admin: KafkaAdminClient, consumed: tuple[str, str]) -> None:
    _, group = consumed
    listed = json.loads(cli("groups", "list", "--json").ok().out)
    assert {"group": group, "type": "CLASSIC", "state": "EMPTY"} in listed
    assert group in cli("groups", "list").ok().out

    described = json.loads(cli("groups", "describe", group, "--json").ok().out)
    assert described["state"] == "EMPTY" and described["members"] == []
    assert [
        (o["partition"], o["current_offset"], o["log_end_offset"], o["lag"])
        for o in described["offsets"]
    ] == [(0, 10, 10, 0), (1, 10, 10, 0)]
    assert "LOG-END-OFFSET" in cli("groups", "describe", group).ok().out

    assert f"group {group} deleted" in cli("groups", "delete", group).ok().out
    gone = cli("groups", "describe", group)
    assert gone.code == 3 and "GROUP_ID_NOT_FOUND" in gone.err


def test_reset_offsets_every_mode(
    cli: Cli, admin: KafkaAdminClient, consumed: tuple[str, str]
) -> None:
    topic, group = consumed

    def reset(*args: str) -> list[dict[str, object]]:
        plan = json.loads(cli("groups", "reset-offsets", group, "--json", *args).ok().out)
        return sorted(plan, key=lambda p: p["partition"])

    dry = reset("--to-earliest", "--dry-run")
    assert [(p["current_offset"], p["new_offset"]) for p in dry] == [(10, 0), (10, 0)]
    assert _committed(admin, group) == {0: 10, 1: 10}  # a dry run changes nothing

    reset("--to-earliest", "--execute")
    assert _committed(admin, group) == {0: 0, 1: 0}
    reset("--shift-by", "3", "--execute")
    assert _committed(admin, group) == {0: 3, 1: 3}
    reset("--shift-by", "-5", "--execute")  # clamped at the log start
    assert _committed(admin, group) == {0: 0, 1: 0}
    reset("--to-offset", "7", "--topic", f"{topic}:1", "--execute")
    assert _committed(admin, group) == {0: 0, 1: 7}
    reset("--to-latest", "--topic", topic, "--execute")
    assert _committed(admin, group) == {0: 10, 1: 10}
    reset("--to-datetime", "@0", "--execute")  # everything is after 1970
    assert _committed(admin, group) == {0: 0, 1: 0}
    reset("--to-offset", "99", "--execute")  # clamped at the log end
    assert _committed(admin, group) == {0: 10, 1: 10}
    # the consumer then starts where the reset put it
    reset("--to-offset", "8", "--execute")
    rest = cli("consume", topic, "-g", group, "-e").ok().out.split()
    assert sorted(rest, key=int) == ["16", "17", "18", "19"]


def test_reset_refused_without_changes(
    cli: Cli,
    admin: KafkaAdminClient,
    kafka_broker: LocalKafka,
    consumed: tuple[str, str],
    unique: str,
) -> None:
    topic, group = consumed
    before = _committed(admin, group)
    for args, code, message in (
        (("--to-earliest",), 2, "give --dry-run to see the plan or --execute"),
        (("--to-earliest", "--to-offset", "1", "--execute"), 2, "exactly one of"),
        (("--to-datetime", "@tomorrow", "--execute"), 2, "bad offset spec"),
        (
            ("--to-earliest", "--topic", f"nope-{unique}", "--execute"),
            3,
            "UNKNOWN_TOPIC_OR_PARTITION",
        ),
        (("--to-earliest", "--topic", f"{topic}:0,5", "--execute"), 3, "no partition 5"),
        (("--to-earliest", "--topic", f"{topic}:x", "--execute"), 2, "expected TOPIC or TOPIC:P"),
    ):
        result = cli("groups", "reset-offsets", group, *args)
        assert result.code == code and message in result.err, (args, result)
    assert _committed(admin, group) == before

    with KafkaConsumer(topic, bootstrap_servers=kafka_broker.bootstrap, group_id=group) as member:
        member.poll_records(timeout=5.0)
        while not member.assignment():
            member.poll_records(timeout=1.0)
        active = cli("groups", "reset-offsets", group, "--to-earliest", "--execute")
        assert active.code == 1 and "stop its consumers first" in active.err
        busy = cli("groups", "delete", group)
        assert busy.code == 1 and "NON_EMPTY_GROUP" in busy.err
    assert _committed(admin, group) == before
    missing = cli("groups", "describe", f"nope-{unique}")
    assert missing.code == 3


def test_reset_many_partitions_in_chunks(cli: Cli, admin: KafkaAdminClient, unique: str) -> None:
    topic, group = f"cli-wide-{unique}", f"cli-wide-g-{unique}"
    admin.create_topics([NewTopic(topic, 120, 1)])[topic].result()
    done = cli("groups", "reset-offsets", group, "--topic", topic, "--to-latest", "--execute")
    # committed 50 partitions at a time; off a terminal the progress is one plain line
    assert "reset: 120/120 partitions\n" in done.ok().err and "\r" not in done.err
    committed = _committed(admin, group)
    assert len(committed) == 120 and set(committed.values()) == {0}
    assert {TopicPartition(topic, p) for p in committed} == {
        TopicPartition(topic, p) for p in range(120)
    }

"""kafka-python style admin code runs on kafkacore with only its imports changed.

The snippets below are written the way kafka-python 2.x documents its
``KafkaAdminClient`` (create and delete topics, print the groups, their
descriptions and offsets; topic configs and partitions; records, elections
and groups), in our own words. Each is run against the real broker after
:func:`as_kafkacore` rewrote its ``from kafka... import`` lines, and nothing
else; ``BOOTSTRAP``, ``TOPIC`` and ``GROUP`` stand for the user's own values.
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

import pytest

from kafkacore.admin import ConfigResourceType
from kafkacore.client import TopicPartition
from kafkacore.protocol.error_codes import ElectionNotNeededError
from kafkacore.transports.selector import ConfigResource, KafkaAdminClient, KafkaProducer, NewTopic

pytestmark = pytest.mark.broker

#: Where each kafka-python name lives in kafkacore.
HOME = {
    "KafkaAdminClient": "kafkacore.transports.selector",
    "NewTopic": "kafkacore.transports.selector",
    "NewPartitions": "kafkacore.transports.selector",
    "ConfigResource": "kafkacore.transports.selector",
    "ConfigResourceType": "kafkacore.transports.selector",
    "TopicPartition": "kafkacore",
    "OffsetAndMetadata": "kafkacore",
}


def as_kafkacore(source: str) -> str:
    """``source`` with each ``from kafka[.x] import a, b`` line importing from kafkacore."""
    out = []
    for line in source.splitlines():
        match = re.fullmatch(r"from kafka(\.\w+)? import (.+)", line)
        if match is None:
            assert not re.match(r"\s*(from|import) kafka\b", line), line
            out.append(line)
            continue
        for name in (n.strip() for n in match.group(2).split(",")):
            out.append(f"from {HOME[name]} import {name}")
    return "\n".join(out)


def run_snippet(source: str, **values: Any) -> dict[str, Any]:
    namespace: dict[str, Any] = dict(values)
    exec(compile(as_kafkacore(source), "<kafka-python snippet>", "exec"), namespace)
    return namespace


def names(prefix: str) -> tuple[str, str]:
    tag = uuid.uuid4().hex[:8]
    return f"compat-{prefix}-{tag}", f"compat-{prefix}-group-{tag}"


def eventually(check: Any, what: str, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, f"not reached in {timeout} s: {what}"
        time.sleep(0.1)


# The README's tour: create a topic, print the groups, delete the topic.
README_TOUR = """
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

admin = KafkaAdminClient(bootstrap_servers=[BOOTSTRAP])

topics_list = []
topics_list.append(NewTopic(name=TOPIC, num_partitions=1, replication_factor=1))
admin.create_topics(topics_list, timeout_ms=None, validate_only=False)

print(admin.list_consumer_groups())
print(admin.describe_consumer_groups(GROUP))
print(admin.list_consumer_group_offsets(GROUP))

deleted = admin.delete_topics([TOPIC])
admin.close()
"""


def test_the_readme_tour(kafka_broker: Any, capsys: pytest.CaptureFixture[str]) -> None:
    topic, group = names("tour")
    with KafkaAdminClient(kafka_broker.bootstrap) as setup:
        setup.create_topics([NewTopic(f"{topic}-side", 1, 1)]).all()
        side = TopicPartition(f"{topic}-side", 0)
        assert setup.alter_consumer_group_offsets(group, {side: 7})[side].ok
    done = run_snippet(README_TOUR, BOOTSTRAP=kafka_broker.bootstrap, TOPIC=topic, GROUP=group)
    assert done["deleted"][topic].ok  # it existed: the snippet created it
    printed = capsys.readouterr().out
    assert group in printed and "offset=7" in printed
    with KafkaAdminClient(kafka_broker.bootstrap) as check:
        eventually(lambda: topic not in check.list_topics(), "the tour's topic deleted")
        check.delete_consumer_groups(group).all()
        check.delete_topics([f"{topic}-side"]).all()


# Topic configs, more partitions, and the configs changed and read back.
CONFIGS_AND_PARTITIONS = """
from kafka.admin import KafkaAdminClient, NewTopic, NewPartitions
from kafka.admin import ConfigResource, ConfigResourceType

admin_client = KafkaAdminClient(bootstrap_servers=BOOTSTRAP, client_id="compat-admin")
topic = NewTopic(TOPIC, num_partitions=2, replication_factor=1,
                 topic_configs={"retention.ms": "600000"})
admin_client.create_topics(new_topics=[topic], validate_only=False)
admin_client.create_partitions({TOPIC: NewPartitions(total_count=4)})

resource = ConfigResource(ConfigResourceType.TOPIC, TOPIC, configs={"retention.ms": "1200000"})
admin_client.alter_configs(config_resources=[resource])
described = admin_client.describe_configs(
    config_resources=[ConfigResource(ConfigResourceType.TOPIC, TOPIC)])
cluster = admin_client.describe_cluster()
admin_client.close()
"""


def test_configs_and_partitions(kafka_broker: Any) -> None:
    topic, _ = names("cfg")
    done = run_snippet(CONFIGS_AND_PARTITIONS, BOOTSTRAP=kafka_broker.bootstrap, TOPIC=topic)
    resource = ConfigResource(ConfigResourceType.TOPIC, topic)
    assert list(done["described"]) == [resource]
    assert [b.node_id for b in done["cluster"].brokers] == [1]
    with KafkaAdminClient(kafka_broker.bootstrap) as check:
        # The broker applies the change a moment after the controller answered.
        def altered() -> bool:
            item = check.describe_configs([resource])[resource]
            return item.ok and item.result()["retention.ms"].value == "1200000"

        eventually(altered, "retention.ms altered")

        def four_partitions() -> bool:
            item = check.describe_topics(topic)[topic]
            return item.ok and len(item.result().partitions) == 4

        eventually(four_partitions, "four partitions")
        check.delete_topics(topic).all()


# A group's offsets printed, records deleted, a leader election, the group deleted.
RECORDS_AND_GROUPS = """
from kafka import KafkaAdminClient, TopicPartition

admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP)
for tp, meta in admin.list_consumer_group_offsets(GROUP).items():
    print(tp.topic, tp.partition, meta.offset)
trimmed = admin.delete_records({TopicPartition(TOPIC, 0): 2}, timeout_ms=30000)
elected = admin.perform_leader_election(0, {TOPIC: [0]}, timeout_ms=30000)
admin.delete_consumer_groups([GROUP])
admin.delete_topics([TOPIC], timeout_ms=30000)
admin.close()
"""


def test_records_and_groups(kafka_broker: Any, capsys: pytest.CaptureFixture[str]) -> None:
    topic, group = names("rec")
    tp = TopicPartition(topic, 0)
    with KafkaAdminClient(kafka_broker.bootstrap) as setup:
        setup.create_topics([NewTopic(topic, 1, 1)]).all()
        with KafkaProducer(kafka_broker.bootstrap) as producer:
            for i in range(3):
                producer.send(topic, b"r%d" % i, partition=0)
            producer.flush(30)
        setup.alter_consumer_group_offsets(group, {tp: 3}).all()
    done = run_snippet(
        RECORDS_AND_GROUPS, BOOTSTRAP=kafka_broker.bootstrap, TOPIC=topic, GROUP=group
    )
    assert capsys.readouterr().out.splitlines() == [f"{topic} 0 3"]
    assert done["trimmed"][tp].result().low_watermark == 2
    # One replica is already the preferred leader: the broker says so, per partition.
    assert isinstance(done["elected"][tp].error, ElectionNotNeededError)
    with KafkaAdminClient(kafka_broker.bootstrap) as check:
        assert group not in [g.group_id for g in check.list_consumer_groups().groups]

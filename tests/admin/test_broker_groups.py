"""AdminCore against a real broker: consumer groups made by real consumers,
classic and KIP-848, and their committed offsets."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from kafkacore.admin import GroupState, GroupType, NewTopic
from kafkacore.client.metadata import TopicPartition as TP
from kafkacore.consumer import OffsetAndMetadata
from kafkacore.protocol.error_codes import (
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
    NonEmptyGroupError,
)
from kafkacore.testing import LocalKafka
from kafkacore.transports.selector import KafkaConsumer, KafkaProducer
from tests.admin.conftest import Admin

pytestmark = pytest.mark.broker


def wait_for(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, f"not reached in {timeout} s: {what}"
        time.sleep(0.1)


def topic_with_records(admin: Admin, kafka: LocalKafka, name: str, partitions: int = 2) -> None:
    admin.run(admin.core.create_topics([NewTopic(name, partitions, 1)], now=admin.now))
    with KafkaProducer(kafka.bootstrap) as producer:
        for p in range(partitions):
            for i in range(5):
                producer.send(name, f"{p}-{i}".encode(), partition=p)
        producer.flush(30)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_live_group_is_listed_and_described(
    admin: Admin, kafka_broker: LocalKafka, unique: str, protocol: str
) -> None:
    topic, group = f"adm-g-{unique}", f"adm-g-{protocol}-{unique}"
    topic_with_records(admin, kafka_broker, topic)
    options: dict[str, Any] = dict(
        bootstrap_servers=kafka_broker.bootstrap,
        group_id=group,
        group_protocol=protocol,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        client_id=f"adm-{protocol}",
    )
    with KafkaConsumer(topic, **options) as consumer:
        wait_for(
            lambda: (
                (consumer.poll_records(timeout=0.1) or True) and len(consumer.assignment()) == 2
            ),
            "two partitions assigned",
        )
        consumer.commit({TP(topic, 0): 3, TP(topic, 1): 5})

        listing = admin.run(admin.core.list_consumer_groups(now=admin.now))
        mine = [g for g in listing.groups if g.group_id == group]
        assert len(mine) == 1 and listing.errors == {}
        want_type = GroupType.CLASSIC if protocol == "classic" else GroupType.CONSUMER
        assert (mine[0].type, mine[0].coordinator, mine[0].protocol_type) == (
            want_type,
            1,
            "consumer",
        )
        assert mine[0].state is GroupState.STABLE
        only = admin.run(
            admin.core.list_consumer_groups(
                types=[want_type], states=[GroupState.STABLE], now=admin.now
            )
        )
        assert group in [g.group_id for g in only.groups]
        share_only = admin.run(admin.core.list_share_groups(now=admin.now))
        assert group not in [g.group_id for g in share_only.groups]

        described = admin.run(
            admin.core.describe_consumer_groups(
                [group], include_authorized_operations=True, now=admin.now
            )
        )
        desc = described[group].result()
        assert (desc.type, desc.state, desc.coordinator) == (want_type, GroupState.STABLE, 1)
        assert len(desc.members) == 1
        member = desc.members[0]
        assert member.client_id == f"adm-{protocol}"
        assert member.assignment == {TP(topic, 0), TP(topic, 1)}
        assert member.subscribed_topics == (topic,)
        if protocol == "classic":
            assert desc.partition_assignor in ("range", "cooperative-sticky")
        else:
            assert desc.group_epoch is not None and member.member_epoch is not None
            assert member.target_assignment == member.assignment
        assert desc.authorized_operations is not None  # no authorizer: every operation

        offsets = admin.run(admin.core.list_consumer_group_offsets(group, now=admin.now))
        assert {tp: o.offset for tp, o in offsets.items() if o is not None} == {
            TP(topic, 0): 3,
            TP(topic, 1): 5,
        }

        # Members own the group: an admin commit, deleting offsets or the group is refused.
        refused = admin.run(
            admin.core.alter_consumer_group_offsets(group, {TP(topic, 0): 1}, now=admin.now)
        )
        assert refused[TP(topic, 0)].error is not None
        kept = admin.run(
            admin.core.delete_consumer_group_offsets(group, [TP(topic, 0)], now=admin.now)
        )
        assert isinstance(kept[TP(topic, 0)].error, GroupSubscribedToTopicError)
        busy = admin.run(admin.core.delete_consumer_groups([group], now=admin.now))
        assert isinstance(busy[group].error, NonEmptyGroupError)

    wait_for(
        lambda: (
            admin.run(admin.core.describe_consumer_groups([group], now=admin.now))[group]
            .result()
            .state
            is GroupState.EMPTY
        ),
        "the group empty once the consumer left",
    )
    moved = admin.run(
        admin.core.alter_consumer_group_offsets(
            group, {TP(topic, 0): 1, TP(topic, 1): OffsetAndMetadata(2, "reset")}, now=admin.now
        )
    )
    assert all(r.ok for r in moved.values()), moved
    offsets = admin.run(
        admin.core.list_consumer_group_offsets(
            group, [TP(topic, 0), TP(topic, 1)], require_stable=True, now=admin.now
        )
    )
    assert offsets[TP(topic, 0)] is not None and offsets[TP(topic, 0)].offset == 1
    assert offsets[TP(topic, 1)] == OffsetAndMetadata(2, "reset", None)
    dropped = admin.run(
        admin.core.delete_consumer_group_offsets(group, [TP(topic, 0)], now=admin.now)
    )
    assert dropped[TP(topic, 0)].ok
    left = admin.run(admin.core.list_consumer_group_offsets(group, now=admin.now))
    assert set(left) == {TP(topic, 1)}
    deleted = admin.run(admin.core.delete_consumer_groups([group, f"nope-{unique}"], now=admin.now))
    assert deleted[group].ok and isinstance(deleted[f"nope-{unique}"].error, GroupIdNotFoundError)
    gone = admin.run(admin.core.describe_consumer_groups([group], now=admin.now))
    assert isinstance(gone[group].error, GroupIdNotFoundError)


def test_an_offsets_only_group_made_by_the_admin(
    admin: Admin, kafka_broker: LocalKafka, unique: str
) -> None:
    topic, group = f"adm-s-{unique}", f"adm-simple-{unique}"
    topic_with_records(admin, kafka_broker, topic, partitions=1)
    made = admin.run(
        admin.core.alter_consumer_group_offsets(group, {TP(topic, 0): 4}, now=admin.now)
    )
    assert made[TP(topic, 0)].ok
    desc = admin.run(admin.core.describe_consumer_groups([group], now=admin.now))[group].result()
    assert desc.is_simple_consumer_group and desc.state is GroupState.EMPTY and desc.members == ()
    listed = admin.run(admin.core.list_consumer_groups(now=admin.now))
    assert [g.is_simple_consumer_group for g in listed.groups if g.group_id == group] == [True]
    assert admin.run(admin.core.delete_consumer_groups([group], now=admin.now))[group].ok

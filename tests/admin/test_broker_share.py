"""AdminCore against a real broker: share groups (KIP-932).

The broker of the ``kafka_broker`` fixture runs Kafka 4.3.1 with
``share.version=1`` finalized (the default of a freshly formatted 4.3
cluster; ``test_the_broker_has_share_groups_on`` checks it). kafkacore has no
share consumer yet (issue 14), so the member here is made by hand: raw
ShareGroupHeartbeat requests sent through the admin's own client core, as a
share consumer would send them.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from kafkacore.admin import GroupState, GroupType, NewTopic
from kafkacore.client.metadata import TopicPartition as TP
from kafkacore.client.routing import GroupCoordinator
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import COORDINATOR_MOVED
from kafkacore.protocol.error_codes import GroupIdNotFoundError, NonEmptyGroupError
from tests.admin.conftest import Admin

pytestmark = pytest.mark.broker

#: ShareGroupHeartbeat's member epochs: join (0) and leave (-1), KIP-932.
JOIN, LEAVE = 0, -1


class ShareMember:
    """One share-group member driven by raw heartbeats."""

    def __init__(self, admin: Admin, group: str, topic: str) -> None:
        self.admin, self.group, self.topic = admin, group, topic
        self.member_id = str(uuid.uuid4())  # KIP-1082: the client names itself
        self.epoch = JOIN
        self.assigned = 0

    def heartbeat(self, epoch: int | None = None) -> Any:
        request = m.ShareGroupHeartbeatRequest(
            group_id=self.group,
            member_id=self.member_id,
            member_epoch=self.epoch if epoch is None else epoch,
            subscribed_topic_names=[self.topic] if self.epoch == JOIN else None,
        )
        core = self.admin.core
        end = time.monotonic() + 30
        while True:
            handle = core.client.send(
                request, now=self.admin.now, target=GroupCoordinator(self.group)
            )
            response = self.admin.driver.result(handle)
            if response.error_code not in COORDINATOR_MOVED:
                break
            # The client core forgot the coordinator: ask again (as a consumer would).
            assert time.monotonic() < end, response
            time.sleep(0.2)
        assert response.error_code == 0, response
        self.epoch = response.member_epoch
        if response.assignment is not None:
            self.assigned = sum(len(t.partitions) for t in response.assignment.topic_partitions)
        return response

    def join(self, partitions: int) -> None:
        end = time.monotonic() + 30
        while self.assigned < partitions:
            assert time.monotonic() < end, "no assignment from the share coordinator"
            self.heartbeat()
            time.sleep(0.2)

    def leave(self) -> None:
        self.heartbeat(LEAVE)


def test_the_broker_has_share_groups_on(admin: Admin) -> None:
    admin.run(admin.core.describe_cluster(now=admin.now))  # a connection: features known
    features = admin.core.client.finalized_features()
    assert features is not None and features.get("share.version", 0) >= 1, features


def test_share_group_listed_described_reset_and_deleted(admin: Admin, unique: str) -> None:
    topic, group = f"adm-q-{unique}", f"adm-share-{unique}"
    admin.run(admin.core.create_topics([NewTopic(topic, 2, 1)], now=admin.now))
    member = ShareMember(admin, group, topic)
    member.join(2)

    listed = admin.run(admin.core.list_share_groups(now=admin.now))
    mine = [g for g in listed.groups if g.group_id == group]
    assert len(mine) == 1 and (mine[0].type, mine[0].protocol_type) == (GroupType.SHARE, "share")
    stable = admin.run(admin.core.list_share_groups(states=[GroupState.STABLE], now=admin.now))
    assert group in [g.group_id for g in stable.groups]
    consumers = admin.run(admin.core.list_consumer_groups(now=admin.now))
    assert group not in [g.group_id for g in consumers.groups]

    described = admin.run(
        admin.core.describe_share_groups([group, f"nope-{unique}"], now=admin.now)
    )
    desc = described[group].result()
    assert desc.state is GroupState.STABLE and desc.coordinator == 1
    assert [mb.member_id for mb in desc.members] == [member.member_id]
    assert desc.members[0].subscribed_topics == (topic,)
    assert desc.members[0].assignment == {TP(topic, 0), TP(topic, 1)}
    assert desc.members[0].client_id == admin.core.client.client_id
    assert isinstance(described[f"nope-{unique}"].error, GroupIdNotFoundError)

    member.leave()
    wait_empty(admin, group)

    altered = admin.run(
        admin.core.alter_share_group_offsets(
            group, {TP(topic, 0): 0, TP(topic, 1): 0}, now=admin.now
        )
    )
    assert all(r.ok for r in altered.values()), altered
    offsets = admin.run(admin.core.list_share_group_offsets(group, now=admin.now))
    assert {tp: o.start_offset for tp, o in offsets.items() if o is not None} == {
        TP(topic, 0): 0,
        TP(topic, 1): 0,
    }
    dropped = admin.run(admin.core.delete_share_group_offsets(group, [topic], now=admin.now))
    assert dropped[topic].ok
    after = admin.run(admin.core.list_share_group_offsets(group, [TP(topic, 0)], now=admin.now))
    assert after == {TP(topic, 0): None}

    deleted = admin.run(admin.core.delete_share_groups([group], now=admin.now))
    assert deleted[group].ok
    gone = admin.run(admin.core.describe_share_groups([group], now=admin.now))
    assert isinstance(gone[group].error, GroupIdNotFoundError)


def test_a_share_group_with_a_member_refuses_offset_changes(admin: Admin, unique: str) -> None:
    topic, group = f"adm-q2-{unique}", f"adm-share2-{unique}"
    admin.run(admin.core.create_topics([NewTopic(topic, 1, 1)], now=admin.now))
    member = ShareMember(admin, group, topic)
    member.join(1)
    try:
        op = admin.core.alter_share_group_offsets(group, {TP(topic, 0): 0}, now=admin.now)
        admin.driver.wait(op)
        refused = op.error or next(iter(op.result().errors.values()), None)
        assert isinstance(refused, NonEmptyGroupError), op
        busy = admin.run(admin.core.delete_share_groups([group], now=admin.now))
        assert isinstance(busy[group].error, NonEmptyGroupError)
    finally:
        member.leave()


def wait_empty(admin: Admin, group: str) -> None:
    end = time.monotonic() + 30
    while True:
        desc = admin.run(admin.core.describe_share_groups([group], now=admin.now))[group].result()
        if desc.state is GroupState.EMPTY:
            return
        assert time.monotonic() < end, f"share group {group} not empty: {desc}"
        time.sleep(0.2)

"""A share consumer's refusals keep the code and the answering broker's id (issue 13)."""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.client.metadata import TopicPartition
from kafkacore.errors import BrokerError
from kafkacore.group.base import GroupFatalError
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ApiKey, ErrorCode
from kafkacore.share import AcknowledgeType
from tests.share.scripted import boot_share
from tests.share.test_core import poll


def test_acknowledgement_refusals_name_each_partitions_leader() -> None:
    # Partition p is led by broker p.
    core, pump, kafka = boot_share(2, n=2, acknowledgement_mode="explicit")
    kafka.produce("t", 0, [b"a"])
    kafka.produce("t", 1, [b"b"])
    got = poll(core, pump)
    assert len(got) == 2
    for record in got:
        core.acknowledge(record, AcknowledgeType.ACCEPT, now=pump.now)
    kafka.ack_error = ErrorCode.INVALID_RECORD_STATE
    op = core.commit(now=pump.now)
    pump.run(until=lambda: op.done)
    refused = op.result()
    assert set(refused) == {TopicPartition("t", 0), TopicPartition("t", 1)}
    for tp, error in refused.items():
        assert isinstance(error, BrokerError) and error.code == ErrorCode.INVALID_RECORD_STATE
        assert error.node_id == tp.partition and f"from broker {tp.partition}" in str(error)


def test_a_fatal_heartbeat_names_the_coordinator() -> None:
    core, pump, _kafka = boot_share(1, n=2)

    def refuse(broker: Any, body: Any, version: int, session: Any) -> Any:
        return m.ShareGroupHeartbeatResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)

    for broker in pump.brokers.values():
        broker.handlers[ApiKey.SHARE_GROUP_HEARTBEAT] = refuse
    pump.now += 2.0
    core.handle_timeout(now=pump.now)
    pump.run(rounds=30)
    coordinator = core.client.cluster.coordinator_for_group("g")
    with pytest.raises(GroupFatalError) as raised:
        core.poll_records(now=pump.now)
    cause = raised.value.__cause__
    assert isinstance(cause, BrokerError) and cause.code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert cause.node_id is not None and cause.node_id == coordinator
    assert f"from broker {coordinator}" in str(raised.value)

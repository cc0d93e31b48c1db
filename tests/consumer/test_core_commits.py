"""ConsumerCore commits against a rebalancing classic group (issue 10, fault 9),
on the fake broker with time jumped:

- while the member's JoinGroup/SyncGroup is out, commit() is refused locally
  with the retriable RebalanceInProgressCommitError and nothing is sent;
- an ILLEGAL_GENERATION about a generation the member has left is reported
  the same way and changes nothing in the group (no extra round);
- one about the generation the member still holds is a CommitFailedError,
  and the member gives its partitions up as lost and rejoins.
"""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.client.metadata import TopicPartition
from kafkacore.consumer import (
    CommitFailedError,
    PartitionsLost,
)
from kafkacore.consumer.events import RebalanceInProgressCommitError
from kafkacore.group import ClassicMember, ClassicState
from tests.consumer.fake import boot_consumer

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)


def joined(**config: Any) -> tuple[Any, Any, Any, ClassicMember]:
    core, pump, kafka, _ = boot_consumer(group_id="g", auto_offset_reset="earliest", **config)
    core.subscribe(["t"], now=pump.now)
    pump.run(until=lambda: core.assignment() == frozenset({T0, T1}))
    member = core.member
    assert isinstance(member, ClassicMember) and member.state is ClassicState.STABLE
    return core, pump, kafka, member


def test_commit_while_joining_is_refused_locally() -> None:
    core, pump, kafka, member = joined()
    sent = len(kafka.commits)
    member.request_rejoin(now=pump.now)  # a rebalance begins: JoinGroup goes out
    assert member.state is ClassicState.JOINING
    handle = core.commit({T0: 1}, now=pump.now)
    assert handle.done
    with pytest.raises(RebalanceInProgressCommitError, match="rebalancing"):
        handle.result()
    assert isinstance(handle.error, CommitFailedError)  # callers catching that still do
    pump.run(until=lambda: member.state is ClassicState.STABLE)
    assert len(kafka.commits) == sent, "a commit went out while the member was rebalancing"
    assert core.commit({T0: 1}, now=pump.now) is not None


def test_late_illegal_generation_for_a_left_generation_changes_nothing() -> None:
    core, pump, kafka, member = joined()
    generation = kafka.coord.generation
    for broker in pump.brokers.values():
        broker.hold = True  # answers wait until released
    kafka.commit_errors = [{T0: 22}]  # the coordinator will have moved on
    handle = core.commit({T0: 1}, now=pump.now)
    pump.drain()
    member.request_rejoin(now=pump.now)  # our own JoinGroup follows the commit
    pump.drain()
    assert member.state is ClassicState.JOINING
    for broker in pump.brokers.values():
        broker.hold = False
    rounds = member._round
    pump.release()
    pump.run(until=lambda: handle.done)
    with pytest.raises(RebalanceInProgressCommitError, match="since left"):
        handle.result()
    assert member._round == rounds, "a stale fenced commit restarted the join"
    pump.run(until=lambda: member.state is ClassicState.STABLE)
    for _ in range(50):
        pump.step()
    assert kafka.coord.generation == generation + 1, "more than the one rebalance asked for"


def test_illegal_generation_for_the_held_generation_loses_and_rejoins() -> None:
    core, pump, kafka, _member = joined()
    generation = kafka.coord.generation
    kafka.commit_errors = [{T0: 22}]
    handle = core.commit({T0: 1}, now=pump.now)
    pump.run(until=lambda: handle.done)
    with pytest.raises(CommitFailedError) as info:
        handle.result()
    assert not isinstance(info.value, RebalanceInProgressCommitError)
    assert any(isinstance(e, PartitionsLost) for e in pump.events)
    pump.run(until=lambda: core.assignment() == frozenset({T0, T1}))
    assert kafka.coord.generation > generation

"""default_target: the target a request gets from its generated routing kind."""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.client import (
    AnyNode,
    Controller,
    GroupCoordinator,
    Node,
    PartitionLeader,
    TransactionCoordinator,
)
from kafkacore.client.routing import default_target, describe_target, is_target
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ROUTING, ApiKey, Routing
from tests.client.fakebroker import Topic, boot

#: One request per routing kind, and the default target it must get.
BY_KIND: dict[Routing, tuple[Any, Any]] = {
    Routing.CONNECTION: (m.ApiVersionsRequest(), AnyNode()),
    Routing.ANY_NODE: (m.MetadataRequest(), AnyNode()),
    Routing.NODE: (m.ListGroupsRequest(), AnyNode()),
    Routing.PARTITION_LEADER: (m.ProduceRequest(), AnyNode()),
    Routing.GROUP_COORDINATOR: (m.JoinGroupRequest(group_id="g"), GroupCoordinator("g")),
    Routing.TXN_COORDINATOR: (m.EndTxnRequest(transactional_id="t"), TransactionCoordinator("t")),
    Routing.CONTROLLER: (m.CreateTopicsRequest(), Controller()),
    Routing.INTERNAL: (m.WriteTxnMarkersRequest(), AnyNode()),
}


def test_every_routing_kind_is_covered() -> None:
    assert set(BY_KIND) == set(Routing)


@pytest.mark.parametrize("kind", list(Routing), ids=lambda k: k.name)
def test_default_target_per_kind(kind: Routing) -> None:
    request, want = BY_KIND[kind]
    api_key = type(request).API_KEY
    assert ROUTING[ApiKey(api_key)] is kind  # the example really has that kind
    assert default_target(api_key, request) == want


@pytest.mark.parametrize(
    "request_",
    [
        m.JoinGroupRequest(group_id=""),  # no key: nothing to look up
        m.DescribeGroupsRequest(groups=["a", "b"]),  # several keys: the caller routes
        m.InitProducerIdRequest(transactional_id=None),  # idempotent only (as in Java)
    ],
    ids=["empty group id", "list of groups", "no transactional id"],
)
def test_coordinator_kinds_without_one_key_go_anywhere(request_: Any) -> None:
    assert default_target(type(request_).API_KEY, request_) == AnyNode()


def test_the_key_field_follows_the_kind() -> None:
    # AddOffsetsToTxn carries a group id too, but goes to the transaction coordinator.
    request = m.AddOffsetsToTxnRequest(transactional_id="t", group_id="g")
    assert default_target(ApiKey.ADD_OFFSETS_TO_TXN, request) == TransactionCoordinator("t")
    assert default_target(ApiKey.TXN_OFFSET_COMMIT, m.TxnOffsetCommitRequest(group_id="g")) == (
        GroupCoordinator("g")
    )
    assert default_target(9999, object()) == AnyNode()  # unknown API


def test_send_without_target_reaches_the_coordinator_and_the_controller() -> None:
    core, pump, cluster = boot(3, [Topic("t", 1)])
    cluster.coordinators[(0, "g")] = 2
    cluster.coordinators[(1, "tx")] = 1
    cluster.controller_id = 1
    core.request_metadata_update(now=pump.now)
    pump.run(until=lambda: core.cluster.controller_id == 1)
    for broker in pump.brokers.values():
        broker.handlers[ApiKey.HEARTBEAT] = lambda b, body, v, s: m.HeartbeatResponse()
        broker.handlers[ApiKey.ADD_OFFSETS_TO_TXN] = lambda b, body, v, s: (
            m.AddOffsetsToTxnResponse()
        )
        broker.handlers[ApiKey.CREATE_TOPICS] = lambda b, body, v, s: m.CreateTopicsResponse()
    heartbeat = core.send(m.HeartbeatRequest(group_id="g"), now=pump.now)
    txn = core.send(m.AddOffsetsToTxnRequest(transactional_id="tx", group_id="g"), now=pump.now)
    create = core.send(m.CreateTopicsRequest(), now=pump.now)
    pump.run(until=lambda: heartbeat.done and txn.done and create.done)
    assert heartbeat.target == GroupCoordinator("g") and heartbeat.node_id == 2
    assert txn.target == TransactionCoordinator("tx") and txn.node_id == 1
    assert create.target == Controller() and create.node_id == 1
    assert all(h.error is None for h in (heartbeat, txn, create))


def test_an_explicit_target_wins() -> None:
    core, pump, _ = boot(2)
    for broker in pump.brokers.values():
        broker.handlers[ApiKey.HEARTBEAT] = lambda b, body, v, s: m.HeartbeatResponse()
    handle = core.send(m.HeartbeatRequest(group_id="g"), target=Node(1), now=pump.now)
    pump.run(until=lambda: handle.done)
    assert handle.target == Node(1) and handle.node_id == 1


def test_target_helpers() -> None:
    assert is_target(PartitionLeader("t", 0)) and not is_target("t-0")
    assert describe_target(PartitionLeader("t", 0)) == "leader of t-0"
    assert describe_target(Controller()) == "the controller"
    assert describe_target(AnyNode()) == "any node"
    assert describe_target(Node(3)) == "node 3"
    assert describe_target(GroupCoordinator("g")) == "coordinator of group 'g'"
    assert describe_target(TransactionCoordinator("t")) == "coordinator of transactional id 't'"

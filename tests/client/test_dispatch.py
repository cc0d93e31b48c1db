"""Dispatcher: accepting, routing, expiring and ending requests (no connections needed)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from kafkacore.client.backoff import ExponentialBackoff
from kafkacore.client.config import ClientConfig
from kafkacore.client.coordinators import CoordinatorLookups
from kafkacore.client.dispatch import Dispatcher, check_request
from kafkacore.client.events import RequestCompleted
from kafkacore.client.health import NodeHealthTable
from kafkacore.client.metadata import ClusterMetadata
from kafkacore.client.metrics import Counters
from kafkacore.client.outputs import Outputs
from kafkacore.client.pool import ConnectionPool
from kafkacore.client.refresh import MetadataRefresh
from kafkacore.client.routing import (
    AnyNode,
    Controller,
    GroupCoordinator,
    Node,
    PartitionLeader,
    TransactionCoordinator,
)
from kafkacore.errors import (
    KafkaConnectionError,
    KafkaTimeoutError,
    LocalProtocolError,
    RequestCancelled,
)
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ApiKey, CoordinatorType, ErrorCode
from kafkacore.protocol.messages.find_coordinator_response import Coordinator
from kafkacore.protocol.messages.metadata_response import (
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)

LANE = "default"


class World:
    def __init__(self, **config: Any) -> None:
        cfg = ClientConfig(bootstrap_servers="h:1", **config)
        self.cluster = cluster = ClusterMetadata(bootstrap_servers="h:1")
        rng = random.Random(0)
        self.out = out = Outputs(Counters(""))
        health = NodeHealthTable(ExponentialBackoff(50, 1000), rng=rng, stable_s=1.0)
        self.pool = ConnectionPool(cfg, cluster, health, rng=rng, out=out)
        self.lookups = CoordinatorLookups(cluster, ExponentialBackoff(100, 1000), rng=rng, out=out)
        self.refresh = MetadataRefresh(cluster, cfg, out)
        self.topics: set[str] = set()
        self.requests = Dispatcher(
            cfg, cluster, self.pool, self.lookups, self.refresh, topics=self.topics, out=out
        )

    def learn(self, *, leader: int = 0, controller: int = 0) -> None:
        self.cluster.update_metadata(
            m.MetadataResponse(
                brokers=[MetadataResponseBroker(node_id=0, host="b", port=9)],
                controller_id=controller,
                topics=[
                    MetadataResponseTopic(
                        name="t",
                        partitions=[MetadataResponsePartition(partition_index=0, leader_id=leader)],
                    )
                ],
            ),
            now=0.0,
        )

    def send(self, target: Any, *, timeout_ms: int | None = None) -> Any:
        return self.requests.enqueue(
            m.MetadataRequest(), ApiKey.METADATA, target, LANE, 0.0, timeout_ms=timeout_ms
        )


@pytest.mark.parametrize(
    ("target", "node"),
    [
        (Node(0), 0),
        (PartitionLeader("t", 0), 0),
        (Controller(), 0),
        (AnyNode(), 0),
    ],
)
def test_known_routes(target: Any, node: int) -> None:
    world = World()
    world.learn()
    assert world.requests.route(target, LANE, 0.0) == (node, "", None)


def test_unknown_routes_ask_for_what_is_missing() -> None:
    world = World()
    world.cluster.need_update = False
    node, why, _ = world.requests.route(PartitionLeader("u", 3), LANE, 0.0)
    assert node is None and why == "no known leader for u-3"
    assert world.cluster.need_update and world.topics == {"u"}
    node, why, _ = world.requests.route(Controller(), LANE, 0.0)
    assert node is None and why == "no known controller"
    node, why, _ = world.requests.route(GroupCoordinator("g"), LANE, 0.0)
    assert why == "no known coordinator for group 'g'"
    node, why, _ = world.requests.route(TransactionCoordinator("x"), LANE, 0.0)
    assert why == "no known coordinator for transactional id 'x'"
    assert set(world.lookups.wanted) == {(CoordinatorType.GROUP, "g"), (1, "x")}


def test_a_node_missing_from_the_metadata_asks_for_a_refresh() -> None:
    world = World()
    world.learn(leader=5)
    world.cluster.need_update = False
    node, why, _ = world.requests.route(PartitionLeader("t", 0), LANE, 0.0)
    assert node is None and why == "node 5 is not in the metadata" and world.cluster.need_update


def test_any_node_when_everything_backs_off() -> None:
    world = World()
    error = KafkaConnectionError("refused")
    world.pool.health.failed(-1, error, now=0.0, ready_since=None)
    assert world.requests.route(AnyNode(), LANE, 0.0) == (
        None,
        "every node is backing off after failures",
        error,
    )


def test_dispatch_connects_and_notes_why_the_group_waits() -> None:
    world = World()
    world.learn()
    handle = world.send(Node(0), timeout_ms=100)
    world.requests.dispatch(0.0)
    assert world.pool.conn(0, LANE) is not None  # asked for a connection
    assert world.requests.queue.reason((Node(0), LANE)) == "broker 0 at b:9 is not connected"
    world.requests.dispatch(0.0)
    world.requests.expire(0.2)
    assert isinstance(handle.error, KafkaTimeoutError)
    assert "to node 0 not sent within 100 ms: broker 0 at b:9 is connecting" in str(handle.error)
    [event] = world.out.take_events()[-1:]
    assert isinstance(event, RequestCompleted) and event.handle is handle


def test_a_failed_topic_fails_its_requests_at_once() -> None:
    world = World()
    world.cluster.update_metadata(
        m.MetadataResponse(
            brokers=[MetadataResponseBroker(node_id=0, host="b", port=9)],
            topics=[
                MetadataResponseTopic(name="t", error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            ],
        ),
        now=0.0,
    )
    handle = world.send(PartitionLeader("t", 0))
    world.requests.dispatch(0.0)
    assert handle.done and type(handle.error).__name__ == "TopicAuthorizationFailedError"


def test_a_refused_coordinator_fails_its_requests_once() -> None:
    world = World()
    handle = world.send(GroupCoordinator("g"))
    world.requests.dispatch(0.0)
    [lookup] = world.lookups.start(0.0)
    lookup.build(4)
    refusal = m.FindCoordinatorResponse(
        coordinators=[Coordinator(key="g", error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)]
    )
    world.lookups.finished(lookup, refusal, 0.0, needed={(0, "g")})
    world.requests.dispatch(0.0)
    assert handle.done and handle.error is not None and "group 'g'" in str(handle.error)


def test_take_finish_and_cancel() -> None:
    world = World()
    handle = world.send(Node(0))
    pending = world.requests.take(handle)
    world.requests.finish(pending, None, RequestCancelled("x"), 0.0)
    assert world.out.counters.requests_cancelled == 1
    with pytest.raises(LocalProtocolError, match="does not belong"):
        world.requests.take(handle)


def test_the_queue_is_bounded() -> None:
    world = World(max_queued_requests=1)
    world.send(Node(0))
    with pytest.raises(LocalProtocolError, match="max_queued_requests=1"):
        world.send(Node(0))


def test_fail_queued() -> None:
    world = World()
    a, b = world.send(Node(0)), world.send(AnyNode())
    world.requests.fail_queued(KafkaConnectionError("gone"), 0.0)
    assert str(a.error) == str(b.error) == "gone"
    assert world.out.counters.requests_failed == 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"request": object()}, "not a request message"),
        ({"target": "node 1"}, "not a routing target"),
        ({"lane": ""}, "lane must be a non-empty string"),
        ({"timeout_ms": 0}, "timeout_ms 0 must be a positive int"),
        ({"timeout_ms": True}, "timeout_ms True"),
        ({"max_version": -1}, "max_version -1 must be an int >= 0"),
    ],
)
def test_check_request(kwargs: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {
        "request": m.MetadataRequest(),
        "target": None,
        "lane": LANE,
        "timeout_ms": None,
        "max_version": None,
    }
    args.update(kwargs)
    with pytest.raises(LocalProtocolError, match=message):
        check_request(**args)


def test_check_request_returns_the_api_key() -> None:
    assert check_request(m.FetchRequest(), Node(1), LANE, 5, 3) == ApiKey.FETCH

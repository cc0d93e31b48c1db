"""The 3-node cluster: it forms, survives a SIGKILLed node and takes it back."""

from __future__ import annotations

import time
import uuid

from kafkacore.testing import LocalKafka, NodeState, wire


def _brokers_seen_by(kafka: LocalKafka, node_id: int) -> list[int]:
    node = kafka.node(node_id)
    return sorted(b.node_id for b in wire.metadata(node.host, node.port).brokers)


def _wait_for(predicate_name: str, check: object, timeout: float = 60.0) -> None:
    assert callable(check)
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"gave up waiting for {predicate_name}"
        time.sleep(0.2)


def test_three_nodes_each_list_all_brokers(kafka_cluster: LocalKafka) -> None:
    assert [n.node_id for n in kafka_cluster.nodes] == [1, 2, 3]
    assert kafka_cluster.bootstrap == ",".join(f"127.0.0.1:{n.port}" for n in kafka_cluster.nodes)
    for node in kafka_cluster.nodes:
        answer = wire.metadata(node.host, node.port)
        assert sorted((b.node_id, b.port) for b in answer.brokers) == sorted(
            (n.node_id, n.port) for n in kafka_cluster.nodes
        )


def test_killed_node_is_fenced_then_restarted(kafka_cluster: LocalKafka) -> None:
    kafka_cluster.kill(2)
    assert kafka_cluster.node(2).state is NodeState.KILLED
    assert not kafka_cluster.node(2).answers(timeout=1.0)
    # The controller fences node 2 after broker.session.timeout.ms (3 s here).
    _wait_for("node 2 to be fenced", lambda: _brokers_seen_by(kafka_cluster, 1) == [1, 3])

    kafka_cluster.restart(2)
    assert kafka_cluster.node(2).state is NodeState.RUNNING
    for node_id in (1, 2, 3):
        assert _brokers_seen_by(kafka_cluster, node_id) == [1, 2, 3]


def test_leadership_moves_off_a_killed_leader(kafka_cluster: LocalKafka) -> None:
    name = f"lk-{uuid.uuid4().hex[:8]}"
    kafka_cluster.create_topic(name, partitions=1, replication_factor=3)
    first = kafka_cluster.nodes[0]
    (topic,) = wire.metadata(first.host, first.port, [name]).topics
    leader = topic.partitions[0].leader
    assert leader in (1, 2, 3)
    kafka_cluster.kill(leader)
    survivor = next(n for n in kafka_cluster.nodes if n.node_id != leader)

    def moved() -> bool:
        (t,) = wire.metadata(survivor.host, survivor.port, [name]).topics
        return t.partitions[0].leader not in (-1, leader)

    _wait_for("a new leader", moved)
    # The fixture restarts the killed node after the test; do it here to check it.
    kafka_cluster.restart(leader)
    assert _brokers_seen_by(kafka_cluster, leader) == [1, 2, 3]

"""LocalKafka's fault proxies and pausing, against real brokers.

``kafka_broker`` and the 3-node cluster each run a pass-through
:class:`~kafkacore.testing.proxy.FaultProxy` per node in front of a PROXIED
listener: a client bootstrapped on ``proxy_bootstrap`` must reach every
broker through the proxies, because metadata names the proxies' ports.
"""

from __future__ import annotations

import time
import uuid

import pytest

from kafkacore.testing import FaultMix, LocalKafka, NodeState, wire
from kafkacore.testing.pytest_plugin import repair
from kafkacore.transports.selector import KafkaClient


def test_metadata_through_the_proxy_names_the_proxies(kafka_broker: LocalKafka) -> None:
    proxy = kafka_broker.proxies[0]
    before = proxy.stats.connections
    with KafkaClient(kafka_broker.proxy_bootstrap) as client:
        cluster = client.metadata()
        ports = {b.port for b in cluster.brokers()}
    assert ports == {proxy.port}
    # The bootstrap connection and the one to node 1 both went through it.
    assert proxy.stats.connections - before >= 2
    # The PLAINTEXT listener is still direct.
    direct = wire.metadata(kafka_broker.host, kafka_broker.port)
    assert {b.port for b in direct.brokers} == {kafka_broker.port}


def test_cluster_proxies_follow_their_nodes(kafka_cluster: LocalKafka) -> None:
    with KafkaClient(kafka_cluster.proxy_bootstrap) as client:
        cluster = client.metadata()
        by_node = {b.node_id: b.port for b in cluster.brokers()}
    assert by_node == {n.node_id: kafka_cluster.proxy(n.node_id).port for n in kafka_cluster.nodes}


def test_a_cut_through_the_proxy_is_survived(kafka_broker: LocalKafka) -> None:
    topic = f"px-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic)
    proxy = kafka_broker.proxies[0]
    try:
        with KafkaClient(kafka_broker.proxy_bootstrap, request_timeout_ms=5000) as client:
            client.metadata([topic])
            assert proxy.cut_all() >= 1
            proxy.set_mix(FaultMix(drop=1.0))
            with pytest.raises(Exception):  # noqa: B017 - any failure: the point is what follows
                client.metadata([topic], timeout=1.0)
            proxy.set_mix(FaultMix())
            cluster = client.metadata([topic], timeout=30)
            assert cluster.partitions_for_topic(topic)
        assert proxy.stats.injected.get("drop", 0) >= 1
    finally:
        proxy.set_mix(FaultMix())


def test_pause_freezes_a_node_and_resume_thaws_it(kafka_cluster: LocalKafka) -> None:
    node = kafka_cluster.nodes[2]
    kafka_cluster.pause(node.node_id)
    assert node.state is NodeState.PAUSED
    start = time.monotonic()
    with pytest.raises(OSError):
        wire.api_versions(node.host, node.port, timeout=1.0)
    assert time.monotonic() - start < 5
    kafka_cluster.resume(node.node_id)
    assert node.state in (NodeState.RUNNING,)  # (a tuple: mypy narrowed state above)
    assert wire.api_versions(node.host, node.port, timeout=10.0)


def test_repair_resumes_paused_nodes_and_cleans_proxies(kafka_cluster: LocalKafka) -> None:
    node = kafka_cluster.nodes[1]
    kafka_cluster.pause(node.node_id)
    kafka_cluster.proxies[0].set_mix(FaultMix(cut=1.0))
    kafka_cluster.proxies[0].hold()
    repair(kafka_cluster)
    assert node.state is NodeState.RUNNING
    assert kafka_cluster.proxies[0].mix == FaultMix()
    assert wire.api_versions(node.host, node.port, timeout=10.0)

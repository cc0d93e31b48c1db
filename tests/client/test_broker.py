"""The client core against a real Kafka 4.3.1 broker (ApiVersions, SASL).

Driven by a minimal blocking socket pump; the full transports and their
conformance suite are tested elsewhere.
"""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from kafkacore.client import ClientConfig, KafkaClientCore, Node, TopicPartition
from kafkacore.errors import AuthenticationError
from kafkacore.protocol import messages as m
from tests.client.socketpump import SocketPump

pytestmark = pytest.mark.broker


def make(bootstrap: str, **config: Any) -> tuple[KafkaClientCore, SocketPump]:
    core = KafkaClientCore(
        ClientConfig(bootstrap_servers=bootstrap, **config),
        now=time.monotonic(),
        rng=random.Random(0),
    )
    return core, SocketPump(core)


def test_plaintext_bootstrap_and_negotiation(kafka_broker: Any) -> None:
    core, pump = make(f"{kafka_broker.host}:{kafka_broker.port}")
    try:
        pump.run(lambda: core.cluster.update_count > 0)
        assert len(core.cluster) == 1
        assert core.cluster.cluster_id
        versions = core.get_api_versions()
        assert versions is not None and 3 in versions and 18 in versions
        node = next(iter(core.cluster))
        h = core.send(m.MetadataRequest(topics=[]), target=Node(node), now=time.monotonic())
        pump.run(lambda: h.done)
        assert h.error is None
        assert h.api_version == core.api_version(3)
        assert [b.node_id for b in h.response.brokers] == [node]
    finally:
        pump.close()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_plaintext(kafka_broker: Any, mechanism: str) -> None:
    host, port = kafka_broker.listener("SASL_PLAINTEXT")
    user, password = next((u, p) for u, p in kafka_broker.users.items() if u != "admin")
    core, pump = make(
        f"{host}:{port}",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username=user,
        sasl_plain_password=password,
    )
    try:
        h = core.send(m.MetadataRequest(topics=[]), now=time.monotonic())
        pump.run(lambda: h.done)
        assert h.error is None, h.error
        assert h.response.brokers
    finally:
        pump.close()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_sasl_wrong_password(kafka_broker: Any, mechanism: str) -> None:
    host, port = kafka_broker.listener("SASL_PLAINTEXT")
    user = next(iter(kafka_broker.users))
    core, pump = make(
        f"{host}:{port}",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username=user,
        sasl_plain_password="definitely-wrong",
    )
    try:
        h = core.send(m.MetadataRequest(topics=[]), now=time.monotonic())
        pump.run(lambda: h.done)
        assert isinstance(h.error, AuthenticationError), h.error
    finally:
        pump.close()


@pytest.fixture(scope="module")
def reauth_broker(kafka_libs: Any) -> Any:
    """A broker whose SASL sessions last 3 s (KIP-368 ``connections.max.reauth.ms``)."""
    from kafkacore.testing.cluster import LocalKafka

    with LocalKafka(
        size=1,
        listeners=("PLAINTEXT", "SASL_PLAINTEXT"),
        overrides={"connections.max.reauth.ms": "3000"},
    ) as kafka:
        yield kafka


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_sasl_reauthentication_kip368(reauth_broker: Any, mechanism: str) -> None:
    host, port = reauth_broker.listener("SASL_PLAINTEXT")
    core, pump = make(
        f"{host}:{port}",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username="alice",
        sasl_plain_password=reauth_broker.users["alice"],
        metadata_max_age_ms=3_600_000,
    )
    try:
        node = None
        h = core.send(m.MetadataRequest(topics=[]), now=time.monotonic())
        pump.run(lambda: h.done)
        assert h.error is None
        node = h.response.brokers[0].node_id
        h = core.send(m.MetadataRequest(topics=[]), target=Node(node), now=time.monotonic())
        pump.run(lambda: h.done)
        conn = core._pool.slots[(node, "default")].conn
        assert conn is not None and conn.session_lifetime_ms > 0
        # Wait (on the core's own timer) until it re-authenticated twice.
        pump.run(lambda: conn.reauthentications >= 2 and conn.ready, timeout=20)
        h = core.send(m.MetadataRequest(topics=[]), target=Node(node), now=time.monotonic())
        pump.run(lambda: h.done)
        assert h.error is None
        assert core._pool.slots[(node, "default")].conn is conn  # never reconnected
    finally:
        pump.close()


def test_routing_to_controller_leader_and_coordinators(kafka_broker: Any) -> None:
    from kafkacore.client import Controller, GroupCoordinator, PartitionLeader
    from kafkacore.client import TransactionCoordinator as TxnCoordinator
    from kafkacore.protocol.messages.create_topics_request import CreatableTopic

    core, pump = make(f"{kafka_broker.host}:{kafka_broker.port}")
    topic = f"kc-client-route-{random.Random().getrandbits(32):08x}"
    try:
        create = core.send(
            m.CreateTopicsRequest(
                topics=[CreatableTopic(name=topic, num_partitions=2, replication_factor=1)]
            ),
            target=Controller(),
            now=time.monotonic(),
        )
        pump.run(lambda: create.done)
        assert create.error is None and create.response.topics[0].error_code == 0
        leader = core.send(
            m.MetadataRequest(topics=[]), target=PartitionLeader(topic, 1), now=time.monotonic()
        )
        group = core.send(
            m.DescribeGroupsRequest(groups=["kc-client-group"]),
            target=GroupCoordinator("kc-client-group"),
            now=time.monotonic(),
        )
        txn = core.send(
            m.DescribeTransactionsRequest(transactional_ids=["kc-client-txn"]),
            target=TxnCoordinator("kc-client-txn"),
            now=time.monotonic(),
        )
        pump.run(lambda: leader.done and group.done and txn.done)
        for h in (leader, group, txn):
            assert h.error is None, h.error
        node = next(iter(core.cluster))
        assert leader.node_id == node
        assert core.cluster.leader_for_partition(TopicPartition(topic, 1)) == node
        # A coordinator still loading answers COORDINATOR_LOAD_IN_PROGRESS (14) and
        # friends, after which the core forgets it (looked up again next time).
        group_code = group.response.groups[0].error_code
        txn_code = txn.response.transaction_states[0].error_code
        expect_group = None if group_code in (14, 15, 16) else node
        expect_txn = None if txn_code in (14, 15, 16) else node
        assert core.cluster.coordinator_for_group("kc-client-group") == expect_group, group_code
        assert core.cluster.coordinator_for_transaction("kc-client-txn") == expect_txn, txn_code
        finds = core.metrics().requests_by_api.get(10, 0)
        assert finds >= 2  # one lookup per key type (batched per type, KIP-699)
    finally:
        pump.close()

"""Conformance on the 3-node cluster: crashes, restarts and moving leaders.

Real-time waits here are the cluster's own (fencing a killed broker,
electing a leader, a restart); each loop is bounded and fails with what it
last saw.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import anyio.to_thread
import pytest

from kafkacore.client import Node, PartitionLeader
from kafkacore.errors import KafkaConnectionError, KafkaTimeoutError, RequestCancelled

from .conftest import Flavor, UniformClient
from .helpers import fetch_request, metadata_request

pytestmark = pytest.mark.anyio

#: Bound of every wait for the cluster to react (fencing is ~3 s here).
CLUSTER_WAIT_S = 60.0
#: Errors a request may meet while a broker dies under it; anything else fails.
TRANSIENT = (KafkaConnectionError, KafkaTimeoutError, RequestCancelled)


_created: set[str] = set()


@pytest.fixture
def replicated(kafka_cluster: Any) -> str:
    """A 3-partition topic with 3 replicas, created once per session."""
    name = "conf-replicated"
    if name not in _created:
        kafka_cluster.create_topic(name, partitions=3, replication_factor=3)
        _created.add(name)
    return name


async def _leaders(client: UniformClient, topic: str) -> dict[int, int | None]:
    cluster = await client.metadata([topic])
    return {p: cluster.get_leader(topic, p) for p in sorted(cluster.partitions_for_topic(topic))}


async def _fetch_ok(client: UniformClient, topic: str, partition: int) -> bool:
    """True if the partition's leader, as the client routes it, serves a Fetch."""
    cluster = await client.metadata([topic])
    request = fetch_request(cluster, topic, partition, max_wait_ms=0)
    try:
        response = await client.send(
            request, target=PartitionLeader(topic, partition), timeout_ms=5000
        )
    except TRANSIENT:
        return False
    [t] = response.responses
    [p] = t.partitions
    # NOT_LEADER_OR_FOLLOWER (6) would mean we routed to a stale leader.
    return bool(response.error_code == 0 and p.error_code == 0)


async def test_broker_killed_and_restarted_mid_traffic(
    flavor: Flavor, kafka_cluster: Any, replicated: str
) -> None:
    async with flavor.client(kafka_cluster.bootstrap, request_timeout_ms=5000) as client:
        before = await _leaders(client, replicated)
        victim = before[0]
        assert victim is not None
        outcomes: list[str] = []
        stop = anyio.Event()

        async def traffic() -> None:
            # Requests to every partition leader, back to back, all the time.
            while not stop.is_set():
                for p in before:
                    ok = await _fetch_ok(client, replicated, p)
                    outcomes.append("ok" if ok else "err")
                await anyio.sleep(0.01)

        async with anyio.create_task_group() as tg:
            tg.start_soon(traffic)
            await anyio.to_thread.run_sync(kafka_cluster.kill, victim)
            mark = len(outcomes)
            # Recovery without user action: every partition served again by a
            # live leader, found through metadata the core refreshed itself.
            deadline = time.monotonic() + CLUSTER_WAIT_S
            while True:
                leaders = await _leaders(client, replicated)
                if victim not in leaders.values() and None not in leaders.values():
                    recent = outcomes[mark:]
                    if recent[-len(before) :] == ["ok"] * len(before):
                        break
                assert time.monotonic() < deadline, f"no recovery: {leaders} {outcomes[-6:]}"
                await anyio.sleep(0.1)
            await anyio.to_thread.run_sync(kafka_cluster.restart, victim)
            # The restarted broker is reachable again through the same client.
            deadline = time.monotonic() + CLUSTER_WAIT_S
            while True:
                try:
                    response = await client.send(metadata_request(), target=Node(victim))
                except TRANSIENT:
                    response = None
                if response is not None and victim in {b.node_id for b in response.brokers}:
                    break
                assert time.monotonic() < deadline, f"node {victim} never came back"
                await anyio.sleep(0.1)
            stop.set()
        assert "ok" in outcomes[mark:]


async def test_leader_lookup_follows_a_moved_leader(
    flavor: Flavor, kafka_cluster: Any, replicated: str
) -> None:
    async with flavor.client(kafka_cluster.bootstrap, request_timeout_ms=5000) as client:
        before = await _leaders(client, replicated)
        old = before[1]
        assert old is not None
        await anyio.to_thread.run_sync(kafka_cluster.kill, old)
        deadline = time.monotonic() + CLUSTER_WAIT_S
        while True:
            leaders = await _leaders(client, replicated)
            if leaders[1] not in (None, old):
                break
            assert time.monotonic() < deadline, f"leader of p1 never moved off {old}: {leaders}"
            await anyio.sleep(0.1)
        new = leaders[1]
        # The core's view agrees with what a live broker says right now...
        live = next(n.node_id for n in kafka_cluster.nodes if n.node_id != old)
        raw = await client.send(metadata_request(replicated), target=Node(live))
        [topic] = raw.topics
        broker_says = {p.partition_index: p.leader_id for p in topic.partitions}
        assert broker_says[1] == new
        # ...and requests routed by leader reach it (no NOT_LEADER_OR_FOLLOWER).
        for p in leaders:
            assert await _fetch_ok(client, replicated, p), f"partition {p} not served"
        await anyio.to_thread.run_sync(kafka_cluster.restart, old)

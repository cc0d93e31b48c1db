"""Conformance: the same scenarios on the selector, asyncio and trio transports.

Against the real single broker (``kafka_broker``). Each test runs once per
flavor (see ``conftest.py``). Real-time waits happen only where the broker's
own time is involved (a Fetch that the broker holds), and are short.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from kafkacore.client import ClusterMetadata, Node, PartitionLeader
from kafkacore.errors import KafkaTimeoutError, NoBrokersAvailable, RequestCancelled
from kafkacore.protocol.messages import FetchRequest

from .conftest import Flavor
from .helpers import fetch_request, metadata_request

pytestmark = pytest.mark.anyio

#: topic -> partition count, created once per session.
TOPICS = {"conf-one": 1, "conf-three": 3, "conf-five": 5}


@pytest.fixture(scope="session")
def topics(kafka_broker: Any) -> Iterator[dict[str, int]]:
    for name, partitions in TOPICS.items():
        kafka_broker.create_topic(name, partitions=partitions)
    yield TOPICS


def held_fetch(cluster: ClusterMetadata, *, max_wait_ms: int) -> FetchRequest:
    """A Fetch of empty ``conf-one`` that the broker holds for ``max_wait_ms``."""
    return fetch_request(cluster, "conf-one", max_wait_ms=max_wait_ms)


_md_request = metadata_request


async def test_bootstrap_skips_a_dead_address(
    flavor: Flavor, kafka_broker: Any, dead_address: str
) -> None:
    # Dead address first, so the client must move on to the good one.
    async with flavor.client(f"{dead_address},{kafka_broker.bootstrap}") as client:
        cluster: ClusterMetadata = await client.metadata()
        assert set(cluster) == {1}
        broker = cluster.broker_metadata(1)
        assert broker is not None
        assert (broker.host, broker.port) == (kafka_broker.host, kafka_broker.port)


async def test_bootstrap_with_only_dead_addresses_fails_clearly(
    flavor: Flavor, dead_address: str
) -> None:
    err = await flavor.connect_error(dead_address, reconnect_backoff_ms=10, request_timeout_ms=2000)
    assert isinstance(err, NoBrokersAvailable)
    assert dead_address in str(err)


async def test_metadata_for_several_topics(
    flavor: Flavor, kafka_broker: Any, topics: dict[str, int]
) -> None:
    async with flavor.client(kafka_broker.bootstrap) as client:
        cluster = await client.metadata(list(topics))
        for name, count in topics.items():
            assert cluster.partitions_for_topic(name) == set(range(count))
            for p in range(count):
                assert cluster.get_leader(name, p) == 1
        # The raw response agrees with the core's view.
        response = await client.send(_md_request(*topics))
        got = {t.name: len(t.partitions) for t in response.topics}
        assert got == topics


async def test_pipelined_requests_keep_their_answers(
    flavor: Flavor, kafka_broker: Any, topics: dict[str, int]
) -> None:
    names = list(topics)
    async with flavor.client(
        kafka_broker.bootstrap, max_in_flight_requests_per_connection=8
    ) as client:
        await client.metadata()
        requests = [_md_request(names[i % len(names)]) for i in range(60)]
        results = await client.send_many(requests, node_id=1)
        for i, response in enumerate(results):
            assert not isinstance(response, BaseException), response
            [topic] = response.topics
            assert topic.name == names[i % len(names)]
            assert len(topic.partitions) == topics[topic.name]
        metrics = await client.query(lambda core: core.metrics())
        assert metrics.responses_received >= 60


async def test_requests_overlap_on_the_wire(
    flavor: Flavor, kafka_broker: Any, topics: dict[str, int]
) -> None:
    limit = 4
    async with flavor.client(
        kafka_broker.bootstrap, max_in_flight_requests_per_connection=limit
    ) as client:
        cluster = await client.metadata(["conf-one"])
        # The broker answers one connection's requests in order and holds this
        # Fetch (nothing to read) for up to 2 s, so everything written behind
        # it stays in flight meanwhile: the peak shows how deep we pipeline.
        held = held_fetch(cluster, max_wait_ms=2000)
        rest = [_md_request("conf-one")] * 10
        peak = 0
        fetched: list[Any] = []
        results: list[Any] = []

        def in_flight(core: Any) -> int:
            return int(core.in_flight_request_count(1))

        async def fetch() -> None:
            fetched.append(await client.send(held, node_id=1))

        async def pipeline() -> None:
            results.extend(await client.send_many(rest, node_id=1))

        async with anyio.create_task_group() as tg:
            # The Fetch must be on the wire first (trio starts tasks in any
            # order), so wait until it is in flight before sending the rest.
            before = await client.query(in_flight)
            tg.start_soon(fetch)
            while await client.query(in_flight) <= before:
                await anyio.sleep(0.005)
            tg.start_soon(pipeline)
            while not results:
                peak = max(peak, await client.query(in_flight))
                await anyio.sleep(0.01)
        assert fetched and not isinstance(fetched[0], BaseException), fetched
        assert all(not isinstance(r, BaseException) for r in results), results
        assert peak == limit


async def test_request_timeout_then_recovery(
    flavor: Flavor, kafka_broker: Any, topics: dict[str, int]
) -> None:
    async with flavor.client(kafka_broker.bootstrap) as client:
        cluster = await client.metadata(["conf-one"])
        # The broker holds this Fetch for up to 3 s (nothing to read); our
        # request timeout is 300 ms, so the core must time it out itself.
        fetch = held_fetch(cluster, max_wait_ms=3000)
        with pytest.raises(KafkaTimeoutError):
            await client.send(fetch, target=PartitionLeader("conf-one", 0), timeout_ms=300)
        # The timed-out connection was dropped; the next request reconnects.
        response = await client.send(_md_request("conf-one"), node_id=1)
        assert [t.name for t in response.topics] == ["conf-one"]


async def test_close_cancels_pending_requests(
    flavor: Flavor, kafka_broker: Any, topics: dict[str, int]
) -> None:
    async with flavor.client(kafka_broker.bootstrap) as client:
        held = held_fetch(await client.metadata(["conf-one"]), max_wait_ms=10_000)
        outcome: list[Any] = []

        async def waiter() -> None:
            try:
                outcome.append(await client.send(held, node_id=1))
            except Exception as exc:
                outcome.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter)
            # Wait until the Fetch is on the wire (the core says so), then close.
            while not outcome:
                if await client.query(lambda core: core.in_flight_request_count(1)):
                    break
                await anyio.sleep(0.01)
            await client.close()
        assert len(outcome) == 1
        assert isinstance(outcome[0], RequestCancelled), outcome


async def test_send_to_a_node_by_id_and_to_a_leader(
    flavor: Flavor, kafka_broker: Any, topics: dict[str, int]
) -> None:
    async with flavor.client(kafka_broker.bootstrap) as client:
        await client.metadata(["conf-three"])
        by_node = await client.send(_md_request("conf-three"), target=Node(1))
        by_leader = await client.send(
            _md_request("conf-three"), target=PartitionLeader("conf-three", 2)
        )
        assert by_node.topics[0].name == by_leader.topics[0].name == "conf-three"


def test_every_flavor_is_collected(flavor: Flavor) -> None:
    # Guards the parametrisation itself: a flavor silently dropped would
    # make the whole suite cover fewer transports than it claims.
    assert flavor.name in ("selector", "asyncio", "trio")
    _ = uuid.uuid4()


async def test_abandoning_a_wait_cancels_the_request(
    flavor: Flavor, kafka_broker: Any, topics: dict[str, int]
) -> None:
    async with flavor.client(kafka_broker.bootstrap) as client:
        held = held_fetch(await client.metadata(["conf-one"]), max_wait_ms=5000)
        # The broker holds the Fetch 5 s; we stop waiting after 0.3 s.
        assert await client.send_abandoned(held, 0.3, node_id=1)
        # The wait is gone and so is the request: the core counted it cancelled.
        for _ in range(100):  # selector: the cancel travels to its loop thread
            metrics = await client.query(lambda core: core.metrics())
            if metrics.requests_cancelled:
                break
            await anyio.sleep(0.01)
        assert metrics.requests_cancelled == 1
        # The client goes on working.
        response = await client.send(_md_request("conf-one"), node_id=1)
        assert [t.name for t in response.topics] == ["conf-one"]


async def test_socket_options_from_the_config(
    flavor: Flavor, kafka_broker: Any, topics: dict[str, int]
) -> None:
    # Bound to a source address, with explicit buffer sizes: still a working
    # client (the options themselves are checked on the socket in test_options).
    async with flavor.client(
        kafka_broker.bootstrap,
        source_address=("127.0.0.1", 0),
        receive_buffer_bytes=256 * 1024,
        send_buffer_bytes=128 * 1024,
    ) as client:
        response = await client.send(_md_request("conf-one"), node_id=1)
        assert [(t.name, t.error_code) for t in response.topics] == [("conf-one", 0)]

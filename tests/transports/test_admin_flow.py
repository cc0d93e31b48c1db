"""The admin clients of the three transports against the real broker.

Each test runs once per flavor (``selector``: :class:`KafkaAdminClient`, its
blocking calls made in a worker thread; ``asyncio``:
:class:`AsyncKafkaAdminClient`; ``trio``: :class:`TrioKafkaAdminClient`),
through :class:`Admin`, which makes every call awaitable. The consumer group
is made by a real (blocking) consumer. Timeouts are checked against a
listener that accepts connections and never answers.
"""

from __future__ import annotations

import contextlib
import functools
import socket
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import anyio.to_thread
import pytest

from kafkacore.admin import (
    AlterConfigOp,
    ConfigResourceType,
    ConfigSource,
    GroupState,
    NewPartitions,
)
from kafkacore.admin import ConfigResource as CoreResource
from kafkacore.client import TopicPartition
from kafkacore.errors import KafkaTimeoutError, LocalProtocolError
from kafkacore.protocol.error_codes import GroupIdNotFoundError, TopicAlreadyExistsError
from kafkacore.transports.selector import ConfigResource, KafkaConsumer, KafkaProducer, NewTopic

from .conftest import Flavor

pytestmark = pytest.mark.anyio


class Admin:
    """One admin client of a flavor; ``await admin.call(name, ...)`` runs any method."""

    def __init__(self, flavor: Flavor, client: Any) -> None:
        self.flavor = flavor
        self.client = client

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        method = functools.partial(getattr(self.client, name), *args, **kwargs)
        if self.flavor.name == "selector":
            return await anyio.to_thread.run_sync(method)
        return await method()


@contextlib.asynccontextmanager
async def open_admin(flavor: Flavor, bootstrap: str, **options: Any) -> AsyncIterator[Admin]:
    if flavor.name == "selector":
        from kafkacore.transports.selector import KafkaAdminClient

        blocking = KafkaAdminClient(bootstrap, **options)
        try:
            yield Admin(flavor, blocking)
        finally:
            await anyio.to_thread.run_sync(blocking.close)
    elif flavor.name == "asyncio":
        from kafkacore.transports.asyncio import AsyncKafkaAdminClient

        async with AsyncKafkaAdminClient(bootstrap, **options) as client:
            yield Admin(flavor, client)
    else:
        from kafkacore.transports.trio import TrioKafkaAdminClient

        async with TrioKafkaAdminClient(bootstrap, **options) as client:
            yield Admin(flavor, client)


async def eventually(check: Callable[[], Any], what: str, timeout: float = 30.0) -> None:
    """Await ``check()`` until it is truthy (the broker applies some changes a moment later)."""
    end = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < end, f"not reached in {timeout} s: {what}"
        await anyio.sleep(0.1)


# -- the whole life of topics, configs, partitions and a group ------------------------------
async def test_topics_configs_partitions(flavor: Flavor, kafka_broker: Any) -> None:
    tag = uuid.uuid4().hex[:8]
    plain, compact = f"adm-{flavor.name}-a-{tag}", f"adm-{flavor.name}-b-{tag}"
    async with open_admin(flavor, kafka_broker.bootstrap) as admin:
        made = await admin.call(
            "create_topics",
            [
                NewTopic(plain, 1, 1),
                NewTopic(compact, 2, 1, topic_configs={"cleanup.policy": "compact"}),
            ],
        )
        assert made.all()[compact].num_partitions == 2
        again = await admin.call("create_topics", [NewTopic(plain, 1, 1)], timeout=20)
        assert isinstance(again[plain].error, TopicAlreadyExistsError)

        async def listed() -> bool:
            # The broker learns of new topics a moment after the controller answered.
            names = await admin.call("list_topics")
            assert names == sorted(names)
            return {plain, compact} <= set(names)

        await eventually(listed, "both topics listed")
        listings = await admin.call("list_topic_listings")
        assert listings[plain].topic_id is not None and not listings[plain].is_internal
        described = await admin.call("describe_topics", [plain, compact])
        assert [len(described[t].result().partitions) for t in (plain, compact)] == [1, 2]
        everything = await admin.call("describe_topics")
        assert {plain, compact} <= set(everything)
        cluster = await admin.call("describe_cluster")
        assert [b.node_id for b in cluster.brokers] == [1] and cluster.controller_id == 1

        # Configs: the core's incremental form, then kafka-python's whole-set form.
        topic = CoreResource(ConfigResourceType.TOPIC, plain)
        changed = await admin.call(
            "incremental_alter_configs", {topic: [AlterConfigOp("retention.ms", "86400000")]}
        )
        assert changed[topic].ok

        # A broker applies config changes when it replays the controller's record,
        # a moment after the controller answered: read back until they show.
        async def config_is(resource: Any, name: str, value: str, source: Any = None) -> bool:
            item = (await admin.call("describe_configs", [resource]))[resource]
            if not item.ok:
                return False  # e.g. the broker does not know the new topic yet
            found = item.result()
            if isinstance(resource, ConfigResource) and resource.configs is not None:
                assert list(found) == list(resource.configs), "only the named configs"
            entry = found[name]
            return bool(entry.value == value and source in (None, entry.source))

        await eventually(
            lambda: config_is(topic, "retention.ms", "86400000", ConfigSource.DYNAMIC_TOPIC_CONFIG),
            "retention.ms set",
        )
        compat = ConfigResource("topic", plain, configs={"max.message.bytes": "65536"})
        assert (await admin.call("alter_configs", [compat]))[topic].ok
        wanted = ConfigResource(ConfigResourceType.TOPIC, plain, {"max.message.bytes": ""})
        await eventually(
            lambda: config_is(wanted, "max.message.bytes", "65536"), "max.message.bytes set"
        )
        compacted = CoreResource(ConfigResourceType.TOPIC, compact)
        await eventually(
            lambda: config_is(compacted, "cleanup.policy", "compact"), "created compacted"
        )

        grown = await admin.call("create_partitions", {plain: NewPartitions(3)}, timeout_ms=30000)
        assert grown[plain].ok

        async def three_partitions() -> bool:
            found = await admin.call("describe_topics", [plain])
            return len(found[plain].result().partitions) == 3

        await eventually(three_partitions, "three partitions")

        deleted = await admin.call("delete_topics", [plain, compact], timeout_ms=30000)
        assert deleted.all() == {plain: None, compact: None}

        async def gone() -> bool:
            return not {plain, compact} & set(await admin.call("list_topics"))

        await eventually(gone, "topics deleted")


def consume_and_commit(bootstrap: str, topic: str, group: str, records: int) -> KafkaConsumer:
    """A real consumer in ``group`` that read ``records`` records and committed them."""
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    got, end = 0, time.monotonic() + 60
    while got < records:
        assert time.monotonic() < end, f"only {got} of {records} records consumed"
        got += len(consumer.poll_records(timeout=0.5))
    consumer.commit()
    return consumer


async def test_a_consumer_group(flavor: Flavor, kafka_broker: Any) -> None:
    tag = uuid.uuid4().hex[:8]
    topic, group = f"adm-{flavor.name}-g-{tag}", f"adm-{flavor.name}-group-{tag}"
    bootstrap = kafka_broker.bootstrap
    async with open_admin(flavor, bootstrap, client_id=f"admin-{flavor.name}") as admin:
        assert (await admin.call("create_topics", [NewTopic(topic, 2, 1)]))[topic].ok

        def produce() -> None:
            with KafkaProducer(bootstrap) as producer:
                for i in range(6):
                    producer.send(topic, f"v{i}".encode(), partition=i % 2)
                producer.flush(30)

        await anyio.to_thread.run_sync(produce)
        consumer = await anyio.to_thread.run_sync(consume_and_commit, bootstrap, topic, group, 6)
        try:
            listing = await admin.call("list_consumer_groups")
            assert group in [g.group_id for g in listing.groups] and listing.errors == {}
            described = (await admin.call("describe_consumer_groups", [group]))[group].result()
            assert described.state is GroupState.STABLE and len(described.members) == 1
            member = described.members[0]
            assert member.assignment == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
            offsets = await admin.call("list_consumer_group_offsets", group)
            assert {tp: o.offset for tp, o in offsets.items()} == {
                TopicPartition(topic, 0): 3,
                TopicPartition(topic, 1): 3,
            }
            one = await admin.call(
                "list_consumer_group_offsets", group, partitions=[TopicPartition(topic, 1)]
            )
            assert list(one) == [TopicPartition(topic, 1)]
        finally:
            await anyio.to_thread.run_sync(consumer.close)

        async def empty() -> bool:
            found = await admin.call("describe_consumer_groups", [group])
            return bool(found[group].result().state is GroupState.EMPTY)

        await eventually(empty, "the group empty once its consumer left")
        assert (await admin.call("delete_consumer_groups", [group])).all() == {group: None}
        after = await admin.call("describe_consumer_groups", [group])
        assert isinstance(after[group].error, GroupIdNotFoundError)
        assert (await admin.call("delete_topics", [topic])).all() == {topic: None}


# -- timeouts and life -----------------------------------------------------------------------
@pytest.fixture
def silent_address() -> Iterator[str]:
    """``host:port`` that accepts TCP connections (the kernel's backlog) and never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield f"127.0.0.1:{s.getsockname()[1]}"


async def test_a_call_ends_at_its_timeout(flavor: Flavor, silent_address: str) -> None:
    async with open_admin(flavor, silent_address) as admin:
        calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
            ("list_topics", (), {"timeout": 0.4}),
            ("describe_topics", (), {"timeout": 0.4}),  # two steps, one deadline
            ("create_topics", ([NewTopic("never", 1, 1)],), {"timeout_ms": 400}),
        ]
        for name, args, kwargs in calls:
            start = time.monotonic()
            with pytest.raises(KafkaTimeoutError, match=r"not done within \d+ ms"):
                # The core's own deadline ("not done within"), not the idiom's backstop.
                await admin.call(name, *args, **kwargs)
            assert 0.3 < time.monotonic() - start < 3.0, name


async def test_the_default_timeout_is_the_option(flavor: Flavor, silent_address: str) -> None:
    async with open_admin(flavor, silent_address, default_api_timeout_ms=400) as admin:
        start = time.monotonic()
        with pytest.raises(KafkaTimeoutError, match="not done within 400 ms"):
            await admin.call("describe_cluster")
        assert time.monotonic() - start < 3.0


async def test_a_closed_client_refuses_calls(flavor: Flavor, silent_address: str) -> None:
    async with open_admin(flavor, silent_address) as admin:
        await admin.call("close")
        await admin.call("close")  # idempotent
        with pytest.raises(LocalProtocolError, match="closed"):
            await admin.call("list_topics")


async def test_a_bad_argument_is_refused_in_every_idiom(
    flavor: Flavor, silent_address: str
) -> None:
    async with open_admin(flavor, silent_address) as admin:
        with pytest.raises(TypeError, match="collection of NewTopic"):
            await admin.call("create_topics", "t")
        with pytest.raises(TypeError, match="group_coordinator_id=1 is not supported"):
            await admin.call("describe_consumer_groups", ["g"], group_coordinator_id=1)
        with pytest.raises(ValueError, match="not both"):
            await admin.call("create_partitions", {"t": NewPartitions(2)}, 100, timeout=1.0)

"""Caller mistakes on the admin clients: options, argument shapes, kafka-python's
unsupported arguments. Each is refused at once, before anything is sent; no broker
is needed (the clients point at a listener that never answers)."""

from __future__ import annotations

import asyncio
import inspect
import re
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import trio

from kafkacore.admin import AdminConfig, ConfigResourceType, NewPartitions
from kafkacore.admin import ConfigResource as CoreResource
from kafkacore.client import TopicPartition
from kafkacore.errors import KafkaTimeoutError, LocalProtocolError
from kafkacore.options import Role, known_options
from kafkacore.transports.asyncio import AsyncKafkaAdminClient
from kafkacore.transports.selector import ConfigResource, KafkaAdminClient, NewTopic
from kafkacore.transports.trio import TrioKafkaAdminClient

CLASSES = [KafkaAdminClient, AsyncKafkaAdminClient, TrioKafkaAdminClient]


@pytest.fixture
def silent() -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def admin(silent: str) -> Iterator[KafkaAdminClient]:
    with KafkaAdminClient(silent, default_api_timeout_ms=2000) as client:
        yield client


# -- options -------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_an_unknown_option_names_the_class_and_the_known_ones(cls: Any) -> None:
    with pytest.raises(TypeError) as caught:
        cls("h:1", group_id="g")  # a consumer option
    text = str(caught.value)
    assert text.startswith(f"{cls.__name__}: unknown option 'group_id';")
    assert "docs/admin.md and docs/client.md" in text and "known_options(Role.ADMIN)" in text
    assert "max_pending_operations" in known_options(Role.ADMIN)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_a_bad_option_value_names_the_class(cls: Any) -> None:
    with pytest.raises(ValueError, match=rf"^{cls.__name__}: AdminConfig.default_api_timeout_ms"):
        cls("h:1", default_api_timeout_ms=0)
    # A client option's bad value is the client config's own error, as in every class.
    with pytest.raises((ValueError, LocalProtocolError), match="request_timeout_ms"):
        cls("h:1", request_timeout_ms=-5)


def test_options_reach_the_admin_and_the_client_core(silent: str) -> None:
    with KafkaAdminClient(
        silent, client_id="adm-opts", default_api_timeout_ms=1234, max_pending_operations=7
    ) as admin:
        assert admin.config == AdminConfig(default_api_timeout_ms=1234, max_pending_operations=7)
        seen = admin.run_on_loop(lambda core: (core.config, core.client.config.client_id))
        assert seen == (admin.config, "adm-opts")


# -- argument shapes (each refused before anything is sent) ----------------------------------
BAD_CALLS: list[tuple[str, Callable[[KafkaAdminClient], Any], type[Exception], str]] = [
    (
        "a bare name",
        lambda a: a.create_topics("t"),  # type: ignore[arg-type]
        TypeError,
        "collection of NewTopic",
    ),
    (
        "tuples",
        lambda a: a.create_topics([("t", 1, 1)]),  # type: ignore[list-item]
        TypeError,
        "NewTopic items",
    ),
    ("no topics", lambda a: a.create_topics([]), ValueError, "at least one"),
    (
        "partitions as a list",
        lambda a: a.create_partitions([("t", NewPartitions(2))]),  # type: ignore[arg-type]
        TypeError,
        "mapping",
    ),
    (
        "a resource without configs",
        lambda a: a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "t")]),
        TypeError,
        "no configs to set",
    ),
    (
        "a bare resource",
        lambda a: a.describe_configs(ConfigResource("topic", "t")),  # type: ignore[arg-type]
        TypeError,
        "collection of ConfigResource",
    ),
    (
        "group_coordinator_id",
        lambda a: a.list_consumer_group_offsets("g", group_coordinator_id=1),
        TypeError,
        "group_coordinator_id=1 is not supported",
    ),
    (
        "broker_ids",
        lambda a: a.list_consumer_groups([1]),
        TypeError,
        "broker_ids=[1] is not supported",
    ),
    (
        "partition_leader_id",
        lambda a: a.delete_records({TopicPartition("t", 0): 1}, partition_leader_id=1),
        TypeError,
        "partition_leader_id=1 is not supported",
    ),
    ("two timeouts", lambda a: a.delete_topics(["t"], 100, timeout=1), ValueError, "not both"),
    ("timeout_ms of 0", lambda a: a.delete_topics(["t"], timeout_ms=0), ValueError, "timeout_ms"),
    ("a negative timeout", lambda a: a.list_topics(timeout=-1), ValueError, "timeout"),
    (
        "a text timeout",
        lambda a: a.list_topics(timeout="5"),  # type: ignore[arg-type]
        TypeError,
        "seconds",
    ),
    ("election 7", lambda a: a.perform_leader_election(7), ValueError, "neither 0"),
    (
        "election partitions as a list",
        lambda a: a.perform_leader_election(0, ["t"]),  # type: ignore[arg-type]
        TypeError,
        "topic_partitions",
    ),
    ("no group", lambda a: a.describe_consumer_groups([]), ValueError, "group"),
]


@pytest.mark.parametrize(
    ("case", "call", "error", "words"), BAD_CALLS, ids=[c[0] for c in BAD_CALLS]
)
def test_a_bad_argument_is_refused_at_once(
    admin: KafkaAdminClient,
    case: str,
    call: Callable[[KafkaAdminClient], Any],
    error: type[Exception],
    words: str,
) -> None:
    with pytest.raises(error, match=re.escape(words)):
        call(admin)
    assert admin.run_on_loop(lambda core: core.pending_operations) == 0


def test_kafka_python_argument_classes_check_themselves() -> None:
    with pytest.raises(ValueError, match="num_partitions"):
        NewTopic("t", 0, 1)
    with pytest.raises(ValueError, match="not both"):
        NewTopic("t", 1, 1, topic_configs={"a": "b"}, configs={"a": "b"})
    with pytest.raises(TypeError, match="TOPIC"):
        ConfigResource("tpoic", "t")
    topic = NewTopic("t", replica_assignments={0: [1]}, topic_configs={"a": "b"})
    assert (topic.num_partitions, topic.configs, topic.topic_configs) == (
        -1,
        {"a": "b"},
        {"a": "b"},
    )
    compat = ConfigResource("broker", "1", {"x": "y"})
    assert compat == CoreResource(ConfigResourceType.BROKER, "1") and compat.resource_type is (
        ConfigResourceType.BROKER
    )
    assert {CoreResource(ConfigResourceType.BROKER, "1"): 1}[compat] == 1


def test_the_argument_classes_say_what_they_are() -> None:
    from kafkacore.transports.selector import ConfigResourceType as Exported
    from kafkacore.transports.selector import NewPartitions as Partitions

    for cls in (NewTopic, Partitions, ConfigResource):
        assert "kafkacore.admin." in (cls.__doc__ or "") and "kafka-python" in (cls.__doc__ or "")
    assert Exported is ConfigResourceType  # the core's enum, kafka-python's names and values
    assert (Exported.TOPIC, Exported.BROKER) == (2, 4)


def test_methods_read_as_their_calls() -> None:
    method = KafkaAdminClient.create_topics
    assert method.__name__ == "create_topics" and "CreateTopics" in (method.__doc__ or "")
    returns = inspect.signature(method).return_annotation
    assert returns == "ItemResults[str, CreatedTopic]"
    assert AsyncKafkaAdminClient.list_topics.__name__ == "list_topics"
    assert inspect.iscoroutinefunction(TrioKafkaAdminClient.describe_cluster)


# -- life ------------------------------------------------------------------------------------
def test_trio_needs_async_with(silent: str) -> None:
    async def main() -> None:
        admin = TrioKafkaAdminClient(silent)
        with pytest.raises(LocalProtocolError, match="async with TrioKafkaAdminClient"):
            await admin.list_topics()
        async with admin:
            pass
        with pytest.raises(LocalProtocolError, match="cannot enter"):
            async with admin:
                pass

    trio.run(main)


def test_asyncio_starts_on_the_first_call(silent: str) -> None:
    async def main() -> None:
        admin = AsyncKafkaAdminClient(silent)
        with pytest.raises(KafkaTimeoutError):
            await admin.list_topics(timeout=0.2)
        await admin.close()
        with pytest.raises(LocalProtocolError, match="closed"):
            await admin.start()

    asyncio.run(main())

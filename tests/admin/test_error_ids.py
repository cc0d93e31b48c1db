"""Every admin command's refusal names the broker that refused it (issue 13).

Each command runs against three fake brokers whose answers to its API carry
one non-retriable error code in every ``error_code`` field (top level and
per item). Every error the command reports is then that code's BrokerError,
its ``node_id`` is a broker that was asked (a bootstrap connection's id
mapped to the broker's own), and its message names that broker.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from kafkacore.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AdminCore,
    AlterConfigOp,
    ConfigResource,
    ConfigResourceType,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
)
from kafkacore.admin.quota_types import (
    ClientQuotaEntity,
    ScramCredentialDeletion,
    ScramMechanism,
)
from kafkacore.client.config import ClientConfig
from kafkacore.client.metadata import TopicPartition as TP
from kafkacore.errors import BrokerError
from kafkacore.operation import Operation
from kafkacore.protocol.enums import ApiKey, ErrorCode
from tests.admin.fakeadmin import HANDLERS, Group, Harness, World
from tests.client.fakebroker import FakeBroker, Pump, make_cluster

#: Not retried by any command, so each command settles on the first answer.
CODE = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
BROKERS = 3

Start = Callable[[Harness], Operation[Any]]
TOPIC = ConfigResource(ConfigResourceType.TOPIC, "t")

COMMANDS: list[tuple[str, int, Start]] = [
    (
        "create_topics",
        ApiKey.CREATE_TOPICS,
        lambda h: h.core.create_topics([NewTopic("n")], now=h.now),
    ),
    ("delete_topics", ApiKey.DELETE_TOPICS, lambda h: h.core.delete_topics(["gone"], now=h.now)),
    (
        "create_partitions",
        ApiKey.CREATE_PARTITIONS,
        lambda h: h.core.create_partitions({"t": NewPartitions(4)}, now=h.now),
    ),
    ("describe_cluster", ApiKey.DESCRIBE_CLUSTER, lambda h: h.core.describe_cluster(now=h.now)),
    (
        "describe_configs",
        ApiKey.DESCRIBE_CONFIGS,
        lambda h: h.core.describe_configs([TOPIC], now=h.now),
    ),
    (
        "incremental_alter_configs",
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        lambda h: h.core.incremental_alter_configs(
            {TOPIC: [AlterConfigOp("retention.ms", "1")]}, now=h.now
        ),
    ),
    (
        "alter_configs",
        ApiKey.ALTER_CONFIGS,
        lambda h: h.core.alter_configs({TOPIC: {"retention.ms": "1"}}, now=h.now),
    ),
    ("list_groups", ApiKey.LIST_GROUPS, lambda h: h.core.list_groups(now=h.now)),
    (
        "describe_consumer_groups",
        ApiKey.CONSUMER_GROUP_DESCRIBE,
        lambda h: h.core.describe_consumer_groups(["k"], now=h.now),
    ),
    (
        "describe_share_groups",
        ApiKey.SHARE_GROUP_DESCRIBE,
        lambda h: h.core.describe_share_groups(["s"], now=h.now),
    ),
    (
        "delete_consumer_groups",
        ApiKey.DELETE_GROUPS,
        lambda h: h.core.delete_consumer_groups(["e"], now=h.now),
    ),
    (
        "list_consumer_group_offsets",
        ApiKey.OFFSET_FETCH,
        lambda h: h.core.list_consumer_group_offsets("g", now=h.now),
    ),
    (
        "alter_consumer_group_offsets",
        ApiKey.OFFSET_COMMIT,
        lambda h: h.core.alter_consumer_group_offsets("e", {TP("t", 0): 1}, now=h.now),
    ),
    (
        "delete_consumer_group_offsets",
        ApiKey.OFFSET_DELETE,
        lambda h: h.core.delete_consumer_group_offsets("g", [TP("t", 0)], now=h.now),
    ),
    (
        "list_share_group_offsets",
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
        lambda h: h.core.list_share_group_offsets("s", now=h.now),
    ),
    (
        "list_offsets",
        ApiKey.LIST_OFFSETS,
        lambda h: h.core.list_offsets({TP("t", 1): OffsetSpec.latest()}, now=h.now),
    ),
    (
        "delete_records",
        ApiKey.DELETE_RECORDS,
        lambda h: h.core.delete_records({TP("t", 2): 0}, now=h.now),
    ),
    ("describe_acls", ApiKey.DESCRIBE_ACLS, lambda h: h.core.describe_acls(now=h.now)),
    (
        "create_acls",
        ApiKey.CREATE_ACLS,
        lambda h: h.core.create_acls(
            [
                AclBinding(
                    resource_type=ResourceType.TOPIC,
                    resource_name="t",
                    principal="User:a",
                    operation=AclOperation.READ,
                )
            ],
            now=h.now,
        ),
    ),
    (
        "delete_acls",
        ApiKey.DELETE_ACLS,
        lambda h: h.core.delete_acls([AclBindingFilter()], now=h.now),
    ),
    (
        "describe_client_quotas",
        ApiKey.DESCRIBE_CLIENT_QUOTAS,
        lambda h: h.core.describe_client_quotas(now=h.now),
    ),
    (
        "alter_client_quotas",
        ApiKey.ALTER_CLIENT_QUOTAS,
        lambda h: h.core.alter_client_quotas(
            {ClientQuotaEntity.of({"user": "a"}): {"producer_byte_rate": 1.0}}, now=h.now
        ),
    ),
    (
        "describe_user_scram_credentials",
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
        lambda h: h.core.describe_user_scram_credentials(["a"], now=h.now),
    ),
    (
        "alter_user_scram_credentials",
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        lambda h: h.core.alter_user_scram_credentials(
            [ScramCredentialDeletion(user="a", mechanism=ScramMechanism.SCRAM_SHA_256)], now=h.now
        ),
    ),
    (
        "elect_leaders",
        ApiKey.ELECT_LEADERS,
        lambda h: h.core.elect_leaders(partitions=[TP("t", 0)], now=h.now),
    ),
    (
        "alter_partition_reassignments",
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        lambda h: h.core.alter_partition_reassignments({TP("t", 0): [1]}, now=h.now),
    ),
    (
        "list_partition_reassignments",
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        lambda h: h.core.list_partition_reassignments(now=h.now),
    ),
    ("describe_log_dirs", ApiKey.DESCRIBE_LOG_DIRS, lambda h: h.core.describe_log_dirs(now=h.now)),
    ("list_transactions", ApiKey.LIST_TRANSACTIONS, lambda h: h.core.list_transactions(now=h.now)),
    (
        "describe_transactions",
        ApiKey.DESCRIBE_TRANSACTIONS,
        lambda h: h.core.describe_transactions(["x"], now=h.now),
    ),
    (
        "describe_producers",
        ApiKey.DESCRIBE_PRODUCERS,
        lambda h: h.core.describe_producers([TP("t", 2)], now=h.now),
    ),
]


def _world() -> Harness:
    h = Harness(BROKERS)
    w = h.world
    w.add_topic("t", 3, {0: 0, 1: 1, 2: 2})
    w.add_topic("gone")
    w.groups["g"] = Group("g", state="Stable", offsets={TP("t", 0): 3})
    w.groups["k"] = Group("k", type="consumer", state="Stable")
    w.groups["e"] = Group("e", protocol_type="")
    w.groups["s"] = Group("s", type="share", protocol_type="share")
    return h


def _refuse_all(answer: Any, code: int) -> Any:
    """``answer`` with every ``error_code`` in it (at any depth) set to ``code``."""
    for meta in getattr(type(answer), "FIELDS", ()):
        value = getattr(answer, meta.attr)
        if meta.attr == "error_code":
            setattr(answer, meta.attr, code)
        elif meta.struct is not None:
            for item in value if isinstance(value, list) else [value]:
                if item is not None:
                    _refuse_all(item, code)
    return answer


def refusing(w: World, api: int, code: int = CODE) -> Callable[[FakeBroker, Any, int], Any]:
    """A scripted answer: the default one, refused with ``code`` everywhere."""
    return lambda b, body, v: _refuse_all(HANDLERS[api](w, b, body, v), code)


def _errors(value: object, depth: int = 0) -> list[BaseException]:
    """The errors anywhere in a command's value (per item, per broker, per log dir)."""
    if isinstance(value, BaseException):
        return [value]
    if depth > 6 or isinstance(value, str | bytes | int | float) or value is None:
        return []
    if isinstance(value, Mapping):
        items: list[object] = list(value.values())
    elif isinstance(value, list | tuple | set | frozenset):
        items = list(value)
    elif dataclasses.is_dataclass(value):
        items = [getattr(value, f.name) for f in dataclasses.fields(value)]
    else:
        return []
    return [e for item in items for e in _errors(item, depth + 1)]


@pytest.mark.parametrize(("api", "start"), [c[1:] for c in COMMANDS], ids=[c[0] for c in COMMANDS])
def test_a_refusal_names_the_broker_that_answered(api: int, start: Start) -> None:
    h = _world()
    h.world.script(api, *[refusing(h.world, api)] * 10)
    op = h.run(start(h))
    errors = [op.error] if op.error is not None else _errors(op.result())
    asked = {node for node, key, _, _ in h.world.seen if key == api}
    assert errors, "the refusal reached no result"
    for error in errors:
        assert isinstance(error, BrokerError) and error.code == CODE, repr(error)
        assert error.node_id in asked, (error.node_id, asked, str(error))
        assert f"broker {error.node_id}" in str(error), str(error)


def test_an_answer_over_the_bootstrap_connection_names_the_broker_id() -> None:
    # Sent before any metadata, the command goes over the bootstrap connection
    # (node -1); its answer is named by the broker the metadata lists there.
    cluster, fakes = make_cluster(1)
    world = World(cluster, fakes)
    world.script(ApiKey.DESCRIBE_CLUSTER, refusing(world, ApiKey.DESCRIBE_CLUSTER))
    core = AdminCore(
        now=0.0,
        rng=random.Random(0),
        client_config=ClientConfig(bootstrap_servers="127.0.0.1:9092"),
    )
    pump = Pump(core, fakes)  # type: ignore[arg-type]  # the pump only uses Driven methods
    op = core.describe_cluster(now=0.0)
    pump.run(until=lambda: op.done)
    assert isinstance(op.error, BrokerError) and op.error.node_id == 0
    assert str(op.error) == "CLUSTER_AUTHORIZATION_FAILED: DescribeCluster (broker 0)"

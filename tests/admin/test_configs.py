"""Config commands against the scripted cluster."""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.admin import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    ConfigType,
)
from kafkacore.admin._configs import _key
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ApiKey, ErrorCode
from kafkacore.protocol.error_codes import (
    InvalidRequestError,
    RequestTimedOutError,
    UnknownTopicOrPartitionError,
)
from kafkacore.protocol.messages import describe_configs_response as dcf
from kafkacore.protocol.messages import incremental_alter_configs_response as iac
from tests.admin.fakeadmin import Harness
from tests.client.fakebroker import FakeBroker

TOPIC = ConfigResourceType.TOPIC
BROKER = ConfigResourceType.BROKER


def test_describe_configs_sends_broker_resources_to_their_broker() -> None:
    h = Harness(3)
    h.world.add_topic("a")
    h.world.configs[(2, "a")] = {"retention.ms": "1000", "cleanup.policy": "delete"}
    h.world.configs[(4, "2")] = {"log.retention.hours": "1"}
    h.world.configs[(4, "1")] = {"log.retention.hours": "2"}
    h.world.configs[(4, "")] = {"log.retention.hours": "3"}
    resources = [
        ConfigResource(TOPIC, "a"),
        ConfigResource(BROKER, "2"),
        ConfigResource(BROKER, "1"),
        ConfigResource(BROKER, ""),
        ConfigResource(TOPIC, "zz"),
    ]
    results = h.result(h.core.describe_configs(resources, now=h.now))
    assert list(results) == resources
    topic = results[resources[0]].result()
    assert sorted(topic) == ["cleanup.policy", "retention.ms"]
    entry = topic["retention.ms"]
    assert (entry.value, entry.source, entry.synonyms, entry.documentation) == (
        "1000",
        ConfigSource.DYNAMIC_TOPIC_CONFIG,
        (),
        None,
    )
    assert entry.type is ConfigType.STRING
    assert results[resources[1]].result()["log.retention.hours"].value == "1"
    assert results[resources[2]].result()["log.retention.hours"].value == "2"
    assert results[resources[3]].result()["log.retention.hours"].value == "3"
    assert isinstance(results[resources[4]].error, UnknownTopicOrPartitionError)
    by_node: dict[int, list[str]] = {}
    for node, api, _, body in h.world.seen:
        if api == ApiKey.DESCRIBE_CONFIGS:
            by_node.setdefault(node, []).extend(r.resource_name for r in body.resources)
    assert by_node[2] == ["2"] and by_node[1] == ["1"]
    assert sorted(n for names in by_node.values() for n in names) == sorted(
        ["a", "2", "1", "", "zz"]
    )


def test_describe_configs_synonyms_and_documentation() -> None:
    h = Harness()
    h.world.add_topic("a")
    h.world.configs[(2, "a")] = {"retention.ms": "5"}
    op = h.core.describe_configs(
        [ConfigResource(TOPIC, "a")], include_synonyms=True, include_documentation=True, now=h.now
    )
    entry = h.result(op)[ConfigResource(TOPIC, "a")].result()["retention.ms"]
    assert entry.documentation == "doc of retention.ms"
    assert [(s.name, s.value, s.source) for s in entry.synonyms] == [
        ("retention.ms", "5", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    ]
    body = h.world.requests(ApiKey.DESCRIBE_CONFIGS)[0]
    assert (
        body.include_synonyms
        and body.include_documentation
        and body.resources[0].configuration_keys is None
    )


def test_describe_configs_documentation_is_skipped_before_v3() -> None:
    h = Harness(versions={ApiKey.DESCRIBE_CONFIGS: (1, 2)})
    h.world.add_topic("a")
    op = h.core.describe_configs(
        [ConfigResource(TOPIC, "a")], include_documentation=True, now=h.now
    )
    assert h.result(op)[ConfigResource(TOPIC, "a")].ok
    assert not h.world.requests(ApiKey.DESCRIBE_CONFIGS)[0].include_documentation


def test_describe_configs_resource_errors_are_final() -> None:
    h = Harness()
    h.world.add_topic("a")

    def busy(b: FakeBroker, body: Any, v: int) -> Any:
        return m.DescribeConfigsResponse(
            results=[
                dcf.DescribeConfigsResult(
                    error_code=ErrorCode.REQUEST_TIMED_OUT, resource_type=2, resource_name="a"
                ),
                dcf.DescribeConfigsResult(error_code=0, resource_type=99, resource_name="?"),
            ]
        )

    h.world.script(ApiKey.DESCRIBE_CONFIGS, busy)
    result = h.result(h.core.describe_configs([ConfigResource(TOPIC, "a")], now=h.now))
    assert isinstance(result[ConfigResource(TOPIC, "a")].error, RequestTimedOutError)
    assert len(h.world.requests(ApiKey.DESCRIBE_CONFIGS)) == 1


def test_a_resource_an_answer_names_wrongly_is_not_matched() -> None:
    assert _key(99, "x") is None
    assert _key(4, "b1") is None
    assert _key(2, "t") == ConfigResource(TOPIC, "t")


@pytest.mark.parametrize(
    ("arg", "error", "text"),
    [
        (ConfigResource(TOPIC, "a"), TypeError, "collection of ConfigResource"),
        (["a"], TypeError, "expected ConfigResource items, got 'a'"),
        ([ConfigResource(TOPIC, "a")] * 2, ValueError, "listed twice"),
        ([], ValueError, "name at least one ConfigResource"),
    ],
)
def test_describe_configs_refuses_bad_arguments(arg: Any, error: type, text: str) -> None:
    h = Harness()
    with pytest.raises(error, match=text):
        h.core.describe_configs(arg, now=h.now)


def test_incremental_alter_configs_each_operation() -> None:
    h = Harness(2)
    h.world.add_topic("a")
    h.world.configs[(2, "a")] = {"retention.ms": "5", "x": "1,2", "y": "1"}
    changes = {
        ConfigResource(TOPIC, "a"): [
            AlterConfigOp("retention.ms", "100"),
            AlterConfigOp("y", op=AlterConfigOpType.DELETE),
            AlterConfigOp("x", "3", AlterConfigOpType.APPEND),
            AlterConfigOp("z", "", AlterConfigOpType.SUBTRACT),
        ],
        ConfigResource(BROKER, "1"): [AlterConfigOp("log.cleaner.threads", "2")],
        ConfigResource(TOPIC, "zz"): [AlterConfigOp("retention.ms", "1")],
    }
    results = h.result(h.core.incremental_alter_configs(changes, now=h.now))
    assert results[ConfigResource(TOPIC, "a")].ok and results[ConfigResource(BROKER, "1")].ok
    assert isinstance(results[ConfigResource(TOPIC, "zz")].error, UnknownTopicOrPartitionError)
    assert h.world.configs[(2, "a")] == {"retention.ms": "100", "x": "1,2,3", "z": ""}
    assert h.world.configs[(4, "1")] == {"log.cleaner.threads": "2"}
    nodes = [node for node, api, _, _ in h.world.seen if api == ApiKey.INCREMENTAL_ALTER_CONFIGS]
    assert 1 in nodes


def test_incremental_alter_configs_validate_only_and_errors() -> None:
    h = Harness()
    h.world.add_topic("a")

    def refuse(b: FakeBroker, body: Any, v: int) -> Any:
        return m.IncrementalAlterConfigsResponse(
            responses=[
                iac.AlterConfigsResourceResponse(
                    error_code=ErrorCode.INVALID_REQUEST,
                    error_message="bad value",
                    resource_type=2,
                    resource_name="a",
                ),
                iac.AlterConfigsResourceResponse(resource_type=2, resource_name="other"),
            ]
        )

    h.world.script(ApiKey.INCREMENTAL_ALTER_CONFIGS, refuse)
    change = {ConfigResource(TOPIC, "a"): [AlterConfigOp("retention.ms", "-5")]}
    error = h.result(h.core.incremental_alter_configs(change, validate_only=True, now=h.now))[
        ConfigResource(TOPIC, "a")
    ].error
    assert isinstance(error, InvalidRequestError)
    assert str(error).startswith("INVALID_REQUEST: config resource ConfigResource(")
    assert str(error).endswith("name='a') (broker 0): bad value")
    assert h.world.requests(ApiKey.INCREMENTAL_ALTER_CONFIGS)[0].validate_only
    assert h.result(h.core.incremental_alter_configs(change, now=h.now))[
        ConfigResource(TOPIC, "a")
    ].ok


@pytest.mark.parametrize(
    ("arg", "error", "text"),
    [
        ([ConfigResource(TOPIC, "a")], TypeError, "changes: expected a mapping"),
        ({}, ValueError, "name at least one ConfigResource"),
        ({"a": [AlterConfigOp("x", "1")]}, TypeError, "expected ConfigResource keys"),
        (
            {ConfigResource(TOPIC, "a"): AlterConfigOp("x", "1")},
            TypeError,
            "collection of AlterConfigOp",
        ),
        ({ConfigResource(TOPIC, "a"): ["x"]}, TypeError, "expected AlterConfigOp items"),
        ({ConfigResource(TOPIC, "a"): []}, ValueError, "at least one AlterConfigOp"),
        (
            {ConfigResource(TOPIC, "a"): [AlterConfigOp("x", "1"), AlterConfigOp("x", "2")]},
            ValueError,
            "changed twice",
        ),
    ],
)
def test_incremental_alter_configs_refuses_bad_arguments(arg: Any, error: type, text: str) -> None:
    h = Harness()
    with pytest.raises(error, match=text):
        h.core.incremental_alter_configs(arg, now=h.now)

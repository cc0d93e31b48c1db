"""Argument and result types of the admin core: checks, parsing, helpers."""

from __future__ import annotations

import uuid

import pytest

from kafkacore.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminConfig,
    AlterConfigOp,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    ConfigType,
    GroupListing,
    GroupListings,
    GroupState,
    GroupType,
    ItemResult,
    ItemResults,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    PatternType,
    ResourceType,
)
from kafkacore.admin._checks import (
    check_bool,
    check_int,
    check_names,
    check_partitions,
    check_str,
    check_timeout,
    check_uuid_or_name,
    to_partition,
)
from kafkacore.admin.acl import authorized_operations
from kafkacore.client.metadata import TopicPartition as TP

# ---------------------------------------------------------------- results


def test_item_results_map_each_item_to_its_outcome() -> None:
    boom = ValueError("boom")
    results: ItemResults[str, int] = ItemResults({"a": ItemResult(1), "b": ItemResult(error=boom)})
    assert list(results) == ["a", "b"] and len(results) == 2
    assert results["a"].ok and results["a"].result() == 1
    assert not results["b"].ok
    with pytest.raises(ValueError, match="boom"):
        results["b"].result()
    assert results.errors == {"b": boom}
    assert results.succeeded == {"a": 1}
    with pytest.raises(ValueError, match="boom"):
        results.all()
    assert ItemResults({"a": ItemResult(1)}).all() == {"a": 1}
    assert repr(results) == "ItemResults({'a': ok, 'b': ValueError})"


def test_group_listings_all_raises_a_broker_error() -> None:
    g = GroupListing(group_id="g", protocol_type="", state=None, type=None, coordinator=1)
    assert g.is_simple_consumer_group
    assert GroupListings(groups=(g,)).all() == (g,)
    with pytest.raises(TimeoutError):
        GroupListings(groups=(g,), errors={2: TimeoutError("broker 2")}).all()


# ---------------------------------------------------------------- checks


@pytest.mark.parametrize(
    ("call", "error", "text"),
    [
        (lambda: check_int("x", True), TypeError, "x: expected an int, got True"),
        (lambda: check_int("x", "1"), TypeError, "expected an int"),
        (lambda: check_int("x", -2, minimum=-1), ValueError, "x: -2 must be -1 or more"),
        (lambda: check_bool("flag", 1), TypeError, "flag: expected True or False, got 1"),
        (lambda: check_str("s", 3), TypeError, "s: expected a str"),
        (lambda: check_str("s", ""), ValueError, "s: must not be empty"),
        (lambda: check_names("topics", "abc"), TypeError, "collection of names"),
        (lambda: check_names("topics", 5), TypeError, "collection of names"),
        (lambda: check_names("topics", ["a", "a"]), ValueError, "'a' is listed twice"),
        (lambda: check_names("topics", []), ValueError, "name at least one"),
        (lambda: to_partition("p", "a-0"), TypeError, "TopicPartition or \\(topic, partition\\)"),
        (lambda: to_partition("p", ("a", -1)), ValueError, "p partition: -1 must be 0 or more"),
        (lambda: check_partitions("ps", [("a", 0), TP("a", 0)]), ValueError, "listed twice"),
        (lambda: check_partitions("ps", []), ValueError, "at least one partition"),
        (lambda: check_timeout("cmd", 0), ValueError, "cmd: timeout_ms: 0 must be 1 or more"),
        (lambda: check_uuid_or_name("t", uuid.UUID(int=0)), ValueError, "zero UUID"),
    ],
)
def test_checks_name_the_argument(call: object, error: type[Exception], text: str) -> None:
    with pytest.raises(error, match=text):
        call()  # type: ignore[operator]


def test_checks_accept_good_values() -> None:
    assert check_names("t", ("a", "b")) == ["a", "b"]
    assert check_names("t", [], allow_empty=True) == []
    assert check_partitions("p", [], allow_empty=True) == []
    assert to_partition("p", ("a", 1)) == TP("a", 1)
    assert check_timeout("c", None) is None and check_timeout("c", 5) == 5
    u = uuid.UUID(int=5)
    assert check_uuid_or_name("t", u) is u and check_uuid_or_name("t", "x") == "x"
    assert check_str("s", "", empty=True) == ""


# ---------------------------------------------------------------- topics


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"name": ""}, ValueError, "NewTopic.name: must not be empty"),
        ({"name": "t", "num_partitions": 0}, ValueError, "0 partitions"),
        ({"name": "t", "replication_factor": 0}, ValueError, "0 replicas"),
        ({"name": "t", "num_partitions": -2}, ValueError, "-2 must be -1 or more"),
        ({"name": "t", "replica_assignments": {}}, ValueError, "empty; leave it None"),
        ({"name": "t", "replica_assignments": [1]}, TypeError, "expected a mapping"),
        (
            {"name": "t", "num_partitions": 2, "replica_assignments": {0: [1]}},
            ValueError,
            "not both",
        ),
        ({"name": "t", "replica_assignments": {0: []}}, TypeError, "non-empty sequence"),
        ({"name": "t", "replica_assignments": {0: [1, 1]}}, ValueError, "listed twice"),
        ({"name": "t", "replica_assignments": {-1: [1]}}, ValueError, "partition: -1"),
        ({"name": "t", "configs": {"a": 1}}, TypeError, "configs\\['a'\\]: expected a str"),
        ({"name": "t", "configs": {"": "1"}}, ValueError, "configs key: must not be empty"),
    ],
)
def test_new_topic_refuses_bad_fields(kwargs: dict[str, object], error: type, text: str) -> None:
    with pytest.raises(error, match=text):
        NewTopic(**kwargs)  # type: ignore[arg-type]


def test_new_topic_and_partitions_accept_good_fields() -> None:
    t = NewTopic("t", replica_assignments={0: [1, 2], 1: [2, 3]}, configs={"cleanup.policy": ""})
    assert t.num_partitions == -1 and t.replica_assignments == {0: [1, 2], 1: [2, 3]}
    assert NewPartitions(3, [[1], [2]]).total_count == 3


@pytest.mark.parametrize(
    ("args", "error", "text"),
    [
        ((0,), ValueError, "total_count: 0 must be 1 or more"),
        ((2, "12"), TypeError, "sequence of broker-id lists"),
        ((2, [[1], []]), TypeError, r"new_assignments\[1\]"),
    ],
)
def test_new_partitions_refuses_bad_fields(
    args: tuple[object, ...], error: type, text: str
) -> None:
    with pytest.raises(error, match=text):
        NewPartitions(*args)  # type: ignore[arg-type]


# ---------------------------------------------------------------- configs


def test_config_resource_routes_broker_resources_to_their_broker() -> None:
    assert ConfigResource(ConfigResourceType.BROKER, "2").broker_id == 2
    assert ConfigResource(ConfigResourceType.BROKER_LOGGER, "0").broker_id == 0
    assert ConfigResource(ConfigResourceType.BROKER, "").broker_id is None
    assert ConfigResource(ConfigResourceType.TOPIC, "t").broker_id is None


@pytest.mark.parametrize(
    ("args", "error", "text"),
    [
        ((2, "t"), TypeError, "expected a ConfigResourceType"),
        ((ConfigResourceType.UNKNOWN, "t"), TypeError, "expected a ConfigResourceType"),
        ((ConfigResourceType.TOPIC, ""), ValueError, "must not be empty"),
        ((ConfigResourceType.BROKER, "b1"), ValueError, "named by broker id"),
    ],
)
def test_config_resource_refuses_bad_fields(
    args: tuple[object, ...], error: type, text: str
) -> None:
    with pytest.raises(error, match=text):
        ConfigResource(*args)  # type: ignore[arg-type]


def test_alter_config_op_checks_its_value_against_the_operation() -> None:
    assert AlterConfigOp("a", "1").op is AlterConfigOpType.SET
    assert AlterConfigOp("a", op=AlterConfigOpType.DELETE).value is None
    with pytest.raises(ValueError, match="DELETE takes no value"):
        AlterConfigOp("a", "1", AlterConfigOpType.DELETE)
    with pytest.raises(TypeError, match=r"AlterConfigOp\('a'\).value: expected a str"):
        AlterConfigOp("a", None, AlterConfigOpType.APPEND)
    with pytest.raises(TypeError, match="expected an AlterConfigOpType"):
        AlterConfigOp("a", "1", 0)  # type: ignore[arg-type]


def test_config_enums_read_unknown_values_as_unknown() -> None:
    assert ConfigSource.of(5) is ConfigSource.DEFAULT_CONFIG
    assert ConfigSource.of(99) is ConfigSource.UNKNOWN
    assert ConfigType.of(3) is ConfigType.INT and ConfigType.of(42) is ConfigType.UNKNOWN
    entry = ConfigEntry(name="a", value="1", source=ConfigSource.DEFAULT_CONFIG)
    assert entry.is_default
    assert not ConfigEntry(name="a", value="1").is_default


# ---------------------------------------------------------------- offsets


def test_offset_specs_and_the_versions_they_need() -> None:
    assert OffsetSpec.earliest().timestamp == -2 and OffsetSpec.latest().timestamp == -1
    assert OffsetSpec.max_timestamp().min_version == 7
    assert OffsetSpec.earliest_local().min_version == 8
    assert OffsetSpec.latest_tiered().min_version == 9
    assert OffsetSpec.for_timestamp(1234).timestamp == 1234
    assert OffsetSpec.for_timestamp(0).min_version == 1
    with pytest.raises(ValueError, match="timestamp_ms: -1 must be 0 or more"):
        OffsetSpec.for_timestamp(-1)
    with pytest.raises(ValueError, match="-6 must be -5 or more"):
        OffsetSpec(-6)


# ---------------------------------------------------------------- groups


@pytest.mark.parametrize(
    ("text", "state"),
    [
        ("Stable", GroupState.STABLE),
        ("PREPARING_REBALANCE", GroupState.PREPARING_REBALANCE),
        ("completingrebalance", GroupState.COMPLETING_REBALANCE),
        ("NotReady", GroupState.NOT_READY),
        ("Whatever", GroupState.UNKNOWN),
        (GroupState.DEAD, GroupState.DEAD),
    ],
)
def test_group_state_parses_names_and_wire_values(text: object, state: GroupState) -> None:
    assert GroupState.parse(text) is state


def test_group_type_parses_names_and_wire_values() -> None:
    assert GroupType.parse("CONSUMER") is GroupType.CONSUMER
    assert GroupType.parse("share") is GroupType.SHARE
    assert GroupType.parse(GroupType.STREAMS) is GroupType.STREAMS
    assert GroupType.parse("nope") is GroupType.UNKNOWN
    with pytest.raises(TypeError, match="group type: expected a GroupType or str, got 3"):
        GroupType.parse(3)
    with pytest.raises(TypeError, match="group state: expected"):
        GroupState.parse(None)


# ---------------------------------------------------------------- ACLs


def test_authorized_operations_decode_the_bit_field() -> None:
    assert authorized_operations(-(2**31)) is None
    assert authorized_operations(0) == frozenset()
    bits = (1 << AclOperation.READ) | (1 << AclOperation.DESCRIBE)
    assert authorized_operations(bits) == frozenset({AclOperation.READ, AclOperation.DESCRIBE})


def test_acl_binding_and_filter_checks() -> None:
    b = AclBinding(
        resource_type=ResourceType.TOPIC,
        resource_name="t",
        principal="User:a",
        operation=AclOperation.READ,
    )
    assert b.permission_type is AclPermissionType.ALLOW and b.pattern_type is PatternType.LITERAL
    with pytest.raises(ValueError, match=r"ResourceType\.ANY cannot be used here"):
        AclBinding(
            resource_type=ResourceType.ANY,
            resource_name="t",
            principal="User:a",
            operation=AclOperation.READ,
        )
    with pytest.raises(ValueError, match=r"PatternType\.MATCH"):
        AclBinding(
            resource_type=ResourceType.TOPIC,
            resource_name="t",
            principal="User:a",
            operation=AclOperation.READ,
            pattern_type=PatternType.MATCH,
        )
    with pytest.raises(
        TypeError, match=r"AclBinding\.operation: expected a AclOperation member, got 3"
    ):
        AclBinding(
            resource_type=ResourceType.TOPIC,
            resource_name="t",
            principal="User:a",
            operation=3,  # type: ignore[arg-type]
        )
    assert AclBindingFilter().resource_type is ResourceType.ANY
    assert AclBindingFilter(pattern_type=PatternType.MATCH, principal="User:a").principal
    with pytest.raises(ValueError, match=r"AclOperation\.UNKNOWN cannot be used here"):
        AclBindingFilter(operation=AclOperation.UNKNOWN)
    with pytest.raises(TypeError, match=r"AclBindingFilter\.host: expected a str"):
        AclBindingFilter(host=5)  # type: ignore[arg-type]


# ---------------------------------------------------------------- config


def test_admin_config_checks_its_fields() -> None:
    assert AdminConfig().default_api_timeout_ms == 60000
    with pytest.raises(ValueError, match="default_api_timeout_ms: 0 must be 1 or more"):
        AdminConfig(default_api_timeout_ms=0)
    with pytest.raises(TypeError, match="max_pending_operations: expected an int"):
        AdminConfig(max_pending_operations=None)  # type: ignore[arg-type]

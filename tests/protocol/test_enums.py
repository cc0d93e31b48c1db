"""The generated enums agree with the error table, the API registry and each other."""

from __future__ import annotations

import pytest

from kafkacore.protocol import enums, error_codes
from kafkacore.protocol.api import APIS, APIS_BY_NAME, Routing
from kafkacore.protocol.enums import (
    COORDINATOR_MOVED,
    PRODUCER_FENCING,
    ROUTING,
    TXN_COORDINATOR_RETRY,
    ApiKey,
    CoordinatorType,
    ErrorCode,
)
from kafkacore.protocol.messages import FetchRequest, ProduceRequest


def test_every_error_class_has_the_member_of_its_code() -> None:
    for code, cls in error_codes.ERRORS.items():
        assert ErrorCode(code).name == cls.name
    assert {int(m) for m in ErrorCode} == {0, *error_codes.ERRORS}
    assert ErrorCode.NONE == 0
    assert ErrorCode.UNKNOWN_SERVER_ERROR == -1
    assert ErrorCode.COORDINATOR_NOT_AVAILABLE == 15


def test_every_api_has_one_key_named_as_java_does() -> None:
    assert {int(k) for k in ApiKey} == set(APIS)
    assert ApiKey.PRODUCE == 0
    assert ApiKey.API_VERSIONS == 18
    assert ApiKey.OFFSET_FOR_LEADER_EPOCH == 23
    assert (
        APIS_BY_NAME["DescribeUserScramCredentials"].api_key
        == ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS
    )
    assert ProduceRequest.API_KEY == ApiKey.PRODUCE
    assert FetchRequest.API_KEY == ApiKey.FETCH


def test_routing_gives_every_api_the_registry_kind() -> None:
    assert set(ROUTING) == set(ApiKey)
    for key, kind in ROUTING.items():
        assert APIS[key].routing is kind
    assert ROUTING[ApiKey.FIND_COORDINATOR] is Routing.ANY_NODE
    assert ROUTING[ApiKey.OFFSET_COMMIT] is Routing.GROUP_COORDINATOR
    assert ROUTING[ApiKey.END_TXN] is Routing.TXN_COORDINATOR
    # One Routing class: the registry re-exports the generated enum.
    assert Routing is enums.Routing


def test_members_compare_and_hash_like_the_wire_ints() -> None:
    # The client compares decoded ints to members and looks them up in the groups.
    assert 16 in COORDINATOR_MOVED
    assert {14, 15, 16} == COORDINATOR_MOVED
    assert {47, 90} == PRODUCER_FENCING
    assert COORDINATOR_MOVED < TXN_COORDINATOR_RETRY
    assert f"{ErrorCode.NOT_COORDINATOR}" == "16"
    assert {ApiKey.METADATA: "x"}[3] == "x"


@pytest.mark.parametrize("name", ["COORDINATOR_MOVED", "LEADER_MOVED", "PRODUCER_FENCING"])
def test_groups_are_frozensets_of_members(name: str) -> None:
    group = getattr(enums, name)
    assert isinstance(group, frozenset)
    assert group
    assert all(isinstance(code, ErrorCode) for code in group)


def test_coordinator_types_match_find_coordinator_key_types() -> None:
    assert [(t.name, int(t)) for t in CoordinatorType] == [
        ("GROUP", 0),
        ("TRANSACTION", 1),
        ("SHARE", 2),
    ]

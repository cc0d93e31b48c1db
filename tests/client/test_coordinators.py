"""CoordinatorLookups: FindCoordinator batching, backoff over misses, refusals."""

from __future__ import annotations

import random
from typing import Any

import pytest

from kafkacore.client.backoff import ExponentialBackoff
from kafkacore.client.coordinators import (
    TRANSITIONS,
    CoordinatorLookups,
    Lookup,
    LookupState,
    coordinator_key,
    coordinator_keys,
)
from kafkacore.client.metadata import ClusterMetadata
from kafkacore.client.metrics import Counters
from kafkacore.client.outputs import Outputs
from kafkacore.client.routing import (
    AnyNode,
    GroupCoordinator,
    PartitionLeader,
    TransactionCoordinator,
)
from kafkacore.errors import LocalProtocolError
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import CoordinatorType, ErrorCode
from kafkacore.protocol.error_codes import GroupAuthorizationFailedError
from kafkacore.protocol.messages.find_coordinator_response import Coordinator

GROUP = CoordinatorType.GROUP
TXN = CoordinatorType.TRANSACTION


def make() -> tuple[CoordinatorLookups, ClusterMetadata, list[tuple[str, dict[str, Any]]]]:
    cluster = ClusterMetadata(bootstrap_servers="h:1")
    traces: list[tuple[str, dict[str, Any]]] = []
    out = Outputs(Counters(""), (lambda name, fields: traces.append((name, dict(fields))),))
    lookups = CoordinatorLookups(
        cluster, ExponentialBackoff(100, 1000), rng=random.Random(0), out=out
    )
    return lookups, cluster, traces


def found(key: str, node: int = 1, code: int = 0) -> m.FindCoordinatorResponse:
    return m.FindCoordinatorResponse(
        coordinators=[Coordinator(key=key, node_id=node, host="b", port=9, error_code=code)]
    )


def test_transition_table() -> None:
    assert {
        LookupState.IDLE: frozenset({LookupState.LOOKING}),
        LookupState.LOOKING: frozenset({LookupState.IDLE}),
    } == TRANSITIONS


def test_idle_to_looking_to_idle() -> None:
    lookups, _, _ = make()
    assert lookups.state(GROUP) is LookupState.IDLE
    lookups.want(GroupCoordinator("g"), 0.0)
    [lookup] = lookups.start(0.0)
    assert lookups.state(GROUP) is LookupState.LOOKING
    assert lookups.start(0.0) == []  # one lookup per key type at a time
    lookup.build(4)
    lookups.finished(lookup, found("g"), 0.0, needed={(GROUP, "g")})
    assert lookups.state(GROUP) is LookupState.IDLE


def test_finishing_an_idle_type_is_a_bug() -> None:
    lookups, _, _ = make()
    with pytest.raises(LocalProtocolError, match="idle -> idle"):
        lookups.finished(Lookup(key_type=GROUP, keys=["g"]), found("g"), 0.0, needed=set())


def test_one_lookup_per_key_type_batches_every_due_key() -> None:
    lookups, _, _ = make()
    lookups.want(GroupCoordinator("b"), 0.0)
    lookups.want(GroupCoordinator("a"), 0.0)
    lookups.want(TransactionCoordinator("t"), 0.0)
    started = lookups.start(0.0)
    assert [(x.key_type, x.keys) for x in started] == [(GROUP, ["a", "b"]), (TXN, ["t"])]
    request = started[0].build(4)  # KIP-699: v4+ carries every key
    assert request.coordinator_keys == ["a", "b"] and started[0].included == ["a", "b"]


def test_below_v4_one_key_per_request_and_the_others_stay_due() -> None:
    lookups, cluster, _ = make()
    lookups.want(GroupCoordinator("a"), 0.0)
    lookups.want(GroupCoordinator("b"), 0.0)
    [lookup] = lookups.start(0.0)
    request = lookup.build(3)
    assert request.key == "a" and lookup.included == ["a"]
    answer = m.FindCoordinatorResponse(node_id=2, host="b", port=9)
    needed = {(GROUP, "a"), (GROUP, "b")}
    lookups.finished(lookup, answer, 0.0, needed=needed)
    assert cluster.coordinator_for_group("a") == 2
    assert dict(lookups.wanted) == {(GROUP, "b"): 0.0}
    assert lookups.due(0.0)
    [second] = lookups.start(0.0)
    assert second.keys == ["b"]


def test_a_miss_backs_off_exponentially_while_a_request_waits() -> None:
    lookups, _, traces = make()
    backoff = ExponentialBackoff(100, 1000)
    lookups.want(GroupCoordinator("g"), 0.0)
    now = 0.0
    for misses in range(1, 5):
        [lookup] = lookups.start(now)
        lookup.build(4)
        code = ErrorCode.COORDINATOR_NOT_AVAILABLE
        lookups.finished(lookup, found("g", code=code), now, needed={(GROUP, "g")})
        assert lookups.misses((GROUP, "g")) == misses
        due = lookups.wanted[(GROUP, "g")]
        low, high = backoff.bounds_ms(misses)
        assert low <= (due - now) * 1000 <= high
        assert not lookups.due(now) and lookups.next_deadline(now) == due
        now = due
    assert [name for name, _ in traces] == ["coordinator_retry"] * 4
    assert traces[-1][1]["misses"] == 4


def test_a_lookup_that_never_reached_a_broker_misses_every_wanted_key() -> None:
    lookups, _, traces = make()
    lookups.want(GroupCoordinator("a"), 0.0)
    lookups.want(GroupCoordinator("b"), 0.0)
    [lookup] = lookups.start(0.0)  # never built: it failed in the queue
    lookups.finished(lookup, TimeoutError("x"), 0.0, needed={(GROUP, "a")})
    assert lookups.misses((GROUP, "a")) == 1
    assert (GROUP, "b") not in lookups.wanted  # nobody waits for it any more
    assert traces[0][1]["error"] is not None


def test_found_drops_the_key_and_fills_the_cache() -> None:
    lookups, cluster, _ = make()
    lookups.want(TransactionCoordinator("t"), 0.0)
    [lookup] = lookups.start(0.0)
    lookup.build(4)
    lookups.finished(lookup, found("t", node=7), 0.0, needed={(TXN, "t")})
    assert cluster.coordinator_for_transaction("t") == 7
    assert lookups.node_for(TransactionCoordinator("t")) == 7
    assert not lookups.wanted and lookups.misses((TXN, "t")) == 0


def test_a_refusal_is_kept_once_for_the_waiting_requests() -> None:
    lookups, _, _ = make()
    lookups.want(GroupCoordinator("g"), 0.0)
    [lookup] = lookups.start(0.0)
    lookup.build(4)
    answer = found("g", code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    lookups.finished(lookup, answer, 0.0, needed={(GROUP, "g")})
    assert not lookups.wanted
    refusal = lookups.take_refusal(GroupCoordinator("g"))
    assert isinstance(refusal, GroupAuthorizationFailedError)
    assert "group 'g'" in str(refusal)
    assert lookups.take_refusal(GroupCoordinator("g")) is None


def test_a_refusal_nobody_waits_for_is_dropped() -> None:
    lookups, _, _ = make()
    lookups.want(GroupCoordinator("g"), 0.0)
    [lookup] = lookups.start(0.0)
    lookup.build(4)
    answer = found("g", code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    lookups.finished(lookup, answer, 0.0, needed=set())
    assert lookups.take_refusal(GroupCoordinator("g")) is None


def test_want_keeps_the_earlier_due_time_and_names_the_wait() -> None:
    lookups, _, _ = make()
    assert lookups.want(GroupCoordinator("g"), 1.0) == "no known coordinator for group 'g'"
    lookups.want(GroupCoordinator("g"), 5.0)
    assert lookups.wanted[(GROUP, "g")] == 1.0
    why = lookups.want(TransactionCoordinator("t"), 1.0)
    assert why == "no known coordinator for transactional id 't'"


def test_coordinator_moved_forgets_the_cached_node() -> None:
    lookups, cluster, _ = make()
    cluster.add_coordinator(GROUP, "g", found("g", node=3))
    assert lookups.node_for(GroupCoordinator("g")) == 3
    lookups.coordinator_moved(PartitionLeader("t", 0))  # not a coordinator: ignored
    lookups.coordinator_moved(GroupCoordinator("g"))
    assert lookups.node_for(GroupCoordinator("g")) is None


def test_clear_forgets_wanted_misses_and_refusals() -> None:
    lookups, _, _ = make()
    lookups.want(GroupCoordinator("g"), 0.0)
    [lookup] = lookups.start(0.0)
    lookups.finished(lookup, TimeoutError(), 0.0, needed={(GROUP, "g")})
    lookups.clear()
    assert not lookups.wanted and lookups.misses((GROUP, "g")) == 0
    assert lookups.next_deadline(0.0) is None


def test_keys_of_targets() -> None:
    assert coordinator_key(GroupCoordinator("g")) == (GROUP, "g")
    assert coordinator_key(TransactionCoordinator("t")) == (TXN, "t")
    targets = [AnyNode(), GroupCoordinator("g"), PartitionLeader("x", 1)]
    assert coordinator_keys(targets) == {(GROUP, "g")}

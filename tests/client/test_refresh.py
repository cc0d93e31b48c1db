"""MetadataRefresh: one refresh at a time, bootstrap and rebootstrap (KIP-899, KIP-1102)."""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.client.config import ClientConfig
from kafkacore.client.events import MetadataUpdated, MetadataUpdateFailed
from kafkacore.client.metadata import ClusterMetadata
from kafkacore.client.metrics import Counters
from kafkacore.client.outputs import Outputs
from kafkacore.client.refresh import TRANSITIONS, BrokerSource, MetadataRefresh
from kafkacore.errors import (
    KafkaConnectionError,
    LocalProtocolError,
    NoBrokersAvailable,
    RequestCancelled,
)
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.messages.metadata_response import (
    MetadataResponseBroker,
    MetadataResponseTopic,
)

BOOT = BrokerSource.BOOTSTRAPPING
KNOWN = BrokerSource.BOOTSTRAPPED


def make(
    **config: Any,
) -> tuple[MetadataRefresh, ClusterMetadata, Outputs, list[tuple[str, dict[str, Any]]]]:
    cfg = ClientConfig(bootstrap_servers="h1:1,h2:2", **config)
    cluster = ClusterMetadata(bootstrap_servers=["h1:1", "h2:2"], retry_backoff_ms=100)
    traces: list[tuple[str, dict[str, Any]]] = []
    out = Outputs(Counters(""), (lambda name, fields: traces.append((name, dict(fields))),))
    return MetadataRefresh(cluster, cfg, out), cluster, out, traces


def answer(*, code: int = 0, brokers: int = 1, topics: tuple[str, ...] = ()) -> Any:
    return m.MetadataResponse(
        error_code=code,
        brokers=[MetadataResponseBroker(node_id=n, host=f"b{n}", port=9) for n in range(brokers)],
        topics=[MetadataResponseTopic(name=t) for t in topics],
    )


def test_transition_table() -> None:
    assert {BOOT: frozenset({KNOWN}), KNOWN: frozenset({BOOT})} == TRANSITIONS


def test_bootstrapping_then_bootstrapped_then_again() -> None:
    refresh, cluster, out, traces = make(metadata_recovery_strategy="rebootstrap")
    assert refresh.source is BOOT and refresh.bootstrapping and not refresh.may_rebootstrap
    assert refresh.due(0.0)
    build = refresh.start(0.0, {"t"})
    assert refresh.in_flight and not refresh.due(0.0) and refresh.next_deadline(0.0) is None
    assert [t.name for t in build(12).topics] == ["t"]
    assert refresh.finished("broker 0", answer(topics=("t",)), 0.0, {"t"})
    assert refresh.source is KNOWN and refresh.may_rebootstrap and not refresh.in_flight
    [event] = out.take_events()
    assert isinstance(event, MetadataUpdated) and event.broker_ids == frozenset({0})
    refresh.rebootstrap("test", 1.0)
    assert refresh.source is BOOT and cluster.broker_metadata(0) is None
    assert out.counters.rebootstraps == 1
    assert [name for name, _ in traces] == ["metadata_request", "metadata_updated", "rebootstrap"]
    with pytest.raises(LocalProtocolError, match="bootstrapping -> bootstrapping"):
        refresh.rebootstrap("twice", 1.0)


def test_one_refresh_at_a_time() -> None:
    refresh, _, _, _ = make()
    refresh.start(0.0, set())
    with pytest.raises(LocalProtocolError, match="already under way"):
        refresh.start(0.0, set())


def test_all_topics_when_configured() -> None:
    refresh, _, _, _ = make(metadata_all_topics=True)
    assert refresh.start(0.0, {"t"})(12).topics is None


def test_a_failed_refresh_fails_the_waiters_and_backs_off() -> None:
    refresh, cluster, out, _ = make()
    waiter = cluster.request_update()
    refresh.start(0.0, set())
    error = KafkaConnectionError("lost")
    assert not refresh.finished("broker 0", error, 0.0, set())
    [event] = out.take_events()
    assert isinstance(event, MetadataUpdateFailed) and event.waiters == (waiter,)
    assert waiter.error is error and refresh.last_error is error
    assert out.counters.metadata_failures == 1
    assert refresh.next_deadline(0.0) == pytest.approx(0.1, rel=0.25)


def test_a_refused_metadata_request_names_the_broker() -> None:
    refresh, _, out, _ = make()
    refresh.start(0.0, set())
    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert not refresh.finished("broker 3 at b:9", answer(code=code), 0.0, set())
    [event] = out.take_events()
    assert isinstance(event, MetadataUpdateFailed)
    assert "broker 3 at b:9 refused the Metadata request" in str(event.error)


def test_an_answer_without_brokers_is_a_failure() -> None:
    refresh, _, out, traces = make()
    refresh.start(0.0, set())
    assert not refresh.finished(None, answer(brokers=0), 0.0, set())
    assert refresh.bootstrapping and out.counters.metadata_failures == 1
    assert traces[-1][0] == "metadata_failed"


def test_rebootstrap_required_answer_rebootstraps_when_enabled() -> None:
    refresh, _, out, _ = make(metadata_recovery_strategy="rebootstrap")
    refresh.start(0.0, set())
    refresh.finished(None, answer(), 0.0, set())
    refresh.start(1.0, set())
    code = ErrorCode.REBOOTSTRAP_REQUIRED
    assert not refresh.finished("broker 0", answer(code=code), 1.0, set())
    assert refresh.bootstrapping and out.counters.rebootstraps == 1


def test_no_metadata_for_the_trigger_time_rebootstraps() -> None:
    refresh, _, _, traces = make(
        metadata_recovery_strategy="rebootstrap", metadata_recovery_rebootstrap_trigger_ms=1000
    )
    refresh.start(0.0, set())
    refresh.finished(None, answer(), 0.0, set())
    refresh.start(1.0, set())
    refresh.finished(None, KafkaConnectionError("down"), 1.0, set())
    refresh.start(1.5, set())  # failing for 0.5 s: not yet
    refresh.finished(None, KafkaConnectionError("down"), 1.5, set())
    assert not refresh.bootstrapping
    refresh.start(2.0, set())  # failing for 1 s: bootstrap again
    assert refresh.bootstrapping
    reason = [f["reason"] for name, f in traces if name == "rebootstrap"]
    assert reason == ["no metadata from any known broker for 1000 ms (last error: down)"]


def test_every_bootstrap_address_failing_is_no_brokers_available() -> None:
    refresh, _, _, _ = make()
    assert refresh.bootstrap_failed(-1, KafkaConnectionError("refused")) is None
    refresh.reset_bootstrap_failures()  # h1 answered meanwhile
    assert refresh.bootstrap_failed(-2, KafkaConnectionError("refused")) is None
    exhausted = refresh.bootstrap_failed(-1, KafkaConnectionError("refused again"))
    assert isinstance(exhausted, NoBrokersAvailable)
    assert "h1:1, h2:2" in str(exhausted)
    assert isinstance(exhausted.__cause__, KafkaConnectionError)
    # Counted afresh afterwards.
    assert refresh.bootstrap_failed(-1, KafkaConnectionError("x")) is None


def test_bootstrap_failures_do_not_count_once_bootstrapped() -> None:
    refresh, _, _, _ = make()
    refresh.start(0.0, set())
    refresh.finished(None, answer(), 0.0, set())
    assert refresh.bootstrap_failed(-1, KafkaConnectionError("x")) is None
    assert refresh.bootstrap_failed(-2, KafkaConnectionError("x")) is None


def test_fail_waiters_and_shutdown_announcements() -> None:
    refresh, cluster, out, _ = make()
    refresh.fail_waiters(KafkaConnectionError("x"), 0.0)
    assert out.take_events() == []  # nobody waits
    waiter = cluster.request_update()
    refresh.fail_waiters(KafkaConnectionError("x"), 0.0)
    [event] = out.take_events()
    assert isinstance(event, MetadataUpdateFailed) and waiter.done
    waiter = cluster.request_update()
    cluster.failed_update(RequestCancelled("client shut down"), now=0.0)
    refresh.announce(None, None)
    [event] = out.take_events()
    assert isinstance(event.error, RequestCancelled) and event.waiters == (waiter,)
    refresh.announce(None, None)
    assert out.take_events() == []

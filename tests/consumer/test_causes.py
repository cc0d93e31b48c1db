"""CauseTracker alone (issue 10, fault 8): the last failure and the last
contact, timeouts that name their cause, the unreachable-cluster report and
its deadline, and the topics metadata says are missing or refused."""

from __future__ import annotations

import pytest

from kafkacore.client.connection import ConnectionState
from kafkacore.client.events import (
    BootstrapFailed,
    ConnectionStateChanged,
    MetadataUpdated,
    MetadataUpdateFailed,
    RequestCompleted,
)
from kafkacore.client.handles import RequestHandle
from kafkacore.consumer.causes import CauseTracker
from kafkacore.consumer.events import TopicsNotFound
from kafkacore.errors import (
    AuthenticationError,
    KafkaConnectionError,
    KafkaTimeoutError,
    NoBrokersAvailable,
    RequestCancelled,
)
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.error_codes import TopicAuthorizationFailedError
from tests.consumer.units import FakeClient, metadata


def tracker(client: FakeClient | None = None) -> tuple[CauseTracker, FakeClient]:
    client = client or FakeClient(metadata())
    return CauseTracker(client, now=0.0, api_timeout_ms=10_000), client


def conn(state: ConnectionState, error: BaseException | None = None) -> ConnectionStateChanged:
    return ConnectionStateChanged(node_id=0, lane="default", conn_id=1, state=state, error=error)


def completed(error: BaseException | None) -> RequestCompleted:
    handle: RequestHandle[object] = RequestHandle(
        id=1, request=m.MetadataRequest(), api_key=3, target=None, lane="default"
    )
    return RequestCompleted(handle=handle, response=None, error=error)


def test_contact_and_failures_from_client_events() -> None:
    t, _ = tracker()
    refused = KafkaConnectionError("connect refused")
    assert t.observe(conn(ConnectionState.CLOSED, refused), 1.0) is None
    assert t.stall_cause() is refused and t.cause_at == 1.0
    assert t.observe(conn(ConnectionState.CLOSED), 1.5) is None  # no error: nothing noted
    t.observe(conn(ConnectionState.READY), 2.0)
    assert t.contact_at == 2.0 and t.stall_cause() is None
    failed = KafkaConnectionError("metadata failed")
    t.observe(MetadataUpdateFailed(error=failed), 3.0)
    assert t.stall_cause() is failed
    t.observe(
        MetadataUpdated(
            cluster_id="c", controller_id=0, broker_ids=frozenset(), topics=frozenset()
        ),
        4.0,
    )
    assert t.contact_at == 4.0
    t.observe(completed(None), 5.0)
    assert t.contact_at == 5.0
    t.observe(completed(KafkaConnectionError("reset")), 6.0)
    assert t.cause_at == 6.0
    t.observe(object(), 7.0)  # anything else is no news
    assert (t.contact_at, t.cause_at) == (5.0, 6.0)


def test_our_own_cancellations_are_not_causes() -> None:
    t, _ = tracker()
    t.answered(RequestCancelled("closed"), 1.0)
    assert t.cause is None


def test_an_unreachable_summary_is_kept_until_contact() -> None:
    t, _ = tracker()
    summary = NoBrokersAvailable("every bootstrap address failed")
    t.observe(BootstrapFailed(error=summary), 1.0)
    t.answered(KafkaConnectionError("one more refusal"), 2.0)
    assert t.cause is summary and t.cause_at == 2.0
    t.answered(None, 3.0)
    newer = KafkaConnectionError("after contact")
    t.answered(newer, 4.0)
    assert t.cause is newer


def test_an_authentication_failure_is_returned_to_act_on() -> None:
    t, _ = tracker()
    t.observe(BootstrapFailed(error=NoBrokersAvailable("all failed")), 1.0)
    refused = AuthenticationError("bad password")
    assert t.answered(refused, 2.0) is refused
    assert t.observe(conn(ConnectionState.CLOSED, refused), 3.0) is refused


def test_explain_names_the_cause_of_a_timeout() -> None:
    t, _ = tracker()
    timeout = KafkaTimeoutError("commit timed out")
    assert t.explain(timeout, None) is timeout  # no cause known
    cause = KafkaConnectionError("connect refused")
    t.answered(cause, 2.0)
    out = t.explain(timeout, 1.0)
    assert isinstance(out, KafkaTimeoutError) and out.__cause__ is cause
    assert "last error: KafkaConnectionError: connect refused" in str(out)
    assert t.explain(cause, 1.0) is cause  # the cause itself
    other = KafkaConnectionError("not a timeout")
    assert t.explain(other, 1.0) is other
    t.answered(None, 3.0)  # contact since: the cause is old news ...
    assert t.explain(timeout, 2.5) is timeout
    assert t.explain(timeout, None) is timeout
    assert t.explain(timeout, 1.0) is not timeout  # ... unless it happened during the wait


def test_unreachable_is_reported_each_period_while_nothing_answers() -> None:
    t, _ = tracker()
    assert t.unreachable_deadline(True) is None  # nothing failed
    t.answered(KafkaConnectionError("refused"), 1.0)
    assert t.unreachable_deadline(False) is None  # following nothing
    assert t.unreachable_deadline(True) == 10.0  # the last contact (0) plus the period
    assert t.check_unreachable(9.0, True) is None
    error = t.check_unreachable(10.0, True)
    assert isinstance(error, NoBrokersAvailable) and "for 10 s" in str(error)
    assert isinstance(error.__cause__, KafkaConnectionError)
    assert t.unreachable_deadline(True) == 20.0
    t.answered(None, 12.0)
    assert t.unreachable_deadline(True) is None


def test_a_cluster_never_reached_is_reported_at_the_bounds_not_at_once() -> None:
    t, client = tracker()
    never = NoBrokersAvailable("every bootstrap server refused")
    never.__cause__ = KafkaConnectionError("refused")
    client.unreachable = never
    t.observe(BootstrapFailed(error=never), 1.0)
    # The same period as after contact, from the consumer's start (issue 26).
    assert t.unreachable_deadline(True) == pytest.approx(10.0)
    assert t.check_unreachable(1.0, True) is None
    error = t.check_unreachable(10.0, True)
    assert error is not None and "never reached the cluster" in str(error)
    assert error.__cause__ is never.__cause__
    assert t.unreachable_deadline(True) == pytest.approx(20.0)
    # A poll that waited its own timeout: reported then, as this poll's error.
    polled = t.poll_ended("poll", 2.5, 12.5)
    assert isinstance(polled, NoBrokersAvailable) and "within its timeout (2.5 s)" in str(polled)
    assert polled.__cause__ is never.__cause__
    assert t.unreachable_deadline(True) == pytest.approx(22.5)
    client.unreachable = None  # reached (or still untried): nothing to report
    assert t.poll_ended("poll", 2.5, 13.0) is None


def test_missing_and_refused_topics() -> None:
    unknown, denied = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.TOPIC_AUTHORIZATION_FAILED
    client = FakeClient(metadata({"t": 1}, errors={"gone": unknown, "secret": denied}))
    t, _ = tracker(client)
    found, refused = t.check_topics({"t", "gone", "secret"})
    assert found == TopicsNotFound(topics=frozenset({"gone"}))
    assert isinstance(refused, TopicAuthorizationFailedError) and "['secret']" in str(refused)
    assert t.missing_topics == frozenset({"gone"})
    assert t.check_topics({"t", "gone", "secret"}) == (None, None)  # nothing new
    found, refused = t.check_topics({"t"})
    assert found is None and refused is None and t.missing_topics == frozenset()

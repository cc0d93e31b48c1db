"""Failures reach the caller with their cause (issue 10, fault 8), in the
core, on the fake broker with time jumped:

- lookups, committed() and commits on an unreachable cluster fail at their
  timeout with an error that names the connection failure and carries it
  as ``__cause__`` (not a bare "no leader answered"): NoBrokersAvailable for
  a cluster never reached, which is retried until then (issue 26: a broker
  that comes up inside the timeout is used), else a KafkaTimeoutError;
- an authentication failure fails them at once, and poll raises it;
- with partitions to follow and no broker answering for
  ``default_api_timeout_ms``, poll raises NoBrokersAvailable (once per
  period) and BrokersUnreachable is emitted;
- followed topics that do not exist are reported (TopicsNotFound), topics
  the principal may not read raise from poll.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from kafkacore.client.config import ClientConfig
from kafkacore.client.metadata import TopicPartition
from kafkacore.consumer import (
    ConsumerConfig,
    ConsumerCore,
)
from kafkacore.consumer.events import BrokersUnreachable, TopicsNotFound
from kafkacore.errors import (
    AuthenticationError,
    KafkaConnectionError,
    KafkaTimeoutError,
    NoBrokersAvailable,
)
from kafkacore.protocol.error_codes import TopicAuthorizationFailedError
from kafkacore.protocol.messages.metadata_response import MetadataResponseTopic
from tests.client.fakebroker import Pump, Topic, make_cluster
from tests.consumer.fake import FakeKafka, boot_consumer

T0 = TopicPartition("t", 0)


def unbooted(
    *, refuse: bool = False, client: dict[str, Any] | None = None, **consumer: Any
) -> tuple[ConsumerCore, Pump, Any]:
    """A consumer core whose bootstrap has not happened yet."""
    cluster, fakes = make_cluster(1, [Topic("t", 2)])
    cluster.api_ranges[1] = (4, 12)
    cluster.api_ranges[8] = (2, 9)
    cluster.api_ranges[9] = (1, 9)
    FakeKafka().install(fakes)
    core = ConsumerCore(
        ClientConfig(bootstrap_servers="127.0.0.1:9092", **(client or {})),
        ConsumerConfig(**consumer),
        now=0.0,
        rng=random.Random(0),
    )
    pump = Pump(core, fakes, refuse=set(fakes) if refuse else None)  # type: ignore[arg-type]
    return core, pump, fakes


def fails(core: Any, pump: Any, handle: Any, rounds: int = 5000) -> BaseException:
    pump.run(until=lambda: handle.done, rounds=rounds)
    assert handle.error is not None, f"{handle} succeeded: {handle.value}"
    error: BaseException = handle.error
    return error


def test_lookup_on_a_cluster_never_reached_fails_at_its_timeout() -> None:
    core, pump, _ = unbooted(refuse=True)
    handle = core.end_offsets([T0], now=pump.now, timeout_ms=5000)
    error = fails(core, pump, handle)
    assert isinstance(error, NoBrokersAvailable)
    # Not after a few refused rounds: at the timeout (less the retry backoff
    # that would have started after it).
    assert 4.8 <= pump.now <= 5.0
    assert isinstance(error.__cause__, KafkaConnectionError), repr(error.__cause__)
    assert "no leader answered" in str(error) and "refused" in str(error), str(error)


def test_lookup_uses_a_cluster_that_comes_up_inside_its_timeout() -> None:
    core, pump, _ = unbooted(refuse=True)
    handle = core.end_offsets([T0], now=pump.now, timeout_ms=5000)
    pump.run(until=lambda: pump.now >= 2.0, rounds=5000)
    assert not handle.done and core.stall_cause() is not None  # refused until now
    pump.refuse.clear()
    pump.run(until=lambda: handle.done, rounds=5000)
    assert handle.error is None and pump.now < 5.0, handle.error


def test_lookup_on_a_cluster_lost_after_contact_names_the_connection_failure() -> None:
    core, pump, _kafka, _cluster = boot_consumer()
    pump.lose_cluster()
    start = pump.now
    handle = core.end_offsets([T0], now=pump.now)
    error = fails(core, pump, handle)
    assert isinstance(error, KafkaTimeoutError)
    assert 59 <= pump.now - start <= 61
    assert isinstance(error.__cause__, KafkaConnectionError), repr(error.__cause__)
    assert "no leader answered" in str(error) and "refused" in str(error), str(error)


def test_each_lookup_and_committed_honour_their_own_timeout_and_name_the_cause() -> None:
    core, pump, _ = unbooted(refuse=True, group_id="g")
    for start in (
        lambda: core.beginning_offsets([T0], now=pump.now, timeout_ms=2000),
        lambda: core.offsets_for_times({T0: 0}, now=pump.now, timeout_ms=2000),
        lambda: core.committed([T0], now=pump.now, timeout_ms=2000),
        lambda: core.commit({T0: 3}, now=pump.now, timeout_ms=2000),
    ):
        began = pump.now
        error = fails(core, pump, start())
        assert pump.now - began <= 2.5
        assert isinstance(error, KafkaConnectionError) or isinstance(
            error.__cause__, KafkaConnectionError
        ), repr(error)
        assert "refused" in str(error) or "no bootstrap server answered" in str(error), str(error)


def test_wrong_password_fails_lookups_at_once_and_poll_raises_it() -> None:
    core, pump, fakes = unbooted(
        client=dict(
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username="alice",
            sasl_plain_password="wrong",
        )
    )
    for broker in fakes.values():
        broker.require_auth = True
    core.assign([T0], now=pump.now)
    handle = core.end_offsets([T0], now=pump.now)
    error = fails(core, pump, handle)
    assert isinstance(error, AuthenticationError)
    assert pump.now < 1.0, "an authentication failure waited for the timeout"
    with pytest.raises(AuthenticationError):
        core.poll_records(now=pump.now)


def test_poll_raises_at_its_bounds_when_the_cluster_was_never_reached() -> None:
    core, pump, _ = unbooted(refuse=True, default_api_timeout_ms=5000)
    core.assign([T0], now=pump.now)
    pump.run(until=lambda: pump.now >= 2.0, rounds=5000)
    assert core.poll_records(now=pump.now) == []  # refused so far: not reported yet
    # A poll that waited 2 s for records and got none: its own bound passed.
    with pytest.raises(NoBrokersAvailable, match="never reached") as info:
        core.poll_timed_out("poll", 2.0, now=pump.now)
    assert isinstance(info.value.__cause__, KafkaConnectionError)
    pump.drain()
    assert any(isinstance(e, BrokersUnreachable) for e in pump.events)
    # Polls that do not wait (the iterator, poll(0)): default_api_timeout_ms.
    pump.run(until=lambda: core.has_buffered(), rounds=5000)
    assert pump.now == pytest.approx(7.0)  # a period after the last report
    with pytest.raises(NoBrokersAvailable, match="never reached"):
        core.poll_records(now=pump.now)
    assert core.poll_records(now=pump.now) == []  # once per period


def test_a_poll_that_times_out_after_contact_raises_nothing() -> None:
    core, pump, _kafka, _cluster = boot_consumer(default_api_timeout_ms=5000)
    core.assign([T0], now=pump.now)
    core.poll_timed_out("poll", 1.0, now=pump.now)  # reached: an empty poll is no error
    pump.lose_cluster()
    pump.run(until=lambda: pump.now >= 1.0, rounds=5000)
    core.poll_timed_out("poll", 1.0, now=pump.now)  # an outage after contact: the period


def test_poll_raises_when_no_broker_answers_for_the_api_timeout() -> None:
    core, pump, _kafka, _cluster = boot_consumer(default_api_timeout_ms=5000)
    core.assign([T0], now=pump.now)
    pump.run(until=lambda: core.position(T0) is not None, rounds=5000)
    pump.lose_cluster()
    start = pump.now
    pump.run(until=lambda: pump.now >= start + 4.0, rounds=5000)
    assert core.poll_records(now=pump.now) == []  # not yet
    pump.run(until=lambda: core.has_buffered(), rounds=5000)
    assert 5.0 <= pump.now - start <= 5.5
    with pytest.raises(NoBrokersAvailable, match="no broker has answered") as info:
        core.poll_records(now=pump.now)
    assert isinstance(info.value.__cause__, KafkaConnectionError)
    assert any(isinstance(e, BrokersUnreachable) for e in pump.events)
    assert core.poll_records(now=pump.now) == []  # once per period, not every poll
    pump.run(until=lambda: core.has_buffered(), rounds=5000)
    assert 10.0 <= pump.now - start <= 10.6
    pump.refuse.clear()  # the cluster comes back: records flow, nothing is raised
    with pytest.raises(NoBrokersAvailable):
        core.poll_records(now=pump.now)
    pump.run(until=lambda: core.stall_cause() is None, rounds=5000)
    assert core.stall_cause() is None


def test_missing_topics_are_reported_and_denied_topics_raise_from_poll() -> None:
    core, pump, _kafka, cluster = boot_consumer(group_id="g", auto_offset_reset="earliest")
    core.assign([T0, TopicPartition("nope", 0)], now=pump.now)
    pump.run(until=lambda: any(isinstance(e, TopicsNotFound) for e in pump.events))
    found = next(e for e in pump.events if isinstance(e, TopicsNotFound))
    assert found.topics == frozenset({"nope"}) == core.missing_topics()

    answer = cluster.metadata

    def denying(request: Any) -> Any:
        resp = answer(request)
        resp.topics = [
            MetadataResponseTopic(error_code=29, name=t.name) if t.name == "t" else t
            for t in resp.topics
        ]
        return resp

    cluster.metadata = denying
    # An answer lacking "nope" backs the next refresh off; the fake broker's
    # fetches answer at once, so the pump never idles into that: let time pass.
    pump.now += 1.0
    core.client.request_metadata_update(now=pump.now)
    pump.run(until=lambda: core.has_buffered(), rounds=2000)
    with pytest.raises(TopicAuthorizationFailedError, match="not allowed to read") as refused:
        core.poll_records(now=pump.now)
    # The broker whose metadata answer refused the topic (issue 13: every broker error).
    assert refused.value.node_id == core.client.cluster.topic_errors_from
    assert refused.value.node_id is not None

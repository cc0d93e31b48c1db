"""The KIP-714 client machine: transitions, intervals, jitter, errors, close."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest
import zstandard

from kafkacore.client.metrics import ClientMetrics
from kafkacore.errors import KafkaConnectionError, KafkaTimeoutError, NoCommonVersionError
from kafkacore.protocol.enums import ApiKey, ErrorCode
from kafkacore.protocol.messages import GetTelemetrySubscriptionsRequest, PushTelemetryRequest
from kafkacore.records.compression import Compression
from kafkacore.telemetry import TelemetryMachine, TelemetryRole, TelemetryState
from kafkacore.telemetry.machine import (
    DEFAULT_PUSH_INTERVAL_MS,
    ERROR_ACTIONS,
    TRANSITIONS,
    ErrorAction,
    TelemetryRequest,
)
from tests.telemetry.helpers import INSTANCE, machine, pushed, snapshot, subscription

S = TelemetryState
ZERO = "00000000-0000-0000-0000-000000000000"


def poll(m: TelemetryMachine, now: float, *, usable: bool = True, snap: Any = None) -> Any:
    taken = snap if snap is not None else snapshot(requests_sent=3)
    return m.poll(now, usable=usable, metrics=lambda: taken)


def answer(m: TelemetryMachine, request: TelemetryRequest, response: Any, now: float) -> None:
    m.completion(request)(response, now)


def fail(m: TelemetryMachine, request: TelemetryRequest, error: BaseException, now: float) -> None:
    m.completion(request)(error, now)


def subscribed(seed: int = 0, **fields: Any) -> TelemetryMachine:
    m = machine(seed)
    request = poll(m, 0.0)
    answer(m, request, subscription(**fields), 0.0)
    return m


def push_due(m: TelemetryMachine) -> tuple[PushTelemetryRequest, float]:
    at = m.next_deadline()
    assert at is not None
    request = poll(m, at)
    assert isinstance(request, PushTelemetryRequest)
    return request, at


# ------------------------------------------------------------------- the table
def test_transition_table_covers_every_state_and_ends_in_terminal_states() -> None:
    assert set(TRANSITIONS) == set(TelemetryState)
    assert TRANSITIONS[S.TERMINATED] == frozenset()
    assert TRANSITIONS[S.DISABLED] == frozenset()
    # Only close leads to the terminating push, and only from a subscription with metrics.
    into_terminating = {s for s, nxt in TRANSITIONS.items() if S.TERMINATING_PUSH_NEEDED in nxt}
    assert into_terminating == {S.PUSH_NEEDED, S.PUSH_IN_PROGRESS}


def test_a_transition_outside_the_table_is_a_bug() -> None:
    m = machine()
    with pytest.raises(AssertionError, match="SUBSCRIPTION_NEEDED -> PUSH_IN_PROGRESS"):
        m._goto(S.PUSH_IN_PROGRESS)


def test_error_table_is_kip_714s() -> None:
    assert ERROR_ACTIONS[ErrorCode.UNKNOWN_SUBSCRIPTION_ID] is ErrorAction.RESUBSCRIBE
    assert ERROR_ACTIONS[ErrorCode.UNSUPPORTED_COMPRESSION_TYPE] is ErrorAction.RESUBSCRIBE
    assert ERROR_ACTIONS[ErrorCode.TELEMETRY_TOO_LARGE] is ErrorAction.WAIT_INTERVAL
    assert ERROR_ACTIONS[ErrorCode.THROTTLING_QUOTA_EXCEEDED] is ErrorAction.WAIT_INTERVAL
    for code in (
        ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_RECORD,
        ErrorCode.UNSUPPORTED_VERSION,
    ):
        assert ERROR_ACTIONS[code] is ErrorAction.DISABLE


# ---------------------------------------------------------------- subscription
def test_waits_for_a_usable_connection_without_a_timer() -> None:
    m = machine()
    assert m.state is S.SUBSCRIPTION_NEEDED
    assert poll(m, 0.0, usable=False) is None
    assert m.next_deadline() is None  # a connection's arrival steps the owner anyway
    request = poll(m, 5.0)
    assert isinstance(request, GetTelemetrySubscriptionsRequest)
    assert str(request.client_instance_id) == ZERO  # KIP-714: null on the first request
    assert m.state is S.SUBSCRIPTION_IN_PROGRESS
    assert poll(m, 5.0) is None  # one request at a time


def test_subscription_answer_sets_every_parameter() -> None:
    m = subscribed(
        requested_metrics=["org.apache.kafka.producer."],
        accepted_compression_types=[1, 3],
        telemetry_max_bytes=4096,
        delta_temporality=True,
        subscription_id=77,
    )
    assert m.client_instance_id == INSTANCE
    sub = m.subscription
    assert sub is not None
    assert sub.subscription_id == 77
    assert sub.prefixes == ("org.apache.kafka.producer.",)
    assert sub.push_interval_ms == 1000
    assert sub.compression is Compression.LZ4  # the best of what both accept
    assert sub.max_bytes == 4096
    assert sub.delta is True
    assert m.state is S.PUSH_NEEDED


@pytest.mark.parametrize("seed", range(8))
def test_first_push_is_jittered_by_the_injected_rng(seed: int) -> None:
    m = subscribed(seed)
    expected = random.Random(seed).uniform(0.5, 1.5)  # the machine's first draw
    assert m.next_deadline() == pytest.approx(expected)


def test_first_push_jitter_spreads_over_half_to_one_and_a_half_intervals() -> None:
    firsts = []
    for seed in range(200):
        at = subscribed(seed).next_deadline()
        assert at is not None
        firsts.append(at)
    assert min(firsts) >= 0.5 and max(firsts) <= 1.5
    assert min(firsts) < 0.6 and max(firsts) > 1.4


def test_pushes_then_every_interval_without_jitter() -> None:
    m = subscribed()
    request, at = push_due(m)
    assert request.client_instance_id == INSTANCE
    assert request.subscription_id == 5
    assert request.terminating is False
    assert request.compression_type == Compression.ZSTD
    assert m.state is S.PUSH_IN_PROGRESS
    assert poll(m, at + 100) is None  # nothing while the push is in flight
    answer(m, request, pushed(), at + 0.25)
    assert m.state is S.PUSH_NEEDED
    assert m.next_deadline() == pytest.approx(at + 0.25 + 1.0)
    assert m.pushes == 1
    assert poll(m, at + 1.2) is None  # not due yet
    second, at2 = push_due(m)
    answer(m, second, pushed(), at2)
    assert m.next_deadline() == pytest.approx(at2 + 1.0)
    assert m.pushes == 2


def test_a_push_due_without_a_connection_goes_out_anyway() -> None:
    # The owner connects to send it (an idle client's connections may all be
    # closed: waiting for one would wait for ever).
    m = subscribed()
    at = m.next_deadline()
    assert at is not None
    assert isinstance(poll(m, at, usable=False), PushTelemetryRequest)
    assert m.state is S.PUSH_IN_PROGRESS


def test_a_later_subscription_fetch_goes_out_without_a_connection() -> None:
    m = subscribed(requested_metrics=[])  # nothing wanted: ask again after the interval
    at = m.next_deadline()
    assert at is not None and m.state is S.SUBSCRIPTION_NEEDED
    request = poll(m, at, usable=False)
    assert isinstance(request, GetTelemetrySubscriptionsRequest)
    assert request.client_instance_id == INSTANCE


def test_non_positive_push_interval_means_the_default() -> None:
    m = subscribed(push_interval_ms=0)
    assert m.subscription is not None
    assert m.subscription.push_interval_ms == DEFAULT_PUSH_INTERVAL_MS


def test_no_metrics_wanted_costs_one_request_per_interval() -> None:
    m = machine()
    sent = []
    now = 0.0
    for _ in range(50):  # a long time at the pump's pace
        request = poll(m, now)
        if request is not None:
            sent.append(request)
            answer(m, request, subscription(requested_metrics=[], push_interval_ms=60_000), now)
        now += 1.0
    assert len(sent) == 1  # 50 s < the 60 s interval
    assert all(isinstance(r, GetTelemetrySubscriptionsRequest) for r in sent)
    assert m.state is S.SUBSCRIPTION_NEEDED
    # KIP-714: ask again after the interval (an operator may add a subscription).
    assert m.next_deadline() == pytest.approx(60.0)
    again = poll(m, 60.0)
    assert isinstance(again, GetTelemetrySubscriptionsRequest)
    assert again.client_instance_id == INSTANCE  # the id learned first


def test_broker_without_an_instance_id_disables() -> None:
    m = machine()
    request = poll(m, 0.0)
    answer(m, request, subscription(client_instance_id=uuid.UUID(int=0)), 0.0)
    assert m.state is S.DISABLED
    assert m.client_instance_id is None


# ---------------------------------------------------------------------- errors
def test_api_not_offered_disables_after_one_attempt() -> None:
    m = machine()
    request = poll(m, 0.0)
    fail(m, request, NoCommonVersionError("not offered"), 0.0)
    assert m.state is S.DISABLED and not m.active
    assert isinstance(m.last_error, NoCommonVersionError)
    for t in range(0, 10_000, 7):
        assert poll(m, float(t)) is None
    assert m.next_deadline() is None


@pytest.mark.parametrize(
    "code",
    [
        ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_RECORD,
        ErrorCode.UNSUPPORTED_VERSION,
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,  # not in KIP-714's table
        32000,  # a code kafkacore does not know
    ],
)
def test_unrecoverable_push_errors_disable(code: int) -> None:
    m = subscribed()
    request, at = push_due(m)
    answer(m, request, pushed(code), at)
    assert m.state is S.DISABLED
    assert getattr(m.last_error, "code", None) == code
    assert m.next_deadline() is None


def test_unrecoverable_subscription_error_disables() -> None:
    m = machine()
    request = poll(m, 0.0)
    answer(m, request, subscription(error_code=ErrorCode.INVALID_REQUEST), 0.0)
    assert m.state is S.DISABLED


@pytest.mark.parametrize(
    "code", [ErrorCode.UNKNOWN_SUBSCRIPTION_ID, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE]
)
def test_subscription_changed_fetches_it_again_at_once(code: int) -> None:
    m = subscribed()
    request, at = push_due(m)
    answer(m, request, pushed(code), at)
    assert m.state is S.SUBSCRIPTION_NEEDED
    again = poll(m, at)
    assert isinstance(again, GetTelemetrySubscriptionsRequest)
    assert again.client_instance_id == INSTANCE
    answer(m, again, subscription(subscription_id=6, accepted_compression_types=[1]), at + 0.1)
    assert m.subscription is not None and m.subscription.subscription_id == 6
    # Not the first subscription: no jitter, one interval.
    assert m.next_deadline() == pytest.approx(at + 0.1 + 1.0)
    push, _ = push_due(m)
    assert push.subscription_id == 6 and push.compression_type == Compression.GZIP


def test_subscription_fetch_answered_with_resubscribe_code_backs_off() -> None:
    m = machine(3)
    request = poll(m, 0.0)
    answer(m, request, subscription(error_code=ErrorCode.UNKNOWN_SUBSCRIPTION_ID), 0.0)
    assert m.state is S.SUBSCRIPTION_NEEDED
    at = m.next_deadline()
    assert at is not None and 0.08 <= at <= 0.12  # not a tight loop
    assert poll(m, at - 0.001) is None


@pytest.mark.parametrize(
    "code", [ErrorCode.TELEMETRY_TOO_LARGE, ErrorCode.THROTTLING_QUOTA_EXCEEDED]
)
def test_too_large_or_throttled_waits_one_interval(code: int) -> None:
    m = subscribed()
    request, at = push_due(m)
    answer(m, request, pushed(code), at)
    assert m.state is S.PUSH_NEEDED
    assert m.next_deadline() == pytest.approx(at + 1.0)


def test_too_large_halves_the_next_payload() -> None:
    m = subscribed()
    request, at = push_due(m)
    first = len(request.metrics)
    answer(m, request, pushed(ErrorCode.TELEMETRY_TOO_LARGE), at)
    second, _ = push_due(m)
    assert len(second.metrics) <= first // 2
    # A new subscription forgets the halving.
    m2 = subscribed()
    r1, t1 = push_due(m2)
    answer(m2, r1, pushed(ErrorCode.TELEMETRY_TOO_LARGE), t1)
    r2, t2 = push_due(m2)
    answer(m2, r2, pushed(ErrorCode.UNKNOWN_SUBSCRIPTION_ID), t2)
    sub = poll(m2, t2)
    answer(m2, sub, subscription(), t2)
    r3, _ = push_due(m2)
    assert len(r3.metrics) > len(r2.metrics)


def test_subscription_fetch_throttled_backs_off() -> None:
    m = machine()
    request = poll(m, 0.0)
    answer(m, request, subscription(error_code=ErrorCode.THROTTLING_QUOTA_EXCEEDED), 0.0)
    assert m.state is S.SUBSCRIPTION_NEEDED
    at = m.next_deadline()
    assert at is not None and 0.08 <= at <= 0.12


def test_lost_answers_back_off_exponentially_with_jitter() -> None:
    m = machine(11)
    now = 0.0
    delays = []
    for i in range(7):
        request = poll(m, now)
        assert isinstance(request, GetTelemetrySubscriptionsRequest)
        error = KafkaTimeoutError("late") if i % 2 else KafkaConnectionError("lost")
        fail(m, request, error, now)
        at = m.next_deadline()
        assert at is not None
        delays.append(at - now)
        now = at
    for delay, base in zip(delays, [0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0], strict=True):
        assert base * 0.8 <= delay <= base * 1.2
    assert isinstance(m.last_error, KafkaConnectionError)
    # Success resets the count.
    request = poll(m, now)
    answer(m, request, subscription(), now)
    push, at = push_due(m)
    fail(m, push, KafkaConnectionError("lost"), at)
    retry = m.next_deadline()
    assert retry is not None and 0.08 <= retry - at <= 0.12
    assert m.state is S.SUBSCRIPTION_NEEDED


# ------------------------------------------------------------------------ close
def test_close_sends_one_terminating_push() -> None:
    m = subscribed()
    m.initiate_close(0.2)
    assert m.state is S.TERMINATING_PUSH_NEEDED
    request = poll(m, 0.2)
    assert isinstance(request, PushTelemetryRequest)
    assert request.terminating is True
    assert m.state is S.TERMINATING_PUSH_IN_PROGRESS
    answer(m, request, pushed(), 0.3)
    assert m.state is S.TERMINATED and not m.active
    assert m.pushes == 1
    assert poll(m, 100.0) is None and m.next_deadline() is None


def test_terminating_push_failure_still_terminates() -> None:
    m = subscribed()
    m.initiate_close(0.2)
    request = poll(m, 0.2)
    answer(m, request, pushed(ErrorCode.INVALID_RECORD), 0.3)
    assert m.state is S.TERMINATED and m.pushes == 0


def test_close_before_any_subscription_sends_nothing() -> None:
    m = machine()
    m.initiate_close(0.0)
    assert m.state is S.TERMINATED
    assert poll(m, 0.0) is None


def test_close_while_fetching_the_subscription_drops_its_answer() -> None:
    m = machine()
    request = poll(m, 0.0)
    m.initiate_close(0.1)
    assert m.state is S.TERMINATED
    answer(m, request, subscription(), 0.2)
    assert m.state is S.TERMINATED and m.subscription is None


def test_close_without_a_connection_terminates() -> None:
    m = subscribed()
    m.initiate_close(0.2)
    assert poll(m, 0.2, usable=False) is None
    assert m.state is S.TERMINATED


def test_close_during_a_push_overtakes_it() -> None:
    m = subscribed()
    request, at = push_due(m)
    m.initiate_close(at)
    late_first = m.completion(request)
    # The push's answer arrives before the terminating push is sent: ignored.
    late_first(pushed(), at + 0.1)
    assert m.state is S.TERMINATING_PUSH_NEEDED
    goodbye = poll(m, at + 0.1)
    assert isinstance(goodbye, PushTelemetryRequest) and goodbye.terminating
    late_first(pushed(), at + 0.2)  # a duplicate: stale, dropped
    assert m.state is S.TERMINATING_PUSH_IN_PROGRESS
    answer(m, goodbye, pushed(), at + 0.3)
    assert m.state is S.TERMINATED


def test_close_twice_and_after_disable_is_harmless() -> None:
    m = subscribed()
    m.initiate_close(0.0)
    m.initiate_close(0.0)
    assert m.state is S.TERMINATING_PUSH_NEEDED
    d = machine()
    fail(d, poll(d, 0.0), NoCommonVersionError("x"), 0.0)
    d.initiate_close(1.0)
    assert d.state is S.DISABLED


# ---------------------------------------------------------------------- payload
def test_payload_bounded_by_max_bytes() -> None:
    big = subscribed(telemetry_max_bytes=1 << 20, accepted_compression_types=[])
    full, _ = push_due(big)
    small = subscribed(telemetry_max_bytes=len(full.metrics) // 3, accepted_compression_types=[])
    request, _ = push_due(small)
    assert 0 < len(request.metrics) <= len(full.metrics) // 3
    assert request.compression_type == Compression.NONE


def test_nothing_fits_skips_the_push() -> None:
    m = subscribed(telemetry_max_bytes=3)
    at = m.next_deadline()
    assert at is not None
    assert poll(m, at) is None
    assert m.state is S.PUSH_NEEDED
    assert m.next_deadline() == pytest.approx(at + 1.0)
    m.initiate_close(at + 0.5)
    assert poll(m, at + 0.5) is None
    assert m.state is S.TERMINATED


def test_role_is_inferred_or_set_by_the_owner() -> None:
    from opentelemetry.proto.metrics.v1 import metrics_pb2

    def names(m: TelemetryMachine, snap: ClientMetrics) -> set[str]:
        at = m.next_deadline()
        assert at is not None
        request = poll(m, at, snap=snap)
        data = metrics_pb2.MetricsData.FromString(
            zstandard.ZstdDecompressor().decompress(request.metrics)
        )
        return {x.name for x in data.resource_metrics[0].scope_metrics[0].metrics}

    producer = snapshot(by_api={ApiKey.PRODUCE: 1})
    m = subscribed()
    assert "org.apache.kafka.producer.request.total" in names(m, producer)
    m2 = subscribed()
    m2.role = TelemetryRole.CONSUMER
    assert "org.apache.kafka.consumer.request.total" in names(m2, producer)


def test_trace_hook_sees_every_state_change() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    m = machine(trace=lambda name, **fields: seen.append((name, fields)))
    request = poll(m, 0.0)
    fail(m, request, NoCommonVersionError("no"), 0.0)
    assert [f["state"] for _, f in seen] == ["subscription_in_progress", "disabled"]
    assert seen[-1][1]["why"] == "the broker does not offer client telemetry"
    assert all(name == "telemetry" for name, _ in seen)


def test_api_not_in_api_versions_disables_without_a_request() -> None:
    m = machine()
    assert m.poll(0.0, usable=False, metrics=snapshot, offered=False) is None
    assert m.state is S.SUBSCRIPTION_NEEDED  # no connection yet: no verdict yet
    assert m.poll(0.0, usable=True, metrics=snapshot, offered=False) is None
    assert m.state is S.DISABLED
    assert isinstance(m.last_error, NoCommonVersionError)
    assert "no client telemetry plugin" in str(m.last_error)

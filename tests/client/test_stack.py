"""StackedMachine: the one step loop every machine built on the client core uses.

Driven by the fake broker of tests/client/fakebroker.py (bytes in, bytes out).
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Iterable
from typing import Any

import pytest

from kafkacore.client.config import ClientConfig
from kafkacore.client.core import KafkaClientCore
from kafkacore.client.events import CredentialsNeeded, MetadataUpdated
from kafkacore.client.stack import MAX_STEP_ROUNDS, StackedMachine
from kafkacore.protocol.messages import MetadataRequest
from tests.client.fakebroker import Pump, make_cluster


class Probe(StackedMachine[str | CredentialsNeeded]):
    """Records what the base hands it; optional endless work."""

    EVENT_TYPES = (str, CredentialsNeeded)

    def __init__(self, client: KafkaClientCore) -> None:
        super().__init__(client)
        self.answers: list[tuple[Any, BaseException | None]] = []
        self.other: list[object] = []
        self.due: list[Hashable] = []
        self.depth = 0
        self.max_depth = 0
        self.endless = False
        self.work_calls = 0
        self.sub: float | None = None

    def record(self, answer: Any, now: float) -> None:
        """A request's callback: keeps (response, error) of its answer."""
        error = answer if isinstance(answer, BaseException) else None
        self.answers.append((None if error else answer, error))

    def _on_client_event(self, event: object, now: float) -> None:
        self.other.append(event)

    def _work(self, now: float) -> bool:
        self.work_calls += 1
        return self.endless

    def _on_deadline(self, key: Hashable, now: float) -> None:
        self.due.append(key)

    def _sub_deadlines(self) -> Iterable[float | None]:
        return (self.sub,)

    def _step(self, now: float) -> None:
        self.depth += 1
        self.max_depth = max(self.max_depth, self.depth)
        try:
            super()._step(now)
        finally:
            self.depth -= 1


def booted() -> tuple[Probe, Pump]:
    _, fakes = make_cluster(1)
    client = KafkaClientCore(
        ClientConfig(bootstrap_servers="127.0.0.1:9092"), now=0.0, rng=random.Random(0)
    )
    probe = Probe(client)
    pump = Pump(probe, fakes)  # type: ignore[arg-type]  # the pump only uses Driven methods
    pump.run(until=lambda: client.cluster.update_count > 0)
    return probe, pump


def test_answers_reach_their_callback_and_other_events_the_hook() -> None:
    probe, pump = booted()
    assert any(isinstance(e, MetadataUpdated) for e in probe.other)
    probe._request(
        MetadataRequest(topics=[]),
        probe.record,
        now=pump.now,
    )
    pump.run(until=lambda: bool(probe.answers))
    response, error = probe.answers[0]
    assert error is None and response.brokers


def test_build_gets_the_version_of_the_connection_that_carries_the_request() -> None:
    probe, pump = booted()
    seen: list[int] = []

    def build(version: int) -> MetadataRequest:
        seen.append(version)
        return MetadataRequest(topics=[], allow_auto_topic_creation=False)

    handle = probe._request(
        MetadataRequest(topics=None),
        probe.record,
        now=pump.now,
        build=build,
    )
    pump.run(until=lambda: bool(probe.answers))
    broker = next(iter(pump.brokers.values()))
    api_key, version, body = broker.received[-1]
    assert api_key == MetadataRequest.API_KEY and seen == [version] == [handle.api_version]
    assert body.topics == [] and body.allow_auto_topic_creation is False


def test_a_callback_that_sends_again_does_not_nest_steps() -> None:
    probe, pump = booted()

    def first(answer: Any, now: float) -> None:
        probe.record(answer, now)
        probe._request(MetadataRequest(topics=[]), probe.record, now=now)

    probe._request(MetadataRequest(topics=[]), first, now=pump.now)
    pump.run(until=lambda: len(probe.answers) == 2)
    assert probe.max_depth == 1


def test_endless_work_is_capped_per_step_and_continues_at_once() -> None:
    probe, pump = booted()
    probe.endless = True
    probe.work_calls = 0
    probe.handle_timeout(now=pump.now)
    assert probe.work_calls == MAX_STEP_ROUNDS
    assert probe.next_deadline() == pump.now  # the rest of the work is due at once
    probe.endless = False
    probe.handle_timeout(now=pump.now)
    assert probe.due == []  # the continuation is internal, not a machine deadline
    client_deadline = probe.client.next_deadline()
    assert probe.next_deadline() == client_deadline


def test_deadlines_come_due_through_handle_timeout_and_sub_machines_count() -> None:
    probe, pump = booted()
    probe.deadlines.set("retry", pump.now + 1.0)
    probe.deadlines.set("commit", pump.now + 0.5)
    assert probe.next_deadline() == min(
        t for t in (probe.client.next_deadline(), pump.now + 0.5) if t is not None
    )
    probe.sub = pump.now + 0.25
    assert probe.next_deadline() == min(
        t for t in (probe.client.next_deadline(), pump.now + 0.25) if t is not None
    )
    probe.handle_timeout(now=pump.now + 0.75)
    assert probe.due == ["commit"] and "retry" in probe.deadlines


def test_events_emitted_are_pulled_once_in_order() -> None:
    probe, _ = booted()
    probe._emit("a")
    probe._emit("b")
    assert probe.pull_events() == ["a", "b"] and probe.pull_events() == []


def test_an_event_outside_the_machines_union_is_a_bug_caught_at_emit() -> None:
    probe, _ = booted()
    with pytest.raises(AssertionError, match=r"Probe emitted int, not one of its events"):
        probe._emit(42)
    assert probe.pull_events() == []


def test_credentials_needed_passes_through_and_the_answer_resumes_the_exchange() -> None:
    _, fakes = make_cluster(1)
    broker = next(iter(fakes.values()))
    broker.require_auth = True
    calls: list[int] = []

    def provider() -> str:
        calls.append(1)
        return broker.oauth_token

    client = KafkaClientCore(
        ClientConfig(
            bootstrap_servers="127.0.0.1:9092",
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="OAUTHBEARER",
            sasl_oauth_token_provider=provider,
            defer_credentials=True,
        ),
        now=0.0,
        rng=random.Random(0),
    )
    probe = Probe(client)
    pump = Pump(probe, fakes)  # type: ignore[arg-type]
    pump.run(until=lambda: any(isinstance(e, CredentialsNeeded) for e in pump.events))
    need = next(e for e in pump.events if isinstance(e, CredentialsNeeded))
    assert calls == [] and not any(isinstance(e, CredentialsNeeded) for e in probe.other)
    assert probe.credentials_ready(need.request_id, need.call(), now=pump.now) is True
    pump.drain()
    pump.run(until=lambda: client.cluster.update_count > 0)
    assert calls == [1]
    assert probe.credentials_ready(need.request_id, "again", now=pump.now) is False


def test_a_request_sent_inside_a_step_is_written_by_the_loop_not_a_nested_client_step() -> None:
    """Issue 11: sending only queues; the stacked loop steps the client once per round."""
    probe, pump = booted()
    client = probe.client
    steps_inside_send: list[int] = []
    real_step, real_send = client._step, client.send
    calls = {"step": 0}

    def counting_step(now: float) -> None:
        calls["step"] += 1
        real_step(now)

    def watched_send(*args: Any, **kwargs: Any) -> Any:
        before = calls["step"]
        handle = real_send(*args, **kwargs)
        steps_inside_send.append(calls["step"] - before)
        return handle

    client._step = counting_step  # type: ignore[method-assign]
    client.send = watched_send  # type: ignore[method-assign]
    sent: list[Any] = []

    def first(answer: Any, now: float) -> None:
        probe.record(answer, now)
        sent.append(probe._request(MetadataRequest(topics=[]), probe.record, now=now))
        assert client.step_due  # queued, not written yet: no step ran inside send

    probe._request(MetadataRequest(topics=[]), first, now=pump.now)
    assert client.step_due and not client.pull_actions()  # queued until a step
    probe._step(pump.now)  # what a machine's command does after queueing
    assert not client.step_due
    pump.run(until=lambda: len(probe.answers) == 2)
    assert steps_inside_send == [0, 0]
    assert sent[0].done and not client.step_due
    assert probe.max_depth == 1


def test_a_client_command_outside_any_step_is_due_at_once_not_lost() -> None:
    probe, pump = booted()
    before = probe.client.next_deadline()
    waiter = probe.client.request_metadata_update(now=pump.now + 0.5)
    assert probe.client.step_due and probe.next_deadline() == pump.now + 0.5
    assert before is None or before > pump.now + 0.5
    pump.run(until=lambda: waiter.done)
    assert not probe.client.step_due


def test_the_answering_node_is_known_only_while_its_callback_runs() -> None:
    probe, pump = booted()
    seen: list[int | None] = []
    probe._request(
        MetadataRequest(topics=[]), lambda a, t: seen.append(probe.answered_by), now=pump.now
    )
    pump.run(until=lambda: bool(seen))
    assert seen == [0] and probe.answered_by is None


def test_asking_for_metadata_on_every_step_does_not_keep_the_loop_busy() -> None:
    """A refresh that may not start yet (backoff) is no work for the owner's loop."""
    probe, pump = booted()
    client = probe.client

    class Asking(Probe):
        def _work(self, now: float) -> bool:
            self.work_calls += 1
            client.request_metadata_update(now=now)
            return False

    asking = Asking.__new__(Asking)
    asking.__dict__.update(probe.__dict__)
    asking.work_calls = 0
    asking.handle_timeout(now=pump.now)
    assert asking.work_calls < MAX_STEP_ROUNDS and not client.step_due
    deadline = asking.next_deadline()
    assert deadline is not None and deadline > pump.now  # the refresh backoff, not "at once"

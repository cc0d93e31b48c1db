"""A cluster that is not up yet when the client starts (issue 26), in the core,
on the fake broker with time jumped (no sleeps).

The policy: refused connections are retried with the reconnect backoff
(exponential with jitter) for as long as anything waits, and nothing is
failed for a count of refused rounds. Each waiter decides at its own
bound: a request at its ``timeout_ms`` (default ``request_timeout_ms``), a
bootstrap wait (``KafkaClient.connect()``) at its deadline. A cluster that
comes up before then is used; one that never answered is reported then as
``NoBrokersAvailable``, naming each address and carrying the connection
error as its cause. A refused login is an answer, not absence: it fails
everything at once.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from kafkacore.client import (
    BootstrapFailed,
    ClientConfig,
    KafkaClientCore,
    MetadataUpdated,
    MetadataUpdateFailed,
)
from kafkacore.client.backoff import ExponentialBackoff
from kafkacore.errors import (
    AuthenticationError,
    KafkaTimeoutError,
    LocalProtocolError,
    NoBrokersAvailable,
    RequestCancelled,
)
from kafkacore.protocol import messages as m
from tests.client.fakebroker import Pump, make_cluster

ADDRESS = ("127.0.0.1", 9092)


def late_cluster(*, refused: bool = True, **config: Any) -> tuple[KafkaClientCore, Pump]:
    """A core whose one bootstrap server refuses until the test clears ``pump.refuse``."""
    _cluster, fakes = make_cluster(1)
    options: dict[str, Any] = {"bootstrap_servers": "127.0.0.1:9092", **config}
    core = KafkaClientCore(ClientConfig(**options), now=0.0, rng=random.Random(7))
    return core, Pump(core, fakes, refuse={ADDRESS} if refused else set())


def run_until(pump: Pump, t: float) -> None:
    """Jump from deadline to deadline up to ``t``, never past it."""
    for _ in range(10_000):
        if pump.step():
            continue
        deadline = pump.core.next_deadline()
        if deadline is None or deadline > t:
            pump.now = t
            return
        pump.now = max(pump.now, deadline)
        pump.core.handle_timeout(now=pump.now)
        pump.drain()
    raise AssertionError(f"run_until({t}): still busy after 10000 rounds")


def never_reached(error: BaseException | None, *named: str) -> None:
    """``error`` reports a cluster never reached: NoBrokersAvailable naming
    ``named``, the connection refusal in its ``__cause__`` chain."""
    assert isinstance(error, NoBrokersAvailable), repr(error)
    for text in (*named, "127.0.0.1:9092"):
        assert text in str(error), (text, str(error))
    causes = []
    while error is not None and len(causes) < 10:
        causes.append(error)
        error = error.__cause__
    assert any(isinstance(e, ConnectionRefusedError) for e in causes), causes


def test_a_request_waits_for_its_timeout_while_refused_connects_back_off() -> None:
    core, pump = late_cluster(
        request_timeout_ms=8000, reconnect_backoff_ms=50, reconnect_backoff_max_ms=1000
    )
    opens = [0.0]  # the first attempt: when the core was made, before this hook
    core.add_trace(lambda name, _fields: opens.append(pump.now) if name == "connect" else None)
    handle = core.send(m.MetadataRequest(topics=[]), now=0.0)
    run_until(pump, 7.9)
    assert not handle.done  # many refused rounds, nothing failed
    rounds = [e for e in pump.events if isinstance(e, BootstrapFailed)]
    assert len(rounds) >= 5, "every round is still reported"
    # The retries are the reconnect backoff's: exponential, capped, jittered.
    assert len(opens) >= 8 and len({round(b - a, 6) for a, b in itertools.pairwise(opens)}) > 3
    backoff = ExponentialBackoff(50, 1000)
    for failures, gap in enumerate(itertools.pairwise(opens), start=1):
        low, high = backoff.bounds_ms(failures)
        assert low / 1000 - 1e-6 <= gap[1] - gap[0] <= high / 1000 + 1e-6, (failures, gap)
    pump.run(until=lambda: handle.done, rounds=10_000)
    assert pump.now == pytest.approx(8.0)
    never_reached(handle.error, "not sent within 8000 ms")


def test_a_broker_that_comes_up_inside_the_timeout_is_used() -> None:
    core, pump = late_cluster(request_timeout_ms=8000)
    handle = core.send(m.MetadataRequest(topics=[]), now=0.0)
    run_until(pump, 2.0)
    assert core.unreachable_from_the_start() is not None and not handle.done
    pump.refuse.clear()  # the broker is up
    pump.run(until=lambda: handle.done, rounds=10_000)
    assert handle.error is None and pump.now < 8.0
    assert core.unreachable_from_the_start() is None


def test_the_client_keeps_trying_after_a_caller_gave_up() -> None:
    core, pump = late_cluster(request_timeout_ms=1000)
    first = core.send(m.MetadataRequest(topics=[]), now=0.0)
    pump.run(until=lambda: first.done, rounds=10_000)
    assert isinstance(first.error, NoBrokersAvailable)
    pump.refuse.clear()
    second = core.send(m.MetadataRequest(topics=[]), now=pump.now)
    pump.run(until=lambda: second.done, rounds=10_000)
    assert second.error is None


def test_after_contact_an_expired_request_is_a_timeout_naming_the_cause() -> None:
    core, pump = late_cluster(request_timeout_ms=2000)
    pump.refuse.clear()
    pump.run(until=lambda: core.cluster.update_count > 0)
    pump.lose_cluster()
    handle = core.send(m.MetadataRequest(topics=[]), now=pump.now)
    pump.run(until=lambda: handle.done, rounds=10_000)
    assert isinstance(handle.error, KafkaTimeoutError), repr(handle.error)
    assert core.unreachable_from_the_start() is None  # reached once: an outage
    assert isinstance(core.bound_passed("x"), KafkaTimeoutError)


# -- the bootstrap wait of KafkaClient.connect() -------------------------------------


def test_a_bootstrap_wait_fails_at_its_deadline_with_the_cause() -> None:
    core, pump = late_cluster(request_timeout_ms=30000)
    waiter = core.wait_bootstrapped(now=0.0, timeout_ms=5000)
    run_until(pump, 4.9)
    assert not waiter.done
    pump.run(until=lambda: waiter.done, rounds=10_000)
    assert pump.now == pytest.approx(5.0)
    never_reached(waiter.error, "no cluster metadata within 5000 ms")
    failed = [e for e in pump.events if isinstance(e, MetadataUpdateFailed) and waiter in e.waiters]
    assert len(failed) == 1 and failed[0].error is waiter.error


def test_a_bootstrap_wait_completes_with_the_first_metadata() -> None:
    core, pump = late_cluster()
    waiter = core.wait_bootstrapped(now=0.0)  # default: request_timeout_ms (30 s)
    run_until(pump, 10.0)
    assert not waiter.done
    pump.refuse.clear()
    pump.run(until=lambda: waiter.done, rounds=10_000)
    assert waiter.error is None and waiter.value is core.cluster and pump.now < 30.0
    assert any(isinstance(e, MetadataUpdated) and waiter in e.waiters for e in pump.events)
    assert core.next_deadline() is None or core.next_deadline() > 30.0  # its deadline is gone


def test_a_bootstrap_wait_outlives_a_failed_refresh() -> None:
    # The first Metadata request expires (request_timeout_ms) before the wait's
    # own deadline: the wait goes on, and the next refresh gets the answer.
    core, pump = late_cluster(request_timeout_ms=1000)
    waiter = core.wait_bootstrapped(now=0.0, timeout_ms=10000)
    run_until(pump, 3.0)
    assert any(isinstance(e, MetadataUpdateFailed) for e in pump.events) and not waiter.done
    pump.refuse.clear()
    pump.run(until=lambda: waiter.done, rounds=10_000)
    assert waiter.error is None


def test_a_refused_login_fails_a_bootstrap_wait_at_once() -> None:
    sasl = {"sasl_mechanism": "PLAIN", "sasl_plain_username": "a", "sasl_plain_password": "no"}
    core, pump = late_cluster(refused=False, security_protocol="SASL_PLAINTEXT", **sasl)
    for broker in pump.brokers.values():
        broker.require_auth = True
    waiter = core.wait_bootstrapped(now=0.0, timeout_ms=60000)
    pump.run(until=lambda: waiter.done, rounds=10_000)
    assert isinstance(waiter.error, AuthenticationError) and pump.now < 1.0
    later = core.wait_bootstrapped(now=pump.now, timeout_ms=60000)
    pump.run(until=lambda: later.done, rounds=10_000)
    assert isinstance(later.error, AuthenticationError) and pump.now < 1.0


def test_shutdown_cancels_a_bootstrap_wait_and_bad_timeouts_are_refused() -> None:
    core, pump = late_cluster()
    with pytest.raises(LocalProtocolError, match="timeout_ms"):
        core.wait_bootstrapped(now=0.0, timeout_ms=-1)
    with pytest.raises(LocalProtocolError, match="timeout_ms"):
        core.wait_bootstrapped(now=0.0, timeout_ms=True)
    waiter = core.wait_bootstrapped(now=0.0, timeout_ms=5000)
    core.shutdown(now=0.0)
    pump.drain()
    assert isinstance(waiter.error, RequestCancelled)
    assert any(isinstance(e, MetadataUpdateFailed) and waiter in e.waiters for e in pump.events)

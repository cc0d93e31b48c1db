"""Reconnect backoff: exponential, capped, +-20% jitter from the injected rng."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkacore.client.backoff import ExponentialBackoff


def test_no_failures_no_wait() -> None:
    assert ExponentialBackoff(50, 1000).delay_ms(0, random.Random(0)) == 0.0


def test_doubles_then_caps() -> None:
    b = ExponentialBackoff(50, 1000, jitter=0.0)
    rng = random.Random(0)
    assert [b.delay_ms(n, rng) for n in range(1, 8)] == [50, 100, 200, 400, 800, 1000, 1000]


@given(
    base=st.integers(1, 5000),
    extra=st.integers(0, 100000),
    failures=st.integers(1, 200),
    seed=st.integers(0, 2**32),
)
def test_within_bounds(base: int, extra: int, failures: int, seed: int) -> None:
    b = ExponentialBackoff(base, base + extra)
    low, high = b.bounds_ms(failures)
    delay = b.delay_ms(failures, random.Random(seed))
    assert low <= delay <= high
    assert base * 0.8 <= delay <= (base + extra) * 1.2


def test_jitter_varies_and_is_reproducible() -> None:
    b = ExponentialBackoff(50, 1000)
    first = [b.delay_ms(3, random.Random(s)) for s in range(20)]
    again = [b.delay_ms(3, random.Random(s)) for s in range(20)]
    assert first == again
    assert len(set(first)) > 1


def test_bad_parameters() -> None:
    with pytest.raises(ValueError):
        ExponentialBackoff(100, 10)
    with pytest.raises(ValueError):
        ExponentialBackoff(1, 10, jitter=1.5)


def test_node_health_counts_incidents_and_restarts_after_a_stable_connection() -> None:
    from kafkacore.client.health import NodeHealthTable

    table = NodeHealthTable(
        ExponentialBackoff(50, 1000, jitter=0.0), rng=random.Random(0), stable_s=1.0
    )
    error = ConnectionError("refused")
    assert table.failed(1, error, now=0.0, ready_since=None) == (1, 50.0)
    # Another lane failing while the node backs off: the same incident.
    assert table.failed(1, error, now=0.01, ready_since=None) is None
    assert table.failed(1, error, now=0.06, ready_since=None) == (2, 100.0)
    table.connected(1)
    assert table.last_error(1) is None
    # READY for 0.5 s (< stable_s) then broken: the count goes on.
    assert table.failed(1, error, now=1.0, ready_since=0.5) == (3, 200.0)
    # READY for 2 s then lost: a fresh start.
    assert table.failed(1, error, now=5.0, ready_since=3.0) == (1, 50.0)
    assert table.latest_error() is error and table.blackout_until(2) == float("-inf")
    table.forget([1])
    assert table.get(1) is None

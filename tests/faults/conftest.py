"""Fixtures of the fault tests: a misbehaving broker per test, no thread left behind."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from tests.faults.drive import FLAVORS
from tests.faults.wirebroker import WireBroker

#: Threads a transport may still be ending when a test returns get this long.
_THREAD_GRACE_S = 5.0


@pytest.fixture(params=FLAVORS)
def flavor(request: pytest.FixtureRequest) -> str:
    """Each test runs on the selector, asyncio and trio transports."""
    return str(request.param)


@pytest.fixture
def dead_address() -> str:
    """``host:port`` where nothing listens (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def broker() -> Iterator[WireBroker]:
    with WireBroker() as b:
        yield b


@pytest.fixture(autouse=True)
def no_thread_left_behind() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    end = time.monotonic() + _THREAD_GRACE_S
    while True:
        extra = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if not extra or time.monotonic() > end:
            break
        time.sleep(0.05)
    assert not extra, f"threads left behind: {[t.name for t in extra]}"

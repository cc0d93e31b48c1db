"""kafkacore.testing.proxy.FaultProxy: each fault on its own, against a loopback upstream.

The upstream is a tiny threaded server that records what each connection
sent it and, on request, sends a payload first (to test the broker-to-client
direction). Plans are drawn from the proxy's seed; the tests draw the same
plans from the same seed to know what to expect.
"""

from __future__ import annotations

import contextlib
import random
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from kafkacore.testing.proxy import (
    ConnectionPlan,
    FaultMix,
    FaultProxy,
    PlanKind,
    draw_plan,
    wait_idle,
)

PAYLOAD = bytes(range(256)) * 256  # 64 KiB


class Upstream:
    """Echo server; with ``greeting`` it first sends that to every client."""

    def __init__(self, greeting: bytes = b"", echo: bool = True) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.greeting = greeting
        self.echo = echo
        self.received: list[bytearray] = []
        self.ended = threading.Event()
        self.threads: list[threading.Thread] = []
        self.acceptor = threading.Thread(target=self._accept, daemon=True)
        self.acceptor.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            buf = bytearray()
            self.received.append(buf)
            t = threading.Thread(target=self._serve, args=(conn, buf), daemon=True)
            t.start()
            self.threads.append(t)

    def _serve(self, conn: socket.socket, buf: bytearray) -> None:
        try:
            if self.greeting:
                conn.sendall(self.greeting)
            while data := conn.recv(65536):
                buf += data
                if self.echo:
                    conn.sendall(data)
        except OSError:
            pass
        finally:
            conn.close()
            self.ended.set()

    def close(self) -> None:
        self.sock.close()
        for t in self.threads:
            t.join(5)


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    u = Upstream()
    yield u
    u.close()


def _recv_all(sock: socket.socket, want: int, timeout: float = 10.0) -> bytes:
    sock.settimeout(timeout)
    out = bytearray()
    try:
        while len(out) < want:
            data = sock.recv(65536)
            if not data:
                break
            out += data
    except (ConnectionResetError, TimeoutError):
        pass
    return bytes(out)


def _plan(mix: FaultMix, seed: int) -> ConnectionPlan:
    return draw_plan(mix, random.Random(seed))


def test_pass_through_round_trip(upstream: Upstream) -> None:
    with FaultProxy(("127.0.0.1", upstream.port)) as proxy:
        with socket.create_connection((proxy.host, proxy.port)) as c:
            c.sendall(PAYLOAD * 4)
            assert _recv_all(c, len(PAYLOAD) * 4) == PAYLOAD * 4
        assert wait_idle(proxy)
        assert proxy.stats.bytes_up == proxy.stats.bytes_down == len(PAYLOAD) * 4
        assert proxy.log == [(1, "pass")]


def _seed_for(mix: FaultMix, direction: str, *, min_offset: int = 1) -> int:
    """A seed whose first plan goes in ``direction`` (plans are pure functions of seeds)."""
    for seed in range(1000):
        plan = _plan(mix, seed)
        if plan.direction == direction and plan.offset >= min_offset:
            return seed
    raise AssertionError("no seed found")


def test_cut_client_to_broker_forwards_exactly_the_offset(upstream: Upstream) -> None:
    mix = FaultMix(cut=1.0, max_offset=20_000)
    seed = _seed_for(mix, "up")
    plan = _plan(mix, seed)
    upstream.echo = False
    with FaultProxy(("127.0.0.1", upstream.port), mix=mix, seed=seed) as proxy:
        with socket.create_connection((proxy.host, proxy.port)) as c:
            with contextlib.suppress(OSError):  # the cut may land while we still write
                c.sendall(PAYLOAD)
            assert _recv_all(c, 1) == b""  # closed (or reset) by the proxy
        assert upstream.ended.wait(5)
        assert bytes(upstream.received[0]) == PAYLOAD[: plan.offset]
        assert proxy.stats.injected == {"cut_up": 1}
        assert proxy.log == [(1, plan.describe())]


def test_cut_broker_to_client_forwards_exactly_the_offset() -> None:
    mix = FaultMix(cut=1.0, max_offset=20_000)
    seed = _seed_for(mix, "down")
    plan = _plan(mix, seed)
    up = Upstream(greeting=PAYLOAD, echo=False)
    try:
        with FaultProxy(("127.0.0.1", up.port), mix=mix, seed=seed) as proxy:
            with socket.create_connection((proxy.host, proxy.port)) as c:
                got = _recv_all(c, len(PAYLOAD))
            assert got == PAYLOAD[: plan.offset]
            assert proxy.stats.injected == {"cut_down": 1}
    finally:
        up.close()


def test_delay_slows_every_chunk(upstream: Upstream) -> None:
    mix = FaultMix(delay=1.0, delay_s=(0.2, 0.2))
    with FaultProxy(("127.0.0.1", upstream.port), mix=mix) as proxy:
        with socket.create_connection((proxy.host, proxy.port)) as c:
            start = time.monotonic()
            c.sendall(b"ping")
            assert _recv_all(c, 4) == b"ping"
            took = time.monotonic() - start
        assert took >= 0.4  # 0.2 s up, 0.2 s down
        assert proxy.stats.injected == {"delay": 1}


def test_stall_holds_a_direction_then_resumes(upstream: Upstream) -> None:
    mix = FaultMix(stall=1.0, max_offset=0, stall_s=(0.5, 0.5))
    seed = _seed_for(mix, "up", min_offset=0)
    with FaultProxy(("127.0.0.1", upstream.port), mix=mix, seed=seed) as proxy:
        with socket.create_connection((proxy.host, proxy.port)) as c:
            start = time.monotonic()
            c.sendall(b"hello")
            assert _recv_all(c, 5) == b"hello"
            assert time.monotonic() - start >= 0.5
        assert proxy.stats.injected == {"stall": 1}


def test_drop_closes_at_once(upstream: Upstream) -> None:
    with FaultProxy(("127.0.0.1", upstream.port), mix=FaultMix(drop=1.0)) as proxy:
        with socket.create_connection((proxy.host, proxy.port)) as c:
            assert _recv_all(c, 1, timeout=5) == b""
        assert proxy.stats.injected == {"drop": 1}
    assert upstream.received == []  # never connected upstream


def test_same_seed_same_plans(upstream: Upstream) -> None:
    mix = FaultMix(cut=0.3, delay=0.2, stall=0.1, drop=0.1, stall_s=(0.01, 0.02))
    logs = []
    for _ in range(2):
        with FaultProxy(("127.0.0.1", upstream.port), mix=mix, seed=42) as proxy:
            for _ in range(20):
                with socket.create_connection((proxy.host, proxy.port)) as c:
                    c.close()
            deadline = time.monotonic() + 5
            while proxy.stats.connections < 20 and time.monotonic() < deadline:
                time.sleep(0.01)
            logs.append(list(proxy.log))
    assert logs[0] == logs[1]
    assert len({desc.split()[0] for _, desc in logs[0]}) >= 3  # a real mix


def test_hold_release_and_cut_all(upstream: Upstream) -> None:
    with FaultProxy(("127.0.0.1", upstream.port)) as proxy:
        with socket.create_connection((proxy.host, proxy.port)) as c:
            c.sendall(b"a")
            assert _recv_all(c, 1) == b"a"
            proxy.hold()
            c.sendall(b"b")
            assert _recv_all(c, 1, timeout=0.5) == b""  # nothing comes back while held
            proxy.release()
            assert _recv_all(c, 1) == b"b"
            assert proxy.cut_all() == 1
            assert _recv_all(c, 1) == b""
        assert wait_idle(proxy)


def test_unreachable_upstream_closes_the_client() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    with FaultProxy(("127.0.0.1", dead)) as proxy:
        with socket.create_connection((proxy.host, proxy.port)) as c:
            assert _recv_all(c, 1) == b""
        deadline = time.monotonic() + 5
        while proxy.stats.upstream_failures < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proxy.stats.upstream_failures == 1


def test_close_leaves_no_thread(upstream: Upstream) -> None:
    before = set(threading.enumerate())
    proxy = FaultProxy(("127.0.0.1", upstream.port), mix=FaultMix(stall=1.0, stall_s=(30, 30)))
    proxy.start()
    socks = [socket.create_connection((proxy.host, proxy.port)) for _ in range(5)]
    for s in socks:
        s.sendall(PAYLOAD)  # every connection stalls with a thread blocked
    start = time.monotonic()
    proxy.close()
    assert time.monotonic() - start < 5
    for s in socks:
        s.close()
    left = [t for t in threading.enumerate() if t not in before and t.name.startswith("faultproxy")]
    assert not left


@pytest.mark.parametrize(
    "bad",
    [dict(cut=0.6, delay=0.6), dict(cut=-0.1), dict(max_offset=-1)],
)
def test_mix_is_validated(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="FaultMix"):
        FaultMix(**bad)  # type: ignore[arg-type]


def test_plan_kinds_follow_the_mix() -> None:
    rng = random.Random(7)
    mix = FaultMix(cut=0.5, drop=0.5)
    kinds = {draw_plan(mix, rng).kind for _ in range(200)}
    assert kinds == {PlanKind.CUT, PlanKind.DROP}
    assert {draw_plan(FaultMix(), rng).kind for _ in range(50)} == {PlanKind.PASS}

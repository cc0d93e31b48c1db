"""A fault-injecting TCP proxy between Kafka clients and a real broker.

Theory of operation
-------------------
:class:`FaultProxy` listens on 127.0.0.1 and forwards every accepted
connection to one upstream ``host:port`` (a broker's listener). When a
connection is accepted it draws a :class:`ConnectionPlan` from a
``random.Random`` seeded by the caller, following a :class:`FaultMix` of
probabilities:

* ``cut``: after a random number of bytes in one direction (client to
  broker, ``up``, or broker to client, ``down``) the proxy forwards exactly
  that many bytes, then closes both sides, half the time with a TCP reset;
* ``delay``: every chunk in both directions waits a random latency;
* ``stall``: after a random number of bytes in one direction, forwarding in
  that direction stops for a while, then resumes;
* ``drop``: the connection is closed right after it is accepted.

Plans are drawn in accept order from the seed, so a failing run names its
seed and the plan of every connection (:attr:`FaultProxy.log`). Timing on a
real network is not replayable; the plan sequence is.

Each connection uses two threads (one per direction) with blocking sockets:
simple, and each buffers at most one chunk (``CHUNK`` bytes), so memory is
bounded by the number of connections. :meth:`FaultProxy.close` shuts every
socket down and joins every thread (bounded). :meth:`FaultProxy.set_mix`
changes the mix for connections accepted later (``FaultMix()`` is a clean
pass-through); :meth:`cut_all` cuts every open connection at once (a network
blip) and :meth:`hold`/:meth:`release` stop and resume all traffic (a
partition that heals).
"""

from __future__ import annotations

import contextlib
import enum
import random
import socket
import struct
import threading
import time
from dataclasses import dataclass, field

__all__ = [
    "CHUNK",
    "ConnectionPlan",
    "FaultMix",
    "FaultProxy",
    "PlanKind",
    "ProxyStats",
    "draw_plan",
    "wait_idle",
]

#: Bytes read per recv; each direction of each connection buffers at most this.
CHUNK = 64 * 1024
_JOIN_S = 5.0
_CONNECT_S = 5.0


class PlanKind(enum.Enum):
    PASS = "pass"
    CUT = "cut"
    DELAY = "delay"
    STALL = "stall"
    DROP = "drop"


@dataclass(frozen=True, slots=True, kw_only=True)
class FaultMix:
    """Per-connection probabilities of each fault (the rest pass through)."""

    cut: float = 0.0
    delay: float = 0.0
    stall: float = 0.0
    drop: float = 0.0
    #: A cut or stall happens after 0..max_offset bytes in its direction.
    max_offset: int = 32 * 1024
    delay_s: tuple[float, float] = (0.002, 0.1)
    stall_s: tuple[float, float] = (0.5, 3.0)

    def __post_init__(self) -> None:
        total = self.cut + self.delay + self.stall + self.drop
        if min(self.cut, self.delay, self.stall, self.drop) < 0 or total > 1:
            raise ValueError(f"FaultMix: probabilities must be >= 0 and sum to <= 1, got {self}")
        if self.max_offset < 0:
            raise ValueError(f"FaultMix: max_offset must be >= 0, got {self.max_offset}")


@dataclass(frozen=True, slots=True)
class ConnectionPlan:
    kind: PlanKind
    direction: str = "up"  # "up": client to broker; "down": broker to client
    offset: int = 0  # bytes forwarded in ``direction`` before the cut or stall
    seconds: float = 0.0  # delay per chunk, or stall length
    reset: bool = False  # a cut ends with a TCP reset instead of a close

    def describe(self) -> str:
        if self.kind is PlanKind.CUT:
            how = "reset" if self.reset else "close"
            return f"cut {self.direction} after {self.offset} B ({how})"
        if self.kind is PlanKind.STALL:
            return f"stall {self.direction} after {self.offset} B for {self.seconds:.2f} s"
        if self.kind is PlanKind.DELAY:
            return f"delay {self.seconds * 1000:.0f} ms per chunk"
        return str(self.kind.value)


def draw_plan(mix: FaultMix, rng: random.Random) -> ConnectionPlan:
    """One connection's plan; always draws the same number of values."""
    roll, direction, offset, reset, u = (
        rng.random(),
        rng.choice(("up", "down")),
        rng.randint(0, mix.max_offset),
        rng.random() < 0.5,
        rng.random(),
    )
    edges = [
        (mix.cut, PlanKind.CUT),
        (mix.delay, PlanKind.DELAY),
        (mix.stall, PlanKind.STALL),
        (mix.drop, PlanKind.DROP),
    ]
    kind = PlanKind.PASS
    acc = 0.0
    for p, candidate in edges:
        acc += p
        if roll < acc:
            kind = candidate
            break
    if kind is PlanKind.PASS:
        return ConnectionPlan(PlanKind.PASS)
    if kind is PlanKind.CUT:
        return ConnectionPlan(kind, direction, offset, reset=reset)
    if kind is PlanKind.DELAY:
        lo, hi = mix.delay_s
        return ConnectionPlan(kind, seconds=lo + (hi - lo) * u)
    if kind is PlanKind.STALL:
        lo, hi = mix.stall_s
        return ConnectionPlan(kind, direction, offset, seconds=lo + (hi - lo) * u)
    return ConnectionPlan(kind)


@dataclass(slots=True)
class ProxyStats:
    connections: int = 0
    upstream_failures: int = 0
    bytes_up: int = 0
    bytes_down: int = 0
    #: Faults that really happened (a cut planned after more bytes than the
    #: connection ever carried did not), by kind.
    injected: dict[str, int] = field(default_factory=dict)

    def count(self, kind: str) -> None:
        self.injected[kind] = self.injected.get(kind, 0) + 1


class _Conn:
    """One proxied connection: client socket, upstream socket, plan."""

    def __init__(self, number: int, client: socket.socket, plan: ConnectionPlan) -> None:
        self.number = number
        self.client = client
        self.upstream: socket.socket | None = None
        self.plan = plan
        self.closed = threading.Event()
        self.lock = threading.Lock()

    def close(self, *, reset: bool = False) -> None:
        with self.lock:
            if self.closed.is_set():
                return
            self.closed.set()
        for s in (self.client, self.upstream):
            if s is None:
                continue
            # shutdown() wakes the other direction's thread blocked in recv();
            # with SO_LINGER 0, SHUT_RD sends nothing and close() sends the reset.
            with contextlib.suppress(OSError):
                if reset:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    s.shutdown(socket.SHUT_RD)
                else:
                    s.shutdown(socket.SHUT_RDWR)
            s.close()


class FaultProxy:
    """See the module docstring."""

    def __init__(
        self,
        upstream: tuple[str, int] | None = None,
        *,
        mix: FaultMix | None = None,
        seed: int = 0,
        name: str = "proxy",
        port: int = 0,
    ) -> None:
        self.name = name
        self.upstream = upstream
        self._mix = mix or FaultMix()
        self._rng = random.Random(seed)
        self.seed = seed
        self._sock = socket.create_server(("127.0.0.1", port))
        self._sock.settimeout(0.2)
        self.host = "127.0.0.1"
        self.port: int = self._sock.getsockname()[1]
        self.stats = ProxyStats()
        #: (connection number, plan description), in accept order.
        self.log: list[tuple[int, str]] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._released = threading.Event()
        self._released.set()
        self._conns: dict[int, _Conn] = {}
        self._threads: list[threading.Thread] = []
        self._acceptor: threading.Thread | None = None

    def __repr__(self) -> str:
        up = "unset" if self.upstream is None else "{}:{}".format(*self.upstream)
        return f"<FaultProxy {self.name} {self.host}:{self.port} -> {up}>"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    # -- control -----------------------------------------------------------

    def start(self) -> FaultProxy:
        if self._acceptor is not None:
            return self
        if self.upstream is None:
            raise RuntimeError(f"{self!r}: set upstream before start()")
        self._acceptor = threading.Thread(
            target=self._accept, name=f"faultproxy-{self.name}", daemon=True
        )
        self._acceptor.start()
        return self

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def set_mix(self, mix: FaultMix, *, seed: int | None = None) -> None:
        """Use ``mix`` (and a new seed) for connections accepted from now on."""
        with self._lock:
            self._mix = mix
            if seed is not None:
                self.seed = seed
                self._rng = random.Random(seed)

    @property
    def mix(self) -> FaultMix:
        return self._mix

    def open_connections(self) -> int:
        with self._lock:
            return sum(1 for c in self._conns.values() if not c.closed.is_set())

    def cut_all(self, *, reset: bool = False) -> int:
        """Close every open connection now; returns how many."""
        with self._lock:
            conns = [c for c in self._conns.values() if not c.closed.is_set()]
        for c in conns:
            c.close(reset=reset)
        with self._lock:
            for _ in conns:
                self.stats.count("cut_all")
        return len(conns)

    def hold(self) -> None:
        """Stop forwarding in both directions (connections stay open)."""
        self._released.clear()

    def release(self) -> None:
        self._released.set()

    @property
    def held(self) -> bool:
        return not self._released.is_set()

    def close(self) -> None:
        self._closing.set()
        self._released.set()
        self._sock.close()
        if self._acceptor is not None:
            self._acceptor.join(_JOIN_S)
        # No new connection now; each one's threads end once its sockets are shut.
        with self._lock:
            conns = list(self._conns.values())
        for c in conns:
            c.close()
        end = time.monotonic() + _JOIN_S
        while True:
            with self._lock:
                threads = [t for t in self._threads if t.is_alive()]
            if not threads or time.monotonic() > end:
                break
            threads[0].join(max(end - time.monotonic(), 0.0))
        alive = [t.name for t in threads]
        if self._acceptor is not None and self._acceptor.is_alive():
            alive.append(self._acceptor.name)
        if alive:
            raise RuntimeError(f"{self!r}: threads did not end: {alive}")

    # -- forwarding --------------------------------------------------------

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self.stats.connections += 1
                number = self.stats.connections
                plan = draw_plan(self._mix, self._rng)
                self.log.append((number, plan.describe()))
                conn = _Conn(number, client, plan)
                self._conns[number] = conn
                # Forget finished connections so the table stays bounded.
                for n in [n for n, c in self._conns.items() if c.closed.is_set()]:
                    del self._conns[n]
                self._threads = [t for t in self._threads if t.is_alive()]
            if plan.kind is PlanKind.DELAY:
                with self._lock:
                    self.stats.count("delay")
            if plan.kind is PlanKind.DROP:
                with self._lock:
                    self.stats.count("drop")
                conn.close()
                continue
            t = threading.Thread(
                target=self._run_up, args=(conn,), name=f"faultproxy-{self.name}-{number}-up"
            )
            t.start()
            with self._lock:
                self._threads.append(t)

    def _run_up(self, conn: _Conn) -> None:
        assert self.upstream is not None
        try:
            upstream = socket.create_connection(self.upstream, timeout=_CONNECT_S)
        except OSError:
            with self._lock:
                self.stats.upstream_failures += 1
            conn.close()
            return
        upstream.settimeout(None)
        upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn.lock:
            if conn.closed.is_set():
                upstream.close()
                return
            conn.upstream = upstream
        down = threading.Thread(
            target=self._pipe,
            args=(conn, upstream, conn.client, "down"),
            name=f"faultproxy-{self.name}-{conn.number}-down",
        )
        down.start()
        with self._lock:
            self._threads.append(down)
        self._pipe(conn, conn.client, upstream, "up")

    def _pipe(self, conn: _Conn, src: socket.socket, dst: socket.socket, direction: str) -> None:
        plan = conn.plan
        mine = plan.direction == direction
        cut_at = plan.offset if plan.kind is PlanKind.CUT and mine else None
        stall_at = plan.offset if plan.kind is PlanKind.STALL and mine else None
        delay = plan.seconds if plan.kind is PlanKind.DELAY else 0.0
        forwarded = 0
        try:
            while not conn.closed.is_set():
                if cut_at is not None and forwarded >= cut_at:
                    self._cut(conn, plan)
                    return
                data = src.recv(CHUNK)
                if not data:
                    break
                if cut_at is not None and forwarded + len(data) > cut_at:
                    data = data[: cut_at - forwarded]
                if stall_at is not None and forwarded + len(data) > stall_at:
                    head = stall_at - forwarded
                    self._send(conn, dst, data[:head], direction, delay)
                    forwarded += head
                    data = data[head:]
                    with self._lock:
                        self.stats.count("stall")
                    conn.closed.wait(plan.seconds)
                    stall_at = None
                self._send(conn, dst, data, direction, delay)
                forwarded += len(data)
        except OSError:
            pass
        conn.close()

    def _send(
        self, conn: _Conn, dst: socket.socket, data: bytes, direction: str, delay: float
    ) -> None:
        if not data:
            return
        while not self._released.wait(0.2):
            if conn.closed.is_set():
                return
        if delay:
            conn.closed.wait(delay)
            if conn.closed.is_set():
                return
        dst.sendall(data)
        with self._lock:
            if direction == "up":
                self.stats.bytes_up += len(data)
            else:
                self.stats.bytes_down += len(data)

    def _cut(self, conn: _Conn, plan: ConnectionPlan) -> None:
        with self._lock:
            self.stats.count(f"cut_{plan.direction}")
        conn.close(reset=plan.reset)


def wait_idle(proxy: FaultProxy, timeout: float = 5.0) -> bool:
    """True once no connection is open (e.g. after clients closed)."""
    end = time.monotonic() + timeout
    while proxy.open_connections():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True

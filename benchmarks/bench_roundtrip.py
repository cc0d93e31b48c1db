"""Request round trips per second: kafkacore's three transports beside kafka-python and aiokafka.

Every client sends the same request (Metadata for no topics: the smallest
request every client can build) to the same broker, in two shapes:

- ``single``: one request outstanding at a time (latency bound);
- ``pipelined``: a window of ``--window`` requests outstanding on one
  connection, a new one sent as soon as one completes (throughput bound).
  Every client gets ``max_in_flight_requests_per_connection = window``.

Reported: requests per second (wall clock; on shared cores this includes the
broker's scheduling) and the client process's CPU time per request
(``time.process_time``, all threads; the steadier measure of client cost).
The broker is warmed up first; then every (client, shape) runs once per
round for ``--repeat`` rounds, interleaved, and the best rate is kept. The
broker is started with ``localkafka`` (benchmark profile) unless
``--bootstrap`` names a running one.

    .venv/bin/python benchmarks/bench_roundtrip.py [--requests 5000] [--window 16]

Versions differ by client: kafkacore negotiates the newest Metadata version
(flexible, v12+), kafka-python 3 also negotiates, aiokafka builds at most v5.
The responses are all a few hundred bytes, so the broker's cost is similar.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import concurrent.futures
import contextlib
import datetime
import platform
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

# (bootstrap, requests, window) -> (wall seconds, client-process CPU seconds)
Runner = Callable[[str, int, int], tuple[float, float]]


def _now() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> tuple[float, float]:
    return time.perf_counter() - start[0], time.process_time() - start[1]


# --------------------------------------------------------------------- kafkacore
def _kc_request() -> Any:
    from kafkacore.protocol.messages import MetadataRequest

    return MetadataRequest(topics=[], allow_auto_topic_creation=False)


def run_selector(bootstrap: str, n: int, window: int) -> tuple[float, float]:
    from kafkacore.client import Node
    from transports.selector import KafkaClient

    with KafkaClient(bootstrap, max_in_flight_requests_per_connection=window) as client:
        node = Node(min(client.cluster()))
        client.send(_kc_request(), target=node)  # connection up before the clock starts
        outstanding: collections.deque[concurrent.futures.Future[Any]] = collections.deque()
        sent = 0
        start = _now()
        while sent < n or outstanding:
            while sent < n and len(outstanding) < window:
                outstanding.append(client.submit(_kc_request(), target=node))
                sent += 1
            outstanding.popleft().result()
        return _since(start)


async def _async_workers(send: Callable[[], Any], n: int, window: int) -> tuple[float, float]:
    per, extra = divmod(n, window)

    async def worker(count: int) -> None:
        for _ in range(count):
            await send()

    start = _now()
    await asyncio.gather(*(worker(per + (1 if i < extra else 0)) for i in range(window)))
    return _since(start)


def run_asyncio(bootstrap: str, n: int, window: int) -> tuple[float, float]:
    from kafkacore.client import Node
    from transports.asyncio import AsyncKafkaClient

    async def main() -> tuple[float, float]:
        async with AsyncKafkaClient(
            bootstrap, max_in_flight_requests_per_connection=window
        ) as client:
            node = Node(min(client.cluster()))
            await client.send(_kc_request(), target=node)
            return await _async_workers(lambda: client.send(_kc_request(), target=node), n, window)

    return asyncio.run(main())


def run_trio(bootstrap: str, n: int, window: int) -> tuple[float, float]:
    import trio

    from kafkacore.client import Node
    from transports.trio import TrioKafkaClient

    async def main() -> tuple[float, float]:
        async with TrioKafkaClient(
            bootstrap, max_in_flight_requests_per_connection=window
        ) as client:
            node = Node(min(client.cluster()))
            await client.send(_kc_request(), target=node)
            per, extra = divmod(n, window)

            async def worker(count: int) -> None:
                for _ in range(count):
                    await client.send(_kc_request(), target=node)

            start = _now()
            async with trio.open_nursery() as nursery:
                for i in range(window):
                    nursery.start_soon(worker, per + (1 if i < extra else 0))
            return _since(start)

    return trio.run(main)


# ---------------------------------------------------------------------- peers
def run_kafka_python(bootstrap: str, n: int, window: int) -> tuple[float, float]:
    from kafka.net.compat import KafkaNetClient
    from kafka.protocol.metadata import MetadataRequest

    client = KafkaNetClient(
        bootstrap_servers=bootstrap, max_in_flight_requests_per_connection=window
    )
    try:
        client.check_version()
        node = min(b.node_id for b in client.cluster.brokers())
        client.await_ready(node)
        warm = client.send(node, MetadataRequest(topics=[]))
        client.poll(future=warm)
        outstanding: collections.deque[Any] = collections.deque()
        sent = 0
        start = _now()
        while sent < n or outstanding:
            while sent < n and len(outstanding) < window:
                outstanding.append(client.send(node, MetadataRequest(topics=[])))
                sent += 1
            head = outstanding[0]
            while not head.is_done:
                client.poll(future=head)
            outstanding.popleft()
            if not head.succeeded():
                raise RuntimeError(f"kafka-python request failed: {head.exception!r}")
        return _since(start)
    finally:
        client.close()


def run_aiokafka(bootstrap: str, n: int, window: int) -> tuple[float, float]:
    from aiokafka.client import AIOKafkaClient
    from aiokafka.protocol.metadata import MetadataRequest

    async def main() -> tuple[float, float]:
        client = AIOKafkaClient(bootstrap_servers=bootstrap)
        await client.bootstrap()
        try:
            node = min(b.nodeId for b in client.cluster.brokers())
            await client.send(node, MetadataRequest([]))
            return await _async_workers(lambda: client.send(node, MetadataRequest([])), n, window)
        finally:
            await client.close()

    return asyncio.run(main())


CLIENTS: dict[str, Runner] = {
    "kafkacore selector": run_selector,
    "kafkacore asyncio": run_asyncio,
    "kafkacore trio": run_trio,
    "kafka-python": run_kafka_python,
    "aiokafka": run_aiokafka,
}
PEERS = ("kafka-python", "aiokafka")


@contextlib.contextmanager
def broker(bootstrap: str | None) -> Iterator[str]:
    if bootstrap:
        yield bootstrap
        return
    from localkafka.cluster import LocalKafka
    from localkafka.config import Profile

    with LocalKafka(size=1, profile=Profile.BENCHMARK) as kafka:
        yield kafka.bootstrap


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bootstrap", help="a running broker (default: start one)")
    parser.add_argument("--requests", type=int, default=5000, help="requests per run")
    parser.add_argument("--window", type=int, default=16, help="pipelined depth")
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell (best kept)")
    parser.add_argument("--only", action="append", help="client name(s) to run")
    args = parser.parse_args(argv)
    names = [c for c in CLIENTS if not args.only or c in args.only]
    shapes = {"single": 1, "pipelined": args.window}
    rates: dict[tuple[str, str], float] = {}
    cpu_us: dict[tuple[str, str], float] = {}
    with broker(args.bootstrap) as bootstrap:
        # Warm the broker's JIT first, then interleave clients round by round,
        # so no client is measured only on a cold (or only on a hot) broker.
        run_aiokafka(bootstrap, args.requests, args.window)
        run_kafka_python(bootstrap, args.requests, args.window)
        for name in names:
            for window in shapes.values():
                CLIENTS[name](bootstrap, max(50, args.requests // 10), window)
        for _ in range(args.repeat):
            for name in names:
                for shape, window in shapes.items():
                    wall, cpu = CLIENTS[name](bootstrap, args.requests, window)
                    key = (name, shape)
                    rates[key] = max(rates.get(key, 0.0), args.requests / wall)
                    us = cpu / args.requests * 1e6
                    cpu_us[key] = min(cpu_us.get(key, us), us)
        for (name, shape), rate in rates.items():
            print(
                f"{name:20s} {shape:9s} {rate:10.0f} req/s {cpu_us[name, shape]:8.1f} us CPU/req",
                file=sys.stderr,
            )
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(
        f"\n{stamp}; Python {platform.python_version()}; {args.requests} requests per run, "
        f"window {args.window}, best of {args.repeat}\n"
    )
    peers = [p for p in PEERS if p in names]
    head = "| client | shape | req/s | client CPU us/req |" + "".join(
        f" req/s vs {p} | CPU vs {p} |" for p in peers
    )
    print(head)
    print("|" + "---|" * (4 + 2 * len(peers)))
    for name in names:
        for shape in shapes:
            key = (name, shape)
            ratios = "".join(
                f" {rates[key] / rates[p, shape]:.2f}x | {cpu_us[key] / cpu_us[p, shape]:.2f}x |"
                for p in peers
            )
            print(f"| {name} | {shape} | {rates[key]:,.0f} | {cpu_us[key]:.0f} |{ratios}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

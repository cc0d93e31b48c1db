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
round for ``--repeat`` rounds, interleaved, and the best rate is kept. Each
run is a fresh process (``_harness.isolated``), which also gives each
client's peak RSS (the largest over its runs). The broker is started with
``localkafka`` (benchmark profile) unless ``--bootstrap`` names a running one.

    .venv/bin/python benchmarks/bench_roundtrip.py [--requests 5000] [--window 16]
        [--quick] [--pure] [--json OUT.json]

``--pure`` adds a run of each kafkacore client with ``KAFKACORE_PURE=1``
(labelled "(pure)"); ``--json`` writes the rows for ``run_all.py``.

Versions differ by client: kafkacore negotiates the newest Metadata version
(flexible, v12+), kafka-python 3 also negotiates, aiokafka builds at most v5.
The responses are all a few hundred bytes, so the broker's cost is similar.

kafkacore's modules are byte-compiled before the contenders run
(``byte_compile_kafkacore``), as an installed package's are.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import datetime
import platform
import sys
import time
from collections.abc import Callable
from typing import Any

from _harness import (
    Row,
    broker,
    byte_compile_kafkacore,
    isolated,
    render_table,
    variants,
    with_ratios,
    write_rows,
)

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
    from kafkacore.transports.selector import KafkaClient

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
    import asyncio

    per, extra = divmod(n, window)

    async def worker(count: int) -> None:
        for _ in range(count):
            await send()

    start = _now()
    await asyncio.gather(*(worker(per + (1 if i < extra else 0)) for i in range(window)))
    return _since(start)


def run_asyncio(bootstrap: str, n: int, window: int) -> tuple[float, float]:
    import asyncio

    from kafkacore.client import Node
    from kafkacore.transports.asyncio import AsyncKafkaClient

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
    from kafkacore.transports.trio import TrioKafkaClient

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
    import asyncio

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
HARNESS = "roundtrip"


def shape_tables(window: int) -> dict[str, int]:
    """Table name -> requests outstanding; the window is in the name, so runs compare."""
    return {"Metadata, single": 1, f"Metadata, pipelined (window {window})": window}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bootstrap", help="a running broker (default: start one)")
    parser.add_argument("--requests", type=int, default=5000, help="requests per run")
    parser.add_argument("--window", type=int, default=16, help="pipelined depth")
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell (best kept)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 300 requests, 1 round")
    parser.add_argument("--only", action="append", help="client name(s) to run")
    parser.add_argument("--json", help="also write the rows (with peak RSS) to this JSON file")
    parser.add_argument(
        "--pure", action="store_true", help="also run each kafkacore client with KAFKACORE_PURE=1"
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run every client in this process (no fresh process per run: no peak RSS)",
    )
    args = parser.parse_args(argv)
    if args.pure and args.in_process:
        parser.error("--pure runs the pure twins in processes of their own: drop --in-process")
    if args.quick:
        args.requests, args.repeat = 300, 1
    chosen = {c: fn for c, fn in CLIENTS.items() if not args.only or c in args.only}
    runs = variants(chosen, args.pure)
    shapes = shape_tables(args.window)
    rates: dict[tuple[str, str], float] = {}
    cpu_us: dict[tuple[str, str], float] = {}
    rss: dict[tuple[str, str], float] = {}
    paths: dict[str, str | None] = {}
    began = time.monotonic()
    byte_compile_kafkacore()
    with broker(args.bootstrap) as bootstrap:
        # Warm the broker's JIT first (here: it is the broker that warms, not
        # the client), then interleave clients round by round, each run in a
        # fresh process, so no client is measured only on a cold (or only on
        # a hot) broker and each one's peak RSS is its own.
        warm = max(50, args.requests // 10)
        run_aiokafka(bootstrap, args.requests, args.window)
        run_kafka_python(bootstrap, args.requests, args.window)
        for fn in chosen.values():
            for window in shapes.values():
                fn(bootstrap, warm, window)
        for _ in range(args.repeat):
            for run in runs:
                for table, window in shapes.items():
                    got = isolated(
                        run.fn,
                        bootstrap,
                        args.requests,
                        window,
                        env=run.env,
                        enabled=not args.in_process,
                    )
                    wall, cpu = got.result
                    key = (run.label, table)
                    rates[key] = max(rates.get(key, 0.0), args.requests / wall)
                    us = cpu / args.requests * 1e6
                    cpu_us[key] = min(cpu_us.get(key, us), us)
                    if got.rss_mib is not None:
                        rss[key] = max(rss.get(key, 0.0), got.rss_mib)
                    paths[run.label] = got.path
                    print(
                        f"{run.label:28s} {table:34s} {args.requests / wall:10.0f} req/s "
                        f"{us:8.1f} us CPU/req  RSS {got.rss_mib or 0:6.1f} MiB",
                        file=sys.stderr,
                    )
    rows = with_ratios(
        [
            Row(
                harness=HARNESS,
                table=table,
                contender=run.label,
                rate=rates[run.label, table],
                unit="requests/s",
                rss_mib=rss.get((run.label, table)),
                path=paths[run.label],
                extra={"cpu_us_per_request": cpu_us[run.label, table]},
            )
            for table in shapes
            for run in runs
        ]
    )
    # CPU per request against each peer too: lower CPU is better, so peer / own.
    by_key = {r.key: r for r in rows}
    for r in rows:
        for peer in PEERS:
            other = by_key.get((HARNESS, r.table, peer))
            if other is not None and other is not r:
                own = r.extra["cpu_us_per_request"]
                r.extra[f"cpu_vs_{peer}"] = other.extra["cpu_us_per_request"] / own
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(
        f"\n{stamp}; Python {platform.python_version()}; {args.requests} requests per run, "
        f"window {args.window}, best of {args.repeat}; each run in a fresh process "
        f"(peak RSS: the largest of its runs); run took {time.monotonic() - began:.0f} s\n"
    )
    peers = [p for p in PEERS if p in chosen]
    extras = [("client CPU us/req", "cpu_us_per_request", ".0f")] + [
        (f"CPU vs {p}", f"cpu_vs_{p}", ".2fx") for p in peers
    ]
    for table in shapes:
        print(f"**{table}**\n")
        print(render_table([r for r in rows if r.table == table], extras=extras, peers=peers))
        print()
    if args.json:
        write_rows(
            args.json,
            rows,
            {
                "harness": HARNESS,
                "requests": args.requests,
                "window": args.window,
                "repeat": args.repeat,
                "isolated": not args.in_process,
            },
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

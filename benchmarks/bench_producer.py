"""Producer throughput and delivery latency: kafkacore beside its peers, one broker, one run.

Run: ``.venv/bin/python benchmarks/bench_producer.py [--quick] [--records N] [--bootstrap H:P]
[--pure] [--json OUT.json]``

Cases: 100-byte and 1 KiB values (no keys), acks=1 and acks=all, no
compression and lz4: eight cases, each on a fresh 3-partition topic.

Contenders (each with ``linger.ms=5`` and its other defaults):

* kafkacore on the selector, asyncio and trio transports: per-record
  ``send`` and the batch call ``send_many`` (idempotence on for acks=all,
  off for acks=1, as the Java default rules give);
* confluent-kafka (librdkafka), aiokafka, kafka-python;
* the Java ``org.apache.kafka.tools.ProducerPerformance`` as the ceiling (a
  fresh JVM per case, given 5x the records so its JIT warms up in the run).

Throughput is records (and MB of values) per second from the first send to
the last delivery confirmed. Latency is send-to-delivery-callback for every
100th record (per-record calls) or per ``send_many`` chunk of 10,000
records; p50/p99 in milliseconds. Each contender runs in a fresh process
(``_harness.isolated``) whose peak RSS is reported beside its rate (for
the Java tool, the JVM's). ``--pure`` adds a run of each kafkacore
contender with ``KAFKACORE_PURE=1``, labelled "(pure)". The machine has 2
shared cores, so the numbers are for ratios within one run, not absolute
claims.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import platform
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from _harness import (
    Row,
    broker,
    byte_compile_kafkacore,
    create_topics,
    isolated,
    percentile,
    render_table,
    variants,
    with_ratios,
    write_rows,
)

SAMPLE = 100  # latency of every 100th record
CHUNK = 10_000  # send_many chunk
JAVA_FACTOR = 5  # a fresh JVM needs longer runs to reach its steady state


@dataclass
class Case:
    size: int
    acks: str  # "1" or "all"
    compression: str  # "none" or "lz4"

    @property
    def name(self) -> str:
        size = "100B" if self.size == 100 else "1KiB"
        return f"{size} acks={self.acks} {self.compression}"


@dataclass
class Result:
    seconds: float
    latencies_ms: list[float]


Runner = Callable[[str, str, int, Case], Result]


def _kc_options(case: Case) -> dict[str, Any]:
    return {
        "acks": case.acks,
        "compression_type": case.compression,
        "linger_ms": 5,
        "buffer_memory": 64 * 1024 * 1024,
    }


def _stamp(lat: list[float], t0: float, _done: object) -> None:
    lat.append(time.perf_counter() - t0)


# -- kafkacore ------------------------------------------------------------------
def run_kc_selector(bootstrap: str, topic: str, n: int, case: Case) -> Result:
    from kafkacore.transports.selector import KafkaProducer

    value = b"x" * case.size
    lat: list[float] = []
    with KafkaProducer(bootstrap, **_kc_options(case)) as p:
        p.send(topic, value).result(30)
        start = time.perf_counter()
        send = p.send
        for i in range(n):
            fut = send(topic, value)
            if i % SAMPLE == 0:
                t0 = time.perf_counter()
                fut.add_done_callback(functools.partial(_stamp, lat, t0))
        p.flush()
        return Result(time.perf_counter() - start, [x * 1000 for x in lat])


def run_kc_selector_many(bootstrap: str, topic: str, n: int, case: Case) -> Result:
    from kafkacore.transports.selector import KafkaProducer

    value = b"x" * case.size
    lat: list[float] = []
    with KafkaProducer(bootstrap, **_kc_options(case)) as p:
        p.send(topic, value).result(30)
        start = time.perf_counter()
        futs = []
        for off in range(0, n, CHUNK):
            t0 = time.perf_counter()
            fut = p.send_many(topic, values=[value] * min(CHUNK, n - off))
            fut.add_done_callback(functools.partial(_stamp, lat, t0))
            futs.append(fut)
        for fut in futs:
            fut.result(120)
        return Result(time.perf_counter() - start, [x * 1000 for x in lat])


async def _kc_async(
    producer: Any, topic: str, n: int, case: Case, many: bool, trio_: bool
) -> Result:
    value = b"x" * case.size
    lat: list[float] = []
    await producer.send_and_wait(topic, value)
    start = time.perf_counter()
    if many:
        for off in range(0, n, CHUNK):
            t0 = time.perf_counter()
            await producer.send_many(topic, values=[value] * min(CHUNK, n - off))
            lat.append(time.perf_counter() - t0)
        return Result(time.perf_counter() - start, [x * 1000 for x in lat])
    send = producer.send
    if trio_:
        import trio

        async def waiter(d: Any, t0: float) -> None:
            await d
            lat.append(time.perf_counter() - t0)

        async with trio.open_nursery() as nursery:
            for i in range(n):
                d = await send(topic, value)
                if i % SAMPLE == 0:
                    nursery.start_soon(waiter, d, time.perf_counter())
            await producer.flush()
    else:
        for i in range(n):
            d = await send(topic, value)
            if i % SAMPLE == 0:
                t0 = time.perf_counter()
                d.add_done_callback(lambda f, t0=t0: lat.append(time.perf_counter() - t0))
        await producer.flush()
    end = time.perf_counter()
    return Result(end - start, [x * 1000 for x in lat])


def run_kc_asyncio(bootstrap: str, topic: str, n: int, case: Case, many: bool = False) -> Result:
    import asyncio

    from kafkacore.transports.asyncio import AsyncKafkaProducer

    async def main() -> Result:
        async with AsyncKafkaProducer(bootstrap, **_kc_options(case)) as p:
            return await _kc_async(p, topic, n, case, many, False)

    return asyncio.run(main())


def run_kc_trio(bootstrap: str, topic: str, n: int, case: Case, many: bool = False) -> Result:
    import trio

    from kafkacore.transports.trio import TrioKafkaProducer

    async def main() -> Result:
        async with TrioKafkaProducer(bootstrap, **_kc_options(case)) as p:
            return await _kc_async(p, topic, n, case, many, True)

    return trio.run(main)


# -- peers ----------------------------------------------------------------------
def run_confluent(bootstrap: str, topic: str, n: int, case: Case) -> Result:
    import confluent_kafka

    value = b"x" * case.size
    lat: list[float] = []
    p = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": case.acks,
            "compression.type": case.compression,
            "linger.ms": 5,
            "enable.idempotence": case.acks == "all",
        }
    )
    p.produce(topic, value)
    p.flush(30)
    start = time.perf_counter()
    produce = p.produce
    for i in range(n):
        cb = None
        if i % SAMPLE == 0:
            t0 = time.perf_counter()
            cb = functools.partial(_confluent_cb, lat, t0)
        while True:
            try:
                produce(topic, value, on_delivery=cb) if cb else produce(topic, value)
                break
            except BufferError:
                p.poll(0.01)
        if i % 1000 == 0:
            p.poll(0)
    p.flush(120)
    return Result(time.perf_counter() - start, [x * 1000 for x in lat])


def _confluent_cb(lat: list[float], t0: float, err: Any, msg: Any) -> None:
    lat.append(time.perf_counter() - t0)


def run_aiokafka(bootstrap: str, topic: str, n: int, case: Case) -> Result:
    import asyncio

    from aiokafka import AIOKafkaProducer  # type: ignore[import-untyped]

    async def main() -> Result:
        value = b"x" * case.size
        lat: list[float] = []
        p = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            acks="all" if case.acks == "all" else 1,
            compression_type=None if case.compression == "none" else case.compression,
            linger_ms=5,
            enable_idempotence=case.acks == "all",
        )
        await p.start()
        try:
            await p.send_and_wait(topic, value)
            start = time.perf_counter()
            for i in range(n):
                fut = await p.send(topic, value)
                if i % SAMPLE == 0:
                    t0 = time.perf_counter()
                    fut.add_done_callback(lambda f, t0=t0: lat.append(time.perf_counter() - t0))
            await p.flush()
            return Result(time.perf_counter() - start, [x * 1000 for x in lat])
        finally:
            await p.stop()

    return asyncio.run(main())


def run_kafka_python(bootstrap: str, topic: str, n: int, case: Case) -> Result:
    from kafka import KafkaProducer  # type: ignore[import-untyped]

    value = b"x" * case.size
    lat: list[float] = []
    p = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all" if case.acks == "all" else 1,
        compression_type=None if case.compression == "none" else case.compression,
        linger_ms=5,
        enable_idempotence=case.acks == "all",
    )
    try:
        p.send(topic, value).get(30)
        start = time.perf_counter()
        for i in range(n):
            fut = p.send(topic, value)
            if i % SAMPLE == 0:
                t0 = time.perf_counter()
                fut.add_callback(lambda md, t0=t0: lat.append(time.perf_counter() - t0))
        p.flush()
        return Result(time.perf_counter() - start, [x * 1000 for x in lat])
    finally:
        p.close()


_JAVA_LINE = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th"
)


def run_java(bootstrap: str, topic: str, n: int, case: Case) -> Result:
    """Java's own producer benchmark; 5x the records, so the JIT warms up within the run."""
    from kafkacore.testing.libs import ensure_libs

    n *= JAVA_FACTOR

    classpath = str(ensure_libs() / "*")
    proc = subprocess.run(
        [
            "java",
            "-Xmx1g",
            "-cp",
            classpath,
            "org.apache.kafka.tools.ProducerPerformance",
            "--topic",
            topic,
            "--num-records",
            str(n),
            "--record-size",
            str(case.size),
            "--throughput",
            "-1",
            "--producer-props",
            f"bootstrap.servers={bootstrap}",
            f"acks={case.acks}",
            f"compression.type={case.compression}",
            "linger.ms=5",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    matches = list(_JAVA_LINE.finditer(proc.stdout))
    if not matches:
        raise RuntimeError(f"ProducerPerformance output not understood:\n{proc.stdout[-2000:]}")
    match = matches[-1]
    rate = float(match.group(2))
    p50, p99 = float(match.group(6)), float(match.group(8))
    # Its latencies are per record; report them through the same fields.
    return Result(n / JAVA_FACTOR / rate, [p50] * 50 + [p99] * 49 + [p99])


CONTENDERS: dict[str, Runner] = {
    "kafkacore selector send": run_kc_selector,
    "kafkacore selector send_many": run_kc_selector_many,
    "kafkacore asyncio send": run_kc_asyncio,
    "kafkacore asyncio send_many": functools.partial(run_kc_asyncio, many=True),
    "kafkacore trio send": run_kc_trio,
    "kafkacore trio send_many": functools.partial(run_kc_trio, many=True),
    "confluent-kafka": run_confluent,
    "aiokafka": run_aiokafka,
    "kafka-python": run_kafka_python,
    "java ProducerPerformance": run_java,
}


HARNESS = "producer"
PEERS = ("kafka-python", "aiokafka", "confluent-kafka", "java ProducerPerformance")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bootstrap", help="a running broker (default: start one)")
    parser.add_argument("--records", type=int, default=200_000, help="records per case")
    parser.add_argument("--quick", action="store_true", help="smoke run: 5,000 records, 2 cases")
    parser.add_argument("--only", action="append", help="contender name(s) (substring)")
    parser.add_argument("--case", action="append", help="case name(s) (substring)")
    parser.add_argument("--json", help="also write the rows (with peak RSS) to this JSON file")
    parser.add_argument(
        "--pure", action="store_true", help="also run each kafkacore one with KAFKACORE_PURE=1"
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run every contender in this process (no fresh process each: no peak RSS)",
    )
    args = parser.parse_args(argv)
    if args.pure and args.in_process:
        parser.error("--pure runs the pure twins in processes of their own: drop --in-process")
    n = 5000 if args.quick else args.records
    cases = [
        Case(size, acks, comp)
        for size in (100, 1024)
        for acks in ("1", "all")
        for comp in ("none", "lz4")
    ]
    if args.quick:
        cases = [cases[0], cases[-1]]
    if args.case:
        cases = [c for c in cases if any(want in c.name for want in args.case)]
    chosen = {
        c: fn for c, fn in CONTENDERS.items() if not args.only or any(o in c for o in args.only)
    }
    runs = variants(chosen, args.pure)
    rows: list[Row] = []
    failures: list[str] = []
    began = time.monotonic()
    byte_compile_kafkacore()
    with broker(args.bootstrap) as bootstrap:
        topics = {c.name: f"bench-{uuid.uuid4().hex[:8]}" for c in cases}
        create_topics(bootstrap, list(topics.values()), partitions=3)
        for case in cases:
            # 1 KiB cases move ten times the bytes: fewer records keep the run short.
            count = n if case.size == 100 else max(n // 4, 1000)
            for run in runs:
                try:
                    got = isolated(
                        run.fn,
                        bootstrap,
                        topics[case.name],
                        count,
                        case,
                        env=run.env,
                        enabled=not args.in_process,
                    )
                except Exception as exc:  # a peer that cannot run is reported, not fatal
                    print(f"{case.name:24s} {run.label:30s} FAILED: {exc}", file=sys.stderr)
                    failures.append(f"{case.name} / {run.label}: {str(exc).splitlines()[0]}")
                    continue
                res = got.result
                rate = count / res.seconds
                row = Row(
                    harness=HARNESS,
                    table=case.name,
                    contender=run.label,
                    rate=rate,
                    unit="records/s",
                    rss_mib=got.rss_mib,
                    path=got.path,
                    extra={
                        "mb_per_s": rate * case.size / 1e6,
                        "p50_ms": percentile(res.latencies_ms, 50),
                        "p99_ms": percentile(res.latencies_ms, 99),
                    },
                )
                rows.append(row)
                print(
                    f"{case.name:24s} {run.label:30s} {rate:10.0f} rec/s "
                    f"{row.extra['mb_per_s']:7.1f} MB/s p50 {row.extra['p50_ms']:7.1f} ms "
                    f"p99 {row.extra['p99_ms']:7.1f} ms RSS {got.rss_mib or 0:6.1f} MiB",
                    file=sys.stderr,
                )
    rows = with_ratios(rows)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(
        f"\n{stamp}; Python {platform.python_version()}; {platform.machine()}; "
        f"{n} records per 100-byte case, {max(n // 4, 1000)} per 1 KiB case; "
        f"each contender in a fresh process (peak RSS: that process, or its JVM); "
        f"run took {time.monotonic() - began:.0f} s\n"
    )
    extras = [("MB/s", "mb_per_s", ".1f"), ("p50 ms", "p50_ms", ".1f"), ("p99 ms", "p99_ms", ".1f")]
    peers = [p for p in PEERS if p in chosen]
    for case in cases:
        print(f"**{case.name}**\n")
        print(render_table([r for r in rows if r.table == case.name], extras=extras, peers=peers))
        print()
    for failure in failures:
        print(f"* did not run: {failure}")
    if args.json:
        write_rows(
            args.json,
            rows,
            {
                "harness": HARNESS,
                "records": n,
                "isolated": not args.in_process,
                "failures": failures,
            },
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

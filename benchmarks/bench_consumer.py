"""Consumer throughput and group rebalance time: kafkacore beside its peers, one broker, one run.

Run: ``.venv/bin/python benchmarks/bench_consumer.py [--records N] [--bootstrap H:P]
[--quick] [--pure] [--json OUT.json]`` (``--skip NAMES`` leaves contenders out by
name prefix, ``rebalance`` the rebalance timing; ``--pure`` adds a run of each
kafkacore contender with ``KAFKACORE_PURE=1``, labelled "(pure)").

Data: N records of 100 bytes (no keys) in a 4-partition topic, written once
uncompressed and once with lz4 by the Java ``ProducerPerformance`` tool
(linger 5 ms, batch 64 KiB).

Contenders, each reading the whole topic from the beginning (auto offset
reset earliest, no group commits, default fetch sizes):

* kafkacore on the selector, asyncio and trio transports, per record
  (``for record in consumer`` / ``async for``: a ``ConsumerRecord`` per
  record, value touched) and through the batch path (``poll_batches``:
  per-partition columns from the records layer, values touched);
* confluent-kafka (librdkafka) ``consume(10000)``, aiokafka ``getmany``,
  kafka-python iteration;
* the Java ``org.apache.kafka.tools.ConsumerPerformance`` as the ceiling.

Rate = records / wall seconds from the consumer's creation to the last
record. Each topic is read once, untimed, before the contenders (so the
first of them does not pay the broker's warm-up for the new topic).

Rebalance time: three kafkacore members (selector transport) join one
group on a 12-partition topic; measured from the third member's start
until all three own disjoint sets covering every partition, for the
classic protocol and for KIP-848. Each contender (and each rebalance) runs
in a fresh process (``_harness.isolated``) whose peak RSS is reported
beside its rate (for the Java tool, the JVM's). The machine has 2 shared
cores: read the ratios within one run, not the absolute numbers.

kafkacore's modules are byte-compiled before the contenders run
(``byte_compile_kafkacore``), as an installed package's are.
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

from _harness import (
    Row,
    broker,
    byte_compile_kafkacore,
    create_topics,
    isolated,
    render_table,
    variants,
    with_ratios,
    write_rows,
)

PARTITIONS = 4


def produce_java(bootstrap: str, topic: str, n: int, compression: str) -> None:
    from kafkacore.testing.libs import ensure_libs

    subprocess.run(
        [
            "java",
            "-Xmx1g",
            "-cp",
            str(ensure_libs() / "*"),
            "org.apache.kafka.tools.ProducerPerformance",
            "--topic",
            topic,
            "--num-records",
            str(n),
            "--record-size",
            "100",
            "--throughput",
            "-1",
            "--producer-props",
            f"bootstrap.servers={bootstrap}",
            "acks=1",
            f"compression.type={compression}",
            "linger.ms=5",
            "batch.size=65536",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )


# -- kafkacore ------------------------------------------------------------------
def kc_selector(bootstrap: str, topic: str, n: int, batch: bool) -> float:
    from kafkacore.transports.selector import KafkaConsumer

    t0 = time.perf_counter()
    seen = 0
    total = 0
    with KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"b-{uuid.uuid4().hex}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        max_poll_records=10000,
    ) as c:
        if batch:
            while seen < n:
                for b in c.poll_batches(timeout=1.0):
                    seen += len(b)
                    total += len(b.values[-1] or b"")
        else:
            for record in c:
                total += len(record.value or b"")
                seen += 1
                if seen >= n:
                    break
        elapsed = time.perf_counter() - t0
    return n / elapsed


def kc_asyncio(bootstrap: str, topic: str, n: int, batch: bool) -> float:
    import asyncio

    from kafkacore.transports.asyncio import AsyncKafkaConsumer

    async def main() -> float:
        t0 = time.perf_counter()
        seen = 0
        async with AsyncKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=f"b-{uuid.uuid4().hex}",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            max_poll_records=10000,
        ) as c:
            if batch:
                while seen < n:
                    for b in await c.poll_batches(timeout=1.0):
                        seen += len(b)
            else:
                async for record in c:
                    _ = record.value
                    seen += 1
                    if seen >= n:
                        break
            return n / (time.perf_counter() - t0)

    return asyncio.run(main())


def kc_trio(bootstrap: str, topic: str, n: int, batch: bool) -> float:
    import trio

    from kafkacore.transports.trio import TrioKafkaConsumer

    out: list[float] = []

    async def main() -> None:
        t0 = time.perf_counter()
        seen = 0
        async with TrioKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=f"b-{uuid.uuid4().hex}",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            max_poll_records=10000,
        ) as c:
            if batch:
                while seen < n:
                    for b in await c.poll_batches(timeout=1.0):
                        seen += len(b)
            else:
                async for record in c:
                    _ = record.value
                    seen += 1
                    if seen >= n:
                        break
            out.append(n / (time.perf_counter() - t0))

    trio.run(main)
    return out[0]


# -- peers -------------------------------------------------------------------------
def confluent(bootstrap: str, topic: str, n: int) -> float:
    import confluent_kafka

    t0 = time.perf_counter()
    c = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"b-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    c.subscribe([topic])
    seen = 0
    while seen < n:
        for msg in c.consume(10000, 1.0):
            if msg.error() is None:
                _ = msg.value()
                seen += 1
    rate = n / (time.perf_counter() - t0)
    c.close()
    return rate


def aiokafka_(bootstrap: str, topic: str, n: int) -> float:
    import asyncio

    import aiokafka

    async def main() -> float:
        t0 = time.perf_counter()
        c = aiokafka.AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=f"b-{uuid.uuid4().hex}",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await c.start()
        seen = 0
        try:
            while seen < n:
                batches = await c.getmany(timeout_ms=1000, max_records=10000)
                for records in batches.values():
                    for r in records:
                        _ = r.value
                        seen += 1
            return n / (time.perf_counter() - t0)
        finally:
            await c.stop()

    return asyncio.run(main())


def kafka_python(bootstrap: str, topic: str, n: int) -> float:
    import kafka

    t0 = time.perf_counter()
    c = kafka.KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"b-{uuid.uuid4().hex}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    for seen, r in enumerate(c, 1):
        _ = r.value
        if seen >= n:
            break
    rate = n / (time.perf_counter() - t0)
    c.close()
    return rate


_JAVA = re.compile(
    r"^\s*\d{4}-\d\d-\d\d [\d:.]+, \s*\d{4}-\d\d-\d\d [\d:.]+, ([\d.]+), ([\d.]+), (\d+), ([\d.]+)",
    re.M,
)


def java(bootstrap: str, topic: str, n: int) -> float:
    from kafkacore.testing.libs import ensure_libs

    proc = subprocess.run(
        [
            "java",
            "-Xmx1g",
            "-cp",
            str(ensure_libs() / "*"),
            "org.apache.kafka.tools.ConsumerPerformance",
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--messages",
            str(n),
            "--timeout",
            "60000",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    # start, end, MB, MB/s, records, records/s, rebalance ms, fetch ms, fetch MB/s, fetch rec/s
    for line in proc.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 6 and parts[0][:2] == "20":
            return float(parts[5])
    raise RuntimeError(f"ConsumerPerformance output not understood:\n{proc.stdout[-2000:]}")


# -- rebalance ----------------------------------------------------------------------
def rebalance(bootstrap: str, protocol: str) -> float:
    from kafkacore.transports.selector import KafkaConsumer

    topic = f"reb-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, [topic], partitions=12)
    group = f"g-{topic}"
    opts = dict(
        bootstrap_servers=bootstrap,
        group_id=group,
        group_protocol=protocol,
        heartbeat_interval_ms=500,
    )
    members = [KafkaConsumer(topic, **opts), KafkaConsumer(topic, **opts)]

    def settled() -> bool:
        owned = [tp for m in members for tp in m.assignment()]
        return len(owned) == len(set(owned)) == 12 and all(m.assignment() for m in members)

    def wait() -> None:
        end = time.monotonic() + 120
        while not settled():
            for m in members:
                m.poll_records(timeout=0.0)
            if time.monotonic() > end:
                raise RuntimeError("rebalance did not finish in 120 s")
            time.sleep(0.005)

    wait()
    t0 = time.perf_counter()
    members.append(KafkaConsumer(topic, **opts))
    wait()
    elapsed = time.perf_counter() - t0
    for m in members:
        m.close()
    return elapsed


CONTENDERS: dict[str, Callable[[str, str, int], float]] = {
    "kafkacore selector, per record": functools.partial(kc_selector, batch=False),
    "kafkacore selector, poll_batches": functools.partial(kc_selector, batch=True),
    "kafkacore asyncio, per record": functools.partial(kc_asyncio, batch=False),
    "kafkacore asyncio, poll_batches": functools.partial(kc_asyncio, batch=True),
    "kafkacore trio, per record": functools.partial(kc_trio, batch=False),
    "kafkacore trio, poll_batches": functools.partial(kc_trio, batch=True),
    "confluent-kafka": confluent,
    "aiokafka": aiokafka_,
    "kafka-python": kafka_python,
    "java ConsumerPerformance": java,
}
HARNESS = "consumer"
PEERS = ("confluent-kafka", "aiokafka", "kafka-python", "java ConsumerPerformance")
REBALANCE = "rebalance, 3rd member joins 12 partitions"


def consume_table(compression: str) -> str:
    return f"100 B records, {compression}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--bootstrap", help="a running broker (default: start one)")
    ap.add_argument("--skip", default="", help="comma list of contender name prefixes to skip")
    ap.add_argument("--quick", action="store_true", help="smoke run: 20,000 records")
    ap.add_argument("--json", help="also write the rows (with peak RSS) to this JSON file")
    ap.add_argument(
        "--pure", action="store_true", help="also run each kafkacore one with KAFKACORE_PURE=1"
    )
    ap.add_argument(
        "--in-process",
        action="store_true",
        help="run every contender in this process (no fresh process each: no peak RSS)",
    )
    args = ap.parse_args(argv)
    if args.pure and args.in_process:
        ap.error("--pure runs the pure twins in processes of their own: drop --in-process")
    n = 20_000 if args.quick else args.records
    skip = [s.strip() for s in args.skip.split(",") if s.strip()]
    chosen = {
        name: fn for name, fn in CONTENDERS.items() if not any(name.startswith(s) for s in skip)
    }
    runs = variants(chosen, args.pure)
    rows: list[Row] = []
    failures: list[str] = []
    started = time.monotonic()
    byte_compile_kafkacore()
    with broker(args.bootstrap) as bootstrap:
        for compression in ("none", "lz4"):
            topic = f"bench-{compression}-{uuid.uuid4().hex[:6]}"
            create_topics(bootstrap, [topic], partitions=PARTITIONS)
            produce_java(bootstrap, topic, n, compression)
            # One untimed read of the whole topic first: whoever runs first
            # otherwise pays the broker's warm-up for the new topic (measured:
            # the first contender read 20-30% slower than the same contender
            # run again), which made the first row, and uncompressed against
            # lz4, an artefact of the running order.
            isolated(functools.partial(kc_selector, batch=True), bootstrap, topic, n)
            for run in runs:
                try:
                    got = isolated(
                        run.fn, bootstrap, topic, n, env=run.env, enabled=not args.in_process
                    )
                except Exception as exc:  # a peer that cannot run is reported, not fatal
                    print(f"{compression:5} {run.label:36} FAILED: {exc}", file=sys.stderr)
                    failures.append(f"{compression} / {run.label}: {str(exc).splitlines()[0]}")
                    continue
                rows.append(
                    Row(
                        harness=HARNESS,
                        table=consume_table(compression),
                        contender=run.label,
                        rate=got.result,
                        unit="records/s",
                        rss_mib=got.rss_mib,
                        path=got.path,
                    )
                )
                print(
                    f"{compression:5} {run.label:36} {got.result:12,.0f} rec/s "
                    f"RSS {got.rss_mib or 0:6.1f} MiB",
                    file=sys.stderr,
                    flush=True,
                )
        if not any(s == "kafkacore" or "rebalance".startswith(s) for s in skip):
            for protocol in ("classic", "consumer"):
                got = isolated(rebalance, bootstrap, protocol, enabled=not args.in_process)
                rows.append(
                    Row(
                        harness=HARNESS,
                        table=REBALANCE,
                        contender=f"kafkacore, {protocol}",
                        rate=got.result,
                        unit="seconds",
                        rss_mib=got.rss_mib,
                        higher_is_better=False,
                        path=got.path,
                    )
                )
    rows = with_ratios(rows)
    print()
    print(
        f"Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; "
        f"N = {n:,} x 100 B, {PARTITIONS} partitions; "
        f"CPython {platform.python_version()}; each contender in a fresh process "
        f"(peak RSS: that process, or its JVM); total {time.monotonic() - started:.0f} s"
    )
    peers = [p for p in PEERS if p in chosen]
    for compression in ("none", "lz4"):
        table = consume_table(compression)
        print(f"\n**{table}**\n")
        print(render_table([r for r in rows if r.table == table], first="consumer", peers=peers))
    reb = [r for r in rows if r.table == REBALANCE]
    if reb:
        print()
        print(render_table(reb, first=REBALANCE, peers=[]))
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
    sys.exit(main())

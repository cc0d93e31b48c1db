"""Share-group consume throughput (KIP-932): kafkacore on each transport vs Java.

Each contender joins a fresh share group (``share.auto.offset.reset`` set to
earliest) on a topic of N 100 B records in 4 partitions, produced beforehand
by Java's ``ProducerPerformance``, and consumes all N with acknowledgement:
implicit mode (every poll accepts the previous poll's records) and a final
``commit_sync``. The Java contender is ``org.apache.kafka.tools.ShareConsumerPerformance``
(one KafkaShareConsumer, implicit acknowledgement) on the same broker.

Before the contenders, one untimed pass (the asyncio consumer, in a group of
its own) warms the broker's share-group path up: cold, it cost whoever went
first 5-15% against the same client run later on the same broker.

Rate = records / wall seconds from the consumer's creation to the last
record (Java: the tool's own nMsg.sec). Each contender runs in a fresh
process (``_harness.isolated``) whose peak RSS is reported beside its rate.
The machine has 2 shared cores: read the ratios within one run, not the
absolute numbers.

    python benchmarks/bench_share.py --quick --json /tmp/share.json
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import platform
import subprocess
import sys
import time
import uuid
from collections.abc import Callable

from _harness import Row, broker, create_topics, isolated, render_table, with_ratios, write_rows
from bench_consumer import produce_java

PARTITIONS = 4
HARNESS = "share"
TABLE = "share group, 100 B records, implicit acknowledgement"
JAVA = "java ShareConsumerPerformance"


def _group(bootstrap: str) -> str:
    """A fresh share group that starts at the earliest offset."""
    from kafkacore.admin import AlterConfigOp, ConfigResource, ConfigResourceType
    from kafkacore.transports.selector import KafkaAdminClient

    group = f"share-bench-{uuid.uuid4().hex[:8]}"
    with KafkaAdminClient(bootstrap_servers=bootstrap) as admin:
        resource = ConfigResource(ConfigResourceType.GROUP, group)
        admin.incremental_alter_configs(
            {resource: [AlterConfigOp("share.auto.offset.reset", "earliest")]}
        )
    return group


def kc_selector(bootstrap: str, topic: str, n: int) -> float:
    from kafkacore.transports.selector import KafkaShareConsumer

    group = _group(bootstrap)
    t0 = time.perf_counter()
    seen = 0
    with KafkaShareConsumer(
        topic, group_id=group, bootstrap_servers=bootstrap, max_poll_records=2000
    ) as consumer:
        while seen < n:
            seen += len(consumer.poll(1.0))
        elapsed = time.perf_counter() - t0
        consumer.commit_sync()
    return n / elapsed


def kc_asyncio(bootstrap: str, topic: str, n: int) -> float:
    from kafkacore.transports.asyncio import AsyncKafkaShareConsumer

    group = _group(bootstrap)

    async def run() -> float:
        t0 = time.perf_counter()
        seen = 0
        async with AsyncKafkaShareConsumer(
            topic, group_id=group, bootstrap_servers=bootstrap, max_poll_records=2000
        ) as consumer:
            while seen < n:
                seen += len(await consumer.poll(1.0))
            elapsed = time.perf_counter() - t0
            await consumer.commit_sync()
        return n / elapsed

    return asyncio.run(run())


def kc_trio(bootstrap: str, topic: str, n: int) -> float:
    import trio

    from kafkacore.transports.trio import TrioKafkaShareConsumer

    group = _group(bootstrap)

    async def run() -> float:
        t0 = time.perf_counter()
        seen = 0
        async with TrioKafkaShareConsumer(
            topic, group_id=group, bootstrap_servers=bootstrap, max_poll_records=2000
        ) as consumer:
            while seen < n:
                seen += len(await consumer.poll(1.0))
            elapsed = time.perf_counter() - t0
            await consumer.commit_sync()
        return n / elapsed

    return trio.run(run)


def java(bootstrap: str, topic: str, n: int) -> float:
    from kafkacore.testing.libs import ensure_libs

    group = _group(bootstrap)
    proc = subprocess.run(
        [
            "java",
            "-Xmx1g",
            "-cp",
            str(ensure_libs() / "*"),
            "org.apache.kafka.tools.ShareConsumerPerformance",
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--group",
            group,
            "--num-records",
            str(n),
            "--timeout",
            "120000",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    # The header names the columns (this tool puts nMsg.sec before the record count).
    header: list[str] = []
    for line in proc.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if parts[0] == "start.time":
            header = parts
        elif header and len(parts) == len(header) and parts[0][:2] == "20":
            return float(parts[header.index("nMsg.sec")])
    raise RuntimeError(f"ShareConsumerPerformance output not understood:\n{proc.stdout[-2000:]}")


CONTENDERS: dict[str, Callable[[str, str, int], float]] = {
    "kafkacore selector": kc_selector,
    "kafkacore asyncio": kc_asyncio,
    "kafkacore trio": kc_trio,
    JAVA: java,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=500_000)
    ap.add_argument("--bootstrap", help="a running broker (default: start one)")
    ap.add_argument("--skip", default="", help="comma list of contender name prefixes to skip")
    ap.add_argument("--quick", action="store_true", help="smoke run: 20,000 records")
    ap.add_argument("--json", help="also write the rows (with peak RSS) to this JSON file")
    ap.add_argument("--in-process", action="store_true", help="no fresh process per contender")
    ap.add_argument(
        "--no-warmup", action="store_true", help="skip the untimed pass that warms the broker up"
    )
    args = ap.parse_args(argv)
    n = 20_000 if args.quick else args.records
    skip = [s.strip() for s in args.skip.split(",") if s.strip()]
    chosen = {k: f for k, f in CONTENDERS.items() if not any(k.startswith(s) for s in skip)}
    rows: list[Row] = []
    failures: list[str] = []
    started = time.monotonic()
    with broker(args.bootstrap) as bootstrap:
        topic = f"bench-share-{uuid.uuid4().hex[:6]}"
        create_topics(bootstrap, [topic], partitions=PARTITIONS)
        produce_java(bootstrap, topic, n, "none")
        if not args.no_warmup:
            # The broker's share-group path runs cold (JIT, page cache) for
            # whoever goes first: measured, the first contender lost 5-15%
            # to the same client run later. One untimed pass evens it out.
            warm = isolated(kc_asyncio, bootstrap, topic, n, enabled=not args.in_process)
            print(f"{'(warm-up, not measured)':32} {warm.result:12,.0f} rec/s", file=sys.stderr)
        for label, fn in chosen.items():
            try:
                got = isolated(fn, bootstrap, topic, n, enabled=not args.in_process)
            except Exception as exc:  # a contender that cannot run is reported, not fatal
                print(f"{label:32} FAILED: {exc}", file=sys.stderr)
                failures.append(f"{label}: {str(exc).splitlines()[0]}")
                continue
            rows.append(
                Row(
                    harness=HARNESS,
                    table=TABLE,
                    contender=label,
                    rate=got.result,
                    unit="records/s",
                    rss_mib=got.rss_mib,
                    path=got.path,
                )
            )
            print(f"{label:32} {got.result:12,.0f} rec/s", file=sys.stderr, flush=True)
    rows = with_ratios(rows)
    print(
        f"\nDate: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; "
        f"N = {n:,} x 100 B, {PARTITIONS} partitions; CPython {platform.python_version()}; "
        f"total {time.monotonic() - started:.0f} s\n"
    )
    peers = [JAVA] if JAVA in chosen else []
    print(render_table(rows, first="share consumer", peers=peers))
    for failure in failures:
        print(f"* did not run: {failure}")
    if args.json:
        write_rows(args.json, rows, {"harness": HARNESS, "records": n, "failures": failures})
    return 0


if __name__ == "__main__":
    sys.exit(main())

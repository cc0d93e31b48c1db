"""kafkacore demo: start a local Kafka, produce and consume through every transport, stop it.

Run with ``./dev demo`` (``./dev demo --records 200000`` for a longer run).

Steps:

1. ApiVersions: what the broker speaks and which version kafkacore negotiates.
2. For each transport (blocking selector, asyncio, trio): produce N records
   one ``send`` at a time and N more with the batch call ``send_many``, then
   consume all 2N back in a consumer group (classic protocol for selector and
   trio, the KIP-848 ``consumer`` protocol for asyncio) and check that every
   record came back exactly once.
3. A throughput table.
4. The Spark pipeline of ``examples/spark_pipeline.py`` on the same broker:
   a local Spark reads an ``orders`` topic with ``format("kafkacore")``,
   aggregates per user, and writes the totals exactly once with
   ``format("kafkacore")``; the result is checked against the input.
   ``--no-spark`` skips it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import trio

from kafkacore.testing import KAFKA_VERSION, LocalKafka, wire
from kafkacore.transports.asyncio import AsyncKafkaConsumer, AsyncKafkaProducer
from kafkacore.transports.selector import KafkaConsumer, KafkaProducer
from kafkacore.transports.trio import TrioKafkaConsumer, TrioKafkaProducer

PARTITIONS = 6
VALUE = b"x" * 100


@dataclass
class Row:
    transport: str
    what: str
    records: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else float("inf")


def api_versions_table(kafka: LocalKafka) -> None:
    """Send ApiVersions v0 and print the broker's table next to kafkacore's own."""
    from kafkacore.protocol.api import APIS

    broker = sorted(wire.api_versions(kafka.host, kafka.port), key=lambda v: v.api_key)
    print(f"{'key':>4}  {'api':<32} {'broker':>8} {'kafkacore':>10} {'use':>4}")
    for v in broker:
        ours = APIS.get(v.api_key)
        name = ours.name if ours else "?"
        mine = f"{ours.min_version}-{ours.max_version}" if ours else "-"
        # Negotiated version: the highest both sides speak, never a guess.
        use = "-"
        if ours and max(v.min_version, ours.min_version) <= min(v.max_version, ours.max_version):
            use = str(min(v.max_version, ours.max_version))
        print(
            f"{v.api_key:>4}  {name:<32} {v.min_version:>3}-{v.max_version:<4} {mine:>10} {use:>4}"
        )
    print(f"{len(broker)} APIs advertised by the broker")


def _keys(prefix: str, n: int) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(n)]


def _check(transport: str, expected: set[bytes], got: list[bytes]) -> None:
    dupes = len(got) - len(set(got))
    missing = expected - set(got)
    if missing or dupes:
        raise SystemExit(
            f"demo: {transport}: {len(missing)} records missing, {dupes} duplicates after consuming"
        )


def run_selector(bootstrap: str, topic: str, n: int) -> list[Row]:
    one, many = _keys("one", n), _keys("many", n)
    rows = []
    with KafkaProducer(bootstrap, linger_ms=5) as producer:
        began = time.perf_counter()
        futures = [producer.send(topic, VALUE, key=k) for k in one]
        producer.flush()
        for f in futures:
            f.result()
        rows.append(Row("selector", "produce: send", n, time.perf_counter() - began))
        began = time.perf_counter()
        producer.send_many(topic, list(zip(many, [VALUE] * n, strict=True))).result()
        rows.append(Row("selector", "produce: send_many", n, time.perf_counter() - began))
    got: list[bytes] = []
    began = time.perf_counter()
    with KafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id="demo-selector", auto_offset_reset="earliest"
    ) as consumer:
        deadline = time.monotonic() + 120
        while len(got) < 2 * n and time.monotonic() < deadline:
            got.extend(r.key for r in consumer.poll_records(timeout=1.0) if r.key is not None)
        consumer.commit()
    rows.append(Row("selector", "consume: group (classic)", len(got), time.perf_counter() - began))
    _check("selector", set(one) | set(many), got)
    return rows


async def run_asyncio(bootstrap: str, topic: str, n: int) -> list[Row]:
    one, many = _keys("one", n), _keys("many", n)
    rows = []
    async with AsyncKafkaProducer(bootstrap, linger_ms=5) as producer:
        began = time.perf_counter()
        deliveries = [await producer.send(topic, VALUE, key=k) for k in one]
        for d in deliveries:
            await d
        rows.append(Row("asyncio", "produce: send", n, time.perf_counter() - began))
        began = time.perf_counter()
        await producer.send_many(topic, keys=many, values=[VALUE] * n)
        rows.append(Row("asyncio", "produce: send_many", n, time.perf_counter() - began))
    got: list[bytes] = []
    began = time.perf_counter()
    async with AsyncKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id="demo-asyncio",
        group_protocol="consumer",
        auto_offset_reset="earliest",
    ) as consumer:
        deadline = time.monotonic() + 120
        while len(got) < 2 * n and time.monotonic() < deadline:
            for batch in await consumer.poll_batches(timeout=1.0):
                got.extend(k for k in batch.keys if k is not None)
        await consumer.commit()
    rows.append(Row("asyncio", "consume: group (KIP-848)", len(got), time.perf_counter() - began))
    _check("asyncio", set(one) | set(many), got)
    return rows


async def run_trio(bootstrap: str, topic: str, n: int) -> list[Row]:
    one, many = _keys("one", n), _keys("many", n)
    rows = []
    async with TrioKafkaProducer(bootstrap, linger_ms=5) as producer:
        began = time.perf_counter()
        deliveries = [await producer.send(topic, VALUE, key=k) for k in one]
        for d in deliveries:
            await d
        rows.append(Row("trio", "produce: send", n, time.perf_counter() - began))
        began = time.perf_counter()
        await producer.send_many(topic, keys=many, values=[VALUE] * n)
        rows.append(Row("trio", "produce: send_many", n, time.perf_counter() - began))
    got: list[bytes] = []
    began = time.perf_counter()
    async with TrioKafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id="demo-trio", auto_offset_reset="earliest"
    ) as consumer:
        deadline = time.monotonic() + 120
        while len(got) < 2 * n and time.monotonic() < deadline:
            got.extend(r.key for r in await consumer.poll_records(timeout=1.0) if r.key is not None)
        await consumer.commit()
    rows.append(Row("trio", "consume: group (classic)", len(got), time.perf_counter() - began))
    _check("trio", set(one) | set(many), got)
    return rows


def produce_and_consume(kafka: LocalKafka, n: int) -> list[Row]:
    runs: list[tuple[str, Callable[[str, str, int], list[Row]]]] = [
        ("selector", run_selector),
        ("asyncio", lambda b, t, k: asyncio.run(run_asyncio(b, t, k))),
        ("trio", lambda b, t, k: trio.run(run_trio, b, t, k)),
    ]
    rows: list[Row] = []
    for name, run in runs:
        topic = f"demo-{name}"
        kafka.create_topic(topic, partitions=PARTITIONS)
        print(f"{name}: producing {2 * n} records to {topic} and consuming them in a group ...")
        rows.extend(run(kafka.bootstrap, topic, n))
    return rows


def print_table(rows: list[Row]) -> None:
    print(f"{'transport':<10} {'what':<28} {'records':>9} {'seconds':>8} {'records/s':>11}")
    for r in rows:
        print(f"{r.transport:<10} {r.what:<28} {r.records:>9} {r.seconds:>8.2f} {r.rate:>11,.0f}")
    print(f"({len(VALUE)}-byte values; one broker on this machine; see benchmarks/ for peers)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=50_000, help="records per call style")
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark pipeline")
    args = parser.parse_args(argv)
    print(f"Starting a local Apache Kafka {KAFKA_VERSION} broker (KRaft, 127.0.0.1) ...")
    began = time.monotonic()
    with LocalKafka(size=1) as kafka:
        print(f"Broker up at {kafka.bootstrap} in {time.monotonic() - began:.1f}s")
        print("\n== ApiVersions: what the broker speaks")
        api_versions_table(kafka)
        print("\n== Produce and consume through each transport")
        rows = produce_and_consume(kafka, args.records)
        print("\n== Throughput")
        print_table(rows)
        print("\nEvery record came back exactly once on every transport.")
        status = 0
        if not args.no_spark:
            print("\n== Spark: a pipeline on format('kafkacore'), exactly once")
            status = spark_pipeline(kafka.bootstrap)
        print("Stopping the broker.")
    return status


def spark_pipeline(bootstrap: str) -> int:
    """Run examples/spark_pipeline.py against this broker (a local Spark starts here)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).with_name("spark_pipeline.py")
    spec = importlib.util.spec_from_file_location("spark_pipeline", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    status: int = module.main(["--bootstrap", bootstrap])
    return status


if __name__ == "__main__":
    sys.exit(main())

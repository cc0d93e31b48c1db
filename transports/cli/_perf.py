"""``kafkacore perf produce|consume``: Kafka's ProducerPerformance / ConsumerPerformance.

``perf produce`` sends ``--num-records`` records of ``--record-size`` bytes,
at most ``--throughput`` a second (-1: unthrottled, as in Java), and
measures each record's latency from ``send`` to its acknowledgement. It
reports what Java's tool reports, in its words: a window line every 5 s
(when stderr is not a terminal; a progress bar when it is), then::

    N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency,
    P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th.

``perf consume`` reads ``--messages`` records as a new group member from the
earliest offset and prints Java's CSV header and line (``start.time,
end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec``).
``--json`` prints either report as one JSON object instead. MB is 2**20
bytes, as in Java.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import random
import threading
import time
import uuid
from concurrent.futures import Future
from typing import Any

import click

from ._app import App, CliError, Exit, pass_app
from ._produce import Pacer
from ._progress import Progress
from ._topics import describe_topic

__all__ = ["percentile", "register"]

MB = 1024 * 1024
WINDOW = 5.0


def percentile(sorted_ms: list[float], fraction: float) -> float:
    """The value below which ``fraction`` of the sorted samples fall (Java's index rule)."""
    if not sorted_ms:
        return 0.0
    return sorted_ms[min(len(sorted_ms) - 1, int(len(sorted_ms) * fraction))]


class _Latencies:
    """Acknowledgement latencies, recorded from the producer's loop thread."""

    def __init__(self) -> None:
        self.all: list[float] = []
        self.window: list[float] = []
        self.window_bytes = 0
        self.failed: BaseException | None = None
        self.lock = threading.Lock()

    def done(self, started: float, size: int, fut: Future[Any]) -> None:
        ms = (time.monotonic() - started) * 1000.0
        error = fut.exception()
        with self.lock:
            if error is not None:
                self.failed = self.failed or error
                return
            self.all.append(ms)
            self.window.append(ms)
            self.window_bytes += size

    def take_window(self) -> tuple[list[float], int]:
        with self.lock:
            window, size = self.window, self.window_bytes
            self.window, self.window_bytes = [], 0
        return window, size


class _Joined:
    """A rebalance listener noting when the first partitions were assigned (Java's
    ConsumerPerformance measures its rebalance time the same way)."""

    def __init__(self) -> None:
        self.at: float | None = None

    def on_partitions_assigned(self, partitions: frozenset[Any]) -> None:
        if self.at is None and partitions:
            self.at = time.monotonic()

    def on_partitions_revoked(self, partitions: frozenset[Any]) -> None:
        pass

    def on_partitions_lost(self, partitions: frozenset[Any]) -> None:
        pass


def _window_line(count: int, size: int, lat: list[float], seconds: float) -> str:
    rate = count / seconds if seconds > 0 else 0.0
    avg = sum(lat) / len(lat) if lat else 0.0
    return (
        f"{count} records sent, {rate:.1f} records/sec ({size / MB / seconds:.2f} MB/sec), "
        f"{avg:.1f} ms avg latency, {max(lat, default=0.0):.1f} ms max latency."
    )


@click.group("perf")
def perf() -> None:
    """Throughput and latency tests, like Kafka's perf tools."""


@perf.command("produce")
@click.argument("topic")
@click.option("-n", "--num-records", type=click.IntRange(min=1), required=True)
@click.option(
    "-s",
    "--record-size",
    type=click.IntRange(min=0),
    default=100,
    show_default=True,
    help="Value size in bytes.",
)
@click.option(
    "-t",
    "--throughput",
    type=float,
    default=-1.0,
    show_default=True,
    help="Records a second at most; -1 for no limit.",
)
@click.option(
    "--reporting-interval",
    "interval",
    type=click.FloatRange(min=0.1),
    default=WINDOW,
    show_default=True,
    help="Seconds between window lines (not on a terminal).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_app
def produce(
    app: App,
    topic: str,
    num_records: int,
    record_size: int,
    throughput: float,
    interval: float,
    as_json: bool,
) -> None:
    """Send records and report throughput and latency (ProducerPerformance)."""
    if throughput == 0 or (throughput < 0 and throughput != -1):
        raise click.BadParameter(
            "a positive number of records a second, or -1", param_hint="'-t' / '--throughput'"
        )
    with app.admin(helper=True) as admin:
        describe_topic(admin, topic)
    payload = random.Random(0).randbytes(record_size)
    pacer = Pacer(throughput if throughput > 0 else None)
    lat = _Latencies()
    with app.producer() as producer, Progress("sent", num_records, interval=1e9) as bar:
        start = window_start = time.monotonic()
        for _ in range(num_records):
            pacer.wait()
            sent = time.monotonic()
            fut = producer.send(topic, payload)
            fut.add_done_callback(functools.partial(lat.done, sent, record_size))
            bar.advance()
            now = time.monotonic()
            if not bar.terminal and now - window_start >= interval:
                window, size = lat.take_window()
                click.echo(_window_line(len(window), size, window, now - window_start))
                window_start = now
            if lat.failed is not None:
                break
        producer.flush()
        elapsed = time.monotonic() - start
    if lat.failed is not None:
        raise lat.failed
    _report_produce(lat.all, record_size, elapsed, as_json)


def _report_produce(samples: list[float], size: int, elapsed: float, as_json: bool) -> None:
    ordered = sorted(samples)
    count = len(ordered)
    report = {
        "records": count,
        "records_per_sec": count / elapsed,
        "mb_per_sec": count * size / MB / elapsed,
        "avg_latency_ms": sum(ordered) / count if count else 0.0,
        "max_latency_ms": ordered[-1] if ordered else 0.0,
        "p50_ms": percentile(ordered, 0.5),
        "p95_ms": percentile(ordered, 0.95),
        "p99_ms": percentile(ordered, 0.99),
        "p999_ms": percentile(ordered, 0.999),
    }
    if as_json:
        click.echo(json.dumps(report))
        return
    click.echo(
        f"{count} records sent, {report['records_per_sec']:.1f} records/sec "
        f"({report['mb_per_sec']:.2f} MB/sec), {report['avg_latency_ms']:.2f} ms avg latency, "
        f"{report['max_latency_ms']:.2f} ms max latency, {int(report['p50_ms'])} ms 50th, "
        f"{int(report['p95_ms'])} ms 95th, {int(report['p99_ms'])} ms 99th, "
        f"{int(report['p999_ms'])} ms 99.9th."
    )


@perf.command("consume")
@click.argument("topic")
@click.option(
    "-m",
    "--messages",
    type=click.IntRange(min=1),
    required=True,
    help="How many records to consume.",
)
@click.option("-g", "--group", help="Group id (default: a new perf-consumer-<random> group).")
@click.option(
    "--timeout",
    "idle",
    type=click.FloatRange(min=0.1),
    default=10.0,
    show_default=True,
    help="Seconds without a record before giving up.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_app
def consume(
    app: App, topic: str, messages: int, group: str | None, idle: float, as_json: bool
) -> None:
    """Read records as a group member and report throughput (ConsumerPerformance)."""
    with app.admin(helper=True) as admin:
        describe_topic(admin, topic)
    group = group or f"perf-consumer-{uuid.uuid4().hex[:8]}"
    start_wall = dt.datetime.now()
    start = last = time.monotonic()
    joined = _Joined()
    consumer = app.consumer(group_id=group, auto_offset_reset="earliest", listener=joined)
    count = size = 0
    try:
        consumer.subscribe([topic])
        with Progress("consumed", messages) as bar:
            while count < messages:
                batches = consumer.poll_batches(timeout=0.5, max_records=messages - count)
                now = time.monotonic()
                got = 0
                for b in batches:
                    got += len(b.offsets)
                    size += sum(len(v) for v in b.values if v is not None)
                    size += sum(len(k) for k in b.keys if k is not None)
                if got:
                    count += got
                    last = now
                    bar.advance(got)
                elif now - last > idle:
                    raise CliError(
                        f"no record for {idle:g} s; consumed {count} of {messages} from {topic}",
                        Exit.FAILED,
                    )
    finally:
        consumer.close()
    end = time.monotonic()
    _report_consume(start_wall, start, joined.at or start, end, count, size, as_json)


def _report_consume(
    wall: dt.datetime, start: float, joined: float, end: float, count: int, size: int, as_json: bool
) -> None:
    total = max(end - start, 1e-9)
    fetch = max(end - joined, 1e-9)
    report = {
        "start.time": wall.strftime("%Y-%m-%d %H:%M:%S:%f")[:-3],
        "end.time": (wall + dt.timedelta(seconds=end - start)).strftime("%Y-%m-%d %H:%M:%S:%f")[
            :-3
        ],
        "data.consumed.in.MB": size / MB,
        "MB.sec": size / MB / total,
        "data.consumed.in.nMsg": count,
        "nMsg.sec": count / total,
        "rebalance.time.ms": int((joined - start) * 1000),
        "fetch.time.ms": int(fetch * 1000),
        "fetch.MB.sec": size / MB / fetch,
        "fetch.nMsg.sec": count / fetch,
    }
    if as_json:
        click.echo(json.dumps(report))
        return
    click.echo(", ".join(report))
    click.echo(", ".join(f"{v:.4f}" if isinstance(v, float) else str(v) for v in report.values()))


def register(root: click.Group) -> None:
    root.add_command(perf)

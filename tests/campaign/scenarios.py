"""Campaign workers (producers, transactions, group members) and their invariants.

Each worker is ``async`` code over :mod:`tests.campaign.adapters`, so the
same scenario runs on the selector, asyncio and trio transports; a scenario
runs one worker per transport at once, each on its own thread and loop
(:func:`run_concurrently`), all through the fault proxies. What the brokers
really hold is read back on the direct PLAINTEXT listener, never through a
proxy.

Invariants (the issue's words):

* every acknowledged record is present exactly once, at the offset it was
  acknowledged with, and in send order per partition (idempotent producer);
* a read_committed reader sees exactly the committed transactions: all of a
  committed one, nothing of an aborted one, all or nothing of one whose
  commit outcome the caller could not know (the call failed);
* group members neither skip a record nor see again a record below an
  offset already committed (any member's acknowledged commit) at that time;
* every call ends within its timeout (plus a slack, see ``adapters``).
"""

from __future__ import annotations

import bisect
import contextlib
import random
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from kafkacore.client import TopicPartition
from kafkacore.producer import RecordMetadata
from kafkacore.testing import FaultProxy
from kafkacore.transports.selector import KafkaClient
from tests.campaign.adapters import SLACK_S, CallTimer, open_consumer, open_producer, run_flavor
from tests.producer.readback import ReadRecord, read_partition

# -- running workers side by side ----------------------------------------------------


def run_concurrently(jobs: Sequence[tuple[str, Callable[[], Awaitable[Any]]]]) -> list[Any]:
    """Run each (flavor, main) on its own thread and loop; results or exceptions."""
    results: list[Any] = [None] * len(jobs)

    def one(i: int, flavor: str, main: Callable[[], Awaitable[Any]]) -> None:
        try:
            results[i] = run_flavor(flavor, main)
        except BaseException as exc:  # reported by the caller, with the seed
            results[i] = exc

    threads = [
        threading.Thread(target=one, args=(i, f, m), name=f"campaign-{f}-{i}", daemon=True)
        for i, (f, m) in enumerate(jobs)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert not any(t.is_alive() for t in threads), "a campaign worker never ended"
    return results


class Chaos:
    """Cuts every connection of a random proxy at random moments (seeded)."""

    def __init__(
        self, proxies: Sequence[FaultProxy], rng: random.Random, every_s: tuple[float, float]
    ):
        self.proxies = list(proxies)
        self.rng = rng
        self.every_s = every_s
        self.cuts = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="campaign-chaos", daemon=True)

    def __enter__(self) -> Chaos:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(self.rng.uniform(*self.every_s)):
            proxy = self.rng.choice(self.proxies)
            self.cuts += proxy.cut_all(reset=self.rng.random() < 0.5)


def faults_injected(proxies: Sequence[FaultProxy], before: dict[str, int]) -> dict[str, int]:
    now: Counter[str] = Counter()
    for p in proxies:
        now.update(p.stats.injected)
    return {k: v - before.get(k, 0) for k, v in now.items() if v - before.get(k, 0)}


def injected_now(proxies: Sequence[FaultProxy]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for p in proxies:
        total.update(p.stats.injected)
    return dict(total)


# -- idempotent producers ---------------------------------------------------------------


@dataclass
class Sent:
    value: bytes
    key: bytes
    sent_at: float
    done_at: float | None = None
    result: Any = None

    def settle(self, result: Any, when: float) -> None:
        self.result, self.done_at = result, when

    @property
    def acked(self) -> bool:
        return isinstance(self.result, RecordMetadata)


@dataclass
class ProducerRun:
    flavor: str
    sent: list[Sent]
    timer: CallTimer


def producer_job(
    flavor: str,
    bootstrap: str,
    topic: str,
    count: int,
    *,
    options: dict[str, Any],
    pace_s: float,
    keys: int = 24,
) -> Callable[[], Awaitable[ProducerRun]]:
    delivery_s = options["delivery_timeout_ms"] / 1000

    async def main() -> ProducerRun:
        timer = CallTimer()
        sent: list[Sent] = []
        async with open_producer(flavor, bootstrap, timer, **options) as producer:
            async with anyio.create_task_group() as tg:
                for i in range(count):
                    rec = Sent(b"%s-%07d" % (flavor.encode(), i), b"k%d" % (i % keys), 0.0)
                    rec.sent_at = time.monotonic()
                    sent.append(rec)
                    await producer.send(tg, topic, rec.value, rec.key, rec.settle)
                    if i % 25 == 24:
                        await anyio.sleep(pace_s)
                with contextlib.suppress(Exception):  # the records carry their own outcomes
                    await producer.flush(delivery_s + 5)
            # Selector futures settle on the producer's thread; wait for the last.
            deadline = time.monotonic() + delivery_s + SLACK_S
            while any(s.done_at is None for s in sent) and time.monotonic() < deadline:
                await anyio.sleep(0.05)
            await producer.close(10.0)
        return ProducerRun(flavor, sent, timer)

    return main


@dataclass
class Verdict:
    acked: int = 0
    failed: int = 0
    lost: int = 0
    duplicated: int = 0
    problems: list[str] = field(default_factory=list)

    def problem(self, text: str) -> None:
        if len(self.problems) < 20:
            self.problems.append(text)


def read_all(
    bootstrap: str, topic: str, partitions: int, isolation_level: int = 0
) -> dict[int, list[ReadRecord]]:
    with KafkaClient(bootstrap, request_timeout_ms=30000) as client:
        return {
            p: read_partition(client, topic, p, isolation_level=isolation_level)
            for p in range(partitions)
        }


def check_producers(
    runs: Sequence[ProducerRun], logs: dict[int, list[ReadRecord]], delivery_s: float
) -> Verdict:
    v = Verdict()
    where: dict[bytes, list[tuple[int, int]]] = defaultdict(list)
    for p, records in logs.items():
        for r in records:
            assert r.value is not None
            where[r.value].append((p, r.offset))
    for value, places in where.items():
        if len(places) > 1:
            v.duplicated += len(places) - 1
            v.problem(f"{value!r} is in the log {len(places)} times: {places}")
    for run in runs:
        for s in run.sent:
            if s.done_at is None:
                v.problem(f"{run.flavor}: {s.value!r} never got an outcome")
                continue
            took = s.done_at - s.sent_at
            if took > delivery_s + SLACK_S:
                v.problem(
                    f"{run.flavor}: {s.value!r} outcome after {took:.1f} s > delivery timeout"
                )
            if not s.acked:
                v.failed += 1
                continue
            v.acked += 1
            meta: RecordMetadata = s.result
            places = where.get(s.value, [])
            if not places:
                v.lost += 1
                v.problem(
                    f"{run.flavor}: acknowledged {s.value!r} at "
                    f"{meta.partition}/{meta.offset} is not in the log"
                )
            elif (meta.partition, meta.offset) not in places:
                v.problem(
                    f"{run.flavor}: {s.value!r} acknowledged at "
                    f"{meta.partition}/{meta.offset}, found at {places}"
                )
        for what, timeout, took in run.timer.overruns():
            v.problem(f"{run.flavor}: {what} took {took:.1f} s (timeout {timeout} s)")
    # Send order per partition, per producer (values carry the send index).
    for p, records in logs.items():
        last: dict[bytes, int] = {}
        for r in records:
            assert r.value is not None
            tag, _, index = r.value.rpartition(b"-")
            if not index.isdigit():
                continue
            if int(index) <= last.get(tag, -1):
                v.problem(f"partition {p}: {r.value!r} after index {last[tag]} of {tag!r}")
            last[tag] = int(index)
    return v


# -- transactions --------------------------------------------------------------------------


@dataclass
class Txn:
    values: list[bytes]
    intent: str  # "commit" or "abort"
    status: str = "unknown"  # "committed", "aborted" or "unknown" (the call failed)
    error: str = ""


@dataclass
class TxnRun:
    flavor: str
    txns: list[Txn]
    timer: CallTimer
    reopened: int = 0


def txn_job(
    flavor: str,
    bootstrap: str,
    topic: str,
    *,
    transactional_id: str,
    n_txns: int,
    per_txn: int,
    seed: int,
    options: dict[str, Any],
    input_offsets: Callable[[int], dict[TopicPartition, int]] | None = None,
    group_id: str | None = None,
) -> Callable[[], Awaitable[TxnRun]]:
    rng = random.Random(seed)
    op_s = 20.0

    async def main() -> TxnRun:
        timer = CallTimer()
        run = TxnRun(flavor, [], timer)
        i = 0
        while i < n_txns:
            # One producer life; a failure we cannot recover from ends it and
            # the next life's init_transactions fences and settles the old one.
            async with open_producer(
                flavor, bootstrap, timer, transactional_id=transactional_id, **options
            ) as producer:
                try:
                    await producer.init_transactions(op_s)
                except Exception as exc:
                    run.reopened += 1
                    if run.reopened > 3 * n_txns:
                        raise AssertionError(
                            f"{flavor}: init_transactions keeps failing: {exc!r}"
                        ) from exc
                    continue
                while i < n_txns:
                    txn = Txn(
                        [b"%s-t%04d-%03d" % (flavor.encode(), i, j) for j in range(per_txn)],
                        "commit" if rng.random() < 0.7 else "abort",
                    )
                    run.txns.append(txn)
                    i += 1
                    ok = await _one_txn(producer, topic, txn, op_s, input_offsets, group_id, i)
                    if not ok:
                        run.reopened += 1
                        break
                    await anyio.sleep(rng.uniform(0.0, 0.4))  # spread over the faults
        return run

    return main


async def _one_txn(
    producer: Any,
    topic: str,
    txn: Txn,
    op_s: float,
    input_offsets: Callable[[int], dict[TopicPartition, int]] | None,
    group_id: str | None,
    index: int,
) -> bool:
    """Run one transaction; False when the producer must be replaced."""
    results: list[Any] = []
    try:
        await producer.begin_transaction()
        async with anyio.create_task_group() as tg:
            for value in txn.values:
                await producer.send(tg, topic, value, None, lambda r, t: results.append(r))
        if input_offsets is not None and group_id is not None:
            await producer.send_offsets_to_transaction(input_offsets(index), group_id, op_s)
        if txn.intent == "commit":
            await producer.commit_transaction(op_s)
            txn.status = "committed"
        else:
            await producer.abort_transaction(op_s)
            txn.status = "aborted"
        return True
    except Exception as exc:
        txn.error = repr(exc)
        try:
            await producer.abort_transaction(op_s)
        except Exception:
            return False
        # An abort that went through settles it, even after a failed commit call.
        txn.status = "aborted"
        return True


def check_txns(
    runs: Sequence[TxnRun],
    committed_view: dict[int, list[ReadRecord]],
    all_view: dict[int, list[ReadRecord]],
) -> Verdict:
    v = Verdict()
    seen = Counter(r.value for recs in committed_view.values() for r in recs)
    everything = Counter(r.value for recs in all_view.values() for r in recs)
    for value, n in everything.items():
        if n > 1:
            v.duplicated += n - 1
            v.problem(f"{value!r} written {n} times")
    for value, n in seen.items():
        if n > 1:
            v.problem(f"read_committed sees {value!r} {n} times")
    for run in runs:
        for txn in run.txns:
            present = [seen[x] > 0 for x in txn.values]
            if txn.status == "committed":
                v.acked += len(txn.values)
                missing = present.count(False)
                if missing:
                    v.lost += missing
                    v.problem(
                        f"{run.flavor}: committed {txn.values[0]!r}.. misses {missing} records"
                    )
            elif txn.status == "aborted":
                v.failed += len(txn.values)
                if any(present):
                    v.problem(
                        f"{run.flavor}: aborted {txn.values[0]!r}.. is visible to read_committed"
                    )
            else:
                v.failed += len(txn.values)
                if any(present) and not all(present):
                    v.problem(f"{run.flavor}: {txn.values[0]!r}.. ({txn.error}) is partly visible")
        for what, timeout, took in run.timer.overruns():
            v.problem(f"{run.flavor}: {what} took {took:.1f} s (timeout {timeout} s)")
    return v


# -- consumer groups ----------------------------------------------------------------------


@dataclass
class MemberLog:
    name: str
    deliveries: list[tuple[int, int, float]] = field(default_factory=list)  # partition, offset, t
    commits: list[tuple[dict[int, int], float]] = field(default_factory=list)
    commit_errors: list[str] = field(default_factory=list)
    timer: CallTimer = field(default_factory=CallTimer)
    error: BaseException | None = None


def member_job(
    flavor: str,
    topic: str,
    log: MemberLog,
    stop: threading.Event,
    *,
    options: dict[str, Any],
    start_after_s: float = 0.0,
    leave_after_s: float | None = None,
) -> Callable[[], Awaitable[MemberLog]]:
    async def main() -> MemberLog:
        await anyio.sleep(start_after_s)
        began = time.monotonic()
        async with open_consumer(flavor, [topic], log.timer, **options) as consumer:
            while not stop.is_set():
                if leave_after_s is not None and time.monotonic() - began > leave_after_s:
                    break
                records = await consumer.poll_records(timeout=0.5)
                now = time.monotonic()
                log.deliveries.extend((r.partition, r.offset, now) for r in records)
                if records:
                    try:
                        done = await consumer.commit(None, timeout=15.0)
                    except Exception as exc:
                        log.commit_errors.append(repr(exc))
                        continue
                    log.commits.append(
                        ({tp.partition: om.offset for tp, om in done.items()}, time.monotonic())
                    )
            await consumer.close(timeout=15.0)
        return log

    return main


def check_group(logs: Sequence[MemberLog], ends: dict[int, int]) -> Verdict:
    v = Verdict()
    delivered: dict[int, Counter[int]] = defaultdict(Counter)
    for log in logs:
        if log.error is not None:
            v.problem(f"{log.name}: {log.error!r}")
        for p, o, _ in log.deliveries:
            delivered[p][o] += 1
        for what, timeout, took in log.timer.overruns():
            v.problem(f"{log.name}: {what} took {took:.1f} s (timeout {timeout} s)")
    for p, end in ends.items():
        missing = [o for o in range(end) if delivered[p][o] == 0]
        if missing:
            v.lost += len(missing)
            v.problem(f"partition {p}: {len(missing)} records never delivered, first {missing[:5]}")
        v.acked += end
        v.duplicated += sum(n - 1 for n in delivered[p].values() if n > 1)
    # Redelivery is allowed only above every offset committed before it: per
    # partition, the highest committed offset as a step function of time.
    steps: dict[int, tuple[list[float], list[int], list[str]]] = defaultdict(lambda: ([], [], []))
    for t, p, off, who in sorted(
        (t, p, off, log.name)
        for log in logs
        for offsets, t in log.commits
        for p, off in offsets.items()
    ):
        times, highs, names = steps[p]
        if not highs or off > highs[-1]:
            times.append(t)
            highs.append(off)
            names.append(who)
    for log in logs:
        for p, o, t in log.deliveries:
            times, highs, names = steps[p]
            i = bisect.bisect_left(times, t) - 1
            if i >= 0 and highs[i] > o:
                v.problem(
                    f"{log.name} got {p}/{o} at {t:.2f} after {names[i]} committed "
                    f"{p}/{highs[i]} at {times[i]:.2f}"
                )
    return v


# -- consume-transform-produce with transactions ----------------------------------------


class Rebalances:
    """A rebalance listener that only counts; its presence makes revocations
    wait for ``poll`` (the consumer's Java-like contract), so that a
    transaction begun after a poll is never crossed by one."""

    def __init__(self) -> None:
        self.assigned = 0
        self.revoked = 0
        self.lost = 0

    def on_partitions_assigned(self, partitions: frozenset[Any]) -> None:
        self.assigned += 1

    def on_partitions_revoked(self, partitions: frozenset[Any]) -> None:
        self.revoked += 1

    def on_partitions_lost(self, partitions: frozenset[Any]) -> None:
        self.lost += 1


@dataclass
class EosRun:
    flavor: str
    processed: int = 0
    committed_txns: int = 0
    failed_txns: int = 0
    producers: int = 0
    timer: CallTimer = field(default_factory=CallTimer)
    rebalances: Rebalances = field(default_factory=Rebalances)
    errors: list[str] = field(default_factory=list)


def eos_job(
    flavor: str,
    bootstrap: str,
    source: str,
    sink: str,
    partitions: int,
    total: int,
    *,
    group_id: str,
    transactional_id: str,
    consumer_options: dict[str, Any],
    producer_options: dict[str, Any],
    budget_s: float,
    pace_s: float = 0.0,
) -> Callable[[], Awaitable[EosRun]]:
    """Read ``source`` (read_committed, in ``group_id``), write ``out|<value>`` to
    ``sink`` and commit the input offsets in the same transaction, until every one
    of the ``total`` input records is committed. After any failure the producer is
    replaced (its init_transactions settles the open transaction) and the consumer
    rewinds to the group's committed offsets, the source of truth."""
    op_s = 30.0
    tps = [TopicPartition(source, p) for p in range(partitions)]

    async def main() -> EosRun:
        run = EosRun(flavor)
        deadline = time.monotonic() + budget_s
        async with contextlib.AsyncExitStack() as outer:
            consumer = await outer.enter_async_context(
                open_consumer(
                    flavor,
                    [source],
                    run.timer,
                    bootstrap_servers=bootstrap,
                    group_id=group_id,
                    isolation_level="read_committed",
                    auto_offset_reset="earliest",
                    enable_auto_commit=False,
                    max_poll_records=20,
                    listener=run.rebalances,
                    **consumer_options,
                )
            )
            while run.processed < total:
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"{flavor}: {run.processed} of {total} committed within {budget_s} s"
                    )
                async with open_producer(
                    flavor,
                    bootstrap,
                    run.timer,
                    transactional_id=transactional_id,
                    **producer_options,
                ) as producer:
                    run.producers += 1
                    try:
                        await producer.init_transactions(op_s)
                        # What is committed now is the truth: rewind to it.
                        committed = await consumer.committed(tps, op_s)
                        run.processed = 0
                        for tp in tps:
                            om = committed.get(tp)
                            offset = 0 if om is None else om.offset
                            run.processed += offset
                            if tp in consumer.assignment():
                                consumer.seek(tp, offset)
                    except Exception as exc:
                        run.errors.append(f"recover: {exc!r}")
                        await anyio.sleep(0.5)
                        continue
                    while run.processed < total and time.monotonic() < deadline:
                        records = await consumer.poll_records(timeout=0.5)
                        if not records:
                            continue
                        if not await _eos_txn(producer, sink, records, group_id, op_s, run):
                            break  # a new producer, and a rewind
                        run.processed += len(records)
                        run.committed_txns += 1
                        await anyio.sleep(pace_s * random.random())  # spread over the chaos
        return run

    return main


async def _eos_txn(
    producer: Any, sink: str, records: list[Any], group_id: str, op_s: float, run: EosRun
) -> bool:
    offsets: dict[TopicPartition, int] = {}
    for r in records:
        tp = TopicPartition(r.topic, r.partition)
        offsets[tp] = max(offsets.get(tp, 0), r.offset + 1)
    outcomes: list[Any] = []
    try:
        await producer.begin_transaction()
        async with anyio.create_task_group() as tg:
            for r in records:
                await producer.send(
                    tg, sink, b"out|" + r.value, r.key, lambda x, t: outcomes.append(x)
                )
        await producer.send_offsets_to_transaction(offsets, group_id, op_s)
        await producer.commit_transaction(op_s)
        return True
    except Exception as exc:
        run.failed_txns += 1
        run.errors.append(repr(exc)[:200])
        return False


class ClusterChaos:
    """SIGKILL or SIGSTOP one random broker at a time, then bring it back (seeded)."""

    def __init__(self, kafka: Any, rng: random.Random, *, gap_s: tuple[float, float]) -> None:
        self.kafka = kafka
        self.rng = rng
        self.gap_s = gap_s
        self.actions: list[str] = []
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cluster-chaos", daemon=True)

    def __enter__(self) -> ClusterChaos:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(180)

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.rng.uniform(*self.gap_s)):
                node = self.rng.choice(self.kafka.nodes)
                if self.rng.random() < 0.5:
                    down = self.rng.uniform(1.0, 4.0)
                    self.actions.append(f"SIGKILL node {node.node_id}, restart after {down:.1f} s")
                    self.kafka.kill(node.node_id)
                    self._stop.wait(down)
                    self.kafka.restart(node.node_id)
                else:
                    frozen = self.rng.uniform(1.0, 5.0)
                    self.actions.append(f"SIGSTOP node {node.node_id} for {frozen:.1f} s")
                    self.kafka.pause(node.node_id)
                    self._stop.wait(frozen)
                    self.kafka.resume(node.node_id)
        except BaseException as exc:
            self.error = exc

"""The fault campaign: real brokers behind seeded fault proxies, all three transports at once.

Every scenario runs one worker per transport (selector, asyncio, trio) side
by side, bootstrapped on the brokers' proxies (``kafka_broker.proxy_bootstrap``),
while each proxy cuts, delays, stalls and drops connections drawn from the
campaign seed and a chaos thread cuts every open connection at random
moments. What the broker holds is then read on its direct listener and
checked against what each caller was told (see ``scenarios.py``).

A failure prints the seed (the "campaign seed" report section) and how to
replay it. ``--long`` multiplies records, rounds and group churn; its counts
are recorded in docs/reliability.md, as are those of the default run.
Setting ``KAFKACORE_CAMPAIGN_LOG=<file>`` appends one JSON line per scenario
(the rows of that table).
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kafkacore.client import TopicPartition
from kafkacore.testing import FaultMix, LocalKafka
from kafkacore.testing.pytest_plugin import repair
from tests.campaign.adapters import FLAVORS, CallTimer, open_consumer, run_flavor
from tests.campaign.conftest import say
from tests.campaign.scenarios import (
    Chaos,
    MemberLog,
    Verdict,
    check_group,
    check_producers,
    check_txns,
    faults_injected,
    injected_now,
    member_job,
    producer_job,
    read_all,
    run_concurrently,
    txn_job,
)

pytestmark = pytest.mark.timeout(900)

PARTITIONS = 6
#: What the proxies do to each new connection (the rest pass through).
MIX = FaultMix(
    cut=0.15,
    delay=0.15,
    stall=0.05,
    drop=0.05,
    max_offset=12 * 1024,
    delay_s=(0.002, 0.05),
    stall_s=(0.5, 2.5),
)
CHAOS_EVERY_S = (0.5, 1.5)
CLIENT = {"request_timeout_ms": 3000, "reconnect_backoff_max_ms": 1000}


@pytest.fixture
def kafka(kafka_broker: LocalKafka) -> Iterator[LocalKafka]:
    """The session broker, its proxies left clean afterwards."""
    yield kafka_broker
    repair(kafka_broker)


def _topic(kafka: LocalKafka, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(name, partitions=PARTITIONS)
    return name


def _faults_on(kafka: LocalKafka, seed: int) -> dict[str, int]:
    for i, proxy in enumerate(kafka.proxies):
        proxy.set_mix(MIX, seed=seed + i)
    return injected_now(kafka.proxies)


def _report(request: pytest.FixtureRequest, row: dict[str, Any]) -> None:
    line = json.dumps(row, sort_keys=True)
    say(request.config, f"campaign: {line}")
    path = os.environ.get("KAFKACORE_CAMPAIGN_LOG")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


def _verdict(v: Verdict, seed: int, faults: dict[str, int]) -> None:
    assert sum(faults.values()) > 0, "no fault was injected: this run proves nothing"
    assert v.lost == 0 and v.duplicated == 0 and not v.problems, (
        f"seed {seed}: lost {v.lost}, duplicated {v.duplicated}; faults {faults}\n"
        + "\n".join(v.problems)
    )


def test_idempotent_producers_lose_and_duplicate_nothing(
    kafka: LocalKafka, campaign_seed: int, long_run: bool, request: pytest.FixtureRequest
) -> None:
    topic = _topic(kafka, "camp-idem")
    count = 30_000 if long_run else 2_000
    options = {
        **CLIENT,
        "linger_ms": 5,
        "batch_size": 4096,
        "delivery_timeout_ms": 20000,
        "max_block_ms": 20000,
        "enable_idempotence": True,
    }
    before = _faults_on(kafka, campaign_seed)
    started = time.monotonic()
    with Chaos(kafka.proxies, random.Random(campaign_seed), CHAOS_EVERY_S) as chaos:
        results = run_concurrently(
            [
                (
                    f,
                    producer_job(
                        f, kafka.proxy_bootstrap, topic, count, options=options, pace_s=0.1
                    ),
                )
                for f in FLAVORS
            ]
        )
    for r in results:
        if isinstance(r, BaseException):
            raise AssertionError(f"seed {campaign_seed}: a producer crashed: {r!r}") from r
    logs = read_all(kafka.bootstrap, topic, PARTITIONS)
    v = check_producers(results, logs, options["delivery_timeout_ms"] / 1000)
    faults = faults_injected(kafka.proxies, before)
    faults["cut_all"] = faults.get("cut_all", 0)
    _report(
        request,
        {
            "scenario": "idempotent producers",
            "seed": campaign_seed,
            "long": long_run,
            "seconds": round(time.monotonic() - started, 1),
            "faults": faults,
            "chaos_cuts": chaos.cuts,
            "sent": 3 * count,
            "acked": v.acked,
            "failed": v.failed,
            "lost": v.lost,
            "duplicated": v.duplicated,
        },
    )
    _verdict(v, campaign_seed, faults)
    assert v.acked > 0, "nothing was acknowledged"


def test_transactions_read_committed_sees_only_committed(
    kafka: LocalKafka, campaign_seed: int, long_run: bool, request: pytest.FixtureRequest
) -> None:
    topic = _topic(kafka, "camp-txn")
    n_txns, per_txn = (100, 50) if long_run else (15, 20)
    options = {**CLIENT, "linger_ms": 5, "delivery_timeout_ms": 20000, "max_block_ms": 20000}
    run_id = uuid.uuid4().hex[:6]
    before = _faults_on(kafka, campaign_seed)
    started = time.monotonic()
    with Chaos(kafka.proxies, random.Random(campaign_seed), CHAOS_EVERY_S) as chaos:
        results = run_concurrently(
            [
                (
                    f,
                    txn_job(
                        f,
                        kafka.proxy_bootstrap,
                        topic,
                        transactional_id=f"camp-{run_id}-{f}",
                        n_txns=n_txns,
                        per_txn=per_txn,
                        seed=campaign_seed + i,
                        options=options,
                    ),
                )
                for i, f in enumerate(FLAVORS)
            ]
        )
        # A read_committed consumer through the faulty proxies sees the same.
        committed = read_all(kafka.bootstrap, topic, PARTITIONS, isolation_level=1)
        want = sorted(r.value or b"" for recs in committed.values() for r in recs)
        reader = FLAVORS[campaign_seed % 3]
        through_proxy = run_flavor(
            reader, _read_committed_job(reader, kafka.proxy_bootstrap, topic, len(want))
        )
    for r in results:
        if isinstance(r, BaseException):
            raise AssertionError(f"seed {campaign_seed}: a transactional producer crashed: {r!r}")
    everything = read_all(kafka.bootstrap, topic, PARTITIONS)
    v = check_txns(results, committed, everything)
    if sorted(through_proxy) != want:
        v.problem(
            f"{reader} read_committed consumer through the proxy saw {len(through_proxy)} "
            f"records, the broker holds {len(want)} committed"
        )
    faults = faults_injected(kafka.proxies, before)
    statuses: dict[str, int] = {}
    for run in results:
        for t in run.txns:
            statuses[t.status] = statuses.get(t.status, 0) + 1
    _report(
        request,
        {
            "scenario": "transactions",
            "seed": campaign_seed,
            "long": long_run,
            "seconds": round(time.monotonic() - started, 1),
            "faults": faults,
            "chaos_cuts": chaos.cuts,
            "transactions": statuses,
            "acked": v.acked,
            "lost": v.lost,
            "duplicated": v.duplicated,
            "reader": reader,
        },
    )
    _verdict(v, campaign_seed, faults)
    assert statuses.get("committed", 0) > 0, f"no transaction committed: {statuses}"


def _read_committed_job(flavor: str, bootstrap: str, topic: str, want: int) -> Any:
    async def main() -> list[bytes]:
        import anyio

        got: list[bytes] = []
        timer = CallTimer()
        async with open_consumer(
            flavor,
            [],
            timer,
            bootstrap_servers=bootstrap,
            isolation_level="read_committed",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            **CLIENT,
        ) as consumer:
            consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
            with anyio.move_on_after(60):
                while len(got) < want:
                    got.extend(r.value for r in await consumer.poll_records(timeout=0.5))
            # A little longer: anything beyond ``want`` would be an aborted record.
            with anyio.move_on_after(1.5):
                while True:
                    got.extend(r.value for r in await consumer.poll_records(timeout=0.5))
        return got

    return main


@pytest.mark.parametrize(
    "protocol",
    [
        pytest.param({"group_protocol": "classic",
                      "partition_assignment_strategy": ("cooperative-sticky",)}, id="classic-coop"),
        pytest.param({"group_protocol": "classic", "partition_assignment_strategy": ("range",)},
                     id="classic-range"),
        pytest.param({"group_protocol": "consumer"}, id="kip848"),
    ],
)  # fmt: skip
def test_group_members_neither_skip_nor_redeliver_below_commits(
    kafka: LocalKafka,
    campaign_seed: int,
    long_run: bool,
    request: pytest.FixtureRequest,
    protocol: dict[str, Any],
) -> None:
    topic = _topic(kafka, "camp-group")
    group = f"camp-{uuid.uuid4().hex[:8]}"
    total = 12_000 if long_run else 1_500
    trickle_s = 40.0 if long_run else 8.0
    options: dict[str, Any] = {
        "bootstrap_servers": kafka.proxy_bootstrap,
        "group_id": group,
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
        "max_poll_records": 50,
        "session_timeout_ms": 10000,
        "heartbeat_interval_ms": 500,
        "default_api_timeout_ms": 15000,
        **CLIENT,
        **protocol,
    }
    before = _faults_on(kafka, campaign_seed)
    stop = threading.Event()
    logs = [MemberLog(f"{f}#1") for f in FLAVORS] + [MemberLog("selector#2")]
    plan = [  # flavor, log, start after, leave after
        ("selector", logs[0], 0.0, trickle_s * 0.6),
        ("asyncio", logs[1], 1.5, None),
        ("trio", logs[2], 3.0, None),
        ("selector", logs[3], trickle_s * 0.5, None),
    ]
    started = time.monotonic()
    with Chaos(kafka.proxies, random.Random(campaign_seed), CHAOS_EVERY_S) as chaos:
        trickler = threading.Thread(
            target=_trickle, args=(kafka.bootstrap, topic, total, trickle_s), daemon=True
        )
        trickler.start()
        done_at: list[float] = []

        def watch() -> None:
            trickler.join()
            ends = _ends(kafka, topic)
            deadline = time.monotonic() + (240 if long_run else 90)
            while time.monotonic() < deadline:
                seen = {(p, o) for log in logs for p, o, _ in log.deliveries}
                if all((p, o) in seen for p, end in ends.items() for o in range(end)):
                    break
                time.sleep(0.2)
            done_at.append(time.monotonic())
            stop.set()

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        results = run_concurrently(
            [
                (
                    f,
                    member_job(
                        f,
                        topic,
                        log,
                        stop,
                        options=options,
                        start_after_s=start,
                        leave_after_s=leave,
                    ),
                )
                for f, log, start, leave in plan
            ]
        )
        watcher.join(300)
    for log, r in zip(logs, results, strict=True):
        if isinstance(r, BaseException):
            log.error = r
    ends = _ends(kafka, topic)
    v = check_group(logs, ends)
    faults = faults_injected(kafka.proxies, before)
    _report(
        request,
        {
            "scenario": f"group {request.node.callspec.id}",
            "seed": campaign_seed,
            "long": long_run,
            "seconds": round(time.monotonic() - started, 1),
            "faults": faults,
            "chaos_cuts": chaos.cuts,
            "records": sum(ends.values()),
            "deliveries": sum(len(log.deliveries) for log in logs),
            "commits": sum(len(log.commits) for log in logs),
            "commit_errors": sum(len(log.commit_errors) for log in logs),
            "skipped": v.lost,
            "redelivered": v.duplicated,
        },
    )
    _verdict_group(v, campaign_seed, faults)


def _verdict_group(v: Verdict, seed: int, faults: dict[str, int]) -> None:
    # Redelivery above the committed offset is allowed (at-least-once); skipping
    # is not, nor is redelivery below a commit (checked in v.problems).
    assert sum(faults.values()) > 0, "no fault was injected: this run proves nothing"
    assert v.lost == 0 and not v.problems, (
        f"seed {seed}: skipped {v.lost}; faults {faults}\n" + "\n".join(v.problems)
    )


def _trickle(bootstrap: str, topic: str, total: int, seconds: float) -> None:
    """Produce ``total`` records evenly over ``seconds`` on the direct listener."""
    from kafkacore.transports.selector import KafkaProducer

    per_tick = max(total // int(seconds * 10), 1)
    with KafkaProducer(bootstrap, linger_ms=5) as producer:
        sent = 0
        while sent < total:
            n = min(per_tick, total - sent)
            for i in range(n):
                producer.send(topic, b"r-%07d" % (sent + i), b"k%d" % ((sent + i) % 60))
            sent += n
            time.sleep(0.1)
        producer.flush(60)


def _ends(kafka: LocalKafka, topic: str) -> dict[int, int]:
    logs = read_all(kafka.bootstrap, topic, PARTITIONS)
    return {p: (recs[-1].offset + 1 if recs else 0) for p, recs in logs.items()}

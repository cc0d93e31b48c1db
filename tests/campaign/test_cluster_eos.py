"""Exactly once, end to end, while brokers of the 3-node cluster are killed and frozen.

Three consume-transform-produce pipelines run at once, one per transport,
each in its own consumer group (classic cooperative-sticky, KIP-848, classic
range) reading its own input topic with read_committed and writing
``out|<input>`` to one shared output topic, committing its input offsets in
the same transaction (``send_offsets_to_transaction``). Meanwhile a chaos
thread, seeded by the campaign seed, SIGKILLs a random broker (and restarts
it) or SIGSTOPs one (and SIGCONTs it), one at a time.

Each pipeline has its own group, so no member ever processes another's
partitions: what is checked is the transactions and the consumer against
broker crashes, not KIP-447 zombie fencing (see docs/reliability.md: the
transports cannot pass a consumer's generation to send_offsets_to_transaction).

At the end a read_committed read of the output, on the direct listener, must
hold every input record exactly once.
"""

from __future__ import annotations

import random
import time
import uuid
from collections import Counter
from typing import Any

import pytest

from kafkacore.testing import LocalKafka
from tests.campaign.adapters import FLAVORS
from tests.campaign.scenarios import ClusterChaos, EosRun, eos_job, read_all, run_concurrently
from tests.campaign.test_proxy_campaign import _report

pytestmark = pytest.mark.timeout(900)

PARTITIONS = 3
GROUPS: dict[str, dict[str, Any]] = {
    "selector": {
        "group_protocol": "classic",
        "partition_assignment_strategy": ("cooperative-sticky",),
    },
    "asyncio": {"group_protocol": "consumer"},
    "trio": {"group_protocol": "classic", "partition_assignment_strategy": ("range",)},
}


def _fill(kafka: LocalKafka, topic: str, prefix: str, total: int) -> None:
    from kafkacore.transports.selector import KafkaProducer

    with KafkaProducer(kafka.bootstrap, linger_ms=5) as producer:
        for i in range(total):
            producer.send(topic, b"%s-%06d" % (prefix.encode(), i), b"k%d" % (i % 30))
        producer.flush(60)


def test_consume_transform_produce_is_exactly_once_across_kills_and_pauses(
    kafka_cluster: LocalKafka, campaign_seed: int, long_run: bool, request: pytest.FixtureRequest
) -> None:
    run_id = uuid.uuid4().hex[:6]
    total = 4000 if long_run else 600
    budget_s = 600.0 if long_run else 150.0
    sink = f"eos-out-{run_id}"
    kafka_cluster.create_topic(sink, partitions=PARTITIONS, replication_factor=3)
    sources = {}
    for f in FLAVORS:
        sources[f] = f"eos-in-{run_id}-{f}"
        kafka_cluster.create_topic(sources[f], partitions=PARTITIONS, replication_factor=3)
        _fill(kafka_cluster, sources[f], f, total)
    client = {"request_timeout_ms": 5000, "reconnect_backoff_max_ms": 1000}
    jobs = [
        (
            f,
            eos_job(
                f,
                kafka_cluster.bootstrap,
                sources[f],
                sink,
                PARTITIONS,
                total,
                group_id=f"eos-{run_id}-{f}",
                transactional_id=f"eos-{run_id}-{f}",
                consumer_options={
                    **client,
                    **GROUPS[f],
                    "session_timeout_ms": 15000,
                    "heartbeat_interval_ms": 1000,
                    "default_api_timeout_ms": 30000,
                },
                producer_options={
                    **client,
                    "linger_ms": 5,
                    "delivery_timeout_ms": 30000,
                    "max_block_ms": 30000,
                    "transaction_timeout_ms": 30000,
                },
                budget_s=budget_s,
                pace_s=0.8,
            ),
        )
        for f in FLAVORS
    ]
    started = time.monotonic()
    gap = (2.0, 5.0)
    with ClusterChaos(kafka_cluster, random.Random(campaign_seed), gap_s=gap) as chaos:
        results = run_concurrently(jobs)
    assert chaos.error is None, f"seed {campaign_seed}: the chaos thread failed: {chaos.error!r}"
    crashed = [r for r in results if isinstance(r, BaseException)]
    runs: list[EosRun] = [r for r in results if isinstance(r, EosRun)]
    out = read_all(kafka_cluster.bootstrap, sink, PARTITIONS, isolation_level=1)
    seen = Counter(r.value or b"" for recs in out.values() for r in recs)
    want = {b"out|%s-%06d" % (f.encode(), i) for f in FLAVORS for i in range(total)}
    missing = sorted(want - set(seen))
    dupes = {v: n for v, n in seen.items() if n > 1}
    extra = sorted(set(seen) - want)
    _report(
        request,
        {
            "scenario": "cluster EOS consume-transform-produce",
            "seed": campaign_seed,
            "long": long_run,
            "seconds": round(time.monotonic() - started, 1),
            "chaos": chaos.actions,
            "input": 3 * total,
            "output_committed": sum(seen.values()),
            "lost": len(missing),
            "duplicated": sum(n - 1 for n in dupes.values()),
            "transactions": sum(r.committed_txns for r in runs),
            "failed_transactions": sum(r.failed_txns for r in runs),
            "producers": sum(r.producers for r in runs),
        },
    )
    details = "\n".join(
        f"{r.flavor}: {r.processed} committed, {r.committed_txns} txns, {r.failed_txns} failed, "
        f"{r.producers} producers, rebalances {vars(r.rebalances)}, errors {r.errors[:3]}"
        for r in runs
    )
    assert not crashed, f"seed {campaign_seed}: {crashed!r}\n{details}\nchaos: {chaos.actions}"
    assert chaos.actions, "no broker was killed or paused: the run proves nothing"
    assert not missing and not dupes and not extra, (
        f"seed {campaign_seed}: {len(missing)} missing (first {missing[:3]}), "
        f"{len(dupes)} duplicated (first {list(dupes.items())[:3]}), {len(extra)} unexpected\n"
        f"{details}\nchaos: {chaos.actions}"
    )

"""Message codec benchmark: kafkacore's generated classes against the peers.

Run: ``.venv/bin/python benchmarks/bench_codec_messages.py [--quick] [--markdown] [--json F]``

Cases (the client's hot paths):

* decode a Metadata response with 50 topics x 20 partitions (3 replicas);
  kafkacore at v12 and v5, kafka-python 3.x (its JSON-schema classes) at
  v12, aiokafka (hand-written structs) at v5;
* encode the same Metadata response (kafkacore only: the peers' response
  encoders are not a client path);
* decode a Fetch response v16 with 10 topics x 10 partitions of 1 KiB
  records (records stay opaque: a zero-copy memoryview in kafkacore).

Each case runs ``inner`` times per sample; the best of ``repeat`` samples
is reported (the machine is shared; the minimum is the least noisy) as
messages per second, with the ratio to kafkacore.
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import sys
import time
import uuid
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _harness import Row, render_table, with_ratios, write_rows

from kafkacore.protocol.messages import FetchResponse, MetadataResponse
from kafkacore.protocol.messages.fetch_response import (
    FetchableTopicResponse,
    PartitionData,
)
from kafkacore.protocol.messages.metadata_response import (
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)

HARNESS = "codec messages"


def metadata(n_topics: int = 50, n_partitions: int = 20) -> MetadataResponse:
    brokers = [
        MetadataResponseBroker(node_id=i, host=f"broker-{i}.example.com", port=9092, rack=f"r{i}")
        for i in range(3)
    ]
    topics = [
        MetadataResponseTopic(
            name=f"topic-{t:03d}",
            topic_id=uuid.UUID(int=t + 1),
            partitions=[
                MetadataResponsePartition(
                    partition_index=p,
                    leader_id=p % 3,
                    leader_epoch=7,
                    replica_nodes=[p % 3, (p + 1) % 3, (p + 2) % 3],
                    isr_nodes=[p % 3, (p + 1) % 3, (p + 2) % 3],
                )
                for p in range(n_partitions)
            ],
        )
        for t in range(n_topics)
    ]
    return MetadataResponse(brokers=brokers, cluster_id="cluster", controller_id=1, topics=topics)


def fetch_response() -> FetchResponse:
    records = bytes(1024)
    return FetchResponse(
        session_id=1,
        responses=[
            FetchableTopicResponse(
                topic_id=uuid.UUID(int=t + 1),
                partitions=[
                    PartitionData(partition_index=p, high_watermark=1000, records=records)
                    for p in range(10)
                ],
            )
            for t in range(10)
        ],
    )


def best(fn: Callable[[], object], inner: int, repeat: int) -> float:
    """Messages per second of the best sample."""
    fn()
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append(time.perf_counter() - t0)
    return inner / min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    parser.add_argument("--markdown", action="store_true", help="also print markdown tables")
    parser.add_argument("--json", help="also write the rows to this JSON file")
    args = parser.parse_args()
    inner, repeat = (20, 3) if args.quick else (100, 7)

    results: list[tuple[str, str, float | None]] = []
    meta = metadata()
    body12 = meta.encode(12)
    body5 = meta.encode(5)
    results.append(
        (
            "metadata 50x20 decode v12",
            "kafkacore",
            best(lambda: MetadataResponse.decode(body12, 12), inner, repeat),
        )
    )
    results.append(
        (
            "metadata 50x20 decode v5",
            "kafkacore",
            best(lambda: MetadataResponse.decode(body5, 5), inner, repeat),
        )
    )
    try:
        from kafka.protocol.metadata.metadata import (  # type: ignore[import-untyped]
            MetadataResponse as KpMetadata,
        )

        KpMetadata.decode(io.BytesIO(body12), version=12)
        results.append(
            (
                "metadata 50x20 decode v12",
                "kafka-python",
                best(lambda: KpMetadata.decode(io.BytesIO(body12), version=12), inner, repeat),
            )
        )
    except Exception as exc:  # a peer that cannot run is reported, not fatal
        results.append(("metadata 50x20 decode v12", f"kafka-python ({exc})", None))
    try:
        from aiokafka.protocol.metadata import MetadataResponse_v5  # type: ignore[import-untyped]

        MetadataResponse_v5.decode(io.BytesIO(body5))
        results.append(
            (
                "metadata 50x20 decode v5",
                "aiokafka",
                best(lambda: MetadataResponse_v5.decode(io.BytesIO(body5)), inner, repeat),
            )
        )
    except Exception as exc:
        results.append(("metadata 50x20 decode v5", f"aiokafka ({exc})", None))
    results.append(
        ("metadata 50x20 encode v12", "kafkacore", best(lambda: meta.encode(12), inner, repeat))
    )

    fetch = fetch_response().encode(16)
    results.append(
        (
            "fetch 10x10x1KiB decode v16",
            "kafkacore",
            best(lambda: FetchResponse.decode(fetch, 16), inner * 5, repeat),
        )
    )
    try:
        from kafka.protocol.consumer.fetch import (  # type: ignore[import-untyped]
            FetchResponse as KpFetch,
        )

        KpFetch.decode(io.BytesIO(fetch), version=16)
        results.append(
            (
                "fetch 10x10x1KiB decode v16",
                "kafka-python",
                best(lambda: KpFetch.decode(io.BytesIO(fetch), version=16), inner * 5, repeat),
            )
        )
    except Exception as exc:
        results.append(("fetch 10x10x1KiB decode v16", f"kafka-python ({exc})", None))

    rows = with_ratios(
        [
            Row(harness=HARNESS, table=case, contender=who, rate=rate, unit="messages/s")
            for case, who, rate in results
            if rate is not None
        ]
    )
    failures = [f"{case} / {who}" for case, who, rate in results if rate is None]
    print(f"{'case':30} {'contender':22} {'msgs/s':>10} {'vs kafkacore':>12}")
    for row in rows:
        base = next(r for r in rows if r.table == row.table and r.contender == "kafkacore")
        ratio = row.rate / base.rate
        print(f"{row.table:30} {row.contender:22} {row.rate:10.0f} {ratio:11.2f}x")
    for failure in failures:
        print(f"{failure}: n/a")
    if args.markdown:
        for case in dict.fromkeys(r.table for r in rows):
            print(f"\n**{case}**\n")
            print(render_table([r for r in rows if r.table == case], first="codec"))
    if args.json:
        meta = {"harness": HARNESS, "inner": inner, "repeat": repeat, "failures": failures}
        write_rows(args.json, rows, meta)


if __name__ == "__main__":
    main()

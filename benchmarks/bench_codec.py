"""Codec benchmark: kafkacore against kafka-python and aiokafka, same inputs, one process.

Run: ``.venv/bin/python benchmarks/bench_codec.py [--quick] [--markdown]``

Cases
-----
* record batch v2 with 1,000 records (10-byte keys, 100-byte values, no
  headers), uncompressed and in every codec (gzip, snappy, lz4, zstd):
  *build* (append every record, then build the bytes) and *parse* (decode
  the bytes and touch every record's key and value);
* decode a Metadata response with 50 topics x 20 partitions (v5, the newest
  aiokafka speaks, and v12, flexible);
* build and encode a Fetch request for 50 topics x 20 partitions (v11 and v12).

Contenders
----------
* kafkacore, compiled (the Rust extension, the default) and pure Python
  (the reference path, as with ``KAFKACORE_PURE=1``), both in this one
  process: per-record ``append`` and the batch call ``append_many``; parse
  by iterating ``Record`` tuples and through ``columns()``; the compiled
  path also through ``arrow_columns()`` (the buffers pyarrow wraps).
* kafka-python 3.x: ``kafka.record.default_records`` and its protocol classes
  (no snappy: it needs python-snappy, which the peers extra does not bring).
* aiokafka: ``aiokafka.record.default_records`` with its compiled (Cython)
  classes *and* the pure-Python classes (``_DefaultRecordBatchBuilderPy`` /
  ``_DefaultRecordBatchPy``, which aiokafka itself picks when
  ``AIOKAFKA_NO_EXTENSIONS`` is set), and its protocol classes (pure Python,
  Metadata up to v5, Fetch up to v11).

Each measurement runs the case ``inner`` times per sample and keeps the best
of ``repeat`` samples, contenders interleaved, in CPU time (the machine is
shared; see :func:`measure`). Results are records/s (or messages/s for the
protocol cases).
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _harness import byte_compile_kafkacore

# Before kafkacore's imports below: this process (and run_all's next ones)
# then loads compiled modules, as from an installed package.
byte_compile_kafkacore()

from kafkacore.records import Compression, RecordBatch  # noqa: E402
from kafkacore.records.builder import NativeRecordBatchBuilder, PyRecordBatchBuilder  # noqa: E402

N_RECORDS = 1000
KEYS = [b"key-%06d" % i for i in range(N_RECORDS)]  # 10 bytes
VALUES = [(b"%03d" % (i % 1000)) * 33 + b"x" for i in range(N_RECORDS)]  # 100 bytes
TIMESTAMPS = [1_700_000_000_000 + i // 10 for i in range(N_RECORDS)]
CODECS = {
    "none": Compression.NONE,
    "gzip": Compression.GZIP,
    "snappy": Compression.SNAPPY,
    "lz4": Compression.LZ4,
    "zstd": Compression.ZSTD,
}


class CompiledBatch(RecordBatch):
    __slots__ = ()
    _compiled = True


class PureBatch(RecordBatch):
    __slots__ = ()
    _compiled = False


assert all(len(k) == 10 for k in KEYS) and all(len(v) == 100 for v in VALUES)


@dataclass
class Result:
    case: str
    contender: str
    per_second: float


def measure(
    fns: Mapping[str, Callable[[], object]], *, inner: int, repeat: int
) -> dict[str, float]:
    """Best CPU time of one call per contender, in seconds.

    Contenders are interleaved round by round, so a burst of load from other
    processes on the shared machine hits all of them alike; CPU time
    (``process_time``) rather than wall time, because the codecs do no I/O
    and wall time on 2 busy cores mostly measures the scheduler.
    """
    for fn in fns.values():
        fn()  # warm up (imports, caches)
    best = dict.fromkeys(fns, float("inf"))
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat):
            for name, fn in fns.items():
                t0 = time.process_time()
                for _ in range(inner):
                    fn()
                best[name] = min(best[name], (time.process_time() - t0) / inner)
    finally:
        if gc_was:
            gc.enable()
    return best


# ---- record batches --------------------------------------------------------


def kc_build_append(builder_cls: Any, codec: Compression) -> bytes:
    builder = builder_cls(compression=codec, batch_size=1 << 20)
    append = builder.append
    for key, value, ts in zip(KEYS, VALUES, TIMESTAMPS, strict=True):
        append(value, key, timestamp=ts)
    data: bytes = builder.build()
    return data


def kc_build_many(builder_cls: Any, codec: Compression) -> bytes:
    builder = builder_cls(compression=codec, batch_size=1 << 20)
    builder.append_many(VALUES, KEYS, timestamps=TIMESTAMPS)
    data: bytes = builder.build()
    return data


def kc_parse_iter(batch_cls: type[RecordBatch], data: bytes) -> int:
    total = 0
    for record in batch_cls(data):
        total += len(record.key) + len(record.value)  # type: ignore[arg-type]
    return total


def kc_parse_columns(batch_cls: type[RecordBatch], data: bytes) -> int:
    cols = batch_cls(data).columns()
    return sum(map(len, cols.keys)) + sum(map(len, cols.values))  # type: ignore[arg-type]


def kc_parse_arrow(batch_cls: type[RecordBatch], data: bytes) -> int:
    cols = batch_cls(data).arrow_columns()
    # The byte counts come from the offsets, as a reader of the Arrow arrays sees them.
    return len(cols.keys.data) + len(cols.values.data)


def peer_build(builder_cls: Any, codec: int) -> bytes:
    builder = builder_cls(
        magic=2,
        compression_type=codec,
        is_transactional=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    append = builder.append
    for offset, (key, value, ts) in enumerate(zip(KEYS, VALUES, TIMESTAMPS, strict=True)):
        append(offset, timestamp=ts, key=key, value=value, headers=[])
    return bytes(builder.build())


def peer_parse(batch_cls: Any, data: bytes) -> int:
    total = 0
    for record in batch_cls(data):
        total += len(record.key) + len(record.value)
    return total


def record_contenders() -> dict[str, tuple[Callable[[Compression], bytes], Callable[[bytes], int]]]:
    from aiokafka.record import default_records as aio  # type: ignore[import-untyped]
    from kafka.record import default_records as kp  # type: ignore[import-untyped]

    def wrap_build(cls: Any) -> Callable[[Compression], bytes]:
        return lambda codec: peer_build(cls, int(codec))

    def wrap_parse(cls: Any) -> Callable[[bytes], int]:
        return lambda data: peer_parse(cls, data)

    compiled = partial(kc_build_many, NativeRecordBatchBuilder)
    return {
        "kafkacore compiled append / iter": (
            partial(kc_build_append, NativeRecordBatchBuilder),
            partial(kc_parse_iter, CompiledBatch),
        ),
        "kafkacore compiled append_many / columns": (
            compiled,
            partial(kc_parse_columns, CompiledBatch),
        ),
        "kafkacore compiled append_many / arrow": (
            compiled,
            partial(kc_parse_arrow, CompiledBatch),
        ),
        "kafkacore pure append / iter": (
            partial(kc_build_append, PyRecordBatchBuilder),
            partial(kc_parse_iter, PureBatch),
        ),
        "kafkacore pure append_many / columns": (
            partial(kc_build_many, PyRecordBatchBuilder),
            partial(kc_parse_columns, PureBatch),
        ),
        "kafka-python": (
            wrap_build(kp.DefaultRecordBatchBuilder),
            wrap_parse(kp.DefaultRecordBatch),
        ),
        "aiokafka (C ext)": (
            wrap_build(aio.DefaultRecordBatchBuilder),
            wrap_parse(aio.DefaultRecordBatch),
        ),
        "aiokafka (pure Python)": (
            wrap_build(aio._DefaultRecordBatchBuilderPy),
            wrap_parse(aio._DefaultRecordBatchPy),
        ),
    }


def bench_records(inner: int, repeat: int) -> list[Result]:
    from aiokafka.record import default_records as aio

    if aio.DefaultRecordBatchBuilder is aio._DefaultRecordBatchBuilderPy:
        print("warning: aiokafka's C extension is not active", file=sys.stderr)
    from kafka import codec as kp_codec  # type: ignore[import-untyped]

    results = []
    contenders = record_contenders()
    for name, codec in CODECS.items():
        # Everyone parses the same bytes: the batch kafkacore built.
        data = kc_build_many(NativeRecordBatchBuilder, codec)
        assert data == kc_build_many(PyRecordBatchBuilder, codec) or codec is not Compression.NONE
        present = dict(contenders)
        if codec is Compression.SNAPPY and not kp_codec.has_snappy():
            del present["kafka-python"]
        # The arrow row builds the same batch as the columns row: measured once.
        builds = {
            who: partial(build, codec) for who, (build, _) in present.items() if "arrow" not in who
        }
        parses = {who: partial(parse, data) for who, (_, parse) in present.items()}
        assert all(p() == 110 * N_RECORDS for p in parses.values())
        for who, seconds in measure(builds, inner=inner, repeat=repeat).items():
            results.append(Result(f"build 1000 records, {name}", who, N_RECORDS / seconds))
        for who, seconds in measure(parses, inner=inner, repeat=repeat).items():
            results.append(Result(f"parse 1000 records, {name}", who, N_RECORDS / seconds))
    return results


# ---- protocol messages -------------------------------------------------------

N_TOPICS = 50
N_PARTITIONS = 20
#: Versions every contender speaks (aiokafka stops at Metadata v5 and Fetch v11);
#: kafkacore and kafka-python are also measured at a current flexible version.
METADATA_COMMON = 5
FETCH_COMMON = 11
METADATA_FLEXIBLE = 12
FETCH_FLEXIBLE = 12


def metadata_bytes(version: int) -> bytes:
    """A Metadata response with 3 brokers and 50 topics x 20 partitions, encoded by kafkacore."""
    from kafkacore.protocol.messages import MetadataResponse
    from kafkacore.protocol.messages.metadata_response import (
        MetadataResponseBroker,
        MetadataResponsePartition,
        MetadataResponseTopic,
    )

    msg = MetadataResponse(
        brokers=[
            MetadataResponseBroker(node_id=n, host=f"broker-{n}.example", port=9092, rack=f"r{n}")
            for n in range(3)
        ],
        cluster_id="kafkacore-bench-cluster",
        controller_id=1,
        topics=[
            MetadataResponseTopic(
                name=f"topic-{t:03d}",
                partitions=[
                    MetadataResponsePartition(
                        partition_index=p,
                        leader_id=p % 3,
                        leader_epoch=7,
                        replica_nodes=[p % 3, (p + 1) % 3, (p + 2) % 3],
                        isr_nodes=[p % 3, (p + 1) % 3, (p + 2) % 3],
                    )
                    for p in range(N_PARTITIONS)
                ],
            )
            for t in range(N_TOPICS)
        ],
    )
    return msg.encode(version)


def kc_fetch_request(version: int) -> bytes:
    from kafkacore.protocol.messages import FetchRequest
    from kafkacore.protocol.messages.fetch_request import FetchPartition, FetchTopic

    return FetchRequest(
        replica_id=-1,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=52428800,
        isolation_level=1,
        session_id=0,
        session_epoch=-1,
        topics=[
            FetchTopic(
                topic=f"topic-{t:03d}",
                partitions=[
                    FetchPartition(
                        partition=p,
                        current_leader_epoch=7,
                        fetch_offset=1_000_000 + p,
                        log_start_offset=-1,
                        partition_max_bytes=1048576,
                    )
                    for p in range(N_PARTITIONS)
                ],
            )
            for t in range(N_TOPICS)
        ],
    ).encode(version)


def kp_fetch_request(version: int) -> bytes:
    from kafka.protocol.consumer.fetch import FetchRequest  # type: ignore[import-untyped]

    topic_cls = FetchRequest.FetchTopic
    part_cls = topic_cls.FetchPartition
    request = FetchRequest(
        replica_id=-1,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=52428800,
        isolation_level=1,
        session_id=0,
        session_epoch=-1,
        topics=[
            topic_cls(
                topic=f"topic-{t:03d}",
                partitions=[
                    part_cls(
                        partition=p,
                        current_leader_epoch=7,
                        fetch_offset=1_000_000 + p,
                        log_start_offset=-1,
                        partition_max_bytes=1048576,
                    )
                    for p in range(N_PARTITIONS)
                ],
            )
            for t in range(N_TOPICS)
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
    return bytes(request.encode(version=version))


def aio_fetch_request() -> bytes:
    from aiokafka.protocol.fetch import FetchRequest_v11  # type: ignore[import-untyped]

    data: bytes = FetchRequest_v11(
        -1,
        500,
        1,
        52428800,
        1,
        0,
        -1,
        [
            (f"topic-{t:03d}", [(p, 7, 1_000_000 + p, -1, 1048576) for p in range(N_PARTITIONS)])
            for t in range(N_TOPICS)
        ],
        [],
        "",
    ).encode()
    return data


def bench_protocol(inner: int, repeat: int) -> list[Result]:
    from aiokafka.protocol.metadata import MetadataResponse_v5  # type: ignore[import-untyped]
    from kafka.protocol.metadata import (  # type: ignore[import-untyped]
        MetadataResponse as KpMetadataResponse,
    )

    from kafkacore.protocol.messages import MetadataResponse

    results = []
    for version in (METADATA_COMMON, METADATA_FLEXIBLE):
        data = metadata_bytes(version)
        case = f"decode Metadata v{version} response, 50 topics x 20 partitions"
        decoders: dict[str, Callable[[], object]] = {
            "kafkacore": partial(MetadataResponse.decode, data, version),
            "kafka-python": partial(KpMetadataResponse.decode, data, version=version),
        }
        if version == METADATA_COMMON:
            decoders["aiokafka"] = partial(MetadataResponse_v5.decode, data)
        # Sanity: everyone sees the same 1,000 partitions.
        assert sum(len(t.partitions) for t in MetadataResponse.decode(data, version).topics) == 1000
        assert (
            sum(len(t.partitions) for t in KpMetadataResponse.decode(data, version=version).topics)
            == 1000
        )
        if version == METADATA_COMMON:
            assert sum(len(t[3]) for t in MetadataResponse_v5.decode(data).topics) == 1000
        for who, seconds in measure(decoders, inner=inner, repeat=repeat).items():
            results.append(Result(case, who, 1 / seconds))
    for version in (FETCH_COMMON, FETCH_FLEXIBLE):
        case = f"build + encode Fetch v{version} request, 50 topics x 20 partitions"
        encoders: dict[str, Callable[[], object]] = {
            "kafkacore": partial(kc_fetch_request, version),
            "kafka-python": partial(kp_fetch_request, version),
        }
        if version == FETCH_COMMON:
            encoders["aiokafka"] = aio_fetch_request
            assert kc_fetch_request(version) == kp_fetch_request(version) == aio_fetch_request()
        else:
            assert kc_fetch_request(version) == kp_fetch_request(version)
        for who, seconds in measure(encoders, inner=inner, repeat=repeat).items():
            results.append(Result(case, who, 1 / seconds))
    return results


# ---- report ----------------------------------------------------------------


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def report(results: list[Result], markdown: bool) -> None:
    cases: dict[str, dict[str, float]] = {}
    for r in results:
        cases.setdefault(r.case, {})[r.contender] = r.per_second
    for case, row in cases.items():
        kp = row.get("kafka-python")
        # aiokafka's protocol classes are pure Python; its records have a C extension.
        aio_c = row.get("aiokafka (C ext)") or row.get("aiokafka")
        if markdown:
            print(f"\n| {case} | per s | vs kafka-python | vs aiokafka |")
            print("|---|---:|---:|---:|")
        else:
            print(f"\n{case}")
        for who, rate in row.items():
            ratio_kp = f"{rate / kp:.2f}x" if kp else "-"
            ratio_c = f"{rate / aio_c:.2f}x" if aio_c else "-"
            if markdown:
                print(f"| {who} | {rate:,.0f} | {ratio_kp} | {ratio_c} |")
            else:
                print(
                    f"  {who:34s} {rate:>14,.0f}/s"
                    f"  {ratio_kp:>7s} vs kafka-python  {ratio_c:>7s} vs aiokafka"
                )


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min), {five:.1f} (5 min)"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (smoke run)")
    parser.add_argument("--markdown", action="store_true", help="print tables for RESULTS.md")
    parser.add_argument(
        "--records-only", action="store_true", help="record batches only, no protocol cases"
    )
    args = parser.parse_args()
    inner, repeat = (3, 3) if args.quick else (5, 30)
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {machine()}")
    print(f"# start: {load()}")
    results = bench_records(inner, repeat)
    if not args.records_only:
        results += bench_protocol(inner, repeat)
    print(f"# end: {load()}")
    report(results, args.markdown)


if __name__ == "__main__":
    main()

"""Differential test: our batches against kafka-clients' own MemoryRecordsBuilder.

The Java side (``tests/records/java/RecordBatchOracle.java``) is compiled at
test time against Kafka 4.3.1's jars and builds the same records; one JVM
run handles every case.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from kafkacore.records import Compression, Record, RecordBatch, RecordBatchBuilder, decompress

pytestmark = pytest.mark.java

JAVA_DIR = Path(__file__).parent / "java"
Case = tuple[
    Compression,
    int,
    int,
    int,
    bool,
    int,
    list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]],
]


def _random_cases(seed: int, count: int) -> list[Case]:
    rng = random.Random(seed)

    def blob(max_size: int) -> bytes | None:
        if rng.random() < 0.15:
            return None
        return rng.randbytes(rng.choice([0, 1, rng.randrange(max_size + 1)]))

    cases: list[Case] = []
    for i in range(count):
        codec = list(Compression)[i % len(Compression)]
        # Java refuses negative timestamps other than -1 (NO_TIMESTAMP).
        base_ts = rng.choice([0, 1_700_000_000_000, 2**40])
        records = []
        for _ in range(rng.randrange(1, 60)):
            headers = [
                ("".join(rng.choice("ab\u00e9\u4e2d-_") for _ in range(rng.randrange(6))), blob(20))
                for _ in range(rng.choice([0, 0, 1, 3]))
            ]
            ts = -1 if rng.random() < 0.05 else max(0, base_ts + rng.randrange(-5000, 20000))
            records.append((ts, blob(10), blob(400), headers))
        transactional = rng.random() < 0.3
        pid = rng.randrange(0, 2**40) if transactional or rng.random() < 0.5 else -1
        epoch = rng.randrange(0, 32767) if pid >= 0 else -1
        seq = rng.randrange(0, 2**31 - 1) if pid >= 0 else -1
        cases.append((codec, pid, epoch, seq, transactional, -1, records))
    return cases


def _hex(data: bytes | None) -> str:
    return "-" if data is None else data.hex()


def _line(case: Case) -> str:
    codec, pid, epoch, seq, txn, leader_epoch, records = case
    recs = [
        f"{ts},{_hex(k)},{_hex(v)},"
        + "/".join(f"{hk.encode().hex()}:{_hex(hv)}" for hk, hv in headers)
        for ts, k, v, headers in records
    ]
    head = f"{codec.name.lower()} {pid} {epoch} {seq} {str(txn).lower()} {leader_epoch}"
    return head + "|" + ";".join(recs)


def _ours(case: Case) -> bytes:
    codec, pid, epoch, seq, txn, leader_epoch, records = case
    builder = RecordBatchBuilder(
        compression=codec,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        transactional=txn,
        partition_leader_epoch=leader_epoch,
    )
    for ts, key, value, headers in records:
        builder.append(value, key, timestamp=ts, headers=headers)
    return builder.build()


@pytest.fixture(scope="module")
def java_batches(
    kafka_libs: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[list[Case], list[bytes]]:
    javac, java = shutil.which("javac"), shutil.which("java")
    assert javac and java, "the Java oracle needs a JDK (javac and java) on PATH"
    classpath = str(kafka_libs / "*")
    out = tmp_path_factory.mktemp("records-oracle")
    subprocess.run(
        [javac, "-d", str(out), "-cp", classpath, str(JAVA_DIR / "RecordBatchOracle.java")],
        check=True,
        capture_output=True,
        timeout=180,
    )
    cases = _random_cases(seed=20261122, count=150)
    proc = subprocess.run(
        [java, "-Xmx512m", "-cp", f"{out}:{classpath}", "RecordBatchOracle"],
        input="\n".join(_line(c) for c in cases).encode("utf-8"),
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    lines = proc.stdout.decode().split()
    assert len(lines) == len(cases)
    return cases, [bytes.fromhex(line) for line in lines]


def test_uncompressed_batches_are_byte_identical_to_java(
    java_batches: tuple[list[Case], list[bytes]],
) -> None:
    cases, theirs = java_batches
    checked = 0
    for case, java in zip(cases, theirs, strict=True):
        if case[0] is Compression.NONE:
            assert _ours(case) == java, _line(case)[:200]
            checked += 1
    assert checked == 30


def test_compressed_batches_match_java_up_to_the_codec_bytes(
    java_batches: tuple[list[Case], list[bytes]],
) -> None:
    # Compressors may choose different (equally valid) encodings; everything
    # else must match: the header fields apart from length and CRC, and the
    # records section once inflated.
    cases, theirs = java_batches
    for case, java in zip(cases, theirs, strict=True):
        codec = case[0]
        if codec is Compression.NONE:
            continue
        ours = _ours(case)
        assert ours[12:17] == java[12:17] and ours[21:61] == java[21:61], _line(case)[:200]
        assert decompress(codec, ours[61:]) == decompress(codec, java[61:])


def test_we_decode_java_batches(java_batches: tuple[list[Case], list[bytes]]) -> None:
    cases, theirs = java_batches
    for case, java in zip(cases, theirs, strict=True):
        codec, pid, epoch, seq, txn, _, records = case
        batch = RecordBatch(java)
        assert batch.crc_valid()
        assert batch.compression is codec
        assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (pid, epoch, seq)
        assert batch.is_transactional is txn
        want = [Record(i, ts, k, v, tuple(h)) for i, (ts, k, v, h) in enumerate(records)]
        assert list(batch) == want
        assert batch.columns().records() == want

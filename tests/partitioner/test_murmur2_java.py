"""murmur2 and keyed partitioning, compared with the Java client itself."""

from __future__ import annotations

import random
import subprocess

import pytest

from kafkacore.partitioner import murmur2, partition_for_key

COUNTS = (1, 2, 3, 7, 12, 100, 1000, 2**31 - 1)


def _keys() -> list[bytes]:
    rng = random.Random(20240611)
    keys = [b""]
    # Every short length many times: the 0-3 byte tail paths matter most.
    for length in range(21):
        keys += [rng.randbytes(length) for _ in range(100)]
    keys += [rng.randbytes(rng.randrange(21, 300)) for _ in range(500)]
    # Sign-bit and all-ones bytes stress Java's signed byte handling.
    keys += [b"\xff" * n for n in range(1, 9)] + [b"\x80" * n for n in range(1, 9)]
    keys += [str(i).encode() for i in range(300)]
    return keys


@pytest.mark.java
def test_murmur2_and_partition_match_java(partitioner_oracle: tuple[str, str]) -> None:
    java, classpath = partitioner_oracle
    keys = _keys()
    assert len(keys) > 2500
    proc = subprocess.run(
        [java, "-cp", classpath, "PartitionerVectors", *map(str, COUNTS)],
        input="\n".join(k.hex() for k in keys) + "\n",
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    lines = proc.stdout.splitlines()
    assert len(lines) == len(keys)
    mismatches = []
    for key, line in zip(keys, lines, strict=True):
        java_hash, *java_parts = (int(x) for x in line.split())
        ours = [murmur2(key), *(partition_for_key(key, n) for n in COUNTS)]
        if ours != [java_hash, *java_parts]:
            mismatches.append((key.hex(), ours, line))
    assert not mismatches, f"{len(mismatches)} keys differ from Java, first: {mismatches[:3]}"

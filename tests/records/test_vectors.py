"""Known-answer vectors: record sets the Java producer wrote, captured from a real broker.

Regenerate with ``.venv/bin/python -m tests.records.capture_vectors``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkacore.errors import DecodeError
from kafkacore.records import (
    Compression,
    ControlRecordType,
    RecordBatch,
    iter_batches,
    trailing_partial_bytes,
)

VECTORS = Path(__file__).parent / "vectors"
EXPECTED = json.loads((VECTORS / "expected.json").read_text())


@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.name.lower())
def test_java_console_producer_vectors(codec: Compression) -> None:
    raw = (VECTORS / f"java_console_{codec.name.lower()}.bin").read_bytes()
    lines: list[str] = EXPECTED["console_lines"]
    batches = list(iter_batches(raw))
    assert trailing_partial_bytes(raw) == 0
    assert all(isinstance(b, RecordBatch) and b.compression is codec for b in batches)
    assert all(b.crc_valid() for b in batches)
    records = [r for b in batches for r in b]
    assert [r.offset for r in records] == list(range(len(lines)))
    assert [(r.key, r.value) for r in records] == [
        tuple(line.encode("utf-8").split(b":", 1)) for line in lines
    ]
    assert all(r.headers == () for r in records)
    assert [r for b in batches for r in b.records()] == records


def test_java_transactional_vectors() -> None:
    raw = (VECTORS / "java_txn_lz4.bin").read_bytes()
    batches = list(iter_batches(raw))
    data = [b for b in batches if not b.is_control]
    markers = [b for b in batches if b.is_control]
    assert (
        sum(b.record_count for b in data if isinstance(b, RecordBatch)) == EXPECTED["txn_records"]
    )
    assert len(markers) == EXPECTED["txn_markers"]
    for marker in markers:
        assert isinstance(marker, RecordBatch)
        control = marker.control_record()
        assert control.type is ControlRecordType.COMMIT
        assert control.offset == marker.base_offset
    values = [int(r.value) for b in data for r in b if r.value is not None]
    assert values == list(range(values[0], values[0] + len(values)))


@pytest.mark.parametrize("name", sorted(p.name for p in VECTORS.glob("*.bin")))
def test_vectors_truncated_and_with_trailing_bytes(name: str) -> None:
    raw = (VECTORS / name).read_bytes()
    whole = [r for b in iter_batches(raw) for r in b]
    # With trailing garbage shorter than a header, the complete batches still read.
    assert [r for b in iter_batches(raw + b"\x00" * 16) for r in b] == whole
    sizes = [b.size_in_bytes for b in iter_batches(raw)]
    for cut in range(len(raw)):
        # A cut fetch yields the complete batches before the cut and nothing else...
        got = list(iter_batches(raw[:cut]))
        assert sum(b.size_in_bytes for b in got) + trailing_partial_bytes(raw[:cut]) == cut
        assert len(got) == sum(1 for end in _ends(sizes) if end <= cut)
        # ...and the cut batch itself, read directly, is a DecodeError.
        start = sum(b.size_in_bytes for b in got)
        if start < cut:
            with pytest.raises(DecodeError):
                RecordBatch(raw[start:cut]).records()


def _ends(sizes: list[int]) -> list[int]:
    out, total = [], 0
    for size in sizes:
        total += size
        out.append(total)
    return out


def test_vectors_agree_with_aiokafka() -> None:
    from aiokafka.record.memory_records import MemoryRecords  # type: ignore[import-untyped]

    for path in sorted(VECTORS.glob("java_console_*.bin")):
        raw = path.read_bytes()
        theirs = []
        records = MemoryRecords(raw)
        while records.has_next():
            batch = records.next_batch()
            theirs += [(r.offset, r.timestamp, r.key, r.value) for r in batch]
        ours = [(r.offset, r.timestamp, r.key, r.value) for b in iter_batches(raw) for r in b]
        assert ours == theirs, path.name

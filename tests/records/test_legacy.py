"""Legacy message sets (magic 0 and 1) and mixed record blobs."""

from __future__ import annotations

import struct
import zlib

import pytest

from kafkacore.errors import DecodeError
from kafkacore.records import (
    Compression,
    CorruptRecordError,
    LegacyBatch,
    Record,
    RecordBatch,
    TimestampType,
    compress,
    iter_batches,
    trailing_partial_bytes,
)
from kafkacore.records.compression import _xxh32_short

from .strategies import build


def message(
    offset: int,
    value: bytes | None,
    key: bytes | None = None,
    *,
    magic: int = 1,
    attributes: int = 0,
    timestamp: int = -1,
) -> bytes:
    """One legacy log entry, written independently of the code under test."""
    body = struct.pack(">bb", magic, attributes)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for part in (key, value):
        body += struct.pack(">i", -1) if part is None else struct.pack(">i", len(part)) + part
    msg = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(msg)) + msg


def wrapper(
    inner: bytes,
    codec: Compression,
    *,
    offset: int,
    magic: int = 1,
    timestamp: int = -1,
    log_append: bool = False,
) -> bytes:
    value = compress(codec, inner)
    if codec is Compression.LZ4 and magic == 0:
        # KAFKA-3160: magic-0 frames carry a header checksum over magic+FLG+BD.
        frame = bytearray(value)
        frame[6] = (_xxh32_short(bytes(frame[0:6])) >> 8) & 0xFF
        value = bytes(frame)
    attributes = int(codec) | (0x08 if log_append else 0)
    return message(offset, value, magic=magic, attributes=attributes, timestamp=timestamp)


@pytest.mark.parametrize("magic", [0, 1])
def test_plain_messages(magic: int) -> None:
    blob = message(5, b"v1", b"k1", magic=magic, timestamp=111) + message(
        6, None, None, magic=magic, timestamp=112
    )
    batches = list(iter_batches(blob))
    assert all(isinstance(b, LegacyBatch) for b in batches)
    records = [r for b in batches for r in b]
    ts = (111, 112) if magic == 1 else (-1, -1)
    assert records == [Record(5, ts[0], b"k1", b"v1", ()), Record(6, ts[1], None, None, ())]
    assert batches[-1].next_offset == 7
    assert batches[0].magic == magic and batches[0].crc_valid()
    assert batches[0].compression is Compression.NONE


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4])
def test_magic1_wrapper_relative_offsets(codec: Compression) -> None:
    inner = b"".join(message(i, b"value-%d" % i, b"k", timestamp=1000 + i) for i in range(3))
    blob = wrapper(inner, codec, offset=42, timestamp=2000)  # offset of the LAST inner message
    (batch,) = iter_batches(blob)
    assert isinstance(batch, LegacyBatch)
    assert batch.compression is codec
    assert [(r.offset, r.timestamp, r.value) for r in batch] == [
        (40, 1000, b"value-0"),
        (41, 1001, b"value-1"),
        (42, 1002, b"value-2"),
    ]
    assert batch.next_offset == 43
    cols = batch.columns()
    assert list(cols.offsets) == [40, 41, 42]
    assert batch.records() == cols.records()


def test_magic1_log_append_time_applies_wrapper_timestamp() -> None:
    inner = b"".join(message(i, b"x", timestamp=5) for i in range(2))
    (batch,) = iter_batches(
        wrapper(inner, Compression.GZIP, offset=11, timestamp=777, log_append=True)
    )
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in batch] == [777, 777]


def test_magic1_wrapper_at_offset_zero_counts_from_zero() -> None:
    inner = b"".join(message(i, b"x") for i in range(3))
    (batch,) = iter_batches(wrapper(inner, Compression.GZIP, offset=0))
    assert [r.offset for r in batch] == [0, 1, 2]


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4])
def test_magic0_wrapper_absolute_offsets(codec: Compression) -> None:
    inner = b"".join(message(100 + i, b"v%d" % i, magic=0) for i in range(3))
    (batch,) = iter_batches(wrapper(inner, codec, offset=102, magic=0))
    assert [(r.offset, r.timestamp, r.value) for r in batch] == [
        (100, -1, b"v0"),
        (101, -1, b"v1"),
        (102, -1, b"v2"),
    ]


def test_peer_legacy_builder_output() -> None:
    from aiokafka.record.legacy_records import (  # type: ignore[import-untyped]
        _LegacyRecordBatchBuilderPy as Builder,
    )

    for magic in (0, 1):
        for codec in (0, 1, 2) + ((3,) if magic == 1 else ()):
            builder = Builder(magic=magic, compression_type=codec, batch_size=10**6)
            for i in range(4):
                builder.append(
                    i, timestamp=10 + i, key=None if i % 2 else b"k%d" % i, value=b"v" * i
                )
            blob = bytes(builder.build())
            records = [r for b in iter_batches(blob) for r in b]
            assert [(r.key, r.value) for r in records] == [
                (None if i % 2 else b"k%d" % i, b"v" * i) for i in range(4)
            ], (magic, codec)


def test_crc32_mismatch_is_corrupt_record_error() -> None:
    blob = bytearray(message(1, b"value"))
    blob[-1] ^= 0xFF
    (batch,) = iter_batches(blob)
    assert not batch.crc_valid()
    with pytest.raises(CorruptRecordError, match="CRC-32 mismatch"):
        list(batch)
    assert next(iter(LegacyBatch(blob, check_crc=False))).value == b"valuf"[:4] + bytes(
        [ord("e") ^ 0xFF]
    )
    inner = bytearray(message(0, b"inner"))
    inner[-1] ^= 1
    (outer,) = iter_batches(wrapper(bytes(inner), Compression.GZIP, offset=0))
    with pytest.raises(CorruptRecordError):
        outer.records()


def test_legacy_structural_errors() -> None:
    good = message(1, b"value", b"key")
    with pytest.raises(DecodeError, match="below the minimum") as info:
        LegacyBatch(good[:8] + struct.pack(">i", 5) + good[12:])
    assert info.value.api == "MessageSet v1"
    bad_key = bytearray(good)
    struct.pack_into(">i", bad_key, 12 + 14, 1000)  # key length past the end
    with pytest.raises(DecodeError, match="key length 1000 runs past"):
        LegacyBatch(bad_key)
    zstd_wrapped = message(0, compress(Compression.ZSTD, message(0, b"x")), attributes=4)
    with pytest.raises(DecodeError, match="not allowed before magic 2"):
        list(LegacyBatch(zstd_wrapped))
    double = wrapper(
        wrapper(message(0, b"x"), Compression.GZIP, offset=0), Compression.GZIP, offset=0
    )
    with pytest.raises(DecodeError, match="compressed again"):
        list(LegacyBatch(double))
    with pytest.raises(DecodeError, match="null value"):
        LegacyBatch(message(0, None, attributes=1))
    with pytest.raises(DecodeError, match="holds no message"):
        list(LegacyBatch(message(0, compress(Compression.GZIP, b""), attributes=1)))
    with pytest.raises(DecodeError, match="exceeds the 21 bytes left"):
        list(LegacyBatch(wrapper(message(0, b"x")[:-2], Compression.GZIP, offset=0)))
    for cut in range(len(good)):
        with pytest.raises(DecodeError):
            LegacyBatch(good[:cut])


def test_mixed_blob_with_partial_tail() -> None:
    v1 = message(0, b"old")
    v2 = build([(b"k", b"new", [], 5)], base_offset=1)
    blob = v1 + v2 + v2[:30]
    batches = list(iter_batches(memoryview(blob)))
    assert [type(b) for b in batches] == [LegacyBatch, RecordBatch]
    assert [r.value for b in batches for r in b] == [b"old", b"new"]
    assert trailing_partial_bytes(blob) == 30
    assert trailing_partial_bytes(v1 + v2) == 0
    assert trailing_partial_bytes(v2[:16]) == 16


def test_iter_batches_reports_the_batch_position() -> None:
    v2 = build([(b"k", b"new", [], 5)])
    bad = bytearray(v2)
    struct.pack_into(">i", bad, 57, -1)
    with pytest.raises(DecodeError, match=f"batch at byte {len(v2)}") as info:
        list(iter_batches(v2 + bytes(bad)))
    assert info.value.offset == len(v2) + 57


def test_inner_offsets_outside_int64_are_decode_errors() -> None:
    # The last inner message is relative offset 0, so base = wrapper offset, and the
    # first one (relative 5) lands past the top of the int64 range.
    inner = message(5, b"a") + message(0, b"b")
    (batch,) = iter_batches(wrapper(inner, Compression.GZIP, offset=2**63 - 1))
    with pytest.raises(DecodeError, match="int64"):
        batch.columns()

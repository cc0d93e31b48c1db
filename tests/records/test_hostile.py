"""Malformed, truncated, corrupt and hostile input: only DecodeError may escape."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkacore.errors import DecodeError
from kafkacore.records import (
    Compression,
    CorruptRecordError,
    LegacyBatch,
    RecordBatch,
    RecordBatchBuilder,
    compress,
    iter_batches,
)

from .strategies import build, codecs, records, reseal

RECS = [
    (b"key-1", b"value-1", [("h", b"x"), ("n", None)], 1000),
    (None, b"v" * 200, [], 1001),
    (b"k", None, [], 999),
]


def _consume(data: bytes | bytearray, *, check_crc: bool = True) -> None:
    """Decode everything reachable from ``data`` through every reading path."""
    for batch in iter_batches(data, check_crc=check_crc, max_decompressed_size=1 << 20):
        batch.columns()
        list(batch)
        if batch.is_control and isinstance(batch, RecordBatch):
            batch.control_record()


@pytest.mark.parametrize("codec", list(Compression))
def test_every_truncation_of_a_batch_is_a_decode_error(codec: Compression) -> None:
    data = build(RECS, codec)
    for cut in range(len(data)):
        with pytest.raises(DecodeError):
            RecordBatch(data[:cut]).records()
        # iter_batches treats a cut batch as the partial tail of a fetch.
        assert list(iter_batches(data[:cut])) == []


@pytest.mark.parametrize("codec", list(Compression))
def test_every_truncation_of_the_records_section_is_a_decode_error(codec: Compression) -> None:
    # Length and CRC are fixed up, so the record parser (or the codec) must notice.
    data = build(RECS, codec)
    section = data[61:]
    for cut in range(len(section)):
        bad = reseal(data, section[:cut])
        for reader in (lambda b: b.records(), lambda b: list(b)):
            with pytest.raises(DecodeError) as info:
                reader(RecordBatch(bad))
            assert info.value.api == "RecordBatch v2"


def test_errors_name_record_field_and_offset() -> None:
    data = build(RECS)
    section = bytearray(data[61:])
    # Record 0: length varint, attributes, timestampDelta, offsetDelta, keyLength at byte 4.
    section[4] = 0x7D  # zigzag -63: a negative key length
    with pytest.raises(DecodeError) as info:
        RecordBatch(reseal(data, bytes(section))).columns()
    assert info.value.field == "records[0].key"
    assert info.value.offset == 61 + 5
    assert "RecordBatch v2" in str(info.value) and "negative" in str(info.value)


def test_count_larger_than_the_bytes_can_hold_is_rejected_up_front() -> None:
    data = bytearray(build(RECS))
    struct.pack_into(">i", data, 57, 10**9)
    with pytest.raises(DecodeError, match="cannot fit") as info:
        RecordBatch(data)
    assert info.value.field == "recordsCount"


@pytest.mark.parametrize("codec", [c for c in Compression if c is not Compression.NONE])
def test_count_larger_than_decompressed_bytes_is_rejected(codec: Compression) -> None:
    data = build(RECS, codec)
    bad = bytearray(data)
    struct.pack_into(">i", bad, 57, 10**6)
    with pytest.raises(DecodeError, match="cannot fit"):
        RecordBatch(bad, check_crc=False).columns()


def test_fewer_records_than_counted_and_leftover_bytes() -> None:
    data = build(RECS)
    with pytest.raises(DecodeError, match="ends after 3 records"):
        RecordBatch(reseal(data, data[61:], count=4)).columns()
    with pytest.raises(DecodeError, match="bytes left after the last of 2 records"):
        RecordBatch(reseal(data, data[61:], count=2)).columns()
    with pytest.raises(DecodeError, match="bytes left after the last of 3 records"):
        list(RecordBatch(reseal(data, data[61:] + b"\x00")))


def test_bad_header_key_utf8_is_a_decode_error() -> None:
    data = build([(None, b"v", [("\u00e9", b"x")], 0)])
    section = bytearray(data[61:])
    at = section.index("\u00e9".encode())
    section[at] = 0xFF
    with pytest.raises(DecodeError, match="UTF-8") as info:
        RecordBatch(reseal(data, bytes(section))).records()
    assert info.value.field == "records[0].headers[0].key"


def test_crc_mismatch_is_corrupt_record_error() -> None:
    data = bytearray(build(RECS, Compression.LZ4))
    data[-1] ^= 0x01
    batch = RecordBatch(data)  # the header alone is still readable
    assert not batch.crc_valid()
    with pytest.raises(CorruptRecordError) as info:
        batch.columns()
    assert isinstance(info.value, DecodeError)
    assert info.value.field == "crc"
    with pytest.raises(CorruptRecordError):
        list(batch)


def test_header_level_checks() -> None:
    data = bytearray(build(RECS))
    bad_magic = bytearray(data)
    bad_magic[16] = 3
    with pytest.raises(DecodeError, match="magic is 3"):
        RecordBatch(bad_magic)
    with pytest.raises(DecodeError, match="unknown magic 3"):
        list(iter_batches(bad_magic))
    short = bytearray(data)
    struct.pack_into(">i", short, 8, 10)
    with pytest.raises(DecodeError, match="below the header size"):
        RecordBatch(short)
    negative = bytearray(data)
    struct.pack_into(">i", negative, 8, -5)
    with pytest.raises(DecodeError, match="negative batch length"):
        list(iter_batches(negative))
    neg_count = bytearray(data)
    struct.pack_into(">i", neg_count, 57, -1)
    with pytest.raises(DecodeError, match="negative record count"):
        RecordBatch(neg_count)
    bad_codec = bytearray(data)
    struct.pack_into(">h", bad_codec, 21, 7)
    batch = RecordBatch(bad_codec, check_crc=False)
    with pytest.raises(DecodeError, match="unknown compression codec 7"):
        batch.columns()
    with pytest.raises(DecodeError, match="unknown compression codec 7"):
        _ = batch.compression


@pytest.mark.parametrize("codec", [c for c in Compression if c is not Compression.NONE])
def test_zip_bomb_is_capped(codec: Compression) -> None:
    builder = RecordBatchBuilder(compression=codec)
    builder.append_many([bytes(64 * 1024)] * 64, timestamps=0)  # 4 MiB of zeros
    data = builder.build()
    assert len(data) < 1 << 20
    with pytest.raises(DecodeError, match="max_size=1048576"):
        RecordBatch(data, max_decompressed_size=1 << 20).columns()
    assert len(RecordBatch(data, max_decompressed_size=8 << 20).columns()) == 64


@given(st.binary(max_size=400))
def test_fuzz_arbitrary_bytes(blob: bytes) -> None:
    with contextlib.suppress(DecodeError):
        _consume(blob, check_crc=False)


@given(
    recs=records,
    codec=codecs,
    flips=st.lists(
        st.tuples(st.integers(min_value=0), st.integers(min_value=1, max_value=255)),
        min_size=1,
        max_size=4,
    ),
)
def test_fuzz_mutated_batches(recs, codec, flips) -> None:  # type: ignore[no-untyped-def]
    original = build(recs, codec)
    data = bytearray(original)
    for where, xor in flips:
        data[21 + where % (len(data) - 21)] ^= xor
    with contextlib.suppress(DecodeError):
        _consume(data, check_crc=False)
    if data != original:
        # A damaged header may fail its own checks first; otherwise the CRC catches it.
        with pytest.raises(DecodeError):
            RecordBatch(data).columns()


@given(section=st.binary(max_size=200), count=st.integers(min_value=0, max_value=30))
def test_fuzz_records_section(section: bytes, count: int) -> None:
    data = reseal(build(RECS), section, count=count)
    for reader in (lambda b: b.columns(), lambda b: list(b)):
        with contextlib.suppress(DecodeError):
            reader(RecordBatch(data))


@given(st.binary(max_size=300))
def test_fuzz_legacy_entries(blob: bytes) -> None:
    data = bytearray(struct.pack(">qi", 0, len(blob) + 6)) + struct.pack(">Ibb", 0, 1, 1) + blob
    with contextlib.suppress(DecodeError):
        batch = LegacyBatch(data, check_crc=False)
        list(batch)


@given(codec=st.sampled_from([1, 2, 3, 4]), blob=st.binary(max_size=200))
def test_fuzz_decompressors(codec: int, blob: bytes) -> None:
    from kafkacore.records import decompress

    for magic in (0, 2):
        with contextlib.suppress(DecodeError):
            decompress(codec, blob, max_size=1 << 16, magic=magic)
    compressed = compress(Compression(codec), blob)
    assert decompress(codec, compressed) == blob


def test_offsets_and_timestamps_beyond_int64_are_decode_errors() -> None:
    data = bytearray(build([(None, b"a", [], 0), (None, b"b", [], 2**40)]))
    struct.pack_into(">q", data, 0, 2**63 - 1)  # base offset at the very top
    with pytest.raises(DecodeError, match="overflows int64"):
        RecordBatch(data, check_crc=False).columns()
    big_ts = bytearray(build([(None, b"a", [], 2**62), (None, b"b", [], 2**62 + 2**61)]))
    struct.pack_into(">q", big_ts, 27, 2**63 - 1)  # base timestamp
    with pytest.raises(DecodeError, match="overflows int64"):
        RecordBatch(big_ts, check_crc=False).columns()


@given(base=st.integers(min_value=-(2**63), max_value=2**63 - 1), recs=records)
def test_fuzz_header_extremes(base: int, recs: list) -> None:  # type: ignore[type-arg]
    data = bytearray(build(recs))
    for at in (0, 27, 35, 43):  # base offset, base/max timestamp, producer id
        struct.pack_into(">q", data, at, base)
    with contextlib.suppress(DecodeError):
        RecordBatch(data, check_crc=False).columns()
    with contextlib.suppress(DecodeError):
        list(RecordBatch(data, check_crc=False))


@given(
    inner=st.binary(max_size=300),
    codec=st.sampled_from([Compression.GZIP, Compression.SNAPPY, Compression.LZ4]),
    magic=st.sampled_from([0, 1]),
    offset=st.integers(min_value=-(2**63), max_value=2**63 - 1),
)
def test_fuzz_legacy_wrapper_contents(
    inner: bytes, codec: Compression, magic: int, offset: int
) -> None:
    import zlib

    body = struct.pack(">bb", magic, int(codec)) + (struct.pack(">q", 0) if magic else b"")
    value = compress(codec, inner)
    body += struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    msg = struct.pack(">I", zlib.crc32(body)) + body
    entry = struct.pack(">qi", offset, len(msg)) + msg
    for check_crc in (True, False):
        with contextlib.suppress(DecodeError):
            for batch in iter_batches(entry, check_crc=check_crc):
                batch.columns()
                list(batch)


@given(
    recs=records,
    codec=st.sampled_from([c for c in Compression if c is not Compression.NONE]),
    flips=st.lists(
        st.tuples(st.integers(min_value=0), st.integers(min_value=1, max_value=255)),
        min_size=1,
        max_size=3,
    ),
)
def test_fuzz_mutated_records_inside_compression(recs, codec, flips) -> None:  # type: ignore[no-untyped-def]
    plain = build(recs)
    section = bytearray(plain[61:])
    for where, xor in flips:
        section[where % len(section)] ^= xor
    data = bytearray(reseal(plain, compress(codec, bytes(section))))
    struct.pack_into(">h", data, 21, int(codec))
    data = bytearray(reseal(data, bytes(data[61:])))  # CRC over the new attributes
    batch = RecordBatch(data)
    for reader in (lambda b: b.columns(), lambda b: list(b)):
        try:
            reader(batch)
        except DecodeError as exc:
            # Positions inside the decompressed bytes go in the message, not in .offset
            # (which counts bytes of the batch as it is on the wire).
            assert "decompressed" in str(exc)
            assert exc.offset is None or exc.field == "recordsCount"

"""Codec framings: what the Java client writes and what readers must accept."""

from __future__ import annotations

import gzip
import struct

import cramjam
import lz4.frame  # type: ignore[import-untyped]
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from kafkacore.errors import DecodeError
from kafkacore.records import Compression, compress, decompress
from kafkacore.records.compression import _xxh32_short

PAYLOAD = b"".join(b"record %06d " % i + bytes(range(i % 50)) for i in range(3000))


@given(data=st.binary(max_size=5000), codec=st.sampled_from(list(Compression)), level=st.none())
def test_round_trip(data: bytes, codec: Compression, level: None) -> None:
    out = compress(codec, data, level=level)
    if codec is Compression.NONE:
        assert out == data
    else:
        assert decompress(codec, out) == data


@pytest.mark.parametrize(
    ("codec", "level"), [(Compression.GZIP, 9), (Compression.LZ4, 12), (Compression.ZSTD, 19)]
)
def test_levels(codec: Compression, level: int) -> None:
    assert decompress(codec, compress(codec, PAYLOAD, level=level)) == PAYLOAD


def test_snappy_writes_xerial_framing() -> None:
    out = compress(Compression.SNAPPY, PAYLOAD)
    assert out[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    # Blocks of at most 32 KiB of input, each [int32 BE length][raw snappy].
    pos, blocks, total = 16, 0, b""
    while pos < len(out):
        (n,) = struct.unpack_from(">i", out, pos)
        total += bytes(cramjam.snappy.decompress_raw(out[pos + 4 : pos + 4 + n]))
        pos += 4 + n
        blocks += 1
    assert total == PAYLOAD
    assert blocks == -(-len(PAYLOAD) // 32768)


def test_snappy_reads_raw_blocks_and_peer_xerial() -> None:
    raw = bytes(cramjam.snappy.compress_raw(PAYLOAD))
    assert decompress(Compression.SNAPPY, raw) == PAYLOAD
    from aiokafka.codec import snappy_encode as aio_snappy  # type: ignore[import-untyped]

    assert decompress(Compression.SNAPPY, aio_snappy(PAYLOAD)) == PAYLOAD


def test_snappy_rejects_broken_framing() -> None:
    good = compress(Compression.SNAPPY, PAYLOAD)
    with pytest.raises(DecodeError, match="truncated xerial snappy header"):
        decompress(Compression.SNAPPY, good[:12])
    with pytest.raises(DecodeError, match="exceeds stream"):
        decompress(Compression.SNAPPY, good[:100])
    with pytest.raises(DecodeError, match="truncated xerial snappy block length"):
        decompress(Compression.SNAPPY, good[:18])
    with pytest.raises(DecodeError, match="preamble"):
        decompress(Compression.SNAPPY, b"\xff\xff\xff\xff\xff\xff")
    with pytest.raises(DecodeError, match="inflates beyond"):
        decompress(Compression.SNAPPY, b"\xff\xff\xff\x7f", max_size=100)


def test_lz4_writes_what_java_reads() -> None:
    out = compress(Compression.LZ4, PAYLOAD)
    assert out[:4] == b"\x04\x22\x4d\x18"
    flg, bd = out[4], out[5]
    assert flg >> 6 == 1  # version 01
    assert flg & 0x20  # block independence: Java's reader refuses linked blocks
    assert not flg & 0x08  # no content size
    assert bd == 0x40  # 64 KiB max block
    assert out[6] == (_xxh32_short(out[4:6]) >> 8) & 0xFF


def test_lz4_magic0_broken_header_checksum_kafka_3160() -> None:
    frame = bytearray(compress(Compression.LZ4, PAYLOAD))
    # Kafka 0.8-0.9 hashed the magic number too: the checksum Java's reader ignores for magic 0.
    frame[6] = (_xxh32_short(bytes(frame[0:6])) >> 8) & 0xFF
    assert frame[6] != (_xxh32_short(bytes(frame[4:6])) >> 8) & 0xFF
    assert decompress(Compression.LZ4, frame, magic=0) == PAYLOAD
    with pytest.raises(DecodeError):
        decompress(Compression.LZ4, frame, magic=1)
    with pytest.raises(DecodeError, match="bad magic"):
        decompress(Compression.LZ4, b"\x00" * 10, magic=0)
    with pytest.raises(DecodeError, match="truncated lz4 frame descriptor"):
        # FLG says an 8-byte content size follows, but the stream ends first.
        decompress(
            Compression.LZ4,
            bytes(frame[:4]) + bytes((frame[4] | 0x08, frame[5])) + b"12345",
            magic=0,
        )


def test_lz4_accepts_linked_blocks_and_content_checksum() -> None:
    frame = lz4.frame.compress(
        PAYLOAD * 4, block_linked=True, content_checksum=True, store_size=True
    )
    assert decompress(Compression.LZ4, frame) == PAYLOAD * 4


def test_gzip_concatenated_members_and_truncation() -> None:
    two = gzip.compress(b"first ", mtime=0) + gzip.compress(b"second", mtime=0)
    assert decompress(Compression.GZIP, two) == b"first second"
    with pytest.raises(DecodeError, match="truncated gzip"):
        decompress(Compression.GZIP, two[:-4])
    with pytest.raises(DecodeError, match="corrupt gzip"):
        decompress(Compression.GZIP, b"not gzip at all")


def test_zstd_concatenated_frames_unknown_size_and_truncation() -> None:
    streamed = zstandard.ZstdCompressor(write_content_size=False).compress(PAYLOAD)
    assert zstandard.frame_content_size(streamed) == -1  # like zstd-jni's streaming writer
    assert decompress(Compression.ZSTD, streamed + streamed) == PAYLOAD * 2
    with pytest.raises(DecodeError, match="truncated zstd"):
        decompress(Compression.ZSTD, streamed[:-3])
    with pytest.raises(DecodeError, match="empty zstd"):
        decompress(Compression.ZSTD, b"")
    with pytest.raises(DecodeError, match="corrupt zstd"):
        decompress(Compression.ZSTD, b"\x28\xb5\x2f\xfd" + b"\xff" * 20)


@pytest.mark.parametrize(
    "codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD]
)
def test_bombs_stop_at_the_cap(codec: Compression) -> None:
    bomb = compress(codec, bytes(16 << 20))  # 16 MiB of zeros
    assert len(bomb) < 1 << 20
    with pytest.raises(DecodeError, match="inflates beyond max_size=65536"):
        decompress(codec, bomb, max_size=65536)
    assert len(decompress(codec, bomb, max_size=16 << 20)) == 16 << 20


def test_unknown_codecs() -> None:
    with pytest.raises(DecodeError, match="unknown compression codec 5"):
        decompress(5, b"abc")
    from kafkacore.errors import LocalProtocolError

    with pytest.raises(LocalProtocolError, match="unknown codec"):
        compress(7, b"abc")  # type: ignore[arg-type]


def test_xxh32_reference_values() -> None:
    # Published xxHash32 test values (seed 0).
    assert _xxh32_short(b"") == 0x02CC5D05
    assert _xxh32_short(b"a") == 0x550D7456
    assert _xxh32_short(b"abc") == 0x32D153FF


def test_lz4_fast_path_and_fallback_agree() -> None:
    from kafkacore.records.compression import _lz4_bound

    frame = compress(Compression.LZ4, PAYLOAD)
    blocks = -(-len(PAYLOAD) // 65536)
    assert _lz4_bound(frame) == blocks * 65536
    # Two frames back to back, or trailing bytes: no cheap bound, the incremental path reads them.
    assert _lz4_bound(frame + frame) == -1
    assert decompress(Compression.LZ4, frame + frame) == PAYLOAD * 2
    assert _lz4_bound(frame[:-2]) == -1
    with pytest.raises(DecodeError):
        decompress(Compression.LZ4, frame[:-2])
    # A bound above max_size is not an error by itself: the real output decides.
    assert decompress(Compression.LZ4, frame, max_size=len(PAYLOAD)) == PAYLOAD
    with pytest.raises(DecodeError, match="inflates beyond"):
        decompress(Compression.LZ4, frame, max_size=len(PAYLOAD) - 1)


def test_zstd_context_pool_survives_errors_and_levels() -> None:
    from kafkacore.records import compression

    for _ in range(3):
        with pytest.raises(DecodeError):
            decompress(Compression.ZSTD, b"\x28\xb5\x2f\xfd" + b"\xff" * 20)
        assert decompress(Compression.ZSTD, compress(Compression.ZSTD, PAYLOAD)) == PAYLOAD
        assert decompress(Compression.ZSTD, compress(Compression.ZSTD, PAYLOAD, level=1)) == PAYLOAD
    assert len(compression._ZSTD_DECOMPRESSORS) <= compression._POOL_SIZE
    assert all(
        len(pool) <= compression._POOL_SIZE for pool in compression._ZSTD_COMPRESSORS.values()
    )


def test_lz4_level_9_is_the_fast_compressor_like_java() -> None:
    # Kafka's Lz4BlockOutputStream uses the fast compressor for its default level 9
    # and the HC compressor for other levels.
    fast = compress(Compression.LZ4, PAYLOAD)
    assert compress(Compression.LZ4, PAYLOAD, level=9) == fast
    assert compress(Compression.LZ4, PAYLOAD, level=10) != fast


def test_lz4_declared_content_size_is_not_trusted() -> None:
    # A tiny frame that declares 1 TiB of content: the one-shot decoder would try
    # to allocate it up front, so such frames go through the bounded decoder.
    from kafkacore.records.compression import _lz4_bound

    frame = bytearray(lz4.frame.compress(b"hello world" * 10, store_size=True, block_linked=False))
    assert _lz4_bound(frame) == 65536  # the honest declaration (110 bytes) is fine
    frame[6:14] = struct.pack("<Q", 1 << 40)
    frame[14] = (_xxh32_short(bytes(frame[4:14])) >> 8) & 0xFF
    assert _lz4_bound(frame) == -1
    with pytest.raises(DecodeError):
        decompress(Compression.LZ4, bytes(frame), max_size=1 << 20)


def test_zstd_declared_content_size_is_not_trusted() -> None:
    frame = bytearray(zstandard.ZstdCompressor(write_content_size=True).compress(b"x" * 100))
    params = zstandard.get_frame_parameters(bytes(frame))
    assert params.content_size == 100
    # Frame header: magic (4), descriptor (1); single-segment with a 1-byte size
    # here, so rewrite the descriptor for an 8-byte size claiming 2**40 bytes.
    descriptor = frame[4]
    assert descriptor >> 6 == 0 and descriptor & 0x20  # 1-byte FCS, single segment
    forged = (
        bytes(frame[:4])
        + bytes([0xE0 | (descriptor & 0x1F)])
        + struct.pack("<Q", 1 << 40)
        + bytes(frame[6:])
    )
    assert zstandard.get_frame_parameters(forged).content_size == 1 << 40
    with pytest.raises(DecodeError):
        decompress(Compression.ZSTD, forged, max_size=1 << 20)


def test_bytes_after_the_last_zstd_frame_are_a_decode_error() -> None:
    # Found by the differential test (tests/native): the pure reader advanced
    # by its chunk size, not by what it had fed, and dropped short garbage
    # after a frame instead of reading it as the start of another frame.
    frame = compress(Compression.ZSTD, b"records")
    for tail in (b"\x29\xb5\x2f\xfd\x20", b"\x00", frame[:4]):
        with pytest.raises(DecodeError):
            decompress(Compression.ZSTD, frame + tail)
    assert decompress(Compression.ZSTD, frame + frame) == b"records" * 2

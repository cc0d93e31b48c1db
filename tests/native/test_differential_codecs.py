"""Differential properties of the byte primitives: codecs, varints, CRC-32C, murmur2."""

from __future__ import annotations

import zlib
from typing import Any

import crc32c as crc32c_package
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkacore.errors import DecodeError
from kafkacore.partitioner import murmur2_py
from kafkacore.records import Compression, _varint
from kafkacore.records._crc import crc32c_py
from kafkacore.records.compression import compress_py, decompress_py

from .paths import native, outcome, same_error

CODECS = [c for c in Compression if c is not Compression.NONE]
MAX = 1 << 16


def _decompress_both(codec: int, data: bytes, magic: int = 2, max_size: int = MAX) -> None:
    api = "RecordBatch v2" if magic == 2 else f"Message v{magic}"
    pure = outcome(lambda: decompress_py(codec, data, max_size=max_size, magic=magic, api=api))
    comp = outcome(lambda: native.decompress(codec, data, max_size, magic, api))
    if pure[0] == "ok" or comp[0] == "ok":
        assert pure == comp
    else:
        assert pure[1][0] is comp[1][0] is DecodeError, (pure, comp)
        assert same_error(pure[1], comp[1]), (pure, comp)


@given(codec=st.sampled_from(CODECS), data=st.binary(max_size=2000), level=st.none())
def test_each_path_reads_what_the_other_writes(codec: Compression, data: bytes, level: Any) -> None:
    from_native = native.compress(codec.value, data, level)
    from_python = compress_py(codec, data, level=level)
    assert decompress_py(codec, from_native) == data
    assert native.decompress(codec, from_python, MAX, 2, "x") == data
    assert native.decompress(codec, from_native, MAX, 2, "x") == data


@pytest.mark.parametrize(
    ("codec", "levels"),
    [
        (Compression.GZIP, [-1, 0, 1, 9]),
        (Compression.LZ4, [0, 1, 9, 12, 17]),
        (Compression.ZSTD, [-5, 1, 3, 19, 22]),
    ],
)
def test_every_accepted_level_compresses_on_both_paths(
    codec: Compression, levels: list[int]
) -> None:
    data = b"kafkacore " * 500
    for level in levels:
        assert decompress_py(codec, native.compress(codec.value, data, level)) == data
        assert native.decompress(codec, compress_py(codec, data, level=level), MAX, 2, "x") == data


def test_the_uncompressed_framings_match_byte_for_byte() -> None:
    # snappy (xerial, 32 KiB blocks) is the same snap crate on both paths.
    data = bytes(range(256)) * 300
    assert native.compress(Compression.SNAPPY.value, data, None) == compress_py(
        Compression.SNAPPY, data
    )


@given(
    codec=st.sampled_from(CODECS), garbage=st.binary(max_size=200), magic=st.sampled_from([0, 2])
)
def test_garbage_streams_fail_alike(codec: Compression, garbage: bytes, magic: int) -> None:
    _decompress_both(codec.value, garbage, magic)


@given(
    codec=st.sampled_from(CODECS),
    data=st.binary(max_size=500),
    cut=st.integers(min_value=0),
    flip=st.tuples(st.integers(min_value=0), st.integers(1, 255)),
)
def test_damaged_streams_fail_alike(
    codec: Compression, data: bytes, cut: int, flip: tuple[int, int]
) -> None:
    stream = compress_py(codec, data)
    _decompress_both(codec.value, stream[: cut % (len(stream) + 1)])
    damaged = bytearray(stream)
    damaged[flip[0] % len(damaged)] ^= flip[1]
    _decompress_both(codec.value, bytes(damaged))
    _decompress_both(codec.value, stream + stream)  # concatenated frames / members
    _decompress_both(codec.value, stream + bytes(damaged[:5]))


@given(
    codec=st.sampled_from(CODECS),
    size=st.integers(MAX - 3, MAX + 3),
    fill=st.binary(min_size=1, max_size=3),
)
def test_the_bound_is_exact_on_both_paths(codec: Compression, size: int, fill: bytes) -> None:
    data = (fill * size)[:size]
    _decompress_both(codec.value, compress_py(codec, data))


def test_lz4_magic_0_header_checksum_quirk_alike() -> None:
    # KAFKA-3160: a magic-0 frame's header checksum byte is computed over the
    # wrong bytes; both paths replace it before decoding.
    frame = bytearray(compress_py(Compression.LZ4, b"legacy lz4 payload" * 10))
    frame[6] ^= 0xFF
    _decompress_both(Compression.LZ4.value, bytes(frame), magic=0)
    assert native.decompress(3, bytes(frame), MAX, 0, "Message v0") == b"legacy lz4 payload" * 10
    _decompress_both(Compression.LZ4.value, b"\x04\x22\x4d\x18\x60", magic=0)
    _decompress_both(Compression.LZ4.value, b"not lz4", magic=0)


@pytest.mark.parametrize("codec", [0, 5, 6, 7])
def test_unknown_codecs_fail_alike(codec: int) -> None:
    _decompress_both(codec, b"whatever")


@given(data=st.binary(max_size=12), pos=st.integers(0, 12), max_bytes=st.sampled_from([5, 10]))
def test_varint_reads_agree(data: bytes, pos: int, max_bytes: int) -> None:
    pure = outcome(lambda: _varint.read_zigzag(data, pos, max_bytes))
    comp = outcome(lambda: native.read_zigzag(data, pos, max_bytes))
    if pure[0] == "error":
        assert pure[1][0] is comp[1][0]
        if pure[1][0] is ValueError:
            assert pure == comp
    else:
        assert pure == comp


@given(st.integers(-(2**64), 2**64))
def test_varint_writes_agree(n: int) -> None:
    assert outcome(lambda: _varint.zigzag_bytes(n)) == outcome(lambda: native.zigzag_bytes(n))


# Short inputs take the pure path's table; long ones its snappy-framing route.
long_inputs = st.tuples(
    st.binary(min_size=1, max_size=300), st.integers(4000, 140_000), st.binary(max_size=8)
).map(lambda t: (t[0] * (t[1] // len(t[0]) + 1))[: t[1]] + t[2])


@given(data=st.binary(max_size=3000) | long_inputs, value=st.integers(0, 2**32 - 1))
def test_crc32c_agrees_with_an_independent_implementation(data: bytes, value: int) -> None:
    expected = crc32c_package.crc32c(data, value)
    assert native.crc32c(data, value) == expected
    assert crc32c_py(data, value) == expected
    assert native.crc32c(memoryview(bytearray(data))) == crc32c_package.crc32c(data)


def test_crc32c_check_value() -> None:
    assert native.crc32c(b"123456789") == crc32c_py(b"123456789") == 0xE3069283
    assert zlib.crc32(b"123456789") != 0xE3069283  # not the zlib polynomial


@given(st.binary(max_size=200))
def test_murmur2_agrees(data: bytes) -> None:
    assert native.murmur2(data) == murmur2_py(data)
    assert native.murmur2(memoryview(bytearray(data))) == murmur2_py(data)

"""Differential properties: the compiled and the pure-Python decoder agree on every input.

Same inputs, valid and hostile; both must return the same records or raise
the same DecodeError (type, api, field, byte offset and reason; only the
codec library's own words in "corrupt <codec> stream (...)" may differ).
Inputs: batches built from arbitrary records in every codec and timestamp
type, then damaged: truncated, bit-flipped, records sections replaced by
random bytes under a valid CRC, absurd record counts, varints made overlong,
deltas pushing offsets and timestamps out of int64, the CRC broken.
"""

from __future__ import annotations

import struct
from typing import Any

from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st

from kafkacore.records import Compression, compress

from ..records.strategies import build, codecs, records, reseal
from .paths import NativeBatch, PureBatch, iterate, outcome, same_error

MAX = 1 << 20  # decompression cap for these tests


def _views(cls: type[PureBatch | NativeBatch], data: bytes, check_crc: bool) -> dict[str, Any]:
    def batch() -> PureBatch | NativeBatch:
        return cls(data, max_decompressed_size=MAX, check_crc=check_crc)

    def columns() -> tuple[Any, ...]:
        c = batch().columns()
        return (list(c.offsets), list(c.timestamps), c.keys, c.values, c.headers)

    def arrow() -> tuple[Any, ...]:
        a = batch().arrow_columns()
        cols = [a.keys, a.values]
        if a.headers is not None:
            cols += [a.headers.keys, a.headers.values]
        flat: list[Any] = [bytes(a.offsets), bytes(a.timestamps)]
        if a.headers is not None:
            flat.append(bytes(a.headers.offsets))
        for col in cols:
            flat += [
                bytes(col.offsets),
                bytes(col.data),
                None if col.validity is None else bytes(col.validity),
                col.null_count,
                col.offsets.format,
            ]
        return tuple(flat)

    def constructed() -> Any:
        return batch()

    built = outcome(constructed)
    if built[0] == "error":
        return {"constructor": built}
    return {
        "records": outcome(lambda: batch().records()),
        "columns": outcome(columns),
        "arrow": outcome(arrow),
        "iterate": iterate(batch()),
    }


def assert_same(data: bytes, check_crc: bool = True) -> None:
    pure = _views(PureBatch, data, check_crc)
    comp = _views(NativeBatch, data, check_crc)
    assert pure.keys() == comp.keys()
    for view in pure:
        p, c = pure[view], comp[view]
        if view == "iterate":
            assert p[0] == c[0], f"{view}: different records before the fault"
            assert same_error(p[1], c[1]), f"{view}: {p[1]} != {c[1]}"
        elif p[0] == "ok" or c[0] == "ok":
            assert p == c, f"{view}: {p} != {c}"
        else:
            assert same_error(p[1], c[1]), f"{view}: {p[1]} != {c[1]}"


def _log_append_time(data: bytes) -> bytes:
    out = bytearray(data)
    (attributes,) = struct.unpack_from(">h", out, 21)
    struct.pack_into(">h", out, 21, attributes | 0x08)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


@given(recs=records, codec=codecs, base=st.integers(-(2**63), 2**63 - 1), lat=st.booleans())
def test_valid_batches_decode_alike(recs: Any, codec: Compression, base: int, lat: bool) -> None:
    data = build(recs, codec, base_offset=base)
    if lat:
        data = _log_append_time(data)
    assert_same(data)


@given(recs=records, codec=codecs, cut=st.integers(min_value=0))
def test_truncated_sections_fail_alike(recs: Any, codec: Compression, cut: int) -> None:
    data = build(recs, codec)
    section = data[61:]
    assert_same(reseal(data, section[: cut % (len(section) + 1)]))


@given(
    recs=records,
    codec=codecs,
    flips=st.lists(
        st.tuples(st.integers(min_value=0), st.integers(1, 255)), min_size=1, max_size=4
    ),
    check_crc=st.booleans(),
)
def test_bit_flipped_batches_fail_alike(
    recs: Any, codec: Compression, flips: list[tuple[int, int]], check_crc: bool
) -> None:
    data = bytearray(build(recs, codec))
    for where, xor in flips:
        data[21 + where % (len(data) - 21)] ^= xor
    assert_same(bytes(data), check_crc)
    # The same damage behind a valid CRC reaches the record parser (or the codec).
    assert_same(reseal(data, bytes(data[61:])))


@given(section=st.binary(max_size=300), count=st.integers(-5, 2**31 - 1))
def test_random_records_sections_fail_alike(section: bytes, count: int) -> None:
    data = build([(b"k", b"v", [], 0)])
    assert_same(reseal(data, section, count=count))


@given(
    codec=st.sampled_from([c for c in Compression if c is not Compression.NONE]),
    payload=st.binary(max_size=300),
    garble=st.binary(max_size=40),
    count=st.integers(0, 60),
)
def test_compressed_garbage_fails_alike(
    codec: Compression, payload: bytes, garble: bytes, count: int
) -> None:
    data = build([(b"k", b"v", [], 0)], codec)
    # A codec stream of bytes that are no records, a damaged stream, plain garbage.
    for body in (compress(codec, payload), compress(codec, payload)[: len(garble)], garble):
        assert_same(reseal(data, body, count=count))


@given(
    recs=records,
    varint_at=st.integers(min_value=0),
    junk=st.sampled_from([b"\xff" * 11, b"\x80" * 5, b"\xff\xff\xff\xff\x1f", b"\x81"]),
)
def test_bad_varints_fail_alike(recs: Any, varint_at: int, junk: bytes) -> None:
    data = build(recs)
    section = bytearray(data[61:])
    at = varint_at % (len(section) + 1)
    section[at:at] = junk
    assert_same(reseal(data, bytes(section)))


@given(
    recs=records,
    base_offset=st.sampled_from([2**63 - 1, 2**63 - 40, -(2**63), 2**62]),
    base_ts=st.sampled_from([2**63 - 1, -(2**63), 2**63 - 5000, 0]),
)
def test_int64_overflow_fails_alike(recs: Any, base_offset: int, base_ts: int) -> None:
    data = bytearray(build(recs))
    struct.pack_into(">q", data, 0, base_offset)
    struct.pack_into(">q", data, 27, base_ts)
    assert_same(bytes(data), check_crc=False)


@given(recs=records, codec=codecs, crc=st.integers(0, 2**32 - 1))
def test_wrong_crc_fails_alike(recs: Any, codec: Compression, crc: int) -> None:
    data = bytearray(build(recs, codec))
    struct.pack_into(">I", data, 17, crc)
    assert_same(bytes(data))


def test_a_decompression_bomb_fails_alike_in_every_codec() -> None:
    bomb = b"\x00" * (4 * MAX)
    for codec in Compression:
        if codec is Compression.NONE:
            continue
        data = reseal(build([(None, b"v", [], 0)], codec), compress(codec, bomb), count=1)
        assert_same(data)
        got = outcome(lambda data=data: NativeBatch(data, max_decompressed_size=MAX).columns())
        assert got[0] == "error" and "inflates beyond max_size" in got[1][4]


def test_the_lazy_iterators_yield_the_same_records_before_a_fault() -> None:
    good = build([(b"a", b"1", [], 10), (b"b", b"2", [("h", b"x")], 11), (b"c", b"3", [], 12)])
    section = bytearray(good[61:])
    section[-3] = 0x7F  # the last record's value length now runs past its end
    damaged = reseal(good, bytes(section))
    pure_records, pure_error = iterate(PureBatch(damaged))
    native_records, native_error = iterate(NativeBatch(damaged))
    assert len(pure_records) == 2 and pure_records == native_records
    assert pure_error is not None and same_error(pure_error, native_error)


def test_records_kept_from_a_loop_are_never_refilled() -> None:
    # The compiled iterator refills a record in place only when nobody else
    # holds it: whatever a loop keeps must stay what it was.
    recs = [
        (b"k%d" % i, b"v%d" % i, [("h", b"%d" % i)] if i % 4 == 0 else [], i) for i in range(50)
    ]
    data = build(recs)
    expected = PureBatch(data).records()
    kept = []
    for i, record in enumerate(NativeBatch(data)):
        if i % 3 == 0:
            kept.append(record)
    assert kept == expected[::3]
    it = iter(NativeBatch(data))
    first, second = next(it), next(it)
    rest = list(it)
    assert [first, second, *rest] == expected
    seen = [tuple(r) for r in NativeBatch(data)]  # copies: each record read in its turn
    assert seen == [tuple(r) for r in expected]

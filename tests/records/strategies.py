"""Hypothesis strategies and small helpers shared by the records tests."""

from __future__ import annotations

import struct

from crc32c import crc32c
from hypothesis import strategies as st

from kafkacore.records import Compression, RecordBatchBuilder

# Timestamps anywhere in a range where every delta within a batch fits int64.
timestamps = st.integers(min_value=-(2**61), max_value=2**61)
small_timestamps = st.integers(min_value=-1, max_value=2**45)
payloads = st.none() | st.binary(max_size=300)
header_lists = st.lists(
    st.tuples(st.text(max_size=12), st.none() | st.binary(max_size=40)), max_size=4
)
records = st.lists(
    st.tuples(payloads, payloads, header_lists, timestamps | small_timestamps),
    min_size=1,
    max_size=40,
)
codecs = st.sampled_from(list(Compression))


def build(
    recs: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]],
    codec: Compression = Compression.NONE,
    **kwargs: object,
) -> bytes:
    builder = RecordBatchBuilder(compression=codec, **kwargs)  # type: ignore[arg-type]
    for key, value, headers, ts in recs:
        builder.append(value, key, timestamp=ts, headers=headers)
    return builder.build()


def reseal(batch: bytes | bytearray, records_section: bytes, *, count: int | None = None) -> bytes:
    """Replace a v2 batch's records section, fixing up length, count and CRC-32C."""
    out = bytearray(batch[:61]) + records_section
    struct.pack_into(">i", out, 8, len(out) - 12)
    if count is not None:
        struct.pack_into(">i", out, 57, count)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)

"""FrameAssembler: response frames with at most one copy, bounded like the codec's reader."""

from __future__ import annotations

import struct
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkacore.client.frames import FrameAssembler, FrameState
from kafkacore.errors import DecodeError
from kafkacore.protocol.framing import FrameReader


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def test_a_frame_inside_one_read_is_a_view_of_that_read() -> None:
    data = frame(b"abc") + frame(b"") + frame(b"de")
    out = FrameAssembler(max_frame_size=100).feed(data)
    assert [bytes(f) for f in out] == [b"abc", b"", b"de"]
    assert all(f.obj is data for f in out)  # no copy


def test_a_frame_over_several_reads_is_joined_once() -> None:
    fa = FrameAssembler(max_frame_size=100)
    data = frame(b"x" * 10)
    assert fa.feed(data[:2]) == [] and fa.state is FrameState.SIZE
    assert fa.feed(data[2:7]) == [] and fa.state is FrameState.BODY and fa.buffered == 3
    [out] = fa.feed(data[7:])
    assert bytes(out) == b"x" * 10 and fa.state is FrameState.SIZE and fa.buffered == 0
    assert isinstance(out.obj, bytes) and out.obj == b"x" * 10  # the one joined copy


def test_a_writable_read_is_copied_on_arrival() -> None:
    buf = bytearray(frame(b"abc"))
    [out] = FrameAssembler(max_frame_size=100).feed(buf)
    buf[4:7] = b"zzz"  # the transport reuses its buffer
    assert bytes(out) == b"abc"


def test_a_bad_prefix_fails_for_good_after_returning_what_came_first() -> None:
    fa = FrameAssembler(max_frame_size=5)
    out = fa.feed(frame(b"ok") + struct.pack(">i", 6) + b"junk")
    assert [bytes(f) for f in out] == [b"ok"]
    assert fa.state is FrameState.FAILED and isinstance(fa.error, DecodeError)
    assert "frame size 6 outside 0..5" in str(fa.error)
    with pytest.raises(DecodeError):
        fa.feed(frame(b"a"))
    with pytest.raises(DecodeError, match="frame size -1"):
        FrameAssembler(max_frame_size=5).feed(struct.pack(">i", -1))
    with pytest.raises(ValueError, match="max_frame_size"):
        FrameAssembler(max_frame_size=-1)


def test_a_large_claim_allocates_only_what_arrives() -> None:
    fa = FrameAssembler(max_frame_size=1 << 30)
    tracemalloc.start()
    try:
        fa.feed(struct.pack(">i", (1 << 30) - 1) + b"x" * 1000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024 and fa.state is FrameState.BODY


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.binary(max_size=40), max_size=8),
    st.lists(st.integers(1, 50), min_size=1, max_size=30),
    st.binary(max_size=12),
)
def test_same_frames_and_errors_as_the_codecs_reader(
    bodies: list[bytes], cuts: list[int], tail: bytes
) -> None:
    stream = b"".join(frame(b) for b in bodies) + tail
    ours, theirs = FrameAssembler(max_frame_size=64), FrameReader(max_frame_size=64)
    got: list[bytes] = []
    want: list[bytes] = []
    pos = 0
    for size in cuts * 20:
        if pos >= len(stream):
            break
        piece = stream[pos : pos + size]
        pos += size
        for reader, sink in ((ours, got), (theirs, want)):
            try:
                sink.extend(bytes(f) for f in reader.feed(piece))
            except DecodeError as exc:
                sink.append(b"error: " + exc.reason.split(";")[0].encode())  # offsets differ
    assert got == want
    assert (ours.error is None) == (theirs.error is None)

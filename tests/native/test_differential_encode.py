"""Differential properties of the builders: same calls, same bytes, same errors."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkacore.records import Compression, control_batch
from kafkacore.records.builder import BuilderState

from ..records.strategies import codecs, records
from .paths import NativeBatch, NativeRecordBatchBuilder, PureBatch, PyRecordBatchBuilder, outcome

INT64 = st.integers(-(2**63), 2**63 - 1)

# Arguments as a caller might pass them, wrong ones included.
keys_values = (
    st.none()
    | st.binary(max_size=50)
    | st.binary(max_size=20).map(bytearray)
    | st.binary(max_size=20).map(memoryview)
    | st.sampled_from(["text", 7, 1.5, [b"x"]])
)
timestamp_args = (
    INT64
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.sampled_from([True, 1.0, "5", None])
)
header_items = (
    st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=10))
    | st.tuples(st.binary(max_size=3), st.none())
    | st.tuples(st.text(max_size=3), st.text(max_size=3))
    | st.lists(st.text(max_size=3), max_size=3).map(list)
    | st.sampled_from([("\ud800", b"x"), 5, ("a", b"b", b"c")])
)
header_args = st.none() | st.lists(header_items, max_size=3) | st.tuples(header_items)
appends = st.lists(st.tuples(keys_values, keys_values, timestamp_args, header_args), max_size=25)
builder_args = st.fixed_dictionaries(
    {},
    optional={
        "compression": st.sampled_from(list(Compression)),
        "base_offset": INT64,
        "producer_id": st.integers(-1, 2**40),
        "producer_epoch": st.integers(-1, 300),
        "base_sequence": st.integers(-1, 2**31 - 1),
        "partition_leader_epoch": st.integers(-1, 2**31 - 1),
        "log_append_time": st.none() | INT64,
        "transactional": st.booleans(),
        "batch_size": st.integers(1, 1 << 20),
    },
)


def _run(cls: type[Any], kwargs: dict[str, Any], calls: list[Any]) -> list[Any]:
    made = outcome(lambda: cls(**kwargs))
    if made[0] == "error":
        return [made]
    builder = made[1]
    trace: list[Any] = []
    for key, value, ts, headers in calls:
        extra = {} if headers is None else {"headers": headers}
        trace.append(
            outcome(lambda v=value, k=key, t=ts, e=extra: builder.append(v, k, timestamp=t, **e))
        )
        trace.append((builder.record_count, builder.size_in_bytes))
        trace.append(outcome(lambda: builder.has_room_for(b"k", b"v", timestamp=0)))
    data = outcome(builder.build)
    trace += [data, builder.state, outcome(lambda: builder.append(b"late", timestamp=0))]
    if data[0] == "ok":
        trace.append(outcome(lambda: PureBatch(data[1]).records()))
        trace.append(outcome(lambda: NativeBatch(data[1]).records()))
    return trace


def _comparable(trace: list[Any], compressed: bool) -> list[Any]:
    # Compressed bytes may differ (zlib-rs / liblz4 / libzstd versions); the records may not.
    if not compressed:
        return trace
    return [
        t
        for t in trace
        if not (isinstance(t, tuple) and t[:1] == ("ok",) and isinstance(t[1], bytes))
    ]


@given(kwargs=builder_args, calls=appends)
def test_same_appends_give_the_same_batch_or_the_same_error(
    kwargs: dict[str, Any], calls: list[Any]
) -> None:
    compressed = kwargs.get("compression", Compression.NONE) is not Compression.NONE
    pure = _run(PyRecordBatchBuilder, kwargs, calls)
    comp = _run(NativeRecordBatchBuilder, kwargs, calls)
    assert _comparable(pure, compressed) == _comparable(comp, compressed)


many_values = st.lists(st.none() | st.binary(max_size=40), min_size=0, max_size=30)


@given(
    codec=codecs,
    first=records,
    values=many_values,
    with_keys=st.booleans(),
    ts=INT64 | st.lists(INT64, min_size=30, max_size=30),
    with_headers=st.booleans(),
)
def test_append_many_agrees(
    codec: Compression,
    first: list[Any],
    values: list[bytes | None],
    with_keys: bool,
    ts: Any,
    with_headers: bool,
) -> None:
    keys = [None if v is None else v[::-1] for v in values] if with_keys else None
    timestamps = ts if isinstance(ts, int) else ts[: len(values)]
    headers = [[("n", v)] for v in values] if with_headers else None
    results = []
    for cls in (PyRecordBatchBuilder, NativeRecordBatchBuilder):
        builder = cls(compression=codec)
        for key, value, hdrs, t in first[:3]:
            builder.append(value, key, timestamp=t, headers=hdrs)
        got = outcome(
            lambda b=builder: b.append_many(values, keys, timestamps=timestamps, headers=headers)
        )
        data = builder.build()
        results.append((got, PureBatch(data).records(), NativeBatch(data).records()))
        if codec is Compression.NONE:
            results.append(data)
    assert results[0] == results[len(results) // 2]
    if codec is Compression.NONE:
        assert results[1] == results[3]


def test_a_failed_append_many_leaves_both_builders_as_they_were() -> None:
    for cls in (PyRecordBatchBuilder, NativeRecordBatchBuilder):
        builder = cls()
        builder.append(b"a", timestamp=5)
        before = builder.size_in_bytes
        got = outcome(lambda b=builder: b.append_many([b"x", "not bytes"], timestamps=6))
        assert got[0] == "error" and got[1][0] is TypeError
        assert (builder.size_in_bytes, builder.record_count, builder.state) == (
            before,
            1,
            BuilderState.OPEN,
        )


def test_control_batches_are_identical() -> None:
    for kind in (0, 1, 5):
        assert control_batch(kind, producer_id=7, producer_epoch=1, timestamp=99) == bytes(
            control_batch(kind, producer_id=7, producer_epoch=1, timestamp=99)
        )
    a = PyRecordBatchBuilder(producer_id=3, transactional=True)
    b = NativeRecordBatchBuilder(producer_id=3, transactional=True)
    for builder in (a, b):
        builder._mark_control()
        builder.append(b"\x00\x00\x00\x00\x00\x00", b"\x00\x00\x00\x01", timestamp=1)
    assert a.build() == b.build()
    assert NativeBatch(b.build()).control_record() == PureBatch(a.build()).control_record()


column_items = (
    st.none() | st.binary(max_size=20) | st.binary(max_size=5).map(bytearray) | st.just(7)
)
columns = st.lists(column_items, max_size=12)
ts_columns = (
    INT64
    | st.lists(INT64, max_size=12)
    | st.lists(st.integers(-(2**70), 2**70) | st.just(True), max_size=12)
)


@given(
    values=columns,
    keys=st.none() | columns,
    timestamps=ts_columns,
    as_tuple=st.booleans(),
    before=st.lists(st.integers(-(2**40), 2**40), max_size=2),
)
def test_append_many_fast_and_shared_paths_agree(
    values: list[Any], keys: list[Any] | None, timestamps: Any, as_tuple: bool, before: list[int]
) -> None:
    # Lists of bytes/None with int timestamps take the compiled fast path;
    # anything else (tuples, bytearrays, wrong types, lengths, ranges) the
    # shared Python checks. Both must end where the pure builder ends.
    if keys is not None:
        keys = (keys * 2)[: len(values)] if keys else None
    if isinstance(timestamps, list) and len(timestamps) != len(values) and timestamps:
        timestamps = (timestamps * (len(values) + 1))[: len(values)]
    vals: Any = tuple(values) if as_tuple else values
    traces = []
    for cls in (PyRecordBatchBuilder, NativeRecordBatchBuilder):
        builder = cls()
        for t in before:
            builder.append(b"x", timestamp=t)
        got = outcome(lambda b=builder: b.append_many(vals, keys, timestamps=timestamps))
        traces.append((got, builder.record_count, builder.size_in_bytes, builder.build()))
    assert traces[0] == traces[1]


def test_a_codec_failure_in_build_leaves_the_pure_builder_open_and_growable(
    monkeypatch: Any,
) -> None:
    # The pure build compresses a view of its buffer; that view must be let
    # go even when the codec raises and the caller keeps the exception (and so
    # the frames), or the next append could not grow the buffer.
    from kafkacore.records import _py_builder

    def broken(*args: object, **kwargs: object) -> bytes:
        raise RuntimeError("codec down")

    builder = PyRecordBatchBuilder(compression=Compression.GZIP)
    builder.append(b"a", timestamp=5)
    monkeypatch.setattr(_py_builder, "compress_py", broken)
    with pytest.raises(RuntimeError, match="codec down") as kept:
        builder.build()
    monkeypatch.undo()
    builder.append(b"b" * 1000, timestamp=6)
    assert kept.traceback  # still held while the builder grew
    expected = NativeRecordBatchBuilder(compression=Compression.GZIP)
    expected.append(b"a", timestamp=5)
    expected.append(b"b" * 1000, timestamp=6)
    assert (builder.size_in_bytes, builder.state) == (expected.size_in_bytes, BuilderState.OPEN)
    assert NativeBatch(builder.build()).records() == NativeBatch(expected.build()).records()

"""Arrow-ready buffers: pyarrow builds arrays from them without copying, on both paths."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given

from kafkacore.records import Compression
from kafkacore.records.model import BinaryColumn

from ..records.strategies import build, codecs, records
from .paths import NativeBatch, PureBatch

BINARY = pa.binary()


def _binary(col: BinaryColumn, type_: pa.DataType = BINARY) -> pa.Array:
    validity = None if col.validity is None else pa.py_buffer(col.validity)
    return pa.Array.from_buffers(
        type_,
        len(col),
        [validity, pa.py_buffer(col.offsets), pa.py_buffer(col.data)],
        null_count=col.null_count,
    )


def _table(batch: PureBatch | NativeBatch) -> pa.Table:
    cols = batch.arrow_columns()
    n = len(cols)
    arrays = {
        "offset": pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(cols.offsets)]),
        "timestamp": pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(cols.timestamps)]),
        "key": _binary(cols.keys),
        "value": _binary(cols.values),
    }
    if cols.headers is not None:
        header = pa.StructArray.from_arrays(
            [_binary(cols.headers.keys, pa.string()), _binary(cols.headers.values)],
            names=["key", "value"],
        )
        arrays["headers"] = pa.ListArray.from_arrays(
            pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(cols.headers.offsets)]),
            header,
        )
    return pa.table(arrays)


@pytest.mark.parametrize("cls", [PureBatch, NativeBatch])
@given(recs=records, codec=codecs)
def test_arrow_arrays_hold_the_records(
    cls: type[PureBatch | NativeBatch], recs: list[Any], codec: Compression
) -> None:
    data = build(recs, codec)
    table = _table(cls(data))
    table.validate(full=True)
    expected = PureBatch(data).records()
    assert table.column("offset").to_pylist() == [r.offset for r in expected]
    assert table.column("timestamp").to_pylist() == [r.timestamp for r in expected]
    assert table.column("key").to_pylist() == [r.key for r in expected]
    assert table.column("value").to_pylist() == [r.value for r in expected]
    if any(r.headers for r in expected):
        got = table.column("headers").to_pylist()
        assert [[(h["key"], h["value"]) for h in hs] for hs in got] == [
            list(r.headers) for r in expected
        ]
    else:
        assert "headers" not in table.column_names


def test_pyarrow_wraps_the_native_buffers_in_place() -> None:
    data = build([(b"k%d" % i, b"v" * i, [], i) for i in range(100)])
    cols = NativeBatch(data).arrow_columns()
    wrapped = pa.py_buffer(cols.values.data)
    assert wrapped.address == pa.py_buffer(cols.values.data).address  # no copy on wrap
    array = _binary(cols.values)
    assert array.buffers()[2].address == wrapped.address  # the array uses that memory
    assert cols.values.offsets.format == "i" and cols.offsets.format == "q"
    assert cols.values.data.readonly and cols.offsets.readonly
    with pytest.raises(TypeError):
        cols.values.data[0] = 1  # type: ignore[index]


def test_nulls_are_marked_in_the_validity_bitmap() -> None:
    recs = [(None if i % 3 == 0 else b"k", b"v", [], 0) for i in range(10)]
    for cls in (PureBatch, NativeBatch):
        keys = cls(build(recs)).arrow_columns().keys
        assert keys.null_count == 4
        assert keys.validity is not None
        assert bytes(keys.validity) == bytes([0b10110110, 0b00000001])
        assert keys.to_list() == [None if i % 3 == 0 else b"k" for i in range(10)]

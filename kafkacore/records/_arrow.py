"""Arrow's layout for decoded records (int32 offsets, one data buffer per binary column).

:meth:`RecordBatch.arrow_columns <kafkacore.records.batch.RecordBatch.arrow_columns>`
builds it two ways: the pure version from the decoded columns
(:func:`arrow_from_columns`), the compiled one from buffers the extension
filled without the GIL (:func:`arrow_from_native`). Both give identical
bytes.
"""

from __future__ import annotations

from array import array
from itertools import accumulate
from typing import Final

from kafkacore.records import _backend
from kafkacore.records.model import ArrowColumns, BinaryColumn, HeaderColumns, RecordColumns

if _backend.NATIVE_UNAVAILABLE is None:  # also under KAFKACORE_PURE=1, for the tests
    from kafkacore.records import _native

__all__ = ["arrow_from_columns", "arrow_from_native"]

_ARROW_TOO_BIG: Final = (
    "the batch holds more than 2 GiB of keys, values or headers: "
    "Arrow's int32 offsets cannot address it; use columns()"
)


def _binary_column(items: list[bytes | None]) -> BinaryColumn:
    n = len(items)
    ends = array("q", accumulate((0 if item is None else len(item) for item in items), initial=0))
    if ends[-1] > 2**31 - 1:
        raise OverflowError(_ARROW_TOO_BIG)
    validity: memoryview | None = None
    nulls = [i for i, item in enumerate(items) if item is None]
    if nulls:
        bits = bytearray(b"\xff" * ((n + 7) // 8))
        if n % 8:
            bits[-1] = (1 << (n % 8)) - 1
        for i in nulls:
            bits[i >> 3] &= ~(1 << (i & 7)) & 0xFF
        validity = memoryview(bytes(bits))
    return BinaryColumn(
        offsets=memoryview(array("i", ends)),
        data=memoryview(b"".join(item for item in items if item)),
        validity=validity,
        null_count=len(nulls),
    )


def arrow_from_columns(cols: RecordColumns) -> ArrowColumns:
    """The pure path: lay out already decoded columns."""
    headers: HeaderColumns | None = None
    if any(cols.headers):
        flat = [h for hdrs in cols.headers for h in hdrs]
        ends = array("q", accumulate(map(len, cols.headers), initial=0))
        headers = HeaderColumns(
            offsets=memoryview(array("i", ends)),
            keys=_binary_column([k.encode("utf-8") for k, _ in flat]),
            values=_binary_column([v for _, v in flat]),
        )
    return ArrowColumns(
        offsets=memoryview(cols.offsets),
        timestamps=memoryview(cols.timestamps),
        keys=_binary_column(cols.keys),
        values=_binary_column(cols.values),
        headers=headers,
    )


if _backend.NATIVE_UNAVAILABLE is None:  # also under KAFKACORE_PURE=1, for the tests

    def _native_column(raw: _native._Column) -> BinaryColumn:
        offsets, data, validity, null_count = raw
        return BinaryColumn(
            offsets=memoryview(offsets),
            data=memoryview(data),
            validity=None if validity is None else memoryview(validity),
            null_count=null_count,
        )

    def arrow_from_native(
        raw: tuple[
            _native.Buffer,
            _native.Buffer,
            _native._Column,
            _native._Column,
            tuple[_native.Buffer, _native._Column, _native._Column] | None,
        ],
    ) -> ArrowColumns:
        """The compiled path: wrap the extension's buffers without a copy."""
        offsets, timestamps, keys, values, hdrs = raw
        headers = None
        if hdrs is not None:
            list_offsets, hkeys, hvalues = hdrs
            headers = HeaderColumns(
                offsets=memoryview(list_offsets),
                keys=_native_column(hkeys),
                values=_native_column(hvalues),
            )
        return ArrowColumns(
            offsets=memoryview(offsets),
            timestamps=memoryview(timestamps),
            keys=_native_column(keys),
            values=_native_column(values),
            headers=headers,
        )

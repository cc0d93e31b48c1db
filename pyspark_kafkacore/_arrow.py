"""The source's schema, and Arrow record batches built from kafkacore's columns.

Theory of operation
-------------------
The schema is the JVM connector's (``KafkaRecordToRowConverter``):
``key binary, value binary, topic string, partition int, offset bigint,
timestamp timestamp, timestampType int`` and, with ``includeHeaders``,
``headers array<struct<key:string,value:binary>>`` (null when a record has
no headers, as the connector gives). PySpark takes ``pyarrow.RecordBatch``es
from ``read()`` only when their Arrow schema equals
``to_arrow_schema(schema, timezone="UTC")`` exactly; :func:`arrow_schema`
is that schema, built here without a Spark session.

:func:`record_batch` turns the head of one
:class:`~kafkacore.consumer.PartitionBatch` (the consumer's columnar path:
offsets and timestamps as ``array('q')``, keys/values/headers as lists)
into one Arrow batch without a Python object per row: keys and values go
to Arrow from their lists in one call each, offsets and timestamps through
numpy (milliseconds become microseconds), and the constant columns (topic,
partition, timestamp type) are written as buffers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from kafkacore.consumer import PartitionBatch

__all__ = [
    "MalformedTimestampError",
    "arrow_schema",
    "record_batch",
    "record_batch_of",
    "spark_schema",
]

_HEADER_TYPE = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
_HEADERS_TYPE = pa.list_(pa.field("element", _HEADER_TYPE))
_TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")
_BASE_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", _TIMESTAMP_TYPE),
    pa.field("timestampType", pa.int32()),
]
_SCHEMAS = {
    False: pa.schema(_BASE_FIELDS),
    True: pa.schema([*_BASE_FIELDS, pa.field("headers", _HEADERS_TYPE)]),
}
# Microseconds must fit an int64, as in the connector (its multiply is exact).
_MAX_MS = (2**63 - 1) // 1000


class MalformedTimestampError(ValueError):
    """A record's timestamp (ms) does not fit Spark's microsecond timestamps."""


def spark_schema(include_headers: bool) -> StructType:
    """The connector's read schema."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
        fields.append(StructField("headers", ArrayType(header)))
    return StructType(fields)


def arrow_schema(include_headers: bool) -> Any:
    """``to_arrow_schema(spark_schema(include_headers), timezone="UTC")``."""
    return _SCHEMAS[include_headers]


def _constant_string(text: str, n: int) -> Any:
    data = text.encode()
    width = len(data)
    if n * width >= 2**31:
        return pa.array([text] * n, pa.string())
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32) if width else None
    if offsets is None:
        offsets = np.zeros(n + 1, dtype=np.int32)
    return pa.Array.from_buffers(
        pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data * n)]
    )


def _constant_int32(value: int, n: int) -> Any:
    return pa.Array.from_buffers(
        pa.int32(), n, [None, pa.py_buffer(np.full(n, value, dtype=np.int32))]
    )


def _headers(headers: list[tuple[tuple[str, bytes | None], ...]]) -> Any:
    lengths = np.fromiter((len(h) for h in headers), dtype=np.int32, count=len(headers))
    offsets = np.zeros(len(headers) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    keys = [k for h in headers for k, _ in h]
    values = [v for h in headers for _, v in h]
    items = pa.StructArray.from_arrays(
        [pa.array(keys, pa.string()), pa.array(values, pa.binary())],
        fields=list(_HEADER_TYPE),
    )
    return pa.ListArray.from_arrays(
        pa.array(offsets), items, type=_HEADERS_TYPE, mask=pa.array(lengths == 0)
    )


def record_batch(batch: PartitionBatch, stop: int, include_headers: bool) -> Any:
    """The first ``stop`` records of ``batch`` as a ``pyarrow.RecordBatch``."""
    return record_batch_of([(batch, stop)], include_headers)


def record_batch_of(pieces: Sequence[tuple[PartitionBatch, int]], include_headers: bool) -> Any:
    """The heads of several batches of one partition, in order, as one
    ``pyarrow.RecordBatch`` (each piece: a batch and how many of its records).

    One Arrow batch per poll rather than per Kafka record batch: Spark pays
    a fixed cost per Arrow batch on both sides of its Python worker socket.
    """
    first = pieces[0][0]
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    heads: list[tuple[tuple[str, bytes | None], ...]] = []
    offsets_parts = []
    millis_parts = []
    types_parts = []
    for batch, stop in pieces:
        whole = stop >= len(batch)
        n = len(batch) if whole else stop
        keys += batch.keys if whole else batch.keys[:n]
        values += batch.values if whole else batch.values[:n]
        if include_headers:
            heads += batch.headers if whole else batch.headers[:n]
        offsets_parts.append(np.frombuffer(batch.offsets, dtype=np.int64, count=n))
        millis_parts.append(np.frombuffer(batch.timestamps, dtype=np.int64, count=n))
        types_parts.append(np.full(n, batch.timestamp_type, dtype=np.int32))
    offsets = offsets_parts[0] if len(offsets_parts) == 1 else np.concatenate(offsets_parts)
    millis = millis_parts[0] if len(millis_parts) == 1 else np.concatenate(millis_parts)
    types = types_parts[0] if len(types_parts) == 1 else np.concatenate(types_parts)
    n = len(offsets)
    if n and (int(millis.max()) > _MAX_MS or int(millis.min()) < -_MAX_MS):
        bad = int(np.argmax((millis > _MAX_MS) | (millis < -_MAX_MS)))
        raise MalformedTimestampError(
            f"{first.topic}-{first.partition} offset {int(offsets[bad])}: timestamp "
            f"{int(millis[bad])} ms is out of Spark's timestamp range"
        )
    columns = [
        pa.array(keys, pa.binary()),
        pa.array(values, pa.binary()),
        _constant_string(first.topic, n),
        _constant_int32(first.partition, n),
        pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(offsets)]),
        pa.Array.from_buffers(_TIMESTAMP_TYPE, n, [None, pa.py_buffer(millis * 1000)]),
        pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(types)]),
    ]
    if include_headers:
        columns.append(_headers(heads))
    return pa.RecordBatch.from_arrays(columns, schema=_SCHEMAS[include_headers])

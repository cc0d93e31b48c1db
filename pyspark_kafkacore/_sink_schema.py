"""Which input columns a ``format("kafkacore")`` write uses, checked on the driver.

Theory of operation
-------------------
The columns are the JVM connector's (``KafkaWriter.validateQuery``):

=============  ==========================================  ==========
column         type                                        required
=============  ==========================================  ==========
``value``      string or binary                            yes
``key``        string or binary                            no (null)
``topic``      string                                      unless the ``topic`` option is set
``partition``  int                                         no (the partitioner picks)
``headers``    array<struct<key:string,value:binary>>      no
=============  ==========================================  ==========

The ``topic`` option wins over a ``topic`` column (as in the connector).
Names match case-insensitively, like Spark's default resolver; other
columns are ignored, as the connector ignores them. :func:`plan_layout`
returns a :class:`SinkLayout` of column positions, or raises
:class:`SinkSchemaError` naming the column and what to do, before any data
moves.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    StringType,
    StructType,
)

__all__ = ["SinkLayout", "SinkSchemaError", "plan_layout"]

_HEADERS_DDL = "array<struct<key:string,value:binary>>"


class SinkSchemaError(ValueError):
    """The DataFrame cannot be written to Kafka; the message names the column."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SinkLayout:
    """Positions of the used columns in the input rows (None: column absent or unused)."""

    value: int
    value_is_string: bool
    key: int | None = None
    key_is_string: bool = False
    topic: int | None = None
    partition: int | None = None
    headers: int | None = None


def _is_headers(dtype: DataType) -> bool:
    if not isinstance(dtype, ArrayType) or not isinstance(dtype.elementType, StructType):
        return False
    fields = dtype.elementType.fields
    return (
        len(fields) == 2
        and fields[0].name == "key"
        and isinstance(fields[0].dataType, StringType)
        and fields[1].name == "value"
        and isinstance(fields[1].dataType, BinaryType)
    )


def _find(schema: StructType, name: str) -> tuple[int, DataType] | None:
    found = [(i, f) for i, f in enumerate(schema.fields) if f.name.lower() == name]
    if len(found) > 1:
        names = ", ".join(repr(f.name) for _, f in found)
        raise SinkSchemaError(
            f"column {name!r} is ambiguous: the DataFrame has {names}; keep one of them"
        )
    if not found:
        return None
    index, column = found[0]
    return index, column.dataType


def _string_or_binary(schema: StructType, name: str) -> tuple[int | None, bool]:
    found = _find(schema, name)
    if found is None:
        return None, False
    index, dtype = found
    if not isinstance(dtype, StringType | BinaryType):
        raise SinkSchemaError(
            f"column {name!r} has type {dtype.simpleString()}; it must be string or binary "
            f"(cast it, e.g. col('{name}').cast('string'))"
        )
    return index, isinstance(dtype, StringType)


def plan_layout(schema: StructType, topic_option: str | None) -> SinkLayout:
    """Check ``schema`` against the sink's columns; see the module docstring."""
    value, value_is_string = _string_or_binary(schema, "value")
    if value is None:
        columns = ", ".join(f.name for f in schema.fields) or "none"
        raise SinkSchemaError(
            f"column 'value' is required (string or binary) and the DataFrame has none "
            f"(its columns: {columns})"
        )
    key, key_is_string = _string_or_binary(schema, "key")
    topic: int | None = None
    found = _find(schema, "topic")
    if found is not None and topic_option is None:
        index, dtype = found
        if not isinstance(dtype, StringType):
            raise SinkSchemaError(
                f"column 'topic' has type {dtype.simpleString()}; it must be string"
            )
        topic = index
    elif found is None and topic_option is None:
        raise SinkSchemaError(
            "no topic to write to: set the 'topic' option or give a string column 'topic'"
        )
    partition: int | None = None
    found = _find(schema, "partition")
    if found is not None:
        index, dtype = found
        if not isinstance(dtype, IntegerType):
            raise SinkSchemaError(
                f"column 'partition' has type {dtype.simpleString()}; it must be int "
                "(cast it, e.g. col('partition').cast('int'))"
            )
        partition = index
    headers: int | None = None
    found = _find(schema, "headers")
    if found is not None:
        index, dtype = found
        if not _is_headers(dtype):
            raise SinkSchemaError(
                f"column 'headers' has type {dtype.simpleString()}; it must be {_HEADERS_DDL}"
            )
        headers = index
    return SinkLayout(
        value=value,
        value_is_string=value_is_string,
        key=key,
        key_is_string=key_is_string,
        topic=topic,
        partition=partition,
        headers=headers,
    )

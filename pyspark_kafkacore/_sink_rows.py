"""Arrow batches of a write, cut into per-destination column chunks for the producer.

Theory of operation
-------------------
The sink is a :class:`~pyspark.sql.datasource.DataSourceArrowWriter`: Spark
hands each task ``pyarrow.RecordBatch`` es, never one Python row object per
record. :func:`chunks` turns one batch into :class:`Chunk` s, one per
destination ``(topic, partition)`` (partition None: the producer's
partitioner picks per key), each holding plain ``bytes`` columns ready for
``KafkaProducer.send_many``:

* string columns are cast to binary in Arrow (UTF-8 is already their
  layout), so no Python ``str.encode`` runs per record;
* the common case, the ``topic`` option and no ``partition`` column, is one
  chunk without any per-row Python work;
* otherwise rows are grouped by destination keeping their order, so records
  of one partition keep the order they had in the task.

``headers`` (when the column exists and a row has any) ride along per
record; such chunks are sent record by record (``send_many`` takes no
headers). A row without a topic (a null in the ``topic`` column, with no
``topic`` option) is an error naming the row, raised before that batch sends.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from pyspark_kafkacore._sink_schema import SinkLayout

__all__ = ["Chunk", "chunks"]

Header = tuple[str, bytes | None]


@dataclass(frozen=True, slots=True)
class Chunk:
    """Records for one destination, as columns; ``headers`` None when no row has any."""

    topic: str
    partition: int | None
    keys: list[bytes | None] | None
    values: list[bytes | None]
    headers: list[list[Header] | None] | None = None

    def __len__(self) -> int:
        return len(self.values)


def _binary(column: pa.Array | pa.ChunkedArray, is_string: bool) -> list[Any]:
    if is_string:
        large = pa.types.is_large_string(column.type)
        column = column.cast(pa.large_binary() if large else pa.binary())
    return column.to_pylist()  # type: ignore[no-any-return]


def _headers(column: pa.Array | pa.ChunkedArray) -> list[list[Header] | None] | None:
    rows = column.to_pylist()
    out: list[list[Header] | None] = [
        [(h["key"], h["value"]) for h in row] if row else None for row in rows
    ]
    return out if any(out) else None


def chunks(batch: pa.RecordBatch, layout: SinkLayout, topic: str | None) -> Iterator[Chunk]:
    """The records of ``batch`` grouped per destination; ``topic`` is the option (it wins)."""
    n = batch.num_rows
    if n == 0:
        return
    values = _binary(batch.column(layout.value), layout.value_is_string)
    keys = None if layout.key is None else _binary(batch.column(layout.key), layout.key_is_string)
    if keys is not None and batch.column(layout.key).null_count == n:
        keys = None
    headers = None if layout.headers is None else _headers(batch.column(layout.headers))
    topics: list[str] | None = None
    if topic is None:
        assert layout.topic is not None, "plan_layout guarantees a topic option or column"
        topic_column = batch.column(layout.topic)
        if topic_column.null_count:
            row = topic_column.is_null().to_pylist().index(True)
            raise ValueError(
                f"format('kafkacore'): row {row} of a batch has a null 'topic'; give every "
                "row a topic or set the 'topic' option"
            )
        distinct = topic_column.unique()
        if len(distinct) == 1:
            topic = str(distinct[0].as_py())
        else:
            topics = topic_column.to_pylist()
    partitions: list[int | None] | None = None
    if layout.partition is not None:
        column = batch.column(layout.partition)
        partitions = None if column.null_count == n else column.to_pylist()
    if topics is None and partitions is None:
        assert topic is not None
        yield Chunk(topic, None, keys, values, headers)
        return
    fixed_topic = topic or ""
    groups: dict[tuple[str, int | None], list[int]] = {}
    for i in range(n):
        dest = (
            topics[i] if topics is not None else fixed_topic,
            partitions[i] if partitions is not None else None,
        )
        rows = groups.get(dest)
        if rows is None:
            groups[dest] = [i]
        else:
            rows.append(i)
    for (dest_topic, dest_partition), rows in groups.items():
        yield Chunk(
            dest_topic,
            dest_partition,
            None if keys is None else [keys[i] for i in rows],
            [values[i] for i in rows],
            None if headers is None else [headers[i] for i in rows],
        )

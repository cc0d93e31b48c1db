"""PySpark data source ``kafkacore``: Spark reads and writes Kafka through kafkacore.

Importing this package is all a Spark job needs: PySpark registers every
importable top-level ``pyspark_*`` module that exposes ``DefaultSource``.
``spark.dataSource.register(DefaultSource)`` works as well.

.. code-block:: python

    df = (spark.read.format("kafkacore")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "events").load())

Options and schema follow Spark's JVM connector (``format("kafka")``); see
``docs/spark.md`` for the table of what is the same, what differs and what
goes beyond it (an exactly-once sink, committing progress to a group).
The Kafka work is done by kafkacore's blocking (selector) transport.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSource

if TYPE_CHECKING:
    from pyspark.sql.datasource import (
        DataSourceReader,
        DataSourceStreamReader,
        DataSourceStreamWriter,
        DataSourceWriter,
    )
    from pyspark.sql.types import StructType

__all__ = ["DefaultSource"]


class DefaultSource(DataSource):
    """The ``kafkacore`` format for ``spark.read``/``readStream``/``write``/``writeStream``."""

    @classmethod
    def name(cls) -> str:
        return "kafkacore"

    def schema(self) -> StructType:
        from pyspark_kafkacore._source import read_schema

        return read_schema(self.options)

    def reader(self, schema: StructType) -> DataSourceReader:
        from pyspark_kafkacore._source import batch_reader

        return batch_reader(self.options, schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from pyspark_kafkacore._source import stream_reader

        return stream_reader(self.options, schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from pyspark_kafkacore._sink import batch_writer, check_reachable

        writer = batch_writer(self.options, schema, overwrite)
        check_reachable(writer.options)
        return writer

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from pyspark_kafkacore._sink import check_reachable, stream_writer

        writer = stream_writer(self.options, schema, overwrite)
        check_reachable(writer.options, stream=True)
        return writer

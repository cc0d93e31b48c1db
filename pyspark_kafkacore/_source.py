"""The read side (batch and streaming); being built, see issue #9."""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader
from pyspark.sql.types import StructType


def read_schema(options: Any) -> StructType:
    raise NotImplementedError("format('kafkacore') reading is not built yet")


def batch_reader(options: Any, schema: StructType) -> DataSourceReader:
    raise NotImplementedError("format('kafkacore') reading is not built yet")


def stream_reader(options: Any, schema: StructType) -> DataSourceStreamReader:
    raise NotImplementedError("format('kafkacore') reading is not built yet")

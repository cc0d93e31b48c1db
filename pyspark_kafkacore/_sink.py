"""The write side (batch and streaming); being built, see issue #9."""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter
from pyspark.sql.types import StructType


def batch_writer(options: Any, schema: StructType, overwrite: bool) -> DataSourceWriter:
    raise NotImplementedError("format('kafkacore') writing is not built yet")


def stream_writer(options: Any, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
    raise NotImplementedError("format('kafkacore') writing is not built yet")

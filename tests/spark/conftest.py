"""One local Spark session per test run (``local[2]``), with both Kafka formats.

Spark allows one JVM per process and takes about 10 s to start, so the
session is session-scoped and every Spark test shares it (and the broker
from ``kafka_broker``). Tests that use it get the ``spark`` marker.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker("spark")


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from localkafka.spark import local_spark

    session = local_spark("kafkacore-tests")
    try:
        yield session
    finally:
        session.stop()

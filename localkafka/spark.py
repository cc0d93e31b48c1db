"""Spark sessions for tests, benchmarks and the demo: ``local[N]``, or on a local cluster.

Theory of operation
-------------------
PySpark starts its JVM on the first ``getOrCreate()`` of a process, so
everything the JVM must know comes first: Spark's own Kafka connector jars
(:func:`~kafkacore.testing.libs.ensure_spark_kafka_libs`, resolved from Maven
Central, so ``format("kafka")`` runs beside ``format("kafkacore")``), and the
Python interpreter of the workers (this one, so the workers import the same
``pyspark_kafkacore`` and pyarrow; PySpark's default is ``python3`` on PATH).
The settings keep one small session on two cores quick: no UI, two shuffle
partitions, loopback addresses, a small driver heap. :func:`cluster_spark`
is the same session with its executors on a
:class:`~kafkacore.testing.spark_cluster.LocalSparkCluster` instead (each
executor JVM tagged with this process as its owner, so none outlives it).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from kafkacore.testing.libs import ensure_spark_kafka_libs
from kafkacore.testing.process import owner_tag

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kafkacore.testing.spark_cluster import LocalSparkCluster

__all__ = ["cluster_spark", "local_spark"]


def local_spark(
    app_name: str = "kafkacore",
    *,
    cores: int = 2,
    jvm_connector: bool = True,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """Return a local Spark session (``local[cores]``) with both Kafka formats.

    ``jvm_connector`` adds Spark's JVM Kafka connector jars (``format("kafka")``);
    ``format("kafkacore")`` is registered from ``pyspark_kafkacore`` either way.
    Settings in ``conf`` are applied last. If a session already runs in this
    process it is returned as it is (Spark allows one JVM per process).
    """
    settings = {"spark.master": f"local[{cores}]", "spark.sql.shuffle.partitions": str(cores)}
    settings["spark.default.parallelism"] = str(cores)
    return _session(app_name, jvm_connector, {**settings, **(conf or {})})


def cluster_spark(
    cluster: LocalSparkCluster,
    app_name: str = "kafkacore",
    *,
    jvm_connector: bool = True,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """Return a session whose executors run on ``cluster`` (one per worker).

    The executors' Python workers run this interpreter (the same machine),
    so nothing is shipped: for shipping kafkacore the way users do, see
    docs/spark.md, "Deploying".
    """
    parallelism = str(cluster.workers * cluster.cores)
    settings = {
        "spark.master": cluster.master_url,
        "spark.executor.memory": "1g",
        "spark.executor.extraJavaOptions": owner_tag(),
        "spark.sql.shuffle.partitions": parallelism,
        "spark.default.parallelism": parallelism,
    }
    return _session(app_name, jvm_connector, {**settings, **(conf or {})})


def _session(app_name: str, jvm_connector: bool, conf: Mapping[str, str]) -> SparkSession:
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    builder = (
        SparkSession.builder.appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.memory", "1g")
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.session.timeZone", "UTC")
    )
    if jvm_connector:
        libs = ensure_spark_kafka_libs()
        jars = sorted(str(p) for p in libs.glob("*.jar"))
        builder = builder.config("spark.jars", ",".join(jars))
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    from pyspark_kafkacore import DefaultSource

    spark.dataSource.register(DefaultSource)
    return spark

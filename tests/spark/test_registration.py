"""PySpark finds format("kafkacore") on its own: no register() call in user code."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

_SCRIPT = textwrap.dedent(
    """
    import os, sys
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[1]")
             .config("spark.ui.enabled", "false")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.host", "127.0.0.1").getOrCreate())
    try:
        # No spark.dataSource.register(...): PySpark's lookup of pyspark_*
        # modules must find DefaultSource. Without options, our own reader
        # answers with an error naming the missing option.
        spark.read.format("kafkacore").load().schema
    except Exception as exc:
        print("ERROR:", exc)
    finally:
        spark.stop()
    """
)


def test_format_kafkacore_is_registered_by_pyspark_itself() -> None:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        check=False,
    )
    out = proc.stdout + proc.stderr
    assert "ERROR:" in proc.stdout, out[-3000:]
    # The error comes from pyspark_kafkacore (it names a kafkacore source option),
    # not from Spark failing to find the format.
    assert "'subscribe', 'subscribePattern', 'assign' must be given" in proc.stdout, out[-3000:]
    assert "DATA_SOURCE_NOT_FOUND" not in out, out[-3000:]

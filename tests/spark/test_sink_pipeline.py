"""``examples/spark_pipeline.py`` runs against the real broker and checks its own result."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spark_pipeline.py"


def _reader_landed() -> bool:
    """Whether format('kafkacore') can read yet (the read side is built separately)."""
    from pyspark_kafkacore import _source

    try:
        _source.read_schema({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t"})
    except NotImplementedError:
        return False
    except Exception:
        return True
    return True


def test_pipeline_aggregates_orders_into_totals_exactly_once(
    spark: SparkSession, kafka_broker: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = importlib.util.spec_from_file_location("spark_pipeline", EXAMPLE)
    assert spec is not None and spec.loader is not None
    pipeline = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pipeline)
    # Until the read side lands, the example reads through Spark's JVM connector.
    read_format = "kafkacore" if _reader_landed() else "kafka"
    status = pipeline.main(
        [
            "--bootstrap",
            kafka_broker.bootstrap,
            "--orders",
            "pipeline-orders",
            "--totals",
            "pipeline-totals",
            "--events",
            "600",
            "--read-format",
            read_format,
            "--checkpoint",
            str(tmp_path / "checkpoint"),
        ],
        spark=spark,
    )
    out = capsys.readouterr().out
    assert status == 0, out
    assert "produced 600 orders" in out
    batches = re.search(rf"format\({read_format!r}\) in (\d+) micro-batches", out)
    assert batches is not None and int(batches.group(1)) >= 3, out  # maxOffsetsPerTrigger
    assert "check: totals match a direct computation over 600 orders" in out

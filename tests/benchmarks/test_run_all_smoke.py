"""run_all.py --quick end to end for the round-trip harness, against the real local broker.

The round-trip harness is the cheapest one that talks to a broker; the run
goes through everything else too: each client in a fresh process (peak
RSS), the merged JSON, the targets summary and the PNG.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kafkacore.testing.cluster import LocalKafka

RUN_ALL = Path(__file__).resolve().parents[2] / "benchmarks" / "run_all.py"


def test_quick_roundtrip_run_writes_rows_with_rss_and_ratios_a_plot_and_a_summary(
    kafka_broker: LocalKafka, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    cmd = [sys.executable, str(RUN_ALL), "--quick", "--only", "roundtrip"]
    cmd += ["--bootstrap", kafka_broker.bootstrap, "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]

    doc = json.loads((out / "results.json").read_text())
    assert doc["meta"]["failures"] == []
    assert doc["meta"]["bootstrap"] == kafka_broker.bootstrap
    rows = doc["rows"]
    clients = {r["contender"] for r in rows}
    assert clients == {
        "kafkacore selector",
        "kafkacore asyncio",
        "kafkacore trio",
        "kafka-python",
        "aiokafka",
    }
    assert {r["table"] for r in rows} == {
        "Metadata, single",
        "Metadata, pipelined (window 16)",
    }
    for row in rows:
        assert row["harness"] == "roundtrip" and row["unit"] == "requests/s"
        assert row["rate"] > 0
        # Each client ran in a process of its own: an interpreter's worth of memory at least.
        assert 10 < row["rss_mib"] < 1000
        if row["contender"].startswith("kafkacore"):
            assert row["path"] in ("compiled", "pure")
            assert set(row["ratios"]) == {"kafka-python", "aiokafka"}
        else:
            assert row["path"] is None

    png = out / "ratios.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = (out / "summary.md").read_text()
    assert "roundtrip: round trips >= 1x aiokafka | 6 |" in summary
    assert "| client | requests/s | peak RSS MiB |" in summary

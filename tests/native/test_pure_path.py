"""The codec, producer and consumer unit tests, again, on the pure-Python path.

The implementation is chosen once per process (KAFKACORE_PURE, read at
import), so the second pass runs in a child pytest. It takes the
socket-free tests only (no broker, JVM or Spark): about 15 s on a quiet
2-core machine, 20-30 s under load.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PATHS = ["tests/records", "tests/partitioner", "tests/producer", "tests/consumer"]
SOCKET_FREE = "not broker and not cluster and not java and not spark and not slow"


@pytest.mark.timeout(1200)
def test_codec_producer_and_consumer_unit_tests_pass_on_the_pure_python_path() -> None:
    env = {**os.environ, "KAFKACORE_PURE": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-W",
            "ignore::DeprecationWarning",
            "-m",
            SOCKET_FREE,
            *PATHS,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1100,
        check=False,
    )
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
    assert proc.returncode == 0, f"pure-Python pass failed:\n{tail}"
    summary = proc.stdout.strip().splitlines()[-1]
    match = re.match(r"(\d+) passed", summary)
    # Over 200 tests, tests/records/test_batch.py's check that the child's
    # path is the pure one among them.
    assert match is not None and int(match.group(1)) > 200, summary
    assert "failed" not in summary and "error" not in summary, summary

"""docs/cli.md's first shell block runs as written (``set -e``) against the broker,
with the installed ``kafkacore`` on PATH and the broker named by the environment."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kafkacore.testing import LocalKafka
from tests.cli.conftest import COMMAND_TIMEOUT, clean_env

pytestmark = pytest.mark.broker

PAGE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_the_first_example_runs(kafka_broker: LocalKafka) -> None:
    block = re.search(r"```bash\n(.*?)```", PAGE.read_text(), re.S)
    assert block is not None
    commands = block.group(1)
    assert commands.count("kafkacore ") >= 10
    env = clean_env(KAFKACORE_BOOTSTRAP_SERVERS=kafka_broker.bootstrap)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", commands],
        capture_output=True,
        text=True,
        env=env,
        timeout=COMMAND_TIMEOUT * 3,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert re.search(r"^\d/\d user-1=hello$", out, re.M) and re.search(
        r"^\d/\d user-2=world$", out, re.M
    )
    assert '"value": "hello"' in out and '"value": "world"' in out  # the group's two records
    assert "records sent" in out and "data.consumed.in.nMsg" in out
    assert "topic clicks deleted" in out

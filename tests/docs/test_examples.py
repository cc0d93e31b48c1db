"""Every Python example in the README and docs/ runs as written (issue 13).

Each page runs in its own interpreter against the suite's local broker
(examples say ``127.0.0.1:9092``, the address ``./dev demo`` and
``localkafka start`` use; only that address is replaced). A page whose
examples need more than a plain broker says so in :data:`NEEDS`, and the
test provides it rather than skipping the page.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafkacore.testing.cluster import LocalKafka
from tests.docs.examples import RUNNER, Example, examples, pages, with_broker

PAGES = {p.name: examples(p) for p in pages()}


def test_the_pages_have_examples() -> None:
    # The extraction itself must work: a broken fence regex would pass everything.
    assert sum(len(found) for found in PAGES.values()) >= 25
    assert len(PAGES["README.md"]) >= 3


def _more(page: str, broker: LocalKafka, tmp: Path) -> dict[str, str]:
    """Addresses and files beyond the PLAINTEXT listener that a page's examples name."""
    if page == "transports.md":
        # "localhost:9093" with "ca.pem": the SASL_SSL listener and its CA, as
        # `localkafka start --listeners all` prints them.
        assert broker.ca_file is not None
        shutil.copy(broker.ca_file, tmp / "ca.pem")
        return {"localhost:9093": broker.bootstrap_for("SASL_SSL")}
    return {}


def _run(
    found: list[Example], bootstrap: str, more: dict[str, str], tmp: Path
) -> subprocess.CompletedProcess[str]:
    blocks = [
        {"page": e.page, "line": e.line, "code": with_broker(e.code, bootstrap, more)}
        for e in found
    ]
    script = tmp / "blocks.json"
    script.write_text(json.dumps(blocks))
    return subprocess.run(
        [sys.executable, "-c", RUNNER, str(script)],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=300,
        # As in a shell with .venv activated: `python3` (what PySpark starts
        # its workers with) is this interpreter.
        env={
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
        },
        check=False,
    )


def _python_part(output: str) -> str:
    """The output without JVM stack frames (Spark's errors carry hundreds)."""
    lines = [ln for ln in output.splitlines() if not ln.lstrip().startswith("at ")]
    return "\n".join(lines)[-6000:]


@pytest.mark.broker
@pytest.mark.parametrize("page", sorted(name for name, found in PAGES.items() if found))
def test_page_examples_run_as_written(page: str, kafka_broker: LocalKafka, tmp_path: Path) -> None:
    more = _more(page, kafka_broker, tmp_path)
    proc = _run(PAGES[page], kafka_broker.bootstrap, more, tmp_path)
    assert proc.returncode == 0, _python_part(proc.stdout) + _python_part(proc.stderr)
    assert proc.stdout.count("EXAMPLE OK") == len(PAGES[page])

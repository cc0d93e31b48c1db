"""Fixtures of the assignor tests: the Java assignor oracle, compiled at test time."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

JAVA_DIR = Path(__file__).resolve().parents[1] / "java" / "assignors"


@pytest.fixture(scope="session")
def kafka_classpath(request: pytest.FixtureRequest) -> str:
    """Classpath of the Kafka 4.3.1 jars (the project's ``kafka_libs`` when defined)."""
    try:
        libs: Path = request.getfixturevalue("kafka_libs")
    except pytest.FixtureLookupError:
        from kafkacore.testing.libs import ensure_libs

        libs = ensure_libs()
    return str(Path(libs) / "*")


@pytest.fixture(scope="session")
def assignor_oracle(
    kafka_classpath: str, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, str]:
    """Compile ``AssignorOracle.java``; return ``(java, classpath)`` to run it."""
    javac, java = shutil.which("javac"), shutil.which("java")
    assert javac and java, "the Java oracle tests need a JDK 17+ (javac and java) on PATH"
    out = tmp_path_factory.mktemp("assignor-oracle")
    subprocess.run(
        [
            javac,
            "-nowarn",
            "-d",
            str(out),
            "-cp",
            kafka_classpath,
            str(JAVA_DIR / "AssignorOracle.java"),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return java, f"{out}:{kafka_classpath}"

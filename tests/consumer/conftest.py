"""Fixtures of the consumer tests: the Java group member, compiled at test time."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

JAVA_DIR = Path(__file__).resolve().parent / "java"


@pytest.fixture(scope="session")
def java_member(kafka_libs: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """Compile ``GroupMember.java`` against Kafka 4.3.1's jars; ``(java, classpath)``."""
    javac, java = shutil.which("javac"), shutil.which("java")
    assert javac and java, "the mixed-group tests need a JDK 17+ (javac and java) on PATH"
    out = tmp_path_factory.mktemp("group-member")
    classpath = str(Path(kafka_libs) / "*")
    subprocess.run(
        [javac, "-nowarn", "-d", str(out), "-cp", classpath, str(JAVA_DIR / "GroupMember.java")],
        check=True,
        capture_output=True,
        timeout=180,
    )
    return java, f"{out}:{classpath}"

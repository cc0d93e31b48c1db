"""The Java codec oracle: compiled at test time, one JVM for the whole session."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

JAVA_DIR = Path(__file__).resolve().parents[1] / "java"


class JavaCodec:
    """Line protocol to ``tests/java/CodecOracle.java`` (see its header)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self._proc = proc

    def encode(self, name: str, version: int, json_text: str) -> bytes:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        assert "\n" not in json_text
        self._proc.stdin.write(f"{name}\t{version}\t{json_text}\n")
        self._proc.stdin.flush()
        answer = self._proc.stdout.readline()
        assert answer, "the Java oracle exited; see its stderr"
        status, _, payload = answer.rstrip("\n").partition(" ")
        assert status == "OK", f"Java could not encode {name} v{version}: {payload}"
        return bytes.fromhex(payload)


@pytest.fixture(scope="session")
def java_codec(kafka_libs: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaCodec]:
    javac, java = shutil.which("javac"), shutil.which("java")
    assert javac and java, "the Java differential tests need a JDK 17+ on PATH"
    classpath = str(Path(kafka_libs) / "*")
    out = tmp_path_factory.mktemp("codec-oracle")
    subprocess.run(
        [javac, "-d", str(out), "-cp", classpath, str(JAVA_DIR / "CodecOracle.java")],
        check=True,
        capture_output=True,
        timeout=180,
    )
    proc = subprocess.Popen(
        [java, "-Xmx256m", "-cp", f"{out}:{classpath}", "CodecOracle"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    try:
        yield JavaCodec(proc)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

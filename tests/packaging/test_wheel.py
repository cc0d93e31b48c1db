"""The wheel built from a fresh clone: what it installs, and nothing else.

Built the way pip builds it for a user (an isolated build with the
project's own build requirements, the Rust extension included), from a
clone of the committed tree, so a file that exists only in this checkout
cannot hide a packaging mistake.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: repository directory -> the package it is installed as.
INSTALLED_AS = {
    "kafkacore": "kafkacore",
    "transports": "kafkacore/transports",
    "localkafka": "kafkacore/testing",
    "compat": "kafkacore/compat",
    "pyspark_kafkacore": "pyspark_kafkacore",
}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    work = tmp_path_factory.mktemp("wheel")
    clone = work / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    out = work / "dist"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(clone)],
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    (built,) = out.glob("kafkacore-*.whl")
    return zipfile.ZipFile(built)


def _tracked(directory: str) -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", directory], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [p for p in listed if not Path(ROOT / p).is_symlink()]


@pytest.mark.slow
def test_the_wheel_adds_only_kafkacore_and_the_spark_package(wheel: zipfile.ZipFile) -> None:
    tops = {name.split("/")[0] for name in wheel.namelist()}
    assert tops == {"kafkacore", "pyspark_kafkacore", "kafkacore-0.1.0.dist-info"}


@pytest.mark.slow
def test_every_python_file_is_in_the_wheel_under_its_package(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    missing = []
    for directory, package in INSTALLED_AS.items():
        for path in _tracked(directory):
            if path.endswith((".py", "py.typed")):
                inside = package + path[len(directory) :]
                if inside not in names:
                    missing.append(f"{path} -> {inside}")
    assert missing == []


@pytest.mark.slow
def test_the_wheel_carries_the_extension_the_kit_data_and_the_command(
    wheel: zipfile.ZipFile,
) -> None:
    names = set(wheel.namelist())
    assert any(n.startswith("kafkacore/records/_native.") and n.endswith(".so") for n in names)
    for data in ("pom.xml", "spark-connector-pom.xml", "java/LocalKdc.java", "java/pom.xml"):
        assert f"kafkacore/testing/{data}" in names, data
    entry_points = wheel.read("kafkacore-0.1.0.dist-info/entry_points.txt").decode()
    assert "localkafka = kafkacore.testing.__main__:main" in entry_points

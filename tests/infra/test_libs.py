"""The jar cache: complete, consistent, and reused without calling Maven."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from kafkacore.testing import KAFKA_VERSION


def versions(libs: Path, artifact: str) -> set[str]:
    pattern = re.compile(rf"{re.escape(artifact)}-(\d[\w.\-]*)\.jar")
    return {m.group(1) for p in libs.glob("*.jar") if (m := pattern.fullmatch(p.name))}


def test_cache_holds_one_consistent_kafka_and_logging_stack(kafka_libs: Path) -> None:
    assert versions(kafka_libs, "kafka_2.13") == {KAFKA_VERSION}
    assert versions(kafka_libs, "kafka-tools") == {KAFKA_VERSION}
    assert versions(kafka_libs, "kafka-clients") == {KAFKA_VERSION}
    # The slf4j binding must match log4j-core, or logging silently goes to NOP.
    core = versions(kafka_libs, "log4j-core")
    assert len(core) == 1
    assert versions(kafka_libs, "log4j-slf4j-impl") == core
    assert versions(kafka_libs, "log4j-api") == core
    (slf4j,) = versions(kafka_libs, "slf4j-api")
    assert slf4j.startswith("1.7.")
    manifest = json.loads((kafka_libs / "manifest.json").read_text())
    assert sorted(p.name for p in kafka_libs.glob("*.jar")) == manifest["jars"]


def _ensure_libs_in_subprocess(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from kafkacore.testing import ensure_libs; print(ensure_libs())"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_complete_cache_is_used_without_maven(kafka_libs: Path, tmp_path: Path) -> None:
    # A PATH whose only 'mvn' records that it was called and fails.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    called = tmp_path / "mvn-was-called"
    mvn = bin_dir / "mvn"
    mvn.write_text(f"#!/bin/sh\ntouch {called}\nexit 1\n")
    mvn.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    proc = _ensure_libs_in_subprocess(env)
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()) == kafka_libs
    assert not called.exists()


def test_empty_cache_is_filled_by_maven(kafka_libs: Path, tmp_path: Path) -> None:
    env = {**os.environ, "KAFKACORE_CACHE": str(tmp_path / "cache")}
    proc = _ensure_libs_in_subprocess(env)
    assert proc.returncode == 0, proc.stderr
    libs = Path(proc.stdout.strip())
    assert libs == tmp_path / "cache" / f"kafka-{KAFKA_VERSION}" / "libs"
    assert sorted(p.name for p in libs.glob("*.jar")) == sorted(
        p.name for p in kafka_libs.glob("*.jar")
    )
    # No temporary directories are left next to the finished cache.
    assert sorted(p.name for p in libs.parent.iterdir()) == [".lock", "libs"]


def test_missing_maven_and_empty_cache_says_what_to_do(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "KAFKACORE_CACHE": str(tmp_path / "cache"),
        "PATH": str(tmp_path),  # no mvn anywhere
    }
    proc = _ensure_libs_in_subprocess(env)
    assert proc.returncode != 0
    assert "Maven ('mvn') is not on PATH" in proc.stderr


def test_spark_connector_cache_holds_only_what_pyspark_lacks() -> None:
    from kafkacore.testing.libs import SPARK_CONNECTOR_VERSION, ensure_spark_kafka_libs

    libs = ensure_spark_kafka_libs()
    assert versions(libs, "spark-sql-kafka-0-10_2.13") == {SPARK_CONNECTOR_VERSION}
    assert versions(libs, "spark-token-provider-kafka-0-10_2.13") == {SPARK_CONNECTOR_VERSION}
    # Spark's connector runs its own kafka-clients (3.9.x), never the broker's 4.x.
    (clients,) = versions(libs, "kafka-clients")
    assert clients.startswith("3.9.")
    assert len(versions(libs, "commons-pool2")) == 1
    # Scala, Hadoop and the codecs come from pyspark; a second copy would clash.
    assert {p.name.split("-")[0] for p in libs.glob("*.jar")} == {
        "spark",
        "kafka",
        "commons",
    }

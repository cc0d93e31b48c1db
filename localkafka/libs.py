"""Resolve and cache the Apache Kafka jars a local broker runs from.

Theory of operation: the jars come from Maven Central through ``mvn
dependency:copy-dependencies`` on the ``pom.xml`` shipped next to this module.
They land in a per-user cache directory (``~/.cache/kafkacore/kafka-<v>/libs``;
``$KAFKACORE_CACHE`` or ``$XDG_CACHE_HOME`` move it) together with a manifest
that names every jar and the hash of the pom that produced them. When the
manifest matches the pom and every jar it names is present, the cache is
complete and Maven is not called at all. Maven writes into a fresh sibling
directory that is renamed into place only after it succeeded, so a killed run
never leaves a half-filled cache behind, and an advisory file lock serialises
concurrent test sessions that race to fill an empty cache.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = [
    "KAFKA_VERSION",
    "SPARK_CONNECTOR_VERSION",
    "LibsError",
    "cache_root",
    "classpath",
    "ensure_libs",
    "ensure_spark_kafka_libs",
]

KAFKA_VERSION = "4.3.1"
_POM = Path(__file__).with_name("pom.xml")
#: Spark's own Kafka connector, for side-by-side runs with ``pyspark_kafkacore``.
#: 4.2.0 is the newest connector Maven Central serves here; pyspark is pinned to it.
SPARK_CONNECTOR_VERSION = "4.2.0"
_SPARK_POM = Path(__file__).with_name("spark-connector-pom.xml")
# pyspark bundles Scala, Hadoop, lz4, snappy, zstd, jsr305 and spark-tags itself.
_SPARK_CONNECTOR_ARTIFACTS = (
    "spark-sql-kafka-0-10_2.13",
    "spark-token-provider-kafka-0-10_2.13",
    "kafka-clients",
    "commons-pool2",
)
_MANIFEST = "manifest.json"
# Maven may have to fetch ~90 jars from Central on a cold machine.
_MAVEN_TIMEOUT_S = 900.0


class LibsError(RuntimeError):
    """The Kafka jars could not be resolved."""


def cache_root() -> Path:
    """Return the per-user directory that holds ``kafka-<version>/libs``."""
    override = os.environ.get("KAFKACORE_CACHE")
    if override:
        return Path(override).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "kafkacore"


def _pom_digest(pom: Path = _POM) -> str:
    return hashlib.sha256(pom.read_bytes()).hexdigest()


def _is_complete(libs: Path, digest: str) -> bool:
    try:
        manifest = json.loads((libs / _MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(manifest, dict) or manifest.get("pom_sha256") != digest:
        return False
    jars = manifest.get("jars")
    if not isinstance(jars, list) or not jars:
        return False
    return all(isinstance(j, str) and (libs / j).is_file() for j in jars)


def _run_maven(target: Path, pom: Path, what: str, extra: tuple[str, ...]) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise LibsError(
            f"localkafka: Maven ('mvn') is not on PATH and the {what} jar cache is empty; "
            "install Maven 3.8+ (and Java 17+) and retry"
        )
    with tempfile.TemporaryDirectory(prefix="localkafka-pom-") as work:
        # Copy the pom so Maven's target/ never lands inside the source tree.
        shutil.copy(pom, Path(work) / "pom.xml")
        cmd = [
            mvn,
            "-B",
            "-q",
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={target}",
            *extra,
        ]
        try:
            proc = subprocess.run(
                cmd,
                cwd=work,
                capture_output=True,
                text=True,
                timeout=_MAVEN_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise LibsError(
                f"localkafka: Maven did not finish resolving {what} "
                f"within {_MAVEN_TIMEOUT_S:.0f}s; check network access to Maven Central"
            ) from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
        raise LibsError(
            f"localkafka: Maven failed (exit {proc.returncode}) resolving {what}:\n{tail}"
        )


def _ensure(home: Path, pom: Path, what: str, sentinel: str, extra: tuple[str, ...] = ()) -> Path:
    """Fill ``home/libs`` from ``pom`` once; ``sentinel`` prefixes a jar that must be there."""
    libs = home / "libs"
    digest = _pom_digest(pom)
    if _is_complete(libs, digest):
        return libs
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _is_complete(libs, digest):  # another process filled it meanwhile
            return libs
        fresh = Path(tempfile.mkdtemp(prefix="libs-new-", dir=home))
        try:
            _run_maven(fresh, pom, what, extra)
            jars = sorted(p.name for p in fresh.glob("*.jar"))
            if not any(j.startswith(sentinel) for j in jars):
                raise LibsError(
                    f"localkafka: Maven succeeded but no {sentinel}* jar is in {fresh}; check {pom}"
                )
            (fresh / _MANIFEST).write_text(json.dumps({"pom_sha256": digest, "jars": jars}))
            if libs.exists():
                shutil.rmtree(libs)
            fresh.rename(libs)
        finally:
            if fresh.exists():
                shutil.rmtree(fresh, ignore_errors=True)
    return libs


def ensure_libs() -> Path:
    """Return the directory of Kafka's runtime jars, resolving them on first use.

    No Maven call happens when the cache is complete. Safe to call from several
    processes at once.
    """
    home = cache_root() / f"kafka-{KAFKA_VERSION}"
    return _ensure(home, _POM, f"Kafka {KAFKA_VERSION}", "kafka_2.13-")


def ensure_spark_kafka_libs() -> Path:
    """Return the directory of Spark's JVM Kafka connector jars (``format("kafka")``).

    Only the connector and what pyspark does not bundle: the connector, its
    token provider, kafka-clients (3.9.x, never the broker's 4.x jars) and
    commons-pool2. Hand them to a Spark session as ``spark.jars``.
    """
    home = cache_root() / f"spark-kafka-{SPARK_CONNECTOR_VERSION}"
    keep = ",".join(_SPARK_CONNECTOR_ARTIFACTS)
    return _ensure(
        home,
        _SPARK_POM,
        f"Spark's Kafka connector {SPARK_CONNECTOR_VERSION}",
        "spark-sql-kafka-0-10_2.13-",
        (f"-DincludeArtifactIds={keep}",),
    )


def classpath(libs: Path | None = None) -> str:
    """Return the ``java -cp`` value (a directory glob) for the cached jars."""
    return str((libs or ensure_libs()) / "*")

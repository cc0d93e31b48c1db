"""A local Kerberos KDC (Apache Kerby) for brokers with SASL GSSAPI.

Theory of operation: :class:`LocalKdc` resolves Apache Kerby's
``kerb-simplekdc`` with Maven (``localkafka/java/pom.xml``, cached per user in
``kerby-<version>/libs`` beside Kafka's jars, filled through a fresh directory
renamed into place under a file lock, as :mod:`kafkacore.testing.libs` does), compiles
``localkafka/java/LocalKdc.java`` with ``javac`` into a directory keyed by the
source's hash, and runs it as a :class:`~kafkacore.testing.process.ManagedProcess`.
The Java side creates the realm's principals with random keys, exports one
keytab per principal, listens on TCP on 127.0.0.1 and writes its port to a
``ready`` file. This module then writes a ``krb5.conf`` that both the broker's
JVM (``-Djava.security.krb5.conf``) and MIT's library (``KRB5_CONFIG``) read.

    NEW --start--> RUNNING --stop--> STOPPED      (a start that fails: FAILED)

Principals: ``kafka/localhost`` (the broker), ``client`` and ``alice`` (users)
and ``ghost``, whose keytab exists but whom the KDC has forgotten (for tests of
refused credentials).
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import hashlib
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from kafkacore.testing.libs import LibsError, cache_root
from kafkacore.testing.process import ManagedProcess, owner_tag, reap_stale

__all__ = [
    "KERBY_VERSION",
    "REALM",
    "SERVICE_PRINCIPAL",
    "KdcState",
    "LocalKdc",
    "broker_jvm_flags",
    "broker_overrides",
    "render_krb5_conf",
]

KERBY_VERSION = "2.1.0"
REALM = "EXAMPLE.COM"
SERVICE_PRINCIPAL = "kafka/localhost"
_PRINCIPALS = (SERVICE_PRINCIPAL, "client", "alice", "-ghost")
_JAVA_DIR = Path(__file__).with_name("java")
_POM = _JAVA_DIR / "pom.xml"
_SOURCE = _JAVA_DIR / "LocalKdc.java"
_MAVEN_TIMEOUT_S = 600.0
_START_TIMEOUT_S = 60.0
# Kerby's defaults include des3 and rc4, which current MIT and JDK builds
# refuse; AES-128 with SHA-1 (RFC 3962) is what all three share.
_ENCTYPE = "aes128-cts-hmac-sha1-96"


class KdcState(enum.Enum):
    NEW = "new"
    RUNNING = "running"
    STOPPED = "stopped"
    FAILED = "failed"


def _digest(*paths: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def _ensure_kerby_libs() -> Path:
    home = cache_root() / f"kerby-{KERBY_VERSION}"
    libs = home / "libs"
    digest = _digest(_POM)

    def complete() -> bool:
        try:
            manifest = json.loads((libs / "manifest.json").read_text())
        except (OSError, ValueError):
            return False
        jars = manifest.get("jars") if isinstance(manifest, dict) else None
        return (
            manifest.get("pom_sha256") == digest
            and isinstance(jars, list)
            and bool(jars)
            and all((libs / j).is_file() for j in jars)
        )

    if complete():
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise LibsError("localkafka: Maven ('mvn') is needed once to fetch Apache Kerby")
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if complete():
            return libs
        fresh = Path(tempfile.mkdtemp(prefix="libs-new-", dir=home))
        try:
            with tempfile.TemporaryDirectory(prefix="localkafka-kerby-pom-") as work:
                shutil.copy(_POM, Path(work) / "pom.xml")
                proc = subprocess.run(
                    [mvn, "-B", "-q", "dependency:copy-dependencies",
                     "-DincludeScope=runtime", f"-DoutputDirectory={fresh}"],
                    cwd=work, capture_output=True, text=True,
                    timeout=_MAVEN_TIMEOUT_S, check=False,
                )  # fmt: skip
            if proc.returncode != 0:
                tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-20:])
                raise LibsError(f"localkafka: Maven failed resolving Kerby:\n{tail}")
            jars = sorted(p.name for p in fresh.glob("*.jar"))
            (fresh / "manifest.json").write_text(json.dumps({"pom_sha256": digest, "jars": jars}))
            if libs.exists():
                shutil.rmtree(libs)
            fresh.rename(libs)
        finally:
            if fresh.exists():
                shutil.rmtree(fresh, ignore_errors=True)
    return libs


def _ensure_classes(libs: Path) -> Path:
    """Compile LocalKdc.java once per source version; return the class directory."""
    classes = libs.parent / f"classes-{_digest(_SOURCE)}"
    if (classes / "LocalKdc.class").is_file():
        return classes
    javac = shutil.which("javac")
    if javac is None:
        raise LibsError("localkafka: 'javac' (a JDK 17+) is needed to build the local KDC")
    fresh = Path(tempfile.mkdtemp(prefix="classes-new-", dir=libs.parent))
    try:
        proc = subprocess.run(
            [javac, "-d", str(fresh), "-cp", str(libs / "*"), str(_SOURCE)],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            raise LibsError(f"localkafka: javac failed on {_SOURCE}:\n{proc.stderr[-2000:]}")
        with contextlib.suppress(OSError):  # another process compiled it meanwhile
            fresh.rename(classes)
    finally:
        if fresh.exists():
            shutil.rmtree(fresh, ignore_errors=True)
    return classes


def render_krb5_conf(port: int, realm: str = REALM) -> str:
    """A krb5.conf naming only the local KDC (TCP, no DNS, AES-128 only)."""
    return "\n".join(
        [
            "[libdefaults]",
            f"  default_realm = {realm}",
            "  dns_lookup_kdc = false",
            "  dns_lookup_realm = false",
            # The broker's principal names 'localhost'; never rewrite it.
            "  dns_canonicalize_hostname = false",
            "  rdns = false",
            "  udp_preference_limit = 1",
            f"  default_tkt_enctypes = {_ENCTYPE}",
            f"  default_tgs_enctypes = {_ENCTYPE}",
            f"  permitted_enctypes = {_ENCTYPE}",
            "[realms]",
            f"  {realm} = {{",
            f"    kdc = 127.0.0.1:{port}",
            "  }",
            "[domain_realm]",
            f"  localhost = {realm}",
            "",
        ]
    )


class LocalKdc:
    """A running Kerby KDC with keytabs for the fixed principals; a context manager."""

    def __init__(self, *, workdir: Path | None = None) -> None:
        self._own_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="localkdc-"))
        self.realm = REALM
        self.port = 0
        self.state = KdcState.NEW
        self._proc: ManagedProcess | None = None

    @property
    def krb5_conf(self) -> Path:
        return self.workdir / "krb5.conf"

    @property
    def log_path(self) -> Path:
        return self.workdir / "kdc.log"

    def keytab(self, name: str) -> Path:
        """The keytab of principal ``name`` (e.g. ``client`` or ``kafka/localhost``)."""
        return self.workdir / (name.replace("/", "_") + ".keytab")

    def principal(self, name: str) -> str:
        return f"{name}@{self.realm}"

    def __enter__(self) -> LocalKdc:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> LocalKdc:
        if self.state is not KdcState.NEW:
            raise RuntimeError(f"LocalKdc: cannot start while {self.state.value}")
        reap_stale()
        libs = _ensure_kerby_libs()
        classes = _ensure_classes(libs)
        self.workdir.mkdir(parents=True, exist_ok=True)
        ready = self.workdir / "ready"
        argv = [
            "java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            owner_tag(), "-cp", f"{libs / '*'}:{classes}",
            "LocalKdc", str(self.workdir), self.realm, *_PRINCIPALS,
        ]  # fmt: skip
        self._proc = ManagedProcess(argv, log_path=self.log_path, cwd=self.workdir)
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not ready.is_file():
            code = self._proc.poll()
            if code is not None or time.monotonic() > deadline:
                self.stop()
                self.state = KdcState.FAILED
                raise RuntimeError(
                    f"LocalKdc: not ready (exit {code}); log {self.log_path}:\n"
                    f"{self.log_path.read_text(errors='replace')[-3000:]}"
                )
            time.sleep(0.1)
        self.port = int(ready.read_text())
        self.krb5_conf.write_text(render_krb5_conf(self.port, self.realm))
        self.state = KdcState.RUNNING
        return self

    def stop(self, timeout: float = 10.0) -> None:
        if self._proc is not None:
            self._proc.stop(timeout)
            self._proc = None
        if self.state is KdcState.RUNNING:
            self.state = KdcState.STOPPED
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)


def broker_overrides(kdc: LocalKdc, listeners: Sequence[str]) -> Mapping[str, str]:
    """server.properties lines turning GSSAPI on for every SASL listener."""
    props = {
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,GSSAPI",
        "sasl.kerberos.service.name": "kafka",
    }
    jaas = (
        "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true "
        f'keyTab="{kdc.keytab(SERVICE_PRINCIPAL)}" '
        f'principal="{kdc.principal(SERVICE_PRINCIPAL)}";'
    )
    for name in listeners:
        if name.startswith("SASL_"):
            props[f"listener.name.{name.lower()}.gssapi.sasl.jaas.config"] = jaas
    return props


def broker_jvm_flags(kdc: LocalKdc) -> list[str]:
    return [f"-Djava.security.krb5.conf={kdc.krb5_conf}"]

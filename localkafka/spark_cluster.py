"""A Spark standalone cluster on 127.0.0.1: a master and workers, as a user deploys Spark.

Theory of operation
-------------------
:class:`LocalSparkCluster` starts the daemons the way Spark's ``sbin`` scripts
do, through pyspark's own ``bin/spark-class`` (``org.apache.spark.deploy.
master.Master`` and ``...worker.Worker``), each a separate JVM with one core
and a small heap, on free loopback ports. The cluster is ready when the
master's status page (``/json/``) says ALIVE with every worker registered.
Applications run against it as they do on a real cluster: :meth:`submit`
calls ``bin/spark-submit --master spark://...`` in a child process (its
driver JVM, and the Python driver it starts), and each application gets its
own executor JVMs, launched by the workers.

The daemons and drivers run with a scrubbed environment: no ``PYSPARK_*``,
``PYTHONPATH`` or ``VIRTUAL_ENV`` of the calling process reaches them, and
``python3`` on their ``PATH`` is whatever the machine has, so an executor
finds kafkacore only where the application shipped it (``spark.archives``,
``--py-files``) or named a Python that has it (``spark.pyspark.python``).
The cluster's configuration directory holds what an operator would put
there: loopback addresses, no UI, and a WARN log (``spark-defaults.conf``,
``log4j2.properties``).

No JVM is left behind, with the same four nets as the brokers
(:mod:`kafkacore.testing.process`): the master, the workers and every driver
are :class:`~kafkacore.testing.process.ManagedProcess` es in their own
process groups, tagged with the owner (``SPARK_DAEMON_JAVA_OPTS``,
``--driver-java-options``); executors are tagged through
``spark.executor.extraJavaOptions`` and live in their worker's process group,
so stopping a worker stops them, and a worker that dies takes them down
(their ``WorkerWatcher`` exits with it). ``reap_stale()`` finds them all.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from kafkacore.testing.cluster import StartError, log_tail
from kafkacore.testing.config import free_ports
from kafkacore.testing.process import (
    ManagedProcess,
    mark_workdir,
    owner_tag,
    reap_stale,
    reap_stale_workdirs,
)

__all__ = ["CONNECT_SERVER_CLASS", "LocalSparkCluster", "SparkApp", "spark_home"]

#: Spark Connect's server (``sbin/start-connect-server.sh`` runs this class);
#: its jar, spark-connect_2.13, is among pyspark's own jars.
CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"

#: Variables of the calling process that must not leak into the cluster: each
#: would hand executors or drivers this process's Python environment.
_SCRUBBED = ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
_EXECUTOR_CLASS = b"org.apache.spark.executor.CoarseGrainedExecutorBackend"

_LOG4J = """\
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n%ex
# executor launches and losses, application registration: the cluster's story
logger.deploy.name = org.apache.spark.deploy
logger.deploy.level = info
"""


def spark_home() -> Path:
    """The Spark installation pyspark ships (its ``bin/``, ``jars/``, ``python/lib``)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _with_owner(conf: Mapping[str, str], key: str) -> dict[str, str]:
    """``conf`` with the owner tag added to the JVM option ``key``."""
    out = dict(conf)
    out[key] = f"{out.get(key, '')} {owner_tag()}".strip()
    return out


class SparkApp:
    """One ``spark-submit`` run: its driver process and log."""

    def __init__(self, proc: ManagedProcess, name: str) -> None:
        self.proc = proc
        self.name = name

    @property
    def log_path(self) -> Path:
        return self.proc.log_path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout: float) -> int:
        """The exit code; raises :class:`TimeoutError` with the log tail after ``timeout``."""
        deadline = time.monotonic() + timeout
        while (code := self.poll()) is None:
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(
                    f"spark-submit {self.name} did not end within {timeout:.0f}s; "
                    f"log {self.log_path}:\n{log_tail(self.log_path, 60)}"
                )
            time.sleep(0.2)
        return code

    def wait_for_line(self, text: str, timeout: float) -> str:
        """Block until the log has a line containing ``text``; return that line."""
        deadline = time.monotonic() + timeout
        while True:
            for line in self.log().splitlines():
                if text in line:
                    return line
            code = self.poll()
            if code is not None or time.monotonic() > deadline:
                why = f"exited with {code}" if code is not None else f"not within {timeout:.0f}s"
                raise TimeoutError(
                    f"spark-submit {self.name}: no line {text!r} ({why}); "
                    f"log {self.log_path}:\n{log_tail(self.log_path, 60)}"
                )
            time.sleep(0.2)

    def stop(self, timeout: float = 15.0) -> int:
        return self.proc.stop(timeout)


class LocalSparkCluster:
    """A standalone Spark master and ``workers`` workers on 127.0.0.1.

    Use as a context manager, or call :meth:`start` and :meth:`stop`.
    """

    def __init__(
        self,
        *,
        workers: int = 2,
        cores: int = 1,
        memory: str = "1g",
        daemon_memory: str = "256m",
        workdir: Path | None = None,
        keep_workdir: bool = False,
        start_timeout: float = 120.0,
    ) -> None:
        if workers < 1 or cores < 1:
            raise ValueError(f"LocalSparkCluster: workers and cores must be >= 1, got {workers}")
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.daemon_memory = daemon_memory
        self._own_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="localkafka-spark-"))
        self._keep = keep_workdir
        self.start_timeout = start_timeout
        self.home = spark_home()
        self.master_port = 0
        self.ui_port = 0
        self._master: ManagedProcess | None = None
        self._workers: list[ManagedProcess] = []
        self._apps = 0

    # ---- facts ---------------------------------------------------------------

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    @property
    def conf_dir(self) -> Path:
        return self.workdir / "conf"

    def status(self) -> dict[str, Any]:
        """The master's status page (``/json/``): workers, cores, applications."""
        url = f"http://127.0.0.1:{self.ui_port}/json/"
        with urllib.request.urlopen(url, timeout=5) as answer:
            status: dict[str, Any] = json.load(answer)
        return status

    def worker_pids(self) -> list[int]:
        return [w.pid for w in self._workers if w.poll() is None]

    def executor_pids(self) -> list[int]:
        """Pids of the executor JVMs the workers run now (any application)."""
        parents = set(self.worker_pids())
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid in parents and _EXECUTOR_CLASS in argv:
                found.append(int(entry.name))
        return sorted(found)

    def kill_executor(self, pid: int) -> None:
        """SIGKILL one executor JVM (a lost executor: its worker reports it, the
        master starts another one for the application)."""
        if pid not in self.executor_pids():
            raise ValueError(f"LocalSparkCluster: {pid} is not an executor of this cluster")
        os.kill(pid, signal.SIGKILL)

    # ---- life ----------------------------------------------------------------

    def __enter__(self) -> LocalSparkCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def base_env(self) -> dict[str, str]:
        """The environment of the daemons and drivers (see the module docstring)."""
        env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
        venv = os.environ.get("VIRTUAL_ENV")
        if venv:  # an activated venv's python3 must not be the cluster's
            parts = env.get("PATH", "").split(os.pathsep)
            env["PATH"] = os.pathsep.join(p for p in parts if not p.startswith(venv))
        env.update(
            SPARK_HOME=str(self.home),
            SPARK_CONF_DIR=str(self.conf_dir),
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_LOG_DIR=str(self.workdir / "logs"),
            SPARK_PID_DIR=str(self.workdir),
        )
        return env

    def _write_conf(self) -> None:
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        (self.conf_dir / "log4j2.properties").write_text(_LOG4J)
        defaults = {
            "spark.master": self.master_url,
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.executor.memory": "512m",
            "spark.driver.memory": "768m",
            "spark.sql.shuffle.partitions": str(self.workers * self.cores),
            "spark.sql.session.timeZone": "UTC",
        }
        lines = [f"{k} {v}" for k, v in defaults.items()]
        (self.conf_dir / "spark-defaults.conf").write_text("\n".join(lines) + "\n")

    def _daemon(self, name: str, main: str, args: Sequence[str]) -> ManagedProcess:
        env = self.base_env()
        env["SPARK_DAEMON_MEMORY"] = self.daemon_memory
        env["SPARK_DAEMON_JAVA_OPTS"] = owner_tag()
        argv = [
            "/usr/bin/env",
            "-i",
            *(f"{k}={v}" for k, v in env.items()),
            str(self.home / "bin" / "spark-class"),
            main,
            *args,
        ]
        return ManagedProcess(argv, log_path=self.workdir / f"{name}.log", cwd=self.workdir)

    def start(self) -> LocalSparkCluster:
        """Start the master and the workers; return when every worker is registered."""
        if self._master is not None:
            raise RuntimeError("LocalSparkCluster: already started; stop() it first")
        self.workdir.mkdir(parents=True, exist_ok=True)
        reap_stale()
        if self._own_workdir:
            reap_stale_workdirs(self.workdir.parent)
            mark_workdir(self.workdir)
        self.master_port, self.ui_port = free_ports(2)
        self._write_conf()
        try:
            self._master = self._daemon(
                "master",
                "org.apache.spark.deploy.master.Master",
                [
                    *("--host", "127.0.0.1", "--port", str(self.master_port)),
                    *("--webui-port", str(self.ui_port)),
                ],
            )
            for i in range(1, self.workers + 1):
                work = self.workdir / f"worker-{i}"
                work.mkdir(exist_ok=True)
                # The workers retry the master until it listens: start them at once.
                self._workers.append(
                    self._daemon(
                        f"worker-{i}",
                        "org.apache.spark.deploy.worker.Worker",
                        [
                            *("--host", "127.0.0.1", "--cores", str(self.cores)),
                            *("--memory", self.memory, "--work-dir", str(work)),
                            *("--webui-port", "0", self.master_url),
                        ],
                    )
                )
            self._wait_ready(time.monotonic() + self.start_timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, deadline: float) -> None:
        last = "no answer"
        while True:
            for name, proc in [("master", self._master), *self._named_workers()]:
                code = None if proc is None else proc.poll()
                if code is not None and proc is not None:
                    raise StartError(
                        f"LocalSparkCluster: the {name} exited with code {code} while starting; "
                        f"log {proc.log_path}:\n{log_tail(proc.log_path)}"
                    )
            with contextlib.suppress(OSError, ValueError, urllib.error.URLError):
                status = self.status()
                alive = int(status.get("aliveworkers", 0))
                if status.get("status") == "ALIVE" and alive == self.workers:
                    return
                last = f"status {status.get('status')}, {alive} of {self.workers} workers"
            if time.monotonic() > deadline:
                tails = "\n".join(
                    f"-- {p.log_path}:\n{log_tail(p.log_path, 15)}"
                    for p in [self._master, *self._workers]
                    if p is not None
                )
                raise StartError(
                    f"LocalSparkCluster: not ready before the deadline ({last})\n{tails}"
                )
            time.sleep(0.3)

    def _named_workers(self) -> list[tuple[str, ManagedProcess]]:
        return [(f"worker {i}", w) for i, w in enumerate(self._workers, 1)]

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the workers (and their executors), then the master; remove the work dir."""
        for proc in self._workers:
            proc.stop(timeout)
        if self._master is not None:
            self._master.stop(timeout)
        self._workers = []
        self._master = None
        if self._own_workdir and not self._keep:
            shutil.rmtree(self.workdir, ignore_errors=True)

    # ---- applications -------------------------------------------------------

    def submit(
        self,
        app: str | Path,
        *args: str,
        options: Sequence[str] = (),
        conf: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        name: str | None = None,
    ) -> SparkApp:
        """Run ``spark-submit [options] --conf k=v ... app args`` against the master.

        ``options`` are spark-submit's own (``--archives``, ``--py-files``,
        ``--class``, ...); ``env`` is added to the scrubbed environment (the
        place for ``PYSPARK_PYTHON`` and ``PYSPARK_DRIVER_PYTHON``). Does not
        wait: see :meth:`SparkApp.wait`.
        """
        self._apps += 1
        label = name or f"app-{self._apps}"
        merged = _with_owner(conf or {}, "spark.executor.extraJavaOptions")
        argv = [
            "/usr/bin/env",
            "-i",
            *(f"{k}={v}" for k, v in {**self.base_env(), **(env or {})}.items()),
            str(self.home / "bin" / "spark-submit"),
            "--master",
            self.master_url,
            "--name",
            label,
            "--driver-java-options",
            owner_tag(),
            *options,
            *(f"--conf={k}={v}" for k, v in merged.items()),
            str(app),
            *args,
        ]
        log = self.workdir / f"{label}.log"
        proc = ManagedProcess(argv, log_path=log, cwd=cwd or self.workdir)
        return SparkApp(proc, label)

    def connect_server(
        self,
        *,
        conf: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 180.0,
    ) -> tuple[SparkApp, str]:
        """Start a Spark Connect server on this cluster; return it and its ``sc://`` URL.

        It is an application like any other (its driver is the server): it
        holds the executors it gets until it is stopped. Ready when its gRPC
        port takes connections.
        """
        (port,) = free_ports(1)
        settings = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(port),
            **(conf or {}),
        }
        app = self.submit(
            "spark-internal",
            options=["--class", CONNECT_SERVER_CLASS],
            conf=settings,
            env=env,
            name="connect-server",
        )
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                return app, f"sc://127.0.0.1:{port}"
            code = app.poll()
            if code is not None or time.monotonic() > deadline:
                app.stop()
                why = f"exited with {code}" if code is not None else f"not within {timeout:.0f}s"
                raise StartError(
                    f"Spark Connect server: port {port} not listening ({why}); "
                    f"log {app.log_path}:\n{log_tail(app.log_path, 60)}"
                )
            time.sleep(0.3)

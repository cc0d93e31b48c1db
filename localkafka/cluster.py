"""Local KRaft brokers: one combined node, or a cluster of combined nodes.

Theory of operation: :class:`LocalKafka` lays out ``size`` combined
broker+controller nodes on 127.0.0.1 with a static quorum
(``controller.quorum.voters``), formats every node's storage once with
``kafka.tools.StorageTool`` (SCRAM users are created at format time), then
starts one JVM per node (:class:`KafkaNode`). A node is ready when it answers
a hand-encoded ApiVersions request; the cluster is ready when every node's
Metadata lists all nodes (registered and unfenced). A port picked free can be
taken by someone else before the JVM binds it; a start that dies with
"Address already in use" is retried on fresh ports. Every wait is bounded and
a failed start raises :class:`StartError` carrying the tail of the log.

Node lifecycle (``NodeState``)::

    NEW --start--> STARTING --answers--> RUNNING --stop--> STOPPED
                        \\--dies--> FAILED      \\--kill--> KILLED
                                   RUNNING --pause--> PAUSED --resume--> RUNNING
    STOPPED / KILLED / FAILED --start--> STARTING      (restart keeps its data)

``pause`` is SIGSTOP to the JVM's process group: the node keeps its sockets
but answers nothing (a long GC pause, a frozen VM); ``resume`` is SIGCONT.

With ``proxy=True`` every node also opens a PROXIED listener whose advertised
port belongs to a :class:`~kafkacore.testing.proxy.FaultProxy` forwarding to it, so
a client bootstrapped on ``proxy_bootstrap`` reaches every broker through the
proxies (metadata names the proxies' ports), while the other listeners stay
direct (for setup and for reading back what the brokers really hold).
"""

from __future__ import annotations

import enum
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from kafkacore.testing import config, wire
from kafkacore.testing.libs import ensure_libs
from kafkacore.testing.process import (
    ManagedProcess,
    mark_workdir,
    owner_tag,
    reap_stale,
    reap_stale_workdirs,
)
from kafkacore.testing.proxy import FaultProxy
from kafkacore.testing.tls import make_tls_files

if TYPE_CHECKING:
    from kafkacore.testing.kerberos import LocalKdc

__all__ = ["KafkaNode", "LocalKafka", "NodeState", "StartError", "TopicError"]

_LOG_TAIL_LINES = 40
_TOOL_FLAGS = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]


class StartError(RuntimeError):
    """A node or tool did not come up; the message ends with its log tail."""


class TopicError(RuntimeError):
    """The broker refused to create a topic; ``error_code`` is Kafka's code."""

    def __init__(self, message: str, *, error_code: int) -> None:
        super().__init__(message)
        self.error_code = error_code


class NodeState(enum.Enum):
    NEW = "new"
    STARTING = "starting"
    RUNNING = "running"
    STOPPED = "stopped"
    KILLED = "killed"
    FAILED = "failed"
    PAUSED = "paused"


# Which commands each state accepts: transitions as data.
_ALLOWED: Mapping[str, frozenset[NodeState]] = {
    "start": frozenset({NodeState.NEW, NodeState.STOPPED, NodeState.KILLED, NodeState.FAILED}),
    "stop": frozenset(NodeState),
    "kill": frozenset({NodeState.STARTING, NodeState.RUNNING, NodeState.PAUSED}),
    "pause": frozenset({NodeState.RUNNING}),
    "resume": frozenset({NodeState.PAUSED}),
}


def log_tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    """The first error lines of a log (the cause, before any stack trace) and its tail."""
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no log at {path})"
    tail = text[-lines:]
    keys = [ln for ln in text[:-lines] if " ERROR " in ln or ln.startswith("Caused by")][:5]
    if not keys:
        return "\n".join(tail)
    return "\n".join([*keys, "...", *tail])


class KafkaNode:
    """One combined broker+controller JVM."""

    def __init__(
        self,
        layout: config.NodeLayout,
        *,
        classpath: str,
        jvm_flags: Sequence[str],
        log4j: Path,
    ) -> None:
        self.layout = layout
        self.node_id = layout.node_id
        self.host = "127.0.0.1"
        self._classpath = classpath
        self._jvm_flags = list(jvm_flags)
        self._log4j = log4j
        self._proc: ManagedProcess | None = None
        self.state = NodeState.NEW

    def __repr__(self) -> str:
        return f"<KafkaNode {self.node_id} {self.state.value} {self.host}:{self.port}>"

    @property
    def port(self) -> int:
        """The PLAINTEXT port."""
        return self.layout.listener_ports["PLAINTEXT"]

    @property
    def log_path(self) -> Path:
        return self.layout.log_path

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def _check(self, command: str) -> None:
        if self.state not in _ALLOWED[command]:
            raise RuntimeError(
                f"KafkaNode {self.node_id}: cannot {command} while {self.state.value}"
            )

    def start(self) -> None:
        """Launch the JVM (does not wait; see :meth:`wait_ready`)."""
        self._check("start")
        argv = [
            "java",
            *self._jvm_flags,
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self._log4j}",
            owner_tag(),
            "-cp",
            self._classpath,
            "kafka.Kafka",
            str(self.layout.props_path),
        ]
        with open(self.log_path, "ab") as f:
            f.write(f"---- localkafka: starting node {self.node_id}\n".encode())
        self._proc = ManagedProcess(argv, log_path=self.log_path, cwd=self.layout.data_dir.parent)
        self.state = NodeState.STARTING

    def exited(self) -> int | None:
        """The JVM's exit code if it has exited, else None."""
        return None if self._proc is None else self._proc.poll()

    def answers(self, timeout: float = 2.0) -> bool:
        """True when the node answers ApiVersions on its PLAINTEXT listener."""
        try:
            versions = wire.api_versions(self.host, self.port, timeout=timeout)
        except (OSError, wire.ProbeError):
            return False
        return any(v.api_key == wire.API_VERSIONS for v in versions)

    def wait_ready(self, deadline: float) -> None:
        """Block until the node answers, or raise :class:`StartError` at ``deadline``."""
        while True:
            code = self.exited()
            if code is not None:
                self.state = NodeState.FAILED
                raise StartError(
                    f"KafkaNode {self.node_id}: JVM exited with code {code} while starting; "
                    f"log {self.log_path}:\n{log_tail(self.log_path)}"
                )
            if self.answers():
                self.state = NodeState.RUNNING
                return
            if time.monotonic() > deadline:
                raise StartError(
                    f"KafkaNode {self.node_id}: no ApiVersions answer on "
                    f"{self.host}:{self.port} before the deadline; "
                    f"log {self.log_path}:\n{log_tail(self.log_path)}"
                )
            time.sleep(0.2)

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM (controlled shutdown), SIGKILL after ``timeout`` seconds."""
        self._check("stop")
        if self.state is NodeState.PAUSED:
            self.resume()  # a stopped JVM would not act on SIGTERM
        if self._proc is not None:
            self._proc.stop(timeout)
        if self.state in (NodeState.STARTING, NodeState.RUNNING):
            self.state = NodeState.STOPPED

    def pause(self) -> None:
        """SIGSTOP the JVM: it keeps its sockets open and answers nothing."""
        self._check("pause")
        assert self._proc is not None
        self._proc.pause()
        self.state = NodeState.PAUSED

    def resume(self) -> None:
        """SIGCONT a paused JVM."""
        self._check("resume")
        assert self._proc is not None
        self._proc.resume()
        self.state = NodeState.RUNNING

    def kill(self) -> None:
        """SIGKILL the JVM: a crash, no controlled shutdown."""
        self._check("kill")
        assert self._proc is not None
        self._proc.kill()
        self.state = NodeState.KILLED


class LocalKafka:
    """A started-on-demand local Kafka: 1 node (a broker) or 3 (a cluster).

    Use as a context manager, or call :meth:`start` and :meth:`stop`.
    """

    def __init__(
        self,
        *,
        size: int = 1,
        listeners: Sequence[str] = ("PLAINTEXT",),
        users: Mapping[str, str] = config.DEFAULT_USERS,
        authorizer: bool = False,
        profile: config.Profile = config.Profile.TEST,
        overrides: Mapping[str, str] | None = None,
        workdir: Path | None = None,
        keep_workdir: bool = False,
        start_timeout: float = 120.0,
        kerberos: LocalKdc | None = None,
        proxy: bool = False,
    ) -> None:
        if size < 1:
            raise ValueError(f"LocalKafka: size must be >= 1, got {size}")
        unknown = set(listeners) - set(config.ALL_LISTENERS)
        if unknown or "PLAINTEXT" not in listeners:
            raise ValueError(
                f"LocalKafka: listeners must include PLAINTEXT and be among "
                f"{config.ALL_LISTENERS}, got {list(listeners)}"
            )
        self.size = size
        self.listener_names = tuple(n for n in config.ALL_LISTENERS if n in listeners)
        # What each node binds: the asked-for listeners, plus PROXIED behind the proxies.
        self._bound_names = self.listener_names + ((config.PROXIED_LISTENER,) if proxy else ())
        #: One FaultProxy per node (``proxy=True``), in node order; pass-through
        #: until a test sets a fault mix.
        self.proxies: list[FaultProxy] = []
        self._proxy = proxy
        self.users: dict[str, str] = dict(users)
        self.authorizer = authorizer
        self.profile = profile
        self._overrides = dict(overrides or {})
        # Optional SASL GSSAPI on the SASL listeners (see kafkacore.testing.kerberos).
        self.kerberos = kerberos
        self._extra_jvm: list[str] = []
        if kerberos is not None:
            from kafkacore.testing.kerberos import broker_jvm_flags, broker_overrides

            self._overrides = {**broker_overrides(kerberos, listeners), **self._overrides}
            self._extra_jvm = broker_jvm_flags(kerberos)
        self._own_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="localkafka-"))
        self._keep = keep_workdir
        self.start_timeout = start_timeout
        self.cluster_id = config.new_cluster_id()
        self.libs: Path | None = None
        self.ca_file: Path | None = None
        #: Client certificate and key issued by the CA (for the MTLS listener).
        self.client_cert: Path | None = None
        self.client_key: Path | None = None
        self._keystore: Path | None = None
        self.nodes: list[KafkaNode] = []
        self._started = False

    # ---- facts ---------------------------------------------------------------

    @property
    def host(self) -> str:
        return "127.0.0.1"

    @property
    def port(self) -> int:
        """PLAINTEXT port of the first node."""
        return self._require_nodes()[0].port

    @property
    def bootstrap(self) -> str:
        """``host:port`` of every node's PLAINTEXT listener, comma separated."""
        return ",".join(f"{n.host}:{n.port}" for n in self._require_nodes())

    @property
    def classpath(self) -> str:
        """The ``java -cp`` value for Kafka's jars (a directory glob)."""
        return str(self._require_libs() / "*")

    @property
    def log_path(self) -> Path:
        """The first node's log (a cluster has one per node, see ``nodes``)."""
        return self._require_nodes()[0].log_path

    def listener(self, name: str, node_id: int | None = None) -> tuple[str, int]:
        """``(host, port)`` of listener ``name`` on ``node_id`` (default: first node)."""
        if name not in self.listener_names:
            raise ValueError(
                f"LocalKafka: listener {name!r} is not open; open ones: {self.listener_names}"
            )
        node = self.node(node_id) if node_id is not None else self._require_nodes()[0]
        return node.host, node.layout.listener_ports[name]

    def bootstrap_for(self, name: str) -> str:
        """Bootstrap string for listener ``name`` across all nodes."""
        return ",".join("{}:{}".format(*self.listener(name, n.node_id)) for n in self.nodes)

    @property
    def proxy_bootstrap(self) -> str:
        """Bootstrap string of the proxies (``proxy=True``): every broker via its proxy."""
        if not self.proxies:
            raise RuntimeError("LocalKafka: no proxies; start with LocalKafka(proxy=True)")
        return ",".join(p.address for p in self.proxies)

    def proxy(self, node_id: int) -> FaultProxy:
        """The proxy in front of ``node_id``."""
        if not self.proxies:
            raise RuntimeError("LocalKafka: no proxies; start with LocalKafka(proxy=True)")
        return self.proxies[[n.node_id for n in self._require_nodes()].index(node_id)]

    def node(self, node_id: int) -> KafkaNode:
        for n in self._require_nodes():
            if n.node_id == node_id:
                return n
        raise KeyError(
            f"LocalKafka: no node {node_id}; nodes are {[n.node_id for n in self.nodes]}"
        )

    def _require_nodes(self) -> list[KafkaNode]:
        if not self.nodes:
            raise RuntimeError("LocalKafka: not started; call start() first")
        return self.nodes

    def _require_libs(self) -> Path:
        if self.libs is None:
            self.libs = ensure_libs()
        return self.libs

    # ---- lifecycle -----------------------------------------------------------

    def __enter__(self) -> LocalKafka:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> LocalKafka:
        """Format and start every node; return when all of them serve clients."""
        if self._started:
            raise RuntimeError("LocalKafka: already started; stop() it first")
        self._started = True
        self.workdir.mkdir(parents=True, exist_ok=True)  # stop() may have removed it
        reap_stale()
        if self._own_workdir:
            reap_stale_workdirs(self.workdir.parent)
            mark_workdir(self.workdir)
        self._require_libs()
        if {"SSL", "SASL_SSL", "MTLS"} & set(self.listener_names):
            tls = make_tls_files(self.workdir)
            self.ca_file, self._keystore = tls.ca_file, tls.keystore
            self.client_cert, self.client_key = tls.client_cert, tls.client_key
        (self.workdir / "log4j2.properties").write_text(config.render_log4j())
        if self._proxy and not self.proxies:
            # Bound now and kept across retries and restarts: the advertised
            # ports must not change under clients.
            self.proxies = [FaultProxy(name=f"node-{i + 1}") for i in range(self.size)]
        attempts = 3
        try:
            for attempt in range(1, attempts + 1):
                self._layout()
                self._format()
                for n in self.nodes:
                    n.start()
                for p in self.proxies:
                    p.start()
                try:
                    self._wait_all(time.monotonic() + self.start_timeout)
                    return self
                except StartError as exc:
                    port_race = "Address already in use" in str(exc)
                    self._stop_nodes(timeout=5.0)
                    if not port_race or attempt == attempts:
                        raise
        except BaseException:
            self.stop()
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _layout(self) -> None:
        """Pick ports and write properties; fresh data directories every attempt."""
        per_node = len(self._bound_names) + 1
        ports = config.free_ports(per_node * self.size)
        layouts = []
        for i in range(self.size):
            node_id = i + 1
            chunk = ports[i * per_node : (i + 1) * per_node]
            node_dir = self.workdir / f"node-{node_id}"
            if node_dir.exists():
                shutil.rmtree(node_dir)
            (node_dir / "data").mkdir(parents=True)
            layouts.append(
                config.NodeLayout(
                    node_id=node_id,
                    controller_port=chunk[-1],
                    listener_ports=dict(zip(self._bound_names, chunk[:-1], strict=True)),
                    data_dir=node_dir / "data",
                    props_path=node_dir / "server.properties",
                    log_path=node_dir / "server.log",
                    extra=self._overrides,
                    advertised_ports=(
                        {config.PROXIED_LISTENER: self.proxies[i].port} if self.proxies else {}
                    ),
                )
            )
        for proxy, lay in zip(self.proxies, layouts, strict=False):
            proxy.upstream = ("127.0.0.1", lay.listener_ports[config.PROXIED_LISTENER])
        for lay in layouts:
            lay.props_path.write_text(
                config.render_properties(
                    lay,
                    voters=layouts,
                    users=self.users,
                    keystore=self._keystore,
                    authorizer=self.authorizer,
                    cluster_size=self.size,
                    truststore=self.ca_file,
                )
            )
        self.nodes = [
            KafkaNode(
                lay,
                classpath=self.classpath,
                jvm_flags=[*config.jvm_flags(self.profile), *self._extra_jvm],
                log4j=self.workdir / "log4j2.properties",
            )
            for lay in layouts
        ]

    def _format(self) -> None:
        def fmt(node: KafkaNode) -> None:
            args = [
                "kafka.tools.StorageTool",
                "format",
                "-t",
                self.cluster_id,
                "-c",
                str(node.layout.props_path),
                *config.scram_format_args(self.users),
            ]
            self.run_tool(*args, timeout=120.0, log_path=node.log_path)

        with ThreadPoolExecutor(max_workers=self.size) as pool:
            for fut in [pool.submit(fmt, n) for n in self.nodes]:
                fut.result()

    def _wait_all(self, deadline: float) -> None:
        for n in self.nodes:
            n.wait_ready(deadline)
        self.wait_for_brokers(deadline=deadline)

    def wait_for_brokers(self, *, deadline: float | None = None, count: int | None = None) -> None:
        """Block until every running node's Metadata lists ``count`` brokers (default: all)."""
        want = self.size if count is None else count
        deadline = deadline if deadline is not None else time.monotonic() + self.start_timeout
        last = "no answer yet"
        while True:
            running = [n for n in self.nodes if n.state is NodeState.RUNNING]
            seen = []
            for n in running:
                try:
                    answer = wire.metadata(n.host, n.port, timeout=2.0)
                except (OSError, wire.ProbeError) as exc:
                    last = f"node {n.node_id}: {exc}"
                    break
                seen.append(sorted(b.node_id for b in answer.brokers))
            else:
                if all(len(s) == want for s in seen):
                    return
                last = f"brokers listed per node: {seen}"
            if time.monotonic() > deadline:
                tails = "\n".join(
                    f"-- node {n.node_id} ({n.log_path}):\n{log_tail(n.log_path, 15)}"
                    for n in self.nodes
                )
                raise StartError(
                    f"LocalKafka: {want} brokers not all registered before the deadline "
                    f"({last})\n{tails}"
                )
            time.sleep(0.2)

    def kill(self, node_id: int) -> None:
        """SIGKILL one node (a crash)."""
        self.node(node_id).kill()

    def pause(self, node_id: int) -> None:
        """SIGSTOP one node: its sockets stay open, it answers nothing."""
        self.node(node_id).pause()

    def resume(self, node_id: int) -> None:
        """SIGCONT a paused node (it catches up on its own; see wait_for_brokers)."""
        self.node(node_id).resume()

    def stop_node(self, node_id: int, timeout: float = 15.0) -> None:
        """Stop one node cleanly (SIGTERM, bounded)."""
        self.node(node_id).stop(timeout)

    def restart(self, node_id: int) -> None:
        """Start a stopped or killed node again on the same ports and data, and
        wait until it answers and every running node lists all brokers again."""
        node = self.node(node_id)
        if node.state in (NodeState.STARTING, NodeState.RUNNING, NodeState.PAUSED):
            node.stop()
        node.start()
        deadline = time.monotonic() + self.start_timeout
        node.wait_ready(deadline)
        self.wait_for_brokers(deadline=deadline)

    def _stop_nodes(self, timeout: float) -> None:
        live = [
            n
            for n in self.nodes
            if n.state in (NodeState.STARTING, NodeState.RUNNING, NodeState.PAUSED)
        ]
        # Stop all at once: a node shut down last in a lone quorum can wait a
        # long time for controllers that are already gone.
        with ThreadPoolExecutor(max_workers=max(len(live), 1)) as pool:
            list(pool.map(lambda n: n.stop(timeout), live))

    def stop(self, timeout: float = 15.0) -> None:
        """Stop every node; remove the work directory unless asked to keep it."""
        self._stop_nodes(timeout)
        for p in self.proxies:
            p.close()
        self.proxies = []
        if self._own_workdir and not self._keep:
            shutil.rmtree(self.workdir, ignore_errors=True)
        self._started = False

    # ---- tools ---------------------------------------------------------------

    def run_tool(
        self,
        main_class: str,
        *args: str,
        timeout: float = 120.0,
        log_path: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run a Kafka Java tool (``main_class``) on the cached classpath.

        Raises :class:`StartError` with the tool's output when it exits non-zero.
        """
        argv = [
            "java",
            *_TOOL_FLAGS,
            f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
            owner_tag(),
            "-cp",
            self.classpath,
            main_class,
            *args,
        ]
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            start_new_session=True,
        )
        if log_path is not None:
            with open(log_path, "a") as f:
                f.write(f"---- localkafka: {main_class} {' '.join(args)}\n")
                f.write(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            out = "\n".join((proc.stdout + proc.stderr).splitlines()[-_LOG_TAIL_LINES:])
            raise StartError(f"LocalKafka: {main_class} exited with {proc.returncode}:\n{out}")
        return proc

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 1,
        configs: Mapping[str, str] | None = None,
        *,
        timeout: float = 60.0,
    ) -> None:
        """Create ``name`` and wait until every partition has a leader on every node.

        Sends a hand-encoded CreateTopics request (no JVM tool start: that
        costs about 2 s of CPU per topic on a 2-core machine). Raises
        :class:`TopicError` when the broker refuses (e.g. it already exists).
        """
        node = next(n for n in self._require_nodes() if n.state is NodeState.RUNNING)
        ((_, error, message),) = wire.create_topics(
            node.host,
            node.port,
            [(name, partitions, replication_factor, dict(configs or {}))],
            timeout_ms=int(timeout * 1000),
            timeout=timeout,
        )
        if error != 0:
            raise TopicError(
                f"LocalKafka: creating topic {name!r} failed with error code {error}"
                f" ({message or 'no message'})",
                error_code=error,
            )
        self.wait_for_topic(name, partitions, deadline=time.monotonic() + timeout)

    def wait_for_topic(self, name: str, partitions: int, *, deadline: float) -> None:
        """Block until every running node reports ``partitions`` led partitions of ``name``."""
        last = "no answer yet"
        while True:
            ok = True
            for n in self.nodes:
                if n.state is not NodeState.RUNNING:
                    continue
                try:
                    answer = wire.metadata(n.host, n.port, [name], timeout=2.0)
                except (OSError, wire.ProbeError) as exc:
                    ok, last = False, f"node {n.node_id}: {exc}"
                    break
                topic = next((t for t in answer.topics if t.name == name), None)
                led = (
                    []
                    if topic is None or topic.error_code != 0
                    else [p for p in topic.partitions if p.error_code == 0 and p.leader >= 0]
                )
                if len(led) != partitions:
                    ok = False
                    last = f"node {n.node_id} sees {len(led)} of {partitions} partitions led"
                    break
            if ok:
                return
            if time.monotonic() > deadline:
                raise StartError(
                    f"LocalKafka: topic {name!r} not ready before the deadline ({last})"
                )
            time.sleep(0.1)

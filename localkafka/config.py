"""What a local KRaft node is told: listeners, users, JVM flags, server.properties.

Everything here is a pure function of its arguments so the rendered files can
be read and tested without starting a JVM. The settings follow Kafka's own
test harness (``TestUtils``/``KafkaClusterTestKit``): few partitions for the
internal topics, no initial rebalance delay, a 2 MiB cleaner dedupe buffer
(the 128 MiB default is heap-allocated and would not fit the small heap).
Client listeners are PLAINTEXT, SASL_PLAINTEXT, SSL and SASL_SSL, plus on
demand MTLS (SSL that requires a client certificate issued by the throwaway
CA) and PROXIED (PLAINTEXT whose advertised port is a fault-injecting proxy's,
so that metadata keeps clients on the proxy; see ``proxy.py``). Broker to
broker and controller traffic always stays on PLAINTEXT and CONTROLLER.
"""

from __future__ import annotations

import base64
import enum
import socket
import uuid
from collections.abc import Iterable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "ALL_LISTENERS",
    "CLIENT_LISTENERS",
    "DEFAULT_USERS",
    "EXTRA_LISTENERS",
    "LISTENER_PROTOCOLS",
    "MTLS_CLIENT_CN",
    "PROXIED_LISTENER",
    "SASL_MECHANISMS",
    "NodeLayout",
    "Profile",
    "free_ports",
    "jvm_flags",
    "new_cluster_id",
    "render_log4j",
    "render_properties",
    "require_free_port",
    "scram_format_args",
]

CLIENT_LISTENERS = ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")
#: Listeners opened only when asked for by name (``LocalKafka(listeners=...)``).
EXTRA_LISTENERS = ("MTLS",)
ALL_LISTENERS = CLIENT_LISTENERS + EXTRA_LISTENERS
#: Opened by ``LocalKafka(proxy=True)``; advertised on the proxies' ports.
PROXIED_LISTENER = "PROXIED"
#: Security protocol of every listener name (Kafka's listener.security.protocol.map).
LISTENER_PROTOCOLS: Mapping[str, str] = {
    "CONTROLLER": "PLAINTEXT",
    "PLAINTEXT": "PLAINTEXT",
    "SSL": "SSL",
    "SASL_PLAINTEXT": "SASL_PLAINTEXT",
    "SASL_SSL": "SASL_SSL",
    "MTLS": "SSL",
    "PROXIED": "PLAINTEXT",
}
#: The common name of the client certificate the CA issues for MTLS; the
#: listener maps it to the principal ``User:<this>`` (ssl.principal.mapping.rules).
MTLS_CLIENT_CN = "localkafka-client"
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# Every user exists for PLAIN and for both SCRAM mechanisms. ``admin`` is the
# super user when the authorizer is on.
DEFAULT_USERS: Mapping[str, str] = {
    "admin": "admin-secret",
    "alice": "alice-secret",
    "bob": "bob-secret",
}


class Profile(enum.Enum):
    """JVM sizing. TEST trades peak speed for start time; never benchmark on it."""

    TEST = "test"
    BENCHMARK = "benchmark"


def jvm_flags(profile: Profile) -> list[str]:
    if profile is Profile.TEST:
        # C1 only and the serial collector: faster start, fewer threads on 2 cores.
        return [
            "-Xms256m",
            "-Xmx512m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Xshare:auto",
        ]
    # What kafka-server-start.sh and kafka-run-class.sh use.
    return [
        "-Xms1g",
        "-Xmx1g",
        "-server",
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
        "-XX:InitiatingHeapOccupancyPercent=35",
        "-XX:+ExplicitGCInvokesConcurrent",
        "-XX:MaxInlineLevel=15",
    ]


def new_cluster_id() -> str:
    """A 22-char base64url id as ``StorageTool random-uuid`` would print (no JVM)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):  # Kafka's Uuid never starts with '-'
            return cid


def require_free_port(port: int) -> None:
    """Raise OSError naming ``port`` and the way out when it cannot be bound."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            raise OSError(
                exc.errno,
                f"localkafka: 127.0.0.1:{port} is in use (another Kafka?); stop it, or pick "
                "another port (localkafka start --port N, or --port 0 for any free one)",
            ) from exc


def free_ports(n: int) -> list[int]:
    """Pick ``n`` distinct free loopback ports (held together, then released)."""
    with ExitStack() as stack:
        ports = []
        for _ in range(n):
            s = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            s.bind(("127.0.0.1", 0))
            ports.append(int(s.getsockname()[1]))
        return ports


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeLayout:
    """The ports and directories of one node."""

    node_id: int
    controller_port: int
    listener_ports: Mapping[str, int]
    data_dir: Path
    props_path: Path
    log_path: Path
    extra: Mapping[str, str] = field(default_factory=dict)
    #: Listener name -> port to advertise instead of the bound one (PROXIED).
    advertised_ports: Mapping[str, int] = field(default_factory=dict)


def _jaas_plain(users: Mapping[str, str]) -> str:
    entries = " ".join(f'user_{u}="{p}"' for u, p in users.items())
    return f"org.apache.kafka.common.security.plain.PlainLoginModule required {entries};"


def render_properties(
    node: NodeLayout,
    *,
    voters: Iterable[NodeLayout],
    users: Mapping[str, str],
    keystore: Path | None,
    authorizer: bool,
    cluster_size: int,
    truststore: Path | None = None,
) -> str:
    """Return the server.properties text of ``node``.

    ``truststore`` (the CA's PEM) is needed by the MTLS listener, which
    verifies client certificates against it. ``node.extra`` comes last and
    overrides any setting (in place: the line keeps its position).
    """
    props: dict[str, str] = {
        **_kraft_properties(node, voters),
        **_listener_properties(node),
        "log.dirs": str(node.data_dir),
        **_replication_properties(cluster_size),
        **_SMALL_NODE_PROPERTIES,
        **_sasl_properties(node, users),
        **_tls_properties(node, keystore, truststore),
        **(_AUTHORIZER_PROPERTIES if authorizer else {}),
        **node.extra,
    }
    return "".join(f"{k}={_escape(v)}\n" for k, v in props.items())


def _kraft_properties(node: NodeLayout, voters: Iterable[NodeLayout]) -> dict[str, str]:
    """Combined broker and controller, in a static quorum of ``voters``."""
    return {
        "process.roles": "broker,controller",
        "node.id": str(node.node_id),
        "controller.quorum.voters": ",".join(
            f"{v.node_id}@127.0.0.1:{v.controller_port}" for v in voters
        ),
    }


def _listener_properties(node: NodeLayout) -> dict[str, str]:
    """Client listeners (advertised on the proxy's port when proxied), plus CONTROLLER."""
    listeners = [f"{name}://127.0.0.1:{port}" for name, port in node.listener_ports.items()]
    advertised = [
        f"{name}://127.0.0.1:{node.advertised_ports.get(name, port)}"
        for name, port in node.listener_ports.items()
    ]
    extra_names = [n for n in node.listener_ports if n not in CLIENT_LISTENERS]
    protocol_map = (
        "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,"
        "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
    ) + "".join(f",{n}:{LISTENER_PROTOCOLS[n]}" for n in extra_names)
    return {
        "listeners": ",".join([*listeners, f"CONTROLLER://127.0.0.1:{node.controller_port}"]),
        "advertised.listeners": ",".join(advertised),
        "inter.broker.listener.name": "PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": protocol_map,
    }


def _replication_properties(cluster_size: int) -> dict[str, str]:
    """Replicate as widely as the cluster allows (at most 3), min ISR 2 from 3 nodes on."""
    factor = str(min(cluster_size, 3))
    min_isr = "2" if cluster_size >= 3 else "1"
    return {
        "num.partitions": "1",
        "default.replication.factor": factor,
        "min.insync.replicas": min_isr,
        "offsets.topic.replication.factor": factor,
        "offsets.topic.num.partitions": "5",
        "transaction.state.log.replication.factor": factor,
        "transaction.state.log.min.isr": min_isr,
        "transaction.state.log.num.partitions": "5",
        "share.coordinator.state.topic.replication.factor": factor,
        "share.coordinator.state.topic.min.isr": min_isr,
    }


#: Kafka's test-harness settings for a small, quick node (see the module docstring).
_SMALL_NODE_PROPERTIES: Mapping[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "false",
    "log.cleaner.dedupe.buffer.size": "2097152",
    "log.delete.delay.ms": "1000",
    "num.network.threads": "2",
    "num.io.threads": "4",
    # A killed node is fenced after the session timeout (default 9 s);
    # keep failover tests quick.
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "3000",
}


def _sasl_properties(node: NodeLayout, users: Mapping[str, str]) -> dict[str, str]:
    """PLAIN (with ``users``) and both SCRAM mechanisms on every SASL_ listener."""
    sasl = [n for n in node.listener_ports if n.startswith("SASL_")]
    if not sasl:
        return {}
    props = {"sasl.enabled.mechanisms": ",".join(SASL_MECHANISMS)}
    for name in sasl:
        prefix = f"listener.name.{name.lower()}"
        props[f"{prefix}.plain.sasl.jaas.config"] = _jaas_plain(users)
        for mech in ("scram-sha-256", "scram-sha-512"):
            props[f"{prefix}.{mech}.sasl.jaas.config"] = (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            )
    return props


def _tls_properties(
    node: NodeLayout, keystore: Path | None, truststore: Path | None
) -> dict[str, str]:
    """The server's PEM keystore, and client certificates required on MTLS."""
    props: dict[str, str] = {}
    if keystore is not None:
        # KIP-651 PEM keystore: unencrypted PKCS#8 key + chain, no password.
        props["ssl.keystore.type"] = "PEM"
        props["ssl.keystore.location"] = str(keystore)
        props["ssl.client.auth"] = "none"
    if "MTLS" in node.listener_ports:
        if keystore is None or truststore is None:
            raise ValueError("render_properties: the MTLS listener needs keystore and truststore")
        prefix = "listener.name.mtls"
        props[f"{prefix}.ssl.client.auth"] = "required"
        props[f"{prefix}.ssl.truststore.type"] = "PEM"
        props[f"{prefix}.ssl.truststore.location"] = str(truststore)
        # "CN=localkafka-client,OU=...,O=..." -> User:localkafka-client
        props[f"{prefix}.ssl.principal.mapping.rules"] = "RULE:^CN=([^,]*).*$/$1/,DEFAULT"
    return props


_AUTHORIZER_PROPERTIES: Mapping[str, str] = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    # Brokers and controllers talk over PLAINTEXT as ANONYMOUS, so it must be
    # a super user; ACL tests authenticate over a SASL listener instead.
    "super.users": "User:admin;User:ANONYMOUS",
    "allow.everyone.if.no.acl.found": "false",
}


def _escape(value: str) -> str:
    # java.util.Properties treats backslash as an escape; nothing else in our
    # values needs quoting (a '=' after the first one is part of the value).
    return value.replace("\\", "\\\\")


def scram_format_args(users: Mapping[str, str]) -> list[str]:
    """``StorageTool format`` arguments creating every user for both SCRAM mechanisms."""
    args = []
    for user, password in users.items():
        for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            args += ["--add-scram", f"{mech}=[name={user},password={password}]"]
    return args


def render_log4j() -> str:
    """log4j2 config: warnings, plus the lines that say the server started."""
    return "\n".join(
        [
            "status = warn",
            "appender.console.type = Console",
            "appender.console.name = STDOUT",
            "appender.console.layout.type = PatternLayout",
            "appender.console.layout.pattern = [%d] %p %m (%c)%n",
            "rootLogger.level = WARN",
            "rootLogger.appenderRef.stdout.ref = STDOUT",
            "logger.krs.name = kafka.server.KafkaRaftServer",
            "logger.krs.level = INFO",
            "logger.broker.name = kafka.server.BrokerServer",
            "logger.broker.level = INFO",
            "",
        ]
    )

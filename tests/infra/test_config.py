"""Rendering of node settings (pure functions: no JVM, no sockets)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kafkacore.testing import config


def layout(node_id: int, listeners: dict[str, int], tmp: Path) -> config.NodeLayout:
    return config.NodeLayout(
        node_id=node_id,
        controller_port=9000 + node_id,
        listener_ports=listeners,
        data_dir=tmp / f"n{node_id}",
        props_path=tmp / f"n{node_id}.properties",
        log_path=tmp / f"n{node_id}.log",
    )


def parse(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line)


def test_cluster_nodes_share_the_static_quorum(tmp_path: Path) -> None:
    nodes = [layout(i, {"PLAINTEXT": 9100 + i}, tmp_path) for i in (1, 2, 3)]
    rendered = [
        parse(
            config.render_properties(
                n, voters=nodes, users={}, keystore=None, authorizer=False, cluster_size=3
            )
        )
        for n in nodes
    ]
    voters = {p["controller.quorum.voters"] for p in rendered}
    assert voters == {"1@127.0.0.1:9001,2@127.0.0.1:9002,3@127.0.0.1:9003"}
    first = rendered[0]
    assert first["listeners"] == "PLAINTEXT://127.0.0.1:9101,CONTROLLER://127.0.0.1:9001"
    assert first["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9101"
    assert first["offsets.topic.replication.factor"] == "3"
    assert first["min.insync.replicas"] == "2"
    assert "sasl.enabled.mechanisms" not in first
    assert "authorizer.class.name" not in first


def test_single_node_with_every_listener(tmp_path: Path) -> None:
    ports = dict(zip(config.CLIENT_LISTENERS, (1, 2, 3, 4), strict=True))
    node = layout(1, ports, tmp_path)
    props = parse(
        config.render_properties(
            node,
            voters=[node],
            users={"alice": "alice-secret"},
            keystore=tmp_path / "ks.pem",
            authorizer=True,
            cluster_size=1,
        )
    )
    assert props["offsets.topic.replication.factor"] == "1"
    assert props["inter.broker.listener.name"] == "PLAINTEXT"
    for listener in ("sasl_plaintext", "sasl_ssl"):
        plain = props[f"listener.name.{listener}.plain.sasl.jaas.config"]
        assert 'user_alice="alice-secret"' in plain
        for mech in ("scram-sha-256", "scram-sha-512"):
            assert "ScramLoginModule" in props[f"listener.name.{listener}.{mech}.sasl.jaas.config"]
    assert props["ssl.keystore.type"] == "PEM"
    assert "User:ANONYMOUS" in props["super.users"]
    assert props["allow.everyone.if.no.acl.found"] == "false"


def test_scram_format_args_cover_both_mechanisms() -> None:
    args = config.scram_format_args({"alice": "pw"})
    assert args == [
        "--add-scram",
        "SCRAM-SHA-256=[name=alice,password=pw]",
        "--add-scram",
        "SCRAM-SHA-512=[name=alice,password=pw]",
    ]


def test_cluster_ids_look_like_kafka_uuids() -> None:
    ids = {config.new_cluster_id() for _ in range(500)}
    assert len(ids) == 500
    for cid in ids:
        assert re.fullmatch(r"[A-Za-z0-9_-]{22}", cid)
        assert not cid.startswith("-")


def test_free_ports_are_distinct() -> None:
    ports = config.free_ports(12)
    assert len(set(ports)) == 12


def test_test_profile_never_used_for_benchmarks() -> None:
    assert "-XX:TieredStopAtLevel=1" in config.jvm_flags(config.Profile.TEST)
    bench = config.jvm_flags(config.Profile.BENCHMARK)
    assert not any("TieredStopAtLevel" in f or "SerialGC" in f for f in bench)


def test_proxied_listener_advertises_the_proxy_port(tmp_path: Path) -> None:
    node = config.NodeLayout(
        node_id=1,
        controller_port=9001,
        listener_ports={"PLAINTEXT": 9101, "PROXIED": 9102},
        data_dir=tmp_path / "n1",
        props_path=tmp_path / "n1.properties",
        log_path=tmp_path / "n1.log",
        advertised_ports={"PROXIED": 7777},
    )
    props = parse(
        config.render_properties(
            node, voters=[node], users={}, keystore=None, authorizer=False, cluster_size=1
        )
    )
    assert props["listeners"] == (
        "PLAINTEXT://127.0.0.1:9101,PROXIED://127.0.0.1:9102,CONTROLLER://127.0.0.1:9001"
    )
    # Metadata answered on PROXIED names the proxy; PLAINTEXT stays direct.
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9101,PROXIED://127.0.0.1:7777"
    assert props["listener.security.protocol.map"].endswith(",PROXIED:PLAINTEXT")


def test_mtls_listener_requires_client_certificates(tmp_path: Path) -> None:
    node = layout(1, {"PLAINTEXT": 1, "SSL": 2, "MTLS": 3}, tmp_path)
    props = parse(
        config.render_properties(
            node,
            voters=[node],
            users={},
            keystore=tmp_path / "ks.pem",
            truststore=tmp_path / "ca.pem",
            authorizer=False,
            cluster_size=1,
        )
    )
    assert props["ssl.client.auth"] == "none"  # the plain SSL listener stays one-way
    assert props["listener.name.mtls.ssl.client.auth"] == "required"
    assert props["listener.name.mtls.ssl.truststore.type"] == "PEM"
    assert props["listener.name.mtls.ssl.truststore.location"] == str(tmp_path / "ca.pem")
    assert "MTLS:SSL" in props["listener.security.protocol.map"].split(",")
    assert props["listener.name.mtls.ssl.principal.mapping.rules"].startswith("RULE:^CN=")


def test_mtls_without_a_truststore_is_refused(tmp_path: Path) -> None:
    import pytest

    node = layout(1, {"PLAINTEXT": 1, "MTLS": 3}, tmp_path)
    with pytest.raises(ValueError, match="MTLS"):
        config.render_properties(
            node, voters=[node], users={}, keystore=None, authorizer=False, cluster_size=1
        )


def test_tls_files_include_a_client_certificate(tmp_path: Path) -> None:
    import ssl

    from kafkacore.testing.tls import make_tls_files

    files = make_tls_files(tmp_path)
    ctx = ssl.create_default_context(cafile=str(files.ca_file))
    ctx.load_cert_chain(str(files.client_cert), str(files.client_key))  # loads: a valid pair
    assert files.client_key.stat().st_mode & 0o077 == 0
    text = files.client_cert.read_text()
    assert text.count("BEGIN CERTIFICATE") >= 1


# Byte-exact renderings of two representative nodes (a follower in a
# three-node PLAINTEXT cluster whose extra settings override a default, and a
# single node with every listener, SASL users, TLS, MTLS, a proxied port and
# the authorizer). They pin the order and escaping of every line, so a change
# in how the text is put together shows up here before it reaches a JVM.

CLUSTER_FOLLOWER_PROPERTIES = (
    "process.roles=broker,controller",
    "node.id=2",
    "controller.quorum.voters=1@127.0.0.1:9001,2@127.0.0.1:9002,3@127.0.0.1:9003",
    "listeners=PLAINTEXT://127.0.0.1:9102,CONTROLLER://127.0.0.1:9002",
    "advertised.listeners=PLAINTEXT://127.0.0.1:9102",
    "inter.broker.listener.name=PLAINTEXT",
    "controller.listener.names=CONTROLLER",
    (
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,"
        "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
    ),
    "log.dirs=C:\\\\kafka\\\\n2",
    "num.partitions=1",
    "default.replication.factor=3",
    "min.insync.replicas=2",
    "offsets.topic.replication.factor=3",
    "offsets.topic.num.partitions=5",
    "transaction.state.log.replication.factor=3",
    "transaction.state.log.min.isr=2",
    "transaction.state.log.num.partitions=5",
    "share.coordinator.state.topic.replication.factor=3",
    "share.coordinator.state.topic.min.isr=2",
    "group.initial.rebalance.delay.ms=0",
    "auto.create.topics.enable=false",
    "log.cleaner.dedupe.buffer.size=2097152",
    "log.delete.delay.ms=1000",
    "num.network.threads=2",
    "num.io.threads=4",
    "broker.heartbeat.interval.ms=500",
    "broker.session.timeout.ms=3000",
)

EVERY_FEATURE_PROPERTIES = (
    "process.roles=broker,controller",
    "node.id=1",
    "controller.quorum.voters=1@127.0.0.1:9001",
    (
        "listeners=PLAINTEXT://127.0.0.1:9101,SASL_PLAINTEXT://127.0.0.1:9102,"
        "SSL://127.0.0.1:9103,SASL_SSL://127.0.0.1:9104,MTLS://127.0.0.1:9105,"
        "PROXIED://127.0.0.1:9106,CONTROLLER://127.0.0.1:9001"
    ),
    (
        "advertised.listeners=PLAINTEXT://127.0.0.1:9101,SASL_PLAINTEXT://127.0.0.1:9102,"
        "SSL://127.0.0.1:9103,SASL_SSL://127.0.0.1:9104,MTLS://127.0.0.1:9105,"
        "PROXIED://127.0.0.1:19106"
    ),
    "inter.broker.listener.name=PLAINTEXT",
    "controller.listener.names=CONTROLLER",
    (
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,"
        "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,MTLS:SSL,PROXIED:PLAINTEXT"
    ),
    "log.dirs=/data/n1",
    "num.partitions=1",
    "default.replication.factor=1",
    "min.insync.replicas=1",
    "offsets.topic.replication.factor=1",
    "offsets.topic.num.partitions=5",
    "transaction.state.log.replication.factor=1",
    "transaction.state.log.min.isr=1",
    "transaction.state.log.num.partitions=5",
    "share.coordinator.state.topic.replication.factor=1",
    "share.coordinator.state.topic.min.isr=1",
    "group.initial.rebalance.delay.ms=0",
    "auto.create.topics.enable=false",
    "log.cleaner.dedupe.buffer.size=2097152",
    "log.delete.delay.ms=1000",
    "num.network.threads=2",
    "num.io.threads=2",
    "broker.heartbeat.interval.ms=500",
    "broker.session.timeout.ms=3000",
    "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    (
        "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.secur"
        'ity.plain.PlainLoginModule required user_admin="admin-secret" '
        'user_alice="alice-secret";'
    ),
    (
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.comm"
        "on.security.scram.ScramLoginModule required;"
    ),
    (
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.comm"
        "on.security.scram.ScramLoginModule required;"
    ),
    (
        "listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.pl"
        'ain.PlainLoginModule required user_admin="admin-secret" '
        'user_alice="alice-secret";'
    ),
    (
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.sec"
        "urity.scram.ScramLoginModule required;"
    ),
    (
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.sec"
        "urity.scram.ScramLoginModule required;"
    ),
    "ssl.keystore.type=PEM",
    "ssl.keystore.location=/tls/ks.pem",
    "ssl.client.auth=none",
    "listener.name.mtls.ssl.client.auth=required",
    "listener.name.mtls.ssl.truststore.type=PEM",
    "listener.name.mtls.ssl.truststore.location=/tls/ca.pem",
    "listener.name.mtls.ssl.principal.mapping.rules=RULE:^CN=([^,]*).*$/$1/,DEFAULT",
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users=User:admin;User:ANONYMOUS",
    "allow.everyone.if.no.acl.found=false",
)


def fixed_layout(node_id: int, listeners: dict[str, int], **kw: Any) -> config.NodeLayout:
    """A layout with fixed paths, so the rendered text does not depend on tmp_path."""
    return config.NodeLayout(
        node_id=node_id,
        controller_port=9000 + node_id,
        listener_ports=listeners,
        data_dir=Path(f"/data/n{node_id}"),
        props_path=Path(f"/data/n{node_id}.properties"),
        log_path=Path(f"/data/n{node_id}.log"),
        **kw,
    )


def lines(text: tuple[str, ...]) -> str:
    return "".join(f"{line}\n" for line in text)


def test_cluster_follower_renders_exactly() -> None:
    nodes = [
        fixed_layout(
            i,
            {"PLAINTEXT": 9100 + i},
            extra={"log.dirs": "C:\\kafka\\n2"} if i == 2 else {},
        )
        for i in (1, 2, 3)
    ]
    text = config.render_properties(
        nodes[1], voters=nodes, users={}, keystore=None, authorizer=False, cluster_size=3
    )
    assert text == lines(CLUSTER_FOLLOWER_PROPERTIES)


def test_node_with_every_feature_renders_exactly() -> None:
    ports = {"PLAINTEXT": 9101, "SASL_PLAINTEXT": 9102, "SSL": 9103, "SASL_SSL": 9104}
    ports |= {"MTLS": 9105, "PROXIED": 9106}
    node = fixed_layout(
        1, ports, advertised_ports={"PROXIED": 19106}, extra={"num.io.threads": "2"}
    )
    text = config.render_properties(
        node,
        voters=[node],
        users={"admin": "admin-secret", "alice": "alice-secret"},
        keystore=Path("/tls/ks.pem"),
        truststore=Path("/tls/ca.pem"),
        authorizer=True,
        cluster_size=1,
    )
    assert text == lines(EVERY_FEATURE_PROPERTIES)

"""Pytest fixtures that hand tests real local Kafka brokers.

Loaded by ``tests/conftest.py`` (``pytest_plugins``). Fixtures:

* ``kafka_libs`` (session): ``Path`` of the cached Kafka jar directory.
* ``kafka_broker`` (session): one combined KRaft node with PLAINTEXT,
  SASL_PLAINTEXT, SSL and SASL_SSL listeners (a :class:`LocalKafka`), and a
  pass-through fault proxy in front of a PROXIED listener (``proxy_bootstrap``).
* ``kafka_acl_broker`` (session): one broker with the authorizer on, started on
  first use and shared by every test directory that needs it: PLAINTEXT is a
  super user (ANONYMOUS, as brokers talk to each other), SASL_PLAINTEXT
  authenticates the kit's users (``admin``, a super user; ``alice``; ``bob``)
  with PLAIN and SCRAM, and the broker issues delegation tokens (KIP-48).
* ``kafka_kdc`` (session): a local Kerberos KDC (:class:`LocalKdc`); sets
  ``KRB5_CONFIG`` for this process so MIT's GSS-API library uses it.
* ``kafka_gssapi_broker`` (session): a broker whose SASL listeners also
  accept GSSAPI from the ``kafka_kdc`` realm (principal ``kafka/localhost``).
* ``kafka_cluster``: a 3-node cluster started once per session on first use
  (with a pass-through fault proxy per node, as ``kafka_broker``); after each
  test that used it, any node the test killed, stopped or paused is running
  again and every proxy is back to pass-through, so tests do not leak a
  broken cluster to each other.

Tests that use these fixtures get the ``broker``/``cluster``/``java`` markers
automatically, so ``pytest -m "not broker"`` runs only the socket-free tests.
Set ``LOCALKAFKA_KEEP=1`` to keep the brokers' work directories (logs).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkacore.testing.cluster import LocalKafka, NodeState
from kafkacore.testing.config import CLIENT_LISTENERS
from kafkacore.testing.kerberos import LocalKdc
from kafkacore.testing.libs import ensure_libs
from kafkacore.testing.proxy import FaultMix

_FIXTURE_MARKERS = {
    "kafka_broker": "broker",
    "kafka_acl_broker": "broker",
    "kafka_gssapi_broker": "broker",
    "kafka_cluster": "cluster",
    "kafka_libs": "java",
}


def _keep() -> bool:
    return os.environ.get("LOCALKAFKA_KEEP", "") not in ("", "0")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = getattr(item, "fixturenames", ())
        for fixture, marker in _FIXTURE_MARKERS.items():
            if fixture in names:
                item.add_marker(marker)
        if "kafka_cluster" in names or "kafka_cluster_session" in names:
            item.add_marker("cluster")
            item.add_marker("broker")


@pytest.fixture(scope="session")
def kafka_libs() -> Path:
    """The directory of Kafka 4.3.1's runtime jars (resolved once, cached per user)."""
    return ensure_libs()


@pytest.fixture(scope="session")
def kafka_broker(kafka_libs: Path) -> Iterator[LocalKafka]:
    """One local broker with all four client listeners open."""
    with LocalKafka(size=1, listeners=CLIENT_LISTENERS, keep_workdir=_keep(), proxy=True) as kafka:
        yield kafka


#: Delegation tokens need a secret the brokers sign them with (KIP-48); any
#: constant does for a throw-away test broker.
ACL_BROKER_OVERRIDES = {"delegation.token.secret.key": "localkafka-token-secret"}


@pytest.fixture(scope="session")
def kafka_acl_broker(kafka_libs: Path) -> Iterator[LocalKafka]:
    """One broker with the authorizer on, PLAINTEXT and SASL_PLAINTEXT, issuing tokens."""
    with LocalKafka(
        listeners=("PLAINTEXT", "SASL_PLAINTEXT"),
        authorizer=True,
        overrides=ACL_BROKER_OVERRIDES,
        keep_workdir=_keep(),
    ) as kafka:
        yield kafka


@pytest.fixture(scope="session")
def kafka_kdc() -> Iterator[LocalKdc]:
    """A local KDC for realm EXAMPLE.COM; KRB5_CONFIG points at its krb5.conf."""
    with LocalKdc() as kdc:
        old = os.environ.get("KRB5_CONFIG")
        os.environ["KRB5_CONFIG"] = str(kdc.krb5_conf)
        try:
            yield kdc
        finally:
            if old is None:
                os.environ.pop("KRB5_CONFIG", None)
            else:
                os.environ["KRB5_CONFIG"] = old


@pytest.fixture(scope="session")
def kafka_gssapi_broker(kafka_libs: Path, kafka_kdc: LocalKdc) -> Iterator[LocalKafka]:
    """One broker with PLAINTEXT and SASL_PLAINTEXT; SASL also takes GSSAPI."""
    with LocalKafka(
        size=1,
        listeners=("PLAINTEXT", "SASL_PLAINTEXT"),
        kerberos=kafka_kdc,
        keep_workdir=_keep(),
    ) as kafka:
        yield kafka


@pytest.fixture(scope="session")
def kafka_cluster_session(kafka_libs: Path) -> Iterator[LocalKafka]:
    """The 3-node cluster itself (PLAINTEXT), started on first use."""
    with LocalKafka(size=3, listeners=("PLAINTEXT",), keep_workdir=_keep(), proxy=True) as kafka:
        yield kafka


def repair(kafka: LocalKafka) -> None:
    """Every node running and every proxy a clean pass-through again."""
    for proxy in kafka.proxies:
        proxy.release()
        proxy.set_mix(FaultMix())
    paused = [n.node_id for n in kafka.nodes if n.state is NodeState.PAUSED]
    for node_id in paused:
        kafka.resume(node_id)
    for node in kafka.nodes:
        if node.state is not NodeState.RUNNING:
            kafka.restart(node.node_id)
    if paused:
        kafka.wait_for_brokers()


@pytest.fixture
def kafka_cluster(kafka_cluster_session: LocalKafka) -> Iterator[LocalKafka]:
    """The 3-node cluster, with every node running again after the test."""
    yield kafka_cluster_session
    repair(kafka_cluster_session)

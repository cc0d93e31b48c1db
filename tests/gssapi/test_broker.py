"""SASL GSSAPI against a real KDC (Apache Kerby) and a real Kafka 4.3.1 broker.

The broker's SASL_PLAINTEXT listener takes GSSAPI as ``kafka/localhost``; the
client authenticates from a keytab through MIT's libgssapi_krb5 (ctypes), on
every transport. Its advertised address is 127.0.0.1, so the client names the
broker's host with ``domain_name='localhost'`` (``sasl_kerberos_domain_name``).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from kafkacore.client.gssapi import gssapi_mechanism_factory
from kafkacore.errors import AuthenticationError
from kafkacore.protocol.messages import MetadataRequest
from kafkacore.testing.cluster import LocalKafka
from kafkacore.testing.kerberos import LocalKdc
from kafkacore.transports._gssapi import KerberosClient, kerberos_mechanism_factory

from .conftest import Flavor

pytestmark = pytest.mark.anyio


def _gssapi(kdc: LocalKdc, user: str, **kw: Any) -> dict[str, Any]:
    return {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "GSSAPI",
        "sasl_mechanism_factory": kerberos_mechanism_factory(
            keytab=str(kdc.keytab(user)),
            principal=kdc.principal(user),
            domain_name="localhost",
            **kw,
        ),
    }


async def test_gssapi_authenticates_and_reads_metadata(
    flavor: Flavor, kafka_gssapi_broker: LocalKafka, kafka_kdc: LocalKdc
) -> None:
    bootstrap = kafka_gssapi_broker.bootstrap_for("SASL_PLAINTEXT")
    async with flavor.client(bootstrap, **_gssapi(kafka_kdc, "client")) as client:
        cluster = await client.metadata()
        assert set(cluster) == {1}
        response = await client.send(MetadataRequest(topics=[]), node_id=1)
        assert [b.node_id for b in response.brokers] == [1]


async def test_unknown_principal_fails_once_with_authentication_error(
    flavor: Flavor, kafka_gssapi_broker: LocalKafka, kafka_kdc: LocalKdc
) -> None:
    # 'ghost' has a keytab but the KDC no longer knows it.
    err, metrics = await flavor.failed_connect(
        kafka_gssapi_broker.bootstrap_for("SASL_PLAINTEXT"),
        lambda core: core.metrics(),
        reconnect_backoff_ms=1,
        reconnect_backoff_max_ms=1,
        **_gssapi(kafka_kdc, "ghost"),
    )
    assert isinstance(err, AuthenticationError), repr(err)
    assert "ghost@EXAMPLE.COM" in str(err)
    assert metrics.authentication_failures == 1
    assert metrics.connections_opened == 1


async def test_wrong_service_principal_fails_with_authentication_error(
    flavor: Flavor, kafka_gssapi_broker: LocalKafka, kafka_kdc: LocalKdc
) -> None:
    # The KDC has no 'nosuch/localhost'; no ticket, so no token reaches the broker.
    err = await flavor.connect_error(
        kafka_gssapi_broker.bootstrap_for("SASL_PLAINTEXT"),
        reconnect_backoff_ms=1,
        reconnect_backoff_max_ms=1,
        **_gssapi(kafka_kdc, "client", service_name="nosuch"),
    )
    assert isinstance(err, AuthenticationError), repr(err)
    assert "nosuch" in str(err)


async def test_plain_still_works_next_to_gssapi(
    flavor: Flavor, kafka_gssapi_broker: LocalKafka
) -> None:
    async with flavor.client(
        kafka_gssapi_broker.bootstrap_for("SASL_PLAINTEXT"),
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="alice",
        sasl_plain_password="alice-secret",
    ) as client:
        assert set(await client.metadata()) == {1}


async def test_principal_defaults_to_the_keytabs_entry(
    flavor: Flavor, kafka_gssapi_broker: LocalKafka, kafka_kdc: LocalKdc
) -> None:
    factory = kerberos_mechanism_factory(
        keytab=str(kafka_kdc.keytab("alice")), domain_name="localhost"
    )
    async with flavor.client(
        kafka_gssapi_broker.bootstrap_for("SASL_PLAINTEXT"),
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="GSSAPI",
        sasl_mechanism_factory=factory,
    ) as client:
        assert set(await client.metadata()) == {1}


class _ThreadRecordingContext:
    """A real Kerberos context that notes which thread makes each GSS call."""

    def __init__(self, inner: Any, threads: list[str]) -> None:
        self._inner = inner
        self._threads = threads

    @property
    def established(self) -> bool:
        return bool(self._inner.established)

    def step(self, token: bytes | None) -> bytes:
        self._threads.append(threading.current_thread().name)
        return bytes(self._inner.step(token))

    def wrap(self, data: bytes) -> bytes:
        self._threads.append(threading.current_thread().name)
        return bytes(self._inner.wrap(data))

    def unwrap(self, data: bytes) -> bytes:
        self._threads.append(threading.current_thread().name)
        return bytes(self._inner.unwrap(data))


async def test_kerberos_calls_never_run_on_the_transports_loop(
    flavor: Flavor, kafka_gssapi_broker: LocalKafka, kafka_kdc: LocalKdc
) -> None:
    # A KDC round trip inside a GSS call must not stall the event loop (or
    # the selector's I/O thread): every transport hands the calls to a worker.
    threads: list[str] = []
    kerberos = KerberosClient(
        keytab=str(kafka_kdc.keytab("client")), principal=kafka_kdc.principal("client")
    )
    factory = gssapi_mechanism_factory(
        lambda target: _ThreadRecordingContext(kerberos.new_context(target), threads),
        domain_name="localhost",
    )
    options = {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "GSSAPI",
        "sasl_mechanism_factory": factory,
    }
    loop_threads = {threading.current_thread().name, "kafkacore-selector"}
    async with flavor.client(kafka_gssapi_broker.bootstrap_for("SASL_PLAINTEXT"), **options) as c:
        assert set(await c.metadata()) == {1}
    assert threads, "the exchange made no GSS call"
    assert not loop_threads & set(threads), threads

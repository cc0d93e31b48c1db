"""mTLS and SASL_SSL/SCRAM on real listeners; refused credentials fail once, at once.

Connection attempts are counted with a pass-through
:class:`~kafkacore.testing.proxy.FaultProxy` in front of the listener (the TLS
certificate names 127.0.0.1, which the proxy also is).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from kafkacore.client import TopicPartition
from kafkacore.errors import AuthenticationError
from kafkacore.producer import RecordMetadata
from kafkacore.testing import FaultProxy
from tests.faults.drive import chain, chain_text, client_call, consumer_assign_poll, produce
from tests.security.conftest import Secure

pytestmark = pytest.mark.timeout(180)

#: A refused login must be reported well before any 60 s default timeout.
PROMPT_S = 10.0


@contextlib.contextmanager
def counted(secure: Secure, listener: str) -> Iterator[FaultProxy]:
    """A pass-through proxy in front of ``listener``: counts connections."""
    host, port = secure.kafka.listener(listener)
    with FaultProxy((host, port), name=f"count-{listener}") as proxy:
        yield proxy


def _via(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` without their bootstrap address (the proxy's is passed instead)."""
    return {k: v for k, v in options.items() if k != "bootstrap_servers"}


def _authentication_failed(out: Any) -> None:
    assert out.error is not None, f"expected an authentication error, got {out.value!r}"
    assert any(isinstance(e, AuthenticationError) for e in chain(out.error)), chain_text(out.error)
    assert out.elapsed < PROMPT_S, f"after {out.elapsed:.1f} s: {chain_text(out.error)}"


# -- mTLS ----------------------------------------------------------------------------


def test_mtls_certificate_is_the_principal(secure_kafka: Secure, flavor: str) -> None:
    """The client certificate logs in, and ACLs apply to its CN: allowed on ok-*,
    denied on no-* (so the principal really came from the certificate)."""
    options = secure_kafka.mtls()
    bootstrap = str(options.pop("bootstrap_servers"))
    ok = produce(flavor, bootstrap, secure_kafka.ok("t"), [b"mtls"], bound_s=60, **options)
    assert isinstance(ok.outcomes[0].value, RecordMetadata), chain_text(ok.outcomes[0].error)
    denied = produce(
        flavor, bootstrap, secure_kafka.no("t"), [b"mtls"], bound_s=60,
        delivery_timeout_ms=20000, max_block_ms=20000, **options,
    )  # fmt: skip
    text = chain_text(denied.outcomes[0].error)
    assert "TOPIC_AUTHORIZATION_FAILED" in text or "TopicAuthorization" in text, text


@pytest.mark.parametrize("case", ["no certificate", "certificate of another CA"])
def test_mtls_refuses_a_client_without_a_trusted_certificate_once(
    secure_kafka: Secure, flavor: str, case: str, tmp_path: Path
) -> None:
    options = secure_kafka.mtls(cert=False)
    if case == "certificate of another CA":
        other = trustme.CA().issue_cert("intruder", common_name="intruder")
        cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
        cert.write_bytes(b"".join(b.bytes() for b in other.cert_chain_pems))
        key.write_bytes(other.private_key_pem.bytes())
        options |= {"ssl_certfile": str(cert), "ssl_keyfile": str(key)}
    with counted(secure_kafka, "MTLS") as proxy:
        out = client_call(flavor, proxy.address, "metadata", None, bound_s=30, **_via(options))
        _authentication_failed(out)
        assert "certificate" in chain_text(out.error).lower(), chain_text(out.error)
        assert proxy.stats.connections <= 2, f"{proxy.stats.connections} connection attempts"


# -- SASL_SSL with SCRAM ---------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_over_sasl_ssl_produce_and_fetch(
    secure_kafka: Secure, flavor: str, mechanism: str
) -> None:
    options = secure_kafka.sasl("SASL_SSL", mechanism)
    bootstrap = str(options.pop("bootstrap_servers"))
    topic = secure_kafka.ok("t2")
    values = [f"{flavor}-{mechanism}-{i}".encode() for i in range(3)]
    run = produce(flavor, bootstrap, topic, values, bound_s=60, **options)
    assert all(isinstance(o.value, RecordMetadata) for o in run.outcomes), [
        chain_text(o.error) for o in run.outcomes
    ]
    first = min(o.value.offset for o in run.outcomes)
    out = consumer_assign_poll(
        flavor, bootstrap, [TopicPartition(topic, 0)], want=10_000, window_s=4.0,
        auto_offset_reset="earliest", enable_auto_commit=False, **options,
    )  # fmt: skip
    assert out.error is None, chain_text(out.error)
    got = [r.value for r in out.value if r.offset >= first]
    assert got[:3] == values or set(values) <= set(got), got[-5:]


# -- a wrong password: one AuthenticationError, no retry loop ---------------------------------


@pytest.mark.parametrize(
    ("listener", "mechanism"),
    [("SASL_PLAINTEXT", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-256"), ("SASL_SSL", "SCRAM-SHA-512")],
)
def test_wrong_password_is_one_authentication_error_and_no_retry_loop(
    secure_kafka: Secure, flavor: str, listener: str, mechanism: str
) -> None:
    options = secure_kafka.sasl(listener, mechanism, password="not-the-password")
    with counted(secure_kafka, listener) as proxy:
        run = produce(
            flavor, proxy.address, secure_kafka.ok("t"), [b"x"], bound_s=60,
            delivery_timeout_ms=25000, max_block_ms=25000, **_via(options),
        )  # fmt: skip
        _authentication_failed(run.outcomes[0])
        attempts = proxy.stats.connections
        assert attempts <= 2, f"{attempts} connection attempts for one wrong password"


def test_client_stops_after_a_wrong_password_while_still_open(
    secure_kafka: Secure, flavor: str
) -> None:
    """The client's bootstrap fails with AuthenticationError; left open, it must not
    keep trying (issue 10: it kept retrying bootstrap while open)."""
    options = secure_kafka.sasl("SASL_PLAINTEXT", "SCRAM-SHA-512", password="not-the-password")
    with counted(secure_kafka, "SASL_PLAINTEXT") as proxy:
        error, after = _failed_connect_then_idle(flavor, proxy, 3.0, **_via(options))
    assert isinstance(error, AuthenticationError), chain_text(error)
    assert after == 0, f"{after} more connection attempts in 3 s after the error"


def _failed_connect_then_idle(
    flavor: str, proxy: FaultProxy, idle_s: float, **options: Any
) -> tuple[BaseException | None, int]:
    """Connect (expecting an error), stay open ``idle_s``; the error and how many
    connections ``proxy`` saw after the error."""
    if flavor == "selector":
        from kafkacore.transports.selector import KafkaClient

        client = KafkaClient(proxy.address, **options)
        try:
            try:
                client.connect(timeout=30)
                return None, 0
            except Exception as exc:
                error: BaseException = exc
            before = proxy.stats.connections
            time.sleep(idle_s)
            return error, proxy.stats.connections - before
        finally:
            client.close()

    import anyio

    async def main() -> tuple[BaseException | None, int]:
        if flavor == "asyncio":
            from kafkacore.transports.asyncio import AsyncKafkaClient

            client: Any = AsyncKafkaClient(proxy.address, **options)
            try:
                try:
                    await client.connect()
                    return None, 0
                except Exception as exc:
                    error = exc
                before = proxy.stats.connections
                await anyio.sleep(idle_s)
                return error, proxy.stats.connections - before
            finally:
                await client.close()
        from kafkacore.transports.trio import TrioKafkaClient

        # A trio client that failed to enter is shut down; nothing can keep trying.
        try:
            async with TrioKafkaClient(proxy.address, **options):
                return None, 0
        except Exception as exc:
            error = exc
        before = proxy.stats.connections
        await anyio.sleep(idle_s)
        return error, proxy.stats.connections - before

    if flavor == "asyncio":
        import asyncio

        return asyncio.run(main())
    import trio

    return trio.run(main)

"""Credentials and tokens never appear in a repr, a log line or an error message.

The secrets are distinctive strings; every repr of the objects a user holds
(configs, clients, producers, consumers), every message and repr in the
chain of each error, and every record of the ``kafkacore`` logger at DEBUG
(message and arguments) is searched for them. Failures are driven for real:
a wrong password against the real SASL listeners, a refused OAUTHBEARER
token and a refused PLAIN password against the misbehaving fake broker, and
a successful SCRAM login (whose exchange is logged at DEBUG, if at all,
without the password).
"""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.client.config import ClientConfig
from kafkacore.consumer.config import ConsumerConfig
from kafkacore.producer import ProducerConfig
from tests.faults.drive import FLAVORS, chain, client_call, produce
from tests.faults.wirebroker import WireBroker
from tests.security.conftest import Secure

pytestmark = pytest.mark.timeout(180)

PASSWORD = "pw-S3cr3t-Never-Shown"
KEY_PASSWORD = "keypass-S3cr3t-Never-Shown"
TOKEN = "tok-S3cr3t-Never-Shown"
SECRETS = (PASSWORD, KEY_PASSWORD, TOKEN)


def _clean(where: str, text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{where} shows a secret: {text[:300]!r}"


def _error_texts(exc: BaseException | None) -> str:
    return "\n".join(f"{e!s} {e!r} {getattr(e, 'args', '')!r}" for e in chain(exc))


def _log_texts(caplog: pytest.LogCaptureFixture) -> str:
    out = []
    for r in caplog.records:
        out.append(r.getMessage())
        out.append(repr(r.args))
        if r.exc_info and r.exc_info[1] is not None:
            out.append(_error_texts(r.exc_info[1]))
    return "\n".join(out)


SASL: dict[str, Any] = {
    "security_protocol": "SASL_PLAINTEXT",
    "sasl_mechanism": "PLAIN",
    "sasl_plain_username": "alice",
    "sasl_plain_password": PASSWORD,
}


def test_configs_do_not_show_passwords_or_tokens() -> None:
    client = ClientConfig(
        bootstrap_servers="127.0.0.1:9092",
        **SASL,
        ssl_password=KEY_PASSWORD,
    )
    _clean("repr(ClientConfig)", repr(client))
    _clean("str(ClientConfig)", str(client))
    oauth = ClientConfig(
        bootstrap_servers="127.0.0.1:9092",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token_provider=_TokenProvider(),
    )
    _clean("repr(ClientConfig) with OAUTHBEARER", repr(oauth))
    producer = ProducerConfig(client={"bootstrap_servers": "127.0.0.1:9092", **SASL})
    _clean("repr(ProducerConfig)", repr(producer))
    _clean("repr(ConsumerConfig)", repr(ConsumerConfig()))


class _TokenProvider:
    """An OAUTHBEARER provider whose own repr is harmless; the token must stay inside."""

    def token(self) -> str:
        return TOKEN

    def __repr__(self) -> str:
        return "<token provider>"


@pytest.mark.parametrize("flavor", FLAVORS)
def test_user_objects_do_not_show_passwords(flavor: str) -> None:
    import asyncio

    import trio

    if flavor == "selector":
        from kafkacore.transports.selector import KafkaClient, KafkaConsumer, KafkaProducer

        producer = KafkaProducer("127.0.0.1:9", **SASL)
        consumer = KafkaConsumer(bootstrap_servers="127.0.0.1:9", **SASL)
        client = KafkaClient("127.0.0.1:9", **SASL)
        try:
            for obj in (producer, consumer, client):
                _clean(f"repr({type(obj).__name__})", repr(obj))
                _clean(f"repr({type(obj).__name__}.config)", repr(getattr(obj, "config", "")))
        finally:
            producer.close(1)
            consumer.close(timeout=1)
            client.close(1)
        return

    async def main() -> None:
        from kafkacore.transports import asyncio as aio
        from kafkacore.transports import trio as tr

        mod: Any = aio if flavor == "asyncio" else tr
        names = ("AsyncKafka", "TrioKafka")[flavor == "trio"]
        producer = getattr(mod, f"{names}Producer")("127.0.0.1:9", **SASL)
        consumer = getattr(mod, f"{names}Consumer")(bootstrap_servers="127.0.0.1:9", **SASL)
        client = getattr(mod, f"{names}Client")("127.0.0.1:9", **SASL)
        for obj in (producer, consumer, client):
            _clean(f"repr({type(obj).__name__})", repr(obj))
            _clean(f"repr({type(obj).__name__}.config)", repr(getattr(obj, "config", "")))

    if flavor == "asyncio":
        asyncio.run(main())
    else:
        trio.run(main)


@pytest.mark.parametrize("flavor", FLAVORS)
def test_refused_password_and_token_stay_out_of_errors_and_logs(
    flavor: str, caplog: pytest.LogCaptureFixture
) -> None:
    with WireBroker(sasl_user=("alice", "the-real-one")) as broker:
        broker.topic("t")
        with caplog.at_level("DEBUG", logger="kafkacore"):
            plain = client_call(flavor, broker.bootstrap, "metadata", None, bound_s=20, **SASL)
            oauth = client_call(
                flavor, broker.bootstrap, "metadata", None, bound_s=20,
                security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
                sasl_oauth_token_provider=_TokenProvider(),
            )  # fmt: skip
    assert plain.error is not None and oauth.error is not None, (plain, oauth)
    _clean("the PLAIN error", _error_texts(plain.error))
    _clean("the OAUTHBEARER error", _error_texts(oauth.error))
    _clean("the kafkacore log", _log_texts(caplog))


@pytest.mark.parametrize("flavor", FLAVORS)
def test_real_logins_keep_passwords_out_of_errors_and_logs(
    secure_kafka: Secure, flavor: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A wrong password, then a right one (SCRAM), against the real SASL_SSL listener."""
    wrong = secure_kafka.sasl("SASL_SSL", "SCRAM-SHA-256", password=PASSWORD)
    right = secure_kafka.sasl("SASL_SSL", "SCRAM-SHA-256")
    real = str(right["sasl_plain_password"])
    with caplog.at_level("DEBUG", logger="kafkacore"):
        bootstrap = str(wrong.pop("bootstrap_servers"))
        failed = produce(
            flavor, bootstrap, secure_kafka.ok("t"), [b"x"], bound_s=60,
            delivery_timeout_ms=8000, max_block_ms=8000, **wrong,
        )  # fmt: skip
        right.pop("bootstrap_servers")
        ok = produce(flavor, bootstrap, secure_kafka.ok("t"), [b"x"], bound_s=60, **right)
    assert failed.outcomes[0].error is not None
    assert ok.outcomes[0].error is None, ok.outcomes[0]
    _clean("the error of a wrong password", _error_texts(failed.outcomes[0].error))
    logs = _log_texts(caplog)
    _clean("the kafkacore log", logs)
    assert real not in logs, "the real password is in the log"

"""Delegation tokens on a real broker (KIP-48): a token the admin creates over
SCRAM logs a NEW client in (SCRAM with the token id, the HMAC and
``tokenauth=true``), which produces and consumes as the token's owner; once
expired, the same login is refused. The broker's refusals come back as their
error classes, naming the broker.

The broker is the kit's ``kafka_acl_broker`` (authorizer on,
``delegation.token.secret.key`` set); ``admin`` is its super user.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kafkacore.admin import DelegationToken, FeatureUpdate, NewTopic
from kafkacore.client import TopicPartition
from kafkacore.client.sasl import delegation_token_factory
from kafkacore.errors import AuthenticationError
from kafkacore.protocol.error_codes import (
    DelegationTokenAuthDisabledError,
    DelegationTokenExpiredError,
    DelegationTokenNotFoundError,
    DelegationTokenOwnerMismatchError,
    DelegationTokenRequestNotAllowedError,
    InvalidUpdateVersionError,
)
from kafkacore.testing import LocalKafka
from kafkacore.transports.selector import KafkaConsumer, KafkaProducer
from tests.admin.conftest import Admin, open_admin

pytestmark = pytest.mark.broker

#: How long a token change may take to reach the SASL layer (through the metadata log).
PROPAGATION_S = 30.0


def sasl_options(kafka: LocalKafka, user: str, mechanism: str = "SCRAM-SHA-256") -> dict[str, Any]:
    """A user's login on the SASL listener."""
    host, port = kafka.listener("SASL_PLAINTEXT")
    return {
        "bootstrap_servers": f"{host}:{port}",
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": user,
        "sasl_plain_password": kafka.users[user],
    }


def token_options(kafka: LocalKafka, token: DelegationToken, mechanism: str) -> dict[str, Any]:
    """A login with ``token`` instead of a password."""
    host, port = kafka.listener("SASL_PLAINTEXT")
    return {
        "bootstrap_servers": f"{host}:{port}",
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_mechanism_factory": delegation_token_factory(
            token.token_id, token.hmac, rng=random.SystemRandom()
        ),
    }


def opened(options: dict[str, Any]) -> Admin:
    options = dict(options)
    return open_admin(options.pop("bootstrap_servers"), **options)


def closed(a: Admin) -> None:
    a.core.close(now=time.monotonic())
    a.driver.close()


@pytest.fixture
def scram_admin(kafka_acl_broker: LocalKafka) -> Iterator[Admin]:
    """The super user ``admin``, logged in with SCRAM-SHA-256."""
    a = opened(sasl_options(kafka_acl_broker, "admin"))
    yield a
    closed(a)


def token_login(kafka: LocalKafka, token: DelegationToken, mechanism: str) -> BaseException | None:
    """Log in with the token (an admin's DescribeCluster); the error, None if it worked."""
    guest = opened(token_options(kafka, token, mechanism))
    try:
        op = guest.core.describe_cluster(timeout_ms=20000, now=guest.now)
        guest.driver.wait(op, timeout=30)
        return op.error
    finally:
        closed(guest)


def eventually(check: Callable[[], bool], what: str) -> None:
    """Token changes reach the brokers' token cache through the metadata log: poll."""
    end = time.monotonic() + PROPAGATION_S
    while not check():
        assert time.monotonic() < end, f"not within {PROPAGATION_S} s: {what}"
        time.sleep(0.1)


def until_login(kafka: LocalKafka, token: DelegationToken, *, works: bool) -> BaseException | None:
    """Log in until the login works (or is refused): token changes reach the SASL
    layer through the metadata log, a moment after the controller commits them."""
    end = time.monotonic() + PROPAGATION_S
    while True:
        error = token_login(kafka, token, "SCRAM-SHA-256")
        if (error is None) == works:
            return error
        if works:
            assert isinstance(error, AuthenticationError), error
        assert time.monotonic() < end, f"token login still {'refused' if works else 'accepted'}"
        time.sleep(0.2)


def test_a_token_logs_a_new_client_in_until_it_expires(
    kafka_acl_broker: LocalKafka, scram_admin: Admin
) -> None:
    kafka, admin = kafka_acl_broker, scram_admin
    topic = f"token-{uuid.uuid4().hex[:8]}"
    made = admin.run(admin.core.create_topics([NewTopic(topic, 1, 1)], now=admin.now))
    assert made[topic].ok, made

    token = admin.run(admin.core.create_delegation_token(renewers=["User:alice"], now=admin.now))
    assert (token.owner, token.requester, token.renewers) == (
        "User:admin",
        "User:admin",
        ("User:alice",),
    )
    assert token.issue_timestamp_ms < token.expiry_timestamp_ms <= token.max_timestamp_ms
    assert token.token_id and len(token.hmac) >= 16
    eventually(
        lambda: (
            token in admin.run(admin.core.describe_delegation_tokens(["User:admin"], now=admin.now))
        ),
        "the new token described",
    )

    until_login(kafka, token, works=True)
    # A NEW client logs in with the token (SHA-256 to produce, SHA-512 to consume).
    producer = KafkaProducer(**token_options(kafka, token, "SCRAM-SHA-256"))
    try:
        sent = producer.send(topic, b"by token", key=b"k").get(timeout=30)
        assert sent.offset == 0
    finally:
        producer.close()
    consumer = KafkaConsumer(
        **token_options(kafka, token, "SCRAM-SHA-512"), auto_offset_reset="earliest"
    )
    try:
        consumer.assign([TopicPartition(topic, 0)])
        records: list[Any] = []
        end = time.monotonic() + 30
        while not records:
            assert time.monotonic() < end, "nothing consumed with the token"
            records = consumer.poll_records(timeout=0.5)
        assert [(r.key, r.value) for r in records] == [(b"k", b"by token")]
    finally:
        consumer.close()

    # A token login may not ask for tokens (KIP-48).
    guest = opened(token_options(kafka, token, "SCRAM-SHA-512"))
    try:
        op = guest.core.create_delegation_token(now=guest.now)
        guest.driver.wait(op, timeout=30)
        assert isinstance(op.error, DelegationTokenRequestNotAllowedError)
        assert op.error.node_id == 1
    finally:
        closed(guest)

    # The owner and the renewers may renew; nobody else may.
    renewed = admin.run(admin.core.renew_delegation_token(token.hmac, 3_600_000, now=admin.now))
    assert renewed >= token.issue_timestamp_ms + 3_600_000 - 1000
    alice = opened(sasl_options(kafka, "alice", "PLAIN"))
    bob = opened(sasl_options(kafka, "bob", "SCRAM-SHA-512"))
    try:
        assert alice.run(alice.core.renew_delegation_token(token.hmac, now=alice.now)) > 0
        op = bob.core.expire_delegation_token(token.hmac, now=bob.now)
        bob.driver.wait(op, timeout=30)
        assert isinstance(op.error, DelegationTokenOwnerMismatchError)
        assert op.error.node_id == 1 and "owner and its renewers" in str(op.error)
    finally:
        closed(alice)
        closed(bob)

    expired = admin.run(admin.core.expire_delegation_token(token.hmac, now=admin.now))
    assert expired <= int(time.time() * 1000) + 1000
    refused = until_login(kafka, token, works=False)
    assert isinstance(refused, AuthenticationError)
    assert "SASL SCRAM-SHA-256 authentication failed" in str(refused), refused
    assert "invalid credentials" in str(refused), refused
    gone = admin.core.renew_delegation_token(token.hmac, now=admin.now)
    admin.driver.wait(gone, timeout=30)
    assert isinstance(gone.error, DelegationTokenNotFoundError)
    eventually(
        lambda: token not in admin.run(admin.core.describe_delegation_tokens(now=admin.now)),
        "the expired token forgotten",
    )


def test_a_token_past_its_lifetime_cannot_be_renewed(scram_admin: Admin) -> None:
    admin = scram_admin
    token = admin.run(admin.core.create_delegation_token(max_lifetime_ms=1, now=admin.now))
    assert token.max_timestamp_ms == token.issue_timestamp_ms + 1
    end = time.monotonic() + PROPAGATION_S
    while True:
        time.sleep(0.05)  # the broker's wall clock must pass the token's maximum
        op = admin.core.renew_delegation_token(token.hmac, now=admin.now)
        admin.driver.wait(op, timeout=30)
        # Until the new token reaches the controller's token cache it is not found.
        if not isinstance(op.error, DelegationTokenNotFoundError):
            break
        assert time.monotonic() < end, op.error
    assert isinstance(op.error, DelegationTokenExpiredError) and op.error.node_id == 1
    assert "create a new one" in str(op.error)
    admin.run(admin.core.expire_delegation_token(token.hmac, now=admin.now))


def test_tokens_need_a_sasl_login(kafka_acl_broker: LocalKafka) -> None:
    root = open_admin(kafka_acl_broker.bootstrap)  # PLAINTEXT: ANONYMOUS
    try:
        op = root.core.create_delegation_token(now=root.now)
        root.driver.wait(op, timeout=30)
        assert isinstance(op.error, DelegationTokenRequestNotAllowedError)
        assert op.error.node_id == 1 and "SASL login" in str(op.error)
    finally:
        closed(root)


def test_a_broker_without_a_token_secret_issues_none(kafka_broker: LocalKafka) -> None:
    a = opened(sasl_options(kafka_broker, "alice"))
    try:
        op = a.core.create_delegation_token(now=a.now)
        a.driver.wait(op, timeout=30)
        assert isinstance(op.error, DelegationTokenAuthDisabledError)
        assert op.error.node_id == 1 and "delegation.token.secret.key" in str(op.error)
    finally:
        closed(a)


@pytest.mark.parametrize("flavor", ["selector", "asyncio", "trio"])
def test_every_admin_client_has_the_token_and_feature_calls(
    kafka_acl_broker: LocalKafka, flavor: str
) -> None:
    """The same calls on each transport's client, its arguments in seconds."""
    options = sasl_options(kafka_acl_broker, "admin", "SCRAM-SHA-512")

    async def calls(admin: Any) -> None:
        features = await admin.describe_features(timeout=30)
        assert "metadata.version" in features.finalized_features
        checked = await admin.update_features(
            {"group.version": FeatureUpdate(1)}, validate_only=True, timeout=30
        )
        assert checked["group.version"].ok
        with pytest.raises(InvalidUpdateVersionError, match=r"group\.version"):
            await admin.update_features(
                {"group.version": FeatureUpdate(99)}, validate_only=True, timeout=30
            )
        token = await admin.create_delegation_token(renewers=["User:bob"], timeout=30)
        assert token.owner == "User:admin" and token.renewers == ("User:bob",)
        end = time.monotonic() + PROPAGATION_S
        while token not in await admin.describe_delegation_tokens("User:admin", timeout=30):
            assert time.monotonic() < end, "the new token is not described"
            await sleep(0.1)
        assert await admin.renew_delegation_token(token.hmac, 60_000, timeout=30) > 0
        assert await admin.expire_delegation_token(token.hmac, timeout=30) > 0
        with pytest.raises(TypeError, match="hmac"):
            await admin.renew_delegation_token(token.password, timeout=30)

    if flavor == "selector":
        from kafkacore.transports.selector import KafkaAdminClient

        class Awaited:
            """The blocking calls, awaitable for ``calls``."""

            def __init__(self, client: KafkaAdminClient) -> None:
                self.client = client

            def __getattr__(self, name: str) -> Any:
                method = getattr(self.client, name)

                async def call(*args: Any, **kwargs: Any) -> Any:
                    return method(*args, **kwargs)

                return call

        async def sleep(seconds: float) -> None:
            time.sleep(seconds)

        with KafkaAdminClient(**options) as client:
            asyncio.run(calls(Awaited(client)))
    elif flavor == "asyncio":
        from kafkacore.transports.asyncio import AsyncKafkaAdminClient

        sleep = asyncio.sleep

        async def main() -> None:
            async with AsyncKafkaAdminClient(**options) as client:
                await calls(client)

        asyncio.run(main())
    else:
        import trio

        from kafkacore.transports.trio import TrioKafkaAdminClient

        sleep = trio.sleep

        async def main() -> None:
            async with TrioKafkaAdminClient(**options) as client:
                await calls(client)

        trio.run(main)

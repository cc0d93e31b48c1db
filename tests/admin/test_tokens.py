"""Delegation tokens (KIP-48, KIP-373) against the scripted cluster."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from kafkacore.admin import DelegationToken
from kafkacore.admin._tokens import answering_broker
from kafkacore.errors import BrokerError, NoCommonVersionError
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ApiKey, ErrorCode
from kafkacore.protocol.error_codes import (
    DelegationTokenAuthDisabledError,
    DelegationTokenExpiredError,
    DelegationTokenNotFoundError,
    DelegationTokenOwnerMismatchError,
    DelegationTokenRequestNotAllowedError,
)
from tests.admin.fakeadmin import Harness

HOUR_MS = 3_600_000


def test_a_token_is_created_described_renewed_and_expired() -> None:
    h = Harness()
    token = h.result(
        h.core.create_delegation_token(renewers=["User:bob"], max_lifetime_ms=HOUR_MS, now=h.now)
    )
    clock = h.world.clock_ms
    assert token == DelegationToken(
        token_id="token-1",
        hmac=b"\x01" * 8,
        owner="User:admin",
        requester="User:admin",
        renewers=("User:bob",),
        issue_timestamp_ms=clock,
        expiry_timestamp_ms=clock + HOUR_MS,
        max_timestamp_ms=clock + HOUR_MS,
    )
    assert token.password == base64.b64encode(b"\x01" * 8).decode()
    assert "hmac" not in repr(token) and token.password not in repr(token)
    (body,) = h.world.requests(ApiKey.CREATE_DELEGATION_TOKEN)
    # No owner named: null owner fields (v3), the token is the requester's.
    assert (body.owner_principal_type, body.owner_principal_name) == (None, None)
    assert [(r.principal_type, r.principal_name) for r in body.renewers] == [("User", "bob")]
    assert body.max_lifetime_ms == HOUR_MS

    assert h.result(h.core.describe_delegation_tokens(now=h.now)) == (token,)
    assert h.result(h.core.describe_delegation_tokens(["User:admin"], now=h.now)) == (token,)
    assert h.result(h.core.describe_delegation_tokens(["User:carol"], now=h.now)) == ()
    assert h.world.requests(ApiKey.DESCRIBE_DELEGATION_TOKEN)[0].owners is None

    h.world.clock_ms += 1000
    renewed = h.result(h.core.renew_delegation_token(token.hmac, 60_000, now=h.now))
    assert renewed == h.world.clock_ms + 60_000
    (seen,) = h.result(h.core.describe_delegation_tokens(now=h.now))
    assert seen.expiry_timestamp_ms == renewed
    # Renewing never reaches past the token's maximum.
    assert h.result(h.core.renew_delegation_token(token.hmac, 10 * HOUR_MS, now=h.now)) == (
        token.max_timestamp_ms
    )

    later = h.result(h.core.expire_delegation_token(token.hmac, 5000, now=h.now))
    assert later == h.world.clock_ms + 5000
    gone = h.result(h.core.expire_delegation_token(bytearray(token.hmac), now=h.now))
    assert gone == h.world.clock_ms
    assert h.result(h.core.describe_delegation_tokens(now=h.now)) == ()
    assert h.world.requests(ApiKey.EXPIRE_DELEGATION_TOKEN)[-1].expiry_time_period_ms == -1


def test_a_token_for_another_owner_needs_v3() -> None:
    h = Harness()
    token = h.result(h.core.create_delegation_token(owner="User:alice", now=h.now))
    assert (token.owner, token.requester) == ("User:alice", "User:admin")
    body = h.world.requests(ApiKey.CREATE_DELEGATION_TOKEN)[0]
    assert (body.owner_principal_type, body.owner_principal_name) == ("User", "alice")

    old = Harness(
        versions={ApiKey.CREATE_DELEGATION_TOKEN: (1, 2), ApiKey.DESCRIBE_DELEGATION_TOKEN: (1, 2)}
    )
    op = old.run(old.core.create_delegation_token(owner="User:alice", now=old.now))
    assert isinstance(op.error, NoCommonVersionError)
    assert "KIP-373" in str(op.error) and "v2" in str(op.error)
    assert old.world.requests(ApiKey.CREATE_DELEGATION_TOKEN) == []  # refused before sending
    own = old.result(old.core.create_delegation_token(now=old.now))
    # Before v3 the answer names no requester: the owner asked.
    assert own.owner == own.requester == "User:admin"
    (described,) = old.result(old.core.describe_delegation_tokens(now=old.now))
    assert described.requester == "User:admin"


def test_the_broker_refuses_what_the_token_rules_forbid() -> None:
    h = Harness()
    unknown = h.run(h.core.renew_delegation_token(b"no-such-token", now=h.now))
    assert isinstance(unknown.error, DelegationTokenNotFoundError)
    assert unknown.error.node_id == 0
    assert str(unknown.error) == (
        "DELEGATION_TOKEN_NOT_FOUND: RenewDelegationToken (broker 0 at 127.0.0.1:9092): "
        "no such token (an expired token is forgotten)"
    )
    token = h.result(h.core.create_delegation_token(now=h.now))
    h.world.principal = ("User", "mallory")
    refused = h.run(h.core.expire_delegation_token(token.hmac, now=h.now))
    assert isinstance(refused.error, DelegationTokenOwnerMismatchError)
    h.world.principal = ("User", "admin")
    h.world.clock_ms = token.expiry_timestamp_ms + 1
    late = h.run(h.core.renew_delegation_token(token.hmac, now=h.now))
    assert isinstance(late.error, DelegationTokenExpiredError)
    assert "create a new one" in str(late.error)


@pytest.mark.parametrize(
    ("code", "error_class", "hint"),
    [
        (
            ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED,
            DelegationTokenAuthDisabledError,
            "delegation.token.secret.key",
        ),
        (
            ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
            DelegationTokenRequestNotAllowedError,
            "SASL login",
        ),
        (ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, DelegationTokenOwnerMismatchError, "owner"),
        (ErrorCode.DELEGATION_TOKEN_NOT_FOUND, DelegationTokenNotFoundError, "no such token"),
        (ErrorCode.DELEGATION_TOKEN_EXPIRED, DelegationTokenExpiredError, "expired"),
    ],
)
@pytest.mark.parametrize("command", ["create", "renew", "expire", "describe"])
def test_each_refusal_is_its_error_class_with_the_broker_id(
    code: int, error_class: type[BrokerError], hint: str, command: str
) -> None:
    h = Harness(2)
    api, response = {
        "create": (ApiKey.CREATE_DELEGATION_TOKEN, m.CreateDelegationTokenResponse),
        "renew": (ApiKey.RENEW_DELEGATION_TOKEN, m.RenewDelegationTokenResponse),
        "expire": (ApiKey.EXPIRE_DELEGATION_TOKEN, m.ExpireDelegationTokenResponse),
        "describe": (ApiKey.DESCRIBE_DELEGATION_TOKEN, m.DescribeDelegationTokenResponse),
    }[command]
    h.world.script(api, lambda b, body, v: response(error_code=code))
    op = h.run(
        {
            "create": lambda: h.core.create_delegation_token(now=h.now),
            "renew": lambda: h.core.renew_delegation_token(b"x", now=h.now),
            "expire": lambda: h.core.expire_delegation_token(b"x", now=h.now),
            "describe": lambda: h.core.describe_delegation_tokens(now=h.now),
        }[command]()
    )
    assert type(op.error) is error_class
    assert isinstance(op.error, BrokerError)
    (node,) = [n for n, key, _, _ in h.world.seen if key == api]
    assert op.error.node_id == node and f"(broker {node} at " in str(op.error)
    assert hint in str(op.error)
    assert len(h.world.requests(api)) == 1  # not retried
    assert h.completions(op) == 1


def test_a_retriable_refusal_is_asked_again() -> None:
    h = Harness()
    h.world.script(
        ApiKey.CREATE_DELEGATION_TOKEN,
        lambda b, body, v: m.CreateDelegationTokenResponse(error_code=ErrorCode.NOT_CONTROLLER),
    )
    token = h.result(h.core.create_delegation_token(now=h.now))
    assert token.token_id == "token-1"
    assert len(h.world.requests(ApiKey.CREATE_DELEGATION_TOKEN)) == 2


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda c, t: c.create_delegation_token(owner="alice", now=t), ValueError, "TYPE:NAME"),
        (lambda c, t: c.create_delegation_token(owner=7, now=t), TypeError, "principal"),
        (
            lambda c, t: c.create_delegation_token(renewers="User:bob", now=t),
            TypeError,
            "collection of principals",
        ),
        (
            lambda c, t: c.create_delegation_token(renewers=["bob"], now=t),
            ValueError,
            "renewers item",
        ),
        (
            lambda c, t: c.create_delegation_token(max_lifetime_ms=0, now=t),
            ValueError,
            "max_lifetime_ms",
        ),
        (
            lambda c, t: c.create_delegation_token(max_lifetime_ms=-5, now=t),
            ValueError,
            "neither -1",
        ),
        (lambda c, t: c.renew_delegation_token("abc", now=t), TypeError, "as bytes"),
        (lambda c, t: c.renew_delegation_token(b"", now=t), ValueError, "empty"),
        (lambda c, t: c.renew_delegation_token(b"x", 1.5, now=t), TypeError, "renew_period_ms"),
        (
            lambda c, t: c.expire_delegation_token(b"x", "soon", now=t),
            TypeError,
            "expiry_time_period_ms",
        ),
        (lambda c, t: c.describe_delegation_tokens([], now=t), ValueError, "pass None"),
        (lambda c, t: c.describe_delegation_tokens("User:a", now=t), TypeError, "collection"),
        (lambda c, t: c.describe_delegation_tokens(timeout_ms=0, now=t), ValueError, "timeout_ms"),
    ],
)
def test_bad_arguments_are_refused_before_anything_is_sent(
    call: Any, error: type[Exception], words: str
) -> None:
    h = Harness()
    before = len(h.world.seen)
    with pytest.raises(error, match=words):
        call(h.core, h.now)
    assert len(h.world.seen) == before and h.core.pending_operations == 0


def test_a_token_given_where_its_hmac_is_wanted_says_so() -> None:
    h = Harness()
    token = h.result(h.core.create_delegation_token(now=h.now))
    with pytest.raises(TypeError, match=r"pass the token's \.hmac"):
        h.core.renew_delegation_token(token, now=h.now)  # type: ignore[arg-type]


def test_an_answer_on_a_bootstrap_connection_names_the_broker_at_that_address() -> None:
    h = Harness(2)
    client = h.core.client
    (seed,) = client.cluster.bootstrap_brokers()
    assert seed.node_id < 0 and (seed.host, seed.port) == ("127.0.0.1", 9092)
    (broker,) = [b for b in client.cluster.brokers() if (b.host, b.port) == ("127.0.0.1", 9092)]
    assert answering_broker(client, seed.node_id) == broker.node_id >= 0
    assert answering_broker(client, 1) == 1 and answering_broker(client, None) is None
    assert answering_broker(client, -99) == -99  # no such address: the id as it is

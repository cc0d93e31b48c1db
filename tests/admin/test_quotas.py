"""Client quotas (KIP-546) and SCRAM credentials (KIP-554) against the scripted cluster."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from kafkacore.admin import (
    ClientQuotaEntity,
    ClientQuotaFilter,
    ScramCredentialDeletion,
    ScramCredentialInfo,
    ScramCredentialUpsertion,
    ScramMechanism,
)
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ApiKey, ErrorCode
from kafkacore.protocol.error_codes import (
    ClusterAuthorizationFailedError,
    InvalidRequestError,
    ResourceNotFoundError,
)
from tests.admin.fakeadmin import Harness

ALICE = ClientQuotaEntity.of({"user": "alice"})
DEFAULT_USER = ClientQuotaEntity.of({"user": None})
ALICE_APP = ClientQuotaEntity.of({"user": "alice", "client-id": "app"})


def test_quotas_set_described_and_removed() -> None:
    h = Harness()
    changes = {
        ALICE: {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048},
        DEFAULT_USER: {"producer_byte_rate": 512.0},
        ALICE_APP: {"request_percentage": 50.0},
        ClientQuotaEntity.of({"group": "g"}): {"x": 1.0},
    }
    results = h.result(h.core.alter_client_quotas(changes, now=h.now))
    assert results[ALICE].ok and results[DEFAULT_USER].ok and results[ALICE_APP].ok
    assert isinstance(results[ClientQuotaEntity.of({"group": "g"})].error, InvalidRequestError)
    every = h.result(h.core.describe_client_quotas(now=h.now))
    assert every[ALICE] == {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0}
    assert every[DEFAULT_USER] == {"producer_byte_rate": 512.0}
    named = h.result(
        h.core.describe_client_quotas(
            [ClientQuotaFilter.named("user", "alice")], strict=True, now=h.now
        )
    )
    assert list(named) == [ALICE]
    defaults = h.result(
        h.core.describe_client_quotas([ClientQuotaFilter.default("user")], now=h.now)
    )
    assert list(defaults) == [DEFAULT_USER]
    anyone = h.result(h.core.describe_client_quotas([ClientQuotaFilter.any("user")], now=h.now))
    assert set(anyone) == {ALICE, ALICE_APP}
    removed = h.result(
        h.core.alter_client_quotas(
            {ALICE: {"producer_byte_rate": None}}, validate_only=False, now=h.now
        )
    )
    assert removed[ALICE].ok and h.world.quotas[ALICE.parts] == {"consumer_byte_rate": 2048.0}
    body = h.world.requests(ApiKey.ALTER_CLIENT_QUOTAS)[-1]
    assert [(o.key, o.remove) for o in body.entries[0].ops] == [("producer_byte_rate", True)]
    assert ALICE_APP.as_dict() == {"client-id": "app", "user": "alice"}


def test_describe_quotas_errors() -> None:
    h = Harness()
    h.world.script(
        ApiKey.DESCRIBE_CLIENT_QUOTAS,
        lambda b, body, v: m.DescribeClientQuotasResponse(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message="no"
        ),
    )
    op = h.core.describe_client_quotas(now=h.now)
    h.run(op)
    assert isinstance(op.error, ClusterAuthorizationFailedError)
    assert str(op.error) == "CLUSTER_AUTHORIZATION_FAILED: DescribeClientQuotas (broker 0): no"


@pytest.mark.parametrize(
    ("call", "error", "text"),
    [
        (
            lambda c: c.describe_client_quotas(["user"], now=0.0),
            TypeError,
            "expected ClientQuotaFilter items",
        ),
        (lambda c: c.describe_client_quotas(strict=1, now=0.0), TypeError, "strict"),
        (lambda c: c.alter_client_quotas([], now=0.0), TypeError, "expected a mapping"),
        (
            lambda c: c.alter_client_quotas({}, now=0.0),
            ValueError,
            "at least one ClientQuotaEntity",
        ),
        (
            lambda c: c.alter_client_quotas({"alice": {"x": 1.0}}, now=0.0),
            TypeError,
            "expected ClientQuotaEntity keys",
        ),
        (lambda c: c.alter_client_quotas({ALICE: {}}, now=0.0), ValueError, "at least one quota"),
        (
            lambda c: c.alter_client_quotas({ALICE: {"x": "1"}}, now=0.0),
            TypeError,
            "expected a number or None",
        ),
        (lambda c: ClientQuotaEntity.of({}), ValueError, "at least one entity type"),
        (lambda c: ClientQuotaEntity.of({"user": 3}), TypeError, "expected a str"),  # type: ignore[dict-item]
        (lambda c: ClientQuotaFilter.named("", "x"), ValueError, "must not be empty"),
    ],
)
def test_quota_commands_refuse_bad_arguments(call: Any, error: type, text: str) -> None:
    h = Harness()
    with pytest.raises(error, match=text):
        call(h.core)


def test_scram_credentials_set_described_and_deleted() -> None:
    h = Harness()
    salt = b"0123456789abcdef"
    set_alice = ScramCredentialUpsertion(
        user="alice", mechanism=ScramMechanism.SCRAM_SHA_256, password="s3cret", salt=salt
    )
    set_bob = ScramCredentialUpsertion(
        user="bob",
        mechanism=ScramMechanism.SCRAM_SHA_512,
        password="pw",
        salt=salt,
        iterations=8192,
    )
    results = h.result(h.core.alter_user_scram_credentials([set_alice, set_bob], now=h.now))
    assert results["alice"].ok and results["bob"].ok
    iterations, sent_salt, salted = h.world.scram["alice"][1]
    assert (iterations, sent_salt) == (4096, salt)
    assert salted == hashlib.pbkdf2_hmac("sha256", b"s3cret", salt, 4096)  # RFC 5802 Hi()
    assert "s3cret" not in repr(set_alice)
    every = h.result(h.core.describe_user_scram_credentials(now=h.now))
    assert every["alice"].result() == (
        ScramCredentialInfo(mechanism=ScramMechanism.SCRAM_SHA_256, iterations=4096),
    )
    assert every["bob"].result() == (
        ScramCredentialInfo(mechanism=ScramMechanism.SCRAM_SHA_512, iterations=8192),
    )
    chosen = h.result(h.core.describe_user_scram_credentials(["alice", "carol"], now=h.now))
    assert chosen["alice"].ok and isinstance(chosen["carol"].error, ResourceNotFoundError)
    gone = h.result(
        h.core.alter_user_scram_credentials(
            [
                ScramCredentialDeletion(user="alice", mechanism=ScramMechanism.SCRAM_SHA_256),
                ScramCredentialDeletion(user="carol", mechanism=ScramMechanism.SCRAM_SHA_256),
            ],
            now=h.now,
        )
    )
    assert gone["alice"].ok and isinstance(gone["carol"].error, ResourceNotFoundError)


def test_scram_describe_errors_and_unknown_mechanisms() -> None:
    h = Harness()
    h.world.scram["dave"] = {7: (4096, b"s", b"p")}
    assert (
        h.result(h.core.describe_user_scram_credentials(["dave"], now=h.now))["dave"]
        .result()[0]
        .mechanism
        is ScramMechanism.UNKNOWN
    )
    h.world.script(
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
        lambda b, body, v: m.DescribeUserScramCredentialsResponse(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        ),
    )
    op = h.core.describe_user_scram_credentials(now=h.now)
    h.run(op)
    assert isinstance(op.error, ClusterAuthorizationFailedError)


@pytest.mark.parametrize(
    ("make", "error", "text"),
    [
        (
            lambda: ScramCredentialUpsertion(
                user="", mechanism=ScramMechanism.SCRAM_SHA_256, password="p", salt=b"s"
            ),
            ValueError,
            "user: must not be empty",
        ),
        (
            lambda: ScramCredentialUpsertion(
                user="u", mechanism=ScramMechanism.UNKNOWN, password="p", salt=b"s"
            ),
            TypeError,
            "SCRAM_SHA_256 or SCRAM_SHA_512",
        ),
        (
            lambda: ScramCredentialUpsertion(
                user="u", mechanism=ScramMechanism.SCRAM_SHA_256, password="p", salt=b""
            ),
            TypeError,
            "os.urandom",
        ),
        (
            lambda: ScramCredentialUpsertion(
                user="u",
                mechanism=ScramMechanism.SCRAM_SHA_256,
                password="p",
                salt=b"s",
                iterations=100,
            ),
            ValueError,
            "100 must be 4096 or more",
        ),
        (
            lambda: ScramCredentialUpsertion(
                user="u",
                mechanism=ScramMechanism.SCRAM_SHA_256,
                password="p",
                salt=b"s",
                iterations=20000,
            ),
            ValueError,
            "above 16384",
        ),
        (
            lambda: ScramCredentialDeletion(user="u", mechanism=2),  # type: ignore[arg-type]
            TypeError,
            "SCRAM_SHA_256 or SCRAM_SHA_512",
        ),
    ],
)
def test_scram_alterations_check_themselves(make: Any, error: type, text: str) -> None:
    with pytest.raises(error, match=text):
        make()


def test_scram_commands_refuse_bad_arguments() -> None:
    h = Harness()
    one = ScramCredentialDeletion(user="u", mechanism=ScramMechanism.SCRAM_SHA_256)
    with pytest.raises(TypeError, match="collection of ScramCredentialUpsertion/Deletion"):
        h.core.alter_user_scram_credentials(one, now=h.now)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Upsertion or Deletion items"):
        h.core.alter_user_scram_credentials(["u"], now=h.now)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="at least one alteration"):
        h.core.alter_user_scram_credentials([], now=h.now)
    with pytest.raises(TypeError, match="users: expected a collection of names"):
        h.core.describe_user_scram_credentials("u", now=h.now)

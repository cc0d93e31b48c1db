"""``kafkacore cluster tokens`` run as a subprocess against the kit's authorizer
broker: the super user creates, describes, renews and expires a token over
SASL/SCRAM; refused commands say why, exit with their status and create nothing."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator

import pytest

from kafkacore import KafkaAdminClient
from kafkacore.testing import LocalKafka
from tests.cli.conftest import run_cli

pytestmark = pytest.mark.broker


@pytest.fixture
def scram_admin(kafka_acl_broker: LocalKafka) -> Iterator[KafkaAdminClient]:
    """The super user in-process, to check what the command line did."""
    host, port = kafka_acl_broker.listener("SASL_PLAINTEXT")
    with KafkaAdminClient(
        f"{host}:{port}",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="admin",
        sasl_plain_password=kafka_acl_broker.users["admin"],
    ) as client:
        yield client


def token_ids(admin: KafkaAdminClient) -> set[str]:
    return {t.token_id for t in admin.describe_delegation_tokens(timeout=30)}


def test_tokens(
    kafka_acl_broker: LocalKafka, admin_properties: str, scram_admin: KafkaAdminClient
) -> None:
    def tokens(*args: str) -> tuple[int, str, str]:
        r = run_cli("--command-config", admin_properties, "cluster", "tokens", *args)
        return r.code, r.out, r.err

    before = token_ids(scram_admin)
    code, _, err = tokens("renew", "--hmac", "not base64!")
    assert code == 2 and "is not base64" in err
    code, _, err = tokens("renew", "--hmac", base64.b64encode(b"no such token").decode())
    assert code == 3 and "DELEGATION_TOKEN_NOT_FOUND" in err and "no such token" in err
    plaintext = run_cli("-b", kafka_acl_broker.bootstrap, "cluster", "tokens", "create")
    assert plaintext.code == 5, plaintext
    assert "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED" in plaintext.err
    assert token_ids(scram_admin) == before  # the refused commands created nothing

    code, out, err = tokens("create", "--renewer", "User:alice", "--json")
    assert code == 0, err
    (made,) = json.loads(out)
    assert made["owner"] == made["requester"] == "User:admin"
    assert made["renewers"] == ["User:alice"]
    assert made["issue_timestamp_ms"] < made["expiry_timestamp_ms"] <= made["max_timestamp_ms"]
    assert base64.b64decode(made["hmac"], validate=True)

    end = time.monotonic() + 30
    while made["token_id"] not in token_ids(scram_admin):  # through the metadata log
        assert time.monotonic() < end, "the new token is not described"
        time.sleep(0.1)
    code, out, err = tokens("describe", "--owner", "User:admin")
    assert code == 0, err
    assert "TOKEN-ID" in out and made["token_id"] in out and made["hmac"] in out

    code, out, err = tokens("renew", "--hmac", made["hmac"], "--renew-time-period", "60000")
    assert code == 0 and out.startswith("expires "), err
    code, out, err = tokens("expire", "--hmac", made["hmac"])
    assert code == 0 and out.startswith("expires "), err
    end = time.monotonic() + 30
    while made["token_id"] in token_ids(scram_admin):
        assert time.monotonic() < end, "the expired token is still described"
        time.sleep(0.1)

"""SCRAM extensions (RFC 5802 section 7) and the delegation-token login (KIP-48)."""

from __future__ import annotations

import base64
import random

import pytest

from kafkacore.client.config import ClientConfig
from kafkacore.client.sasl import (
    TOKEN_AUTH_EXTENSION,
    ScramMechanism,
    ScramState,
    delegation_token_factory,
)
from kafkacore.errors import LocalProtocolError
from tests.client.scram_server import ScramServer


def test_extensions_follow_the_nonce_in_the_client_first_message() -> None:
    mech = ScramMechanism(
        "SCRAM-SHA-256",
        "token-id",
        "pw",
        nonce="abc",
        extensions={"tokenauth": "true", "other": "x=y"},
    )
    assert mech.initial_response() == b"n,,n=token-id,r=abc,tokenauth=true,other=x=y"


@pytest.mark.parametrize(
    ("extensions", "words"),
    [
        ({"t": "true"}, "two or more ASCII letters"),
        ({"token auth": "true"}, "two or more ASCII letters"),
        ({"tokenauth1": "true"}, "two or more ASCII letters"),
        ({"tokenauth": "a,b"}, "without ','"),
        ({"tokenauth": ""}, "non-empty"),
        ({"tokenauth": "line\nbreak"}, "printable"),
    ],
)
def test_a_bad_extension_is_refused_before_anything_is_sent(
    extensions: dict[str, str], words: str
) -> None:
    with pytest.raises(LocalProtocolError, match=words):
        ScramMechanism("SCRAM-SHA-256", "u", "p", nonce="abc", extensions=extensions)


@pytest.mark.parametrize(
    ("mechanism", "hash_name"), [("SCRAM-SHA-256", "sha256"), ("SCRAM-SHA-512", "sha512")]
)
def test_a_token_login_is_scram_with_the_hmac_as_password(mechanism: str, hash_name: str) -> None:
    hmac = bytes(range(32))
    factory = delegation_token_factory("tok-1", hmac, rng=random.Random(3))
    mech = factory(mechanism, "broker-host")
    first = mech.initial_response()
    assert first.startswith(b"n,,n=tok-1,r=") and first.endswith(b",tokenauth=true")
    assert TOKEN_AUTH_EXTENSION == "tokenauth"
    # The broker keeps the token's credential under the base64 of its HMAC.
    server = ScramServer(hash_name, "tok-1", base64.b64encode(hmac).decode())
    final = mech.evaluate_challenge(server.first(first))
    assert final is not None
    answer = server.final(final)
    assert server.authenticated  # the extension is part of the signed auth message
    assert mech.evaluate_challenge(answer) is None and isinstance(mech, ScramMechanism)
    assert mech.state is ScramState.COMPLETE
    # Each connection gets a fresh mechanism (a fresh nonce).
    assert factory(mechanism, "broker-host").initial_response() != first


def test_a_token_login_is_refused_for_other_mechanisms_and_bad_tokens() -> None:
    factory = delegation_token_factory("tok-1", b"secret", rng=random.Random(3))
    with pytest.raises(LocalProtocolError, match="not sasl_mechanism 'PLAIN'"):
        factory("PLAIN", "host")
    with pytest.raises(LocalProtocolError, match="token_id"):
        delegation_token_factory("", b"secret", rng=random.Random(3))
    with pytest.raises(LocalProtocolError, match="hmac"):
        delegation_token_factory("tok", "c2VjcmV0", rng=random.Random(3))  # type: ignore[arg-type]


def test_the_factory_is_a_client_config_option() -> None:
    config = ClientConfig(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_mechanism_factory=delegation_token_factory("t", b"h", rng=random.Random(1)),
    )
    assert config.sasl  # no user name or password needed besides the factory

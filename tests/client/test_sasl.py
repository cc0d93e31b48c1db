"""SASL mechanisms: RFC test vectors and a self-consistent SCRAM server."""

from __future__ import annotations

import random

import pytest

from kafkacore.client.sasl import (
    OAuthBearerMechanism,
    PlainMechanism,
    ScramMechanism,
    ScramState,
    create_mechanism,
)
from kafkacore.errors import AuthenticationError, LocalProtocolError
from tests.client.scram_server import ScramServer

# RFC 7677 section 3.
RFC7677_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC7677_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
RFC7677_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC7677_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_plain_token_has_empty_authzid() -> None:
    mech = PlainMechanism("alice", "alice-secret")
    assert mech.initial_response() == b"\x00alice\x00alice-secret"
    assert mech.evaluate_challenge(b"") is None


def test_plain_refuses_nul() -> None:
    with pytest.raises(LocalProtocolError):
        PlainMechanism("a\x00b", "x")


def test_scram_sha256_rfc7677_vector() -> None:
    mech = ScramMechanism("SCRAM-SHA-256", "user", "pencil", nonce=RFC7677_NONCE)
    assert mech.initial_response() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert mech.evaluate_challenge(RFC7677_SERVER_FIRST) == RFC7677_CLIENT_FINAL
    assert mech.evaluate_challenge(RFC7677_SERVER_FINAL) is None
    assert mech.state is ScramState.COMPLETE


def test_scram_rejects_wrong_server_signature() -> None:
    mech = ScramMechanism("SCRAM-SHA-256", "user", "pencil", nonce=RFC7677_NONCE)
    mech.initial_response()
    mech.evaluate_challenge(RFC7677_SERVER_FIRST)
    with pytest.raises(AuthenticationError, match="signature"):
        mech.evaluate_challenge(b"v=AAAA")
    assert mech.state is ScramState.FAILED


@pytest.mark.parametrize(
    "server_first",
    [
        b"r=othernonce,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",  # nonce not extended
        b"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1000",  # too few iterations
        b"r=rOprNGfwEbeRWgbNEkqOxyz,s=!!notbase64,i=4096",
        b"r=rOprNGfwEbeRWgbNEkqOxyz,i=4096",  # no salt
        b"e=other-error",
        b"garbage",
        b"\xff\xfe",
    ],
)
def test_scram_rejects_bad_server_first(server_first: bytes) -> None:
    mech = ScramMechanism("SCRAM-SHA-256", "user", "pencil", nonce=RFC7677_NONCE)
    mech.initial_response()
    with pytest.raises(AuthenticationError):
        mech.evaluate_challenge(server_first)


@pytest.mark.parametrize(
    ("mechanism", "hash_name"),
    [
        ("SCRAM-SHA-256", "sha256"),
        ("SCRAM-SHA-512", "sha512"),
    ],
)
def test_scram_against_independent_server(mechanism: str, hash_name: str) -> None:
    server = ScramServer(hash_name, "alice", "alice-secret")
    mech = ScramMechanism(mechanism, "alice", "alice-secret", rng=random.Random(7))
    first = mech.initial_response()
    token = mech.evaluate_challenge(server.first(first))
    assert token is not None
    final = server.final(token)
    assert server.authenticated
    assert mech.evaluate_challenge(final) is None
    assert mech.state is ScramState.COMPLETE


def test_scram_wrong_password_is_refused_by_server() -> None:
    server = ScramServer("sha512", "alice", "alice-secret")
    mech = ScramMechanism("SCRAM-SHA-512", "alice", "wrong", rng=random.Random(1))
    token = mech.evaluate_challenge(server.first(mech.initial_response()))
    assert token is not None
    with pytest.raises(AuthenticationError, match="invalid-proof"):
        mech.evaluate_challenge(server.final(token))


def test_scram_nonce_comes_from_injected_rng() -> None:
    a = ScramMechanism("SCRAM-SHA-256", "u", "p", rng=random.Random(5)).initial_response()
    b = ScramMechanism("SCRAM-SHA-256", "u", "p", rng=random.Random(5)).initial_response()
    c = ScramMechanism("SCRAM-SHA-256", "u", "p", rng=random.Random(6)).initial_response()
    assert a == b != c


def test_scram_escapes_username() -> None:
    mech = ScramMechanism("SCRAM-SHA-256", "a=b,c", "p", nonce="abc")
    assert mech.initial_response() == b"n,,n=a=3Db=2Cc,r=abc"


def test_scram_needs_rng_or_nonce() -> None:
    with pytest.raises(LocalProtocolError):
        ScramMechanism("SCRAM-SHA-256", "u", "p")
    with pytest.raises(LocalProtocolError):
        ScramMechanism("SCRAM-SHA-1", "u", "p", nonce="x")


def test_oauthbearer_callable_provider() -> None:
    mech = OAuthBearerMechanism(lambda: "tok123")
    assert mech.initial_response() == b"n,,\x01auth=Bearer tok123\x01\x01"
    assert mech.evaluate_challenge(b"") is None


def test_oauthbearer_object_provider_with_extensions() -> None:
    class Provider:
        def token(self) -> str:
            return "abc"

        def extensions(self) -> dict[str, str]:
            return {"traceId": "42"}

    mech = OAuthBearerMechanism(Provider())
    assert mech.initial_response() == b"n,,\x01auth=Bearer abc\x01traceId=42\x01\x01"


def test_oauthbearer_error_challenge_answers_0x01_then_fails() -> None:
    mech = OAuthBearerMechanism(lambda: "tok")
    mech.initial_response()
    assert mech.evaluate_challenge(b'{"status":"invalid_token"}') == b"\x01"
    assert mech.server_error == '{"status":"invalid_token"}'
    with pytest.raises(AuthenticationError, match="invalid_token"):
        mech.evaluate_challenge(b"more")


def test_oauthbearer_bad_provider_output() -> None:
    with pytest.raises(LocalProtocolError):
        OAuthBearerMechanism(lambda: "").initial_response()
    with pytest.raises(LocalProtocolError):
        OAuthBearerMechanism(42).initial_response()


def test_create_mechanism_uses_factory_for_plugins() -> None:
    made: list[tuple[str, str]] = []

    def factory(name: str, host: str) -> PlainMechanism:
        made.append((name, host))
        return PlainMechanism("k", "v")

    mech = create_mechanism(
        mechanism="GSSAPI",
        host="broker1",
        username=None,
        password=None,
        oauth_token_provider=None,
        factory=factory,
        rng=random.Random(0),
    )
    assert made == [("GSSAPI", "broker1")]
    assert mech.initial_response() == b"\x00k\x00v"
    with pytest.raises(LocalProtocolError, match="not built in"):
        create_mechanism(
            mechanism="GSSAPI",
            host="h",
            username=None,
            password=None,
            oauth_token_provider=None,
            factory=None,
            rng=random.Random(0),
        )


# -- the SaslHandshake/SaslAuthenticate sub-machine -----------------------------------


def test_authenticator_happy_path_and_transitions() -> None:
    from kafkacore.client.authenticator import TRANSITIONS, SaslAuthenticator, SaslState
    from kafkacore.protocol.messages import SaslAuthenticateResponse, SaslHandshakeResponse

    server = ScramServer("sha256", "alice", "pw")
    auth = SaslAuthenticator(
        ScramMechanism("SCRAM-SHA-256", "alice", "pw", rng=random.Random(0)), node_id=3
    )
    assert auth.handshake_request().mechanism == "SCRAM-SHA-256"
    first = auth.on_handshake(SaslHandshakeResponse(mechanisms=["SCRAM-SHA-256"]))
    assert auth.state is SaslState.AUTHENTICATE
    final = auth.on_authenticate(
        SaslAuthenticateResponse(auth_bytes=server.first(bytes(first.auth_bytes)))
    )
    assert final is not None
    done = auth.on_authenticate(
        SaslAuthenticateResponse(
            auth_bytes=server.final(bytes(final.auth_bytes)), session_lifetime_ms=5000
        )
    )
    assert done is None
    assert auth.state.value == SaslState.DONE.value
    assert auth.session_lifetime_ms == 5000
    assert TRANSITIONS[SaslState.DONE] == frozenset()
    with pytest.raises(LocalProtocolError):
        auth.on_authenticate(SaslAuthenticateResponse())


def test_authenticator_refusals() -> None:
    from kafkacore.client.authenticator import SaslAuthenticator, SaslState
    from kafkacore.protocol.messages import SaslAuthenticateResponse, SaslHandshakeResponse

    auth = SaslAuthenticator(PlainMechanism("u", "p"), node_id=1)
    with pytest.raises(AuthenticationError, match="broker offers: SCRAM-SHA-512"):
        auth.on_handshake(SaslHandshakeResponse(error_code=33, mechanisms=["SCRAM-SHA-512"]))
    assert auth.state is SaslState.FAILED

    auth = SaslAuthenticator(PlainMechanism("u", "p"), node_id=1)
    auth.on_handshake(SaslHandshakeResponse(mechanisms=["PLAIN"]))
    with pytest.raises(AuthenticationError, match="bad creds"):
        auth.on_authenticate(SaslAuthenticateResponse(error_code=58, error_message="bad creds"))

    scram = ScramMechanism("SCRAM-SHA-256", "u", "p", nonce="abc")
    auth = SaslAuthenticator(scram, node_id=1)
    auth.on_handshake(SaslHandshakeResponse(mechanisms=["SCRAM-SHA-256"]))
    with pytest.raises(AuthenticationError, match="nonce"):
        auth.on_authenticate(SaslAuthenticateResponse(auth_bytes=b"r=zzz,s=AAAA,i=4096"))
    assert auth.state is SaslState.FAILED

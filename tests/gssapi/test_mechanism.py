"""RFC 4752 GSSAPI mechanism against a scripted GSS context (no KDC, no broker)."""

from __future__ import annotations

import pytest

from kafkacore.client.gssapi import (
    GssapiMechanism,
    GssapiState,
    gssapi_mechanism_factory,
    service_target,
)
from kafkacore.errors import AuthenticationError, LocalProtocolError


def state(mech: GssapiMechanism) -> GssapiState:
    # A call, so mypy does not narrow the state across the steps below.
    return mech.state


class ScriptedContext:
    """Establishes after ``rounds`` steps; wrap/unwrap add/strip a visible tag."""

    def __init__(self, rounds: int = 2, *, fail_on_step: int | None = None) -> None:
        self.rounds = rounds
        self.fail_on_step = fail_on_step
        self.seen: list[bytes | None] = []
        self.wrapped: list[bytes] = []

    @property
    def established(self) -> bool:
        return len(self.seen) >= self.rounds

    def step(self, token: bytes | None) -> bytes:
        self.seen.append(token)
        if self.fail_on_step == len(self.seen):
            raise AuthenticationError("GSSAPI: scripted failure")
        # The last step (consuming the AP-REP) has nothing to send.
        return b"" if self.established else f"tok{len(self.seen)}".encode()

    def wrap(self, data: bytes) -> bytes:
        self.wrapped.append(data)
        return b"W" + data

    def unwrap(self, data: bytes) -> bytes:
        if not data.startswith(b"W"):
            raise AuthenticationError("GSSAPI: scripted unwrap failure")
        return data[1:]


def test_full_exchange_chooses_no_security_layer() -> None:
    ctx = ScriptedContext(rounds=2)
    mech = GssapiMechanism(ctx)
    assert mech.name == "GSSAPI"
    assert mech.initial_response() == b"tok1"
    assert ctx.seen == [None]
    assert state(mech) is GssapiState.ESTABLISHING
    # The AP-REP establishes the context; the client sends an empty token.
    assert mech.evaluate_challenge(b"ap-rep") == b""
    assert ctx.seen == [None, b"ap-rep"]
    assert state(mech) is GssapiState.WAIT_OFFER
    # Offer: all three layers, 64 KiB max; answer: 'none', size 0, no authzid.
    reply = mech.evaluate_challenge(b"W" + bytes([0x07, 0x01, 0x00, 0x00]))
    assert reply == b"W" + bytes([0x01, 0, 0, 0])
    assert state(mech) is GssapiState.SENT_LAYER
    assert mech.evaluate_challenge(b"") is None
    assert state(mech) is GssapiState.COMPLETE


def test_authorization_id_follows_the_layer_choice() -> None:
    ctx = ScriptedContext(rounds=1)
    mech = GssapiMechanism(ctx, authorization_id="client@EXAMPLE.COM")
    mech.initial_response()
    assert state(mech) is GssapiState.WAIT_OFFER
    mech.evaluate_challenge(b"W\x01\x00\x10\x00")
    assert ctx.wrapped == [b"\x01\x00\x00\x00client@EXAMPLE.COM"]


def test_server_without_no_layer_option_is_refused() -> None:
    mech = GssapiMechanism(ScriptedContext(rounds=1))
    mech.initial_response()
    with pytest.raises(AuthenticationError, match="without 'none'"):
        mech.evaluate_challenge(b"W\x06\x00\x10\x00")
    assert state(mech) is GssapiState.FAILED


@pytest.mark.parametrize("offer", [b"W", b"W\x01\x00\x00", b"W\x01\x00\x00\x00\x00"])
def test_offer_of_wrong_length_is_refused(offer: bytes) -> None:
    mech = GssapiMechanism(ScriptedContext(rounds=1))
    mech.initial_response()
    with pytest.raises(AuthenticationError, match="expected 4"):
        mech.evaluate_challenge(offer)
    assert state(mech) is GssapiState.FAILED


def test_unwrap_failure_is_an_authentication_error() -> None:
    mech = GssapiMechanism(ScriptedContext(rounds=1))
    mech.initial_response()
    with pytest.raises(AuthenticationError, match="unwrap"):
        mech.evaluate_challenge(b"not wrapped")
    assert state(mech) is GssapiState.FAILED


def test_context_failure_fails_the_mechanism() -> None:
    mech = GssapiMechanism(ScriptedContext(rounds=3, fail_on_step=2))
    mech.initial_response()
    with pytest.raises(AuthenticationError, match="scripted failure"):
        mech.evaluate_challenge(b"x")
    assert state(mech) is GssapiState.FAILED
    with pytest.raises(LocalProtocolError, match="failed"):
        mech.evaluate_challenge(b"x")


def test_endless_context_negotiation_is_bounded() -> None:
    mech = GssapiMechanism(ScriptedContext(rounds=1000))
    mech.initial_response()
    with pytest.raises(AuthenticationError, match="not established after"):
        for _ in range(100):
            mech.evaluate_challenge(b"more")


def test_misuse_is_a_local_error() -> None:
    mech = GssapiMechanism(ScriptedContext())
    with pytest.raises(LocalProtocolError, match="initial"):
        mech.evaluate_challenge(b"")
    mech.initial_response()
    with pytest.raises(LocalProtocolError, match="initial_response"):
        mech.initial_response()


def test_service_target_names() -> None:
    assert service_target("kafka", "b1.example.com") == "kafka@b1.example.com"
    assert service_target("kafka", "127.0.0.1", "localhost") == "kafka@localhost"
    for bad in ("", "kafka/host", "kafka@host"):
        with pytest.raises(LocalProtocolError, match="service_name"):
            service_target(bad, "h")


def test_factory_builds_one_context_per_connection() -> None:
    targets: list[str] = []

    def new_context(target: str) -> ScriptedContext:
        targets.append(target)
        return ScriptedContext()

    factory = gssapi_mechanism_factory(new_context, service_name="kfk")
    a = factory("GSSAPI", "b1")
    b = factory("GSSAPI", "b2")
    assert a is not b
    assert targets == ["kfk@b1", "kfk@b2"]
    with pytest.raises(LocalProtocolError, match="PLAIN"):
        factory("PLAIN", "b1")
    with pytest.raises(LocalProtocolError):
        gssapi_mechanism_factory(new_context, service_name="a/b")

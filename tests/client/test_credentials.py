"""Credentials as requests: with defer_credentials the core asks, the transport answers."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from kafkacore.client import (
    ClientConfig,
    ConnectionState,
    ConnectionStateChanged,
    KafkaClientCore,
    Node,
)
from kafkacore.client.authenticator import TRANSITIONS, SaslAuthenticator, SaslState
from kafkacore.client.credentials import CredentialKind
from kafkacore.client.events import CredentialsNeeded
from kafkacore.client.sasl import OAuthBearerMechanism, PlainMechanism, ScramMechanism
from kafkacore.errors import (
    AuthenticationError,
    KafkaConnectionError,
    KafkaTimeoutError,
    LocalProtocolError,
)
from kafkacore.protocol.messages import (
    MetadataRequest,
    SaslAuthenticateResponse,
    SaslHandshakeResponse,
)
from tests.client.fakebroker import FakeBroker, Pump, make_cluster
from tests.client.scram_server import ScramServer


class CountingProvider:
    def __init__(self, token: str = "good-token") -> None:
        self.token_text = token
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        return self.token_text


def boot(mechanism: str, **kw: Any) -> tuple[KafkaClientCore, Pump, FakeBroker]:
    _cluster, fakes = make_cluster(1)
    broker = next(iter(fakes.values()))
    broker.require_auth = True
    config: dict[str, Any] = dict(
        bootstrap_servers="127.0.0.1:9092",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username="alice",
        sasl_plain_password="alice-secret",
        defer_credentials=True,
    )
    config.update(kw)
    core = KafkaClientCore(ClientConfig(**config), now=0.0, rng=random.Random(3))
    return core, Pump(core, fakes), broker


def needed(pump: Pump) -> list[CredentialsNeeded]:
    return [e for e in pump.events if isinstance(e, CredentialsNeeded)]


def wait_for_need(pump: Pump, count: int = 1, *, jump: bool = False) -> CredentialsNeeded:
    pump.run(until=lambda: len(needed(pump)) >= count, jump=jump)
    return needed(pump)[count - 1]


def answer_all(core: KafkaClientCore, pump: Pump, until: Callable[[], bool]) -> None:
    """Answer every CredentialsNeeded by making its call, as a transport would."""
    answered: set[int] = set()
    for _ in range(50):
        if until():
            return
        for event in needed(pump):
            if event.request_id not in answered:
                answered.add(event.request_id)
                try:
                    result, error = event.call(), None
                except Exception as exc:
                    result, error = None, exc
                core.credentials_ready(event.request_id, result, error=error, now=pump.now)
                pump.drain()
        pump.run(rounds=20, jump=False)
    raise AssertionError("not reached")


# -- the authenticator ---------------------------------------------------------------


def test_transition_table_has_the_credentials_wait() -> None:
    s = SaslState
    assert TRANSITIONS[s.HANDSHAKE] == {s.AUTHENTICATE, s.CREDENTIALS, s.FAILED}
    assert TRANSITIONS[s.AUTHENTICATE] == {s.AUTHENTICATE, s.CREDENTIALS, s.DONE, s.FAILED}
    assert TRANSITIONS[s.CREDENTIALS] == {s.AUTHENTICATE, s.DONE, s.FAILED}
    assert TRANSITIONS[s.DONE] == TRANSITIONS[s.FAILED] == frozenset()


def test_authenticator_defers_the_token_and_resumes() -> None:
    provider = CountingProvider("tok")
    auth = SaslAuthenticator(OAuthBearerMechanism(provider), node_id=1, defer=True)
    call = auth.on_handshake(SaslHandshakeResponse(mechanisms=["OAUTHBEARER"]))
    assert auth.state is SaslState.CREDENTIALS and auth.waiting is call
    assert call.kind is CredentialKind.OAUTH_TOKEN and call.mechanism == "OAUTHBEARER"
    assert provider.calls == 0  # nothing called inside the core
    request = auth.resume(call.call(), None)
    assert bytes(request.auth_bytes) == b"n,,\x01auth=Bearer tok\x01\x01"
    assert auth.state is SaslState.AUTHENTICATE and auth.waiting is None
    assert auth.on_authenticate(SaslAuthenticateResponse(auth_bytes=b"")) is None
    assert auth.state is SaslState.DONE
    with pytest.raises(LocalProtocolError, match="credentials in state done"):
        auth.resume("again", None)


class BlockingScram(ScramMechanism):
    blocking = True


def test_authenticator_defers_every_step_of_a_blocking_mechanism() -> None:
    server = ScramServer("sha256", "alice", "pw")
    mech = BlockingScram("SCRAM-SHA-256", "alice", "pw", rng=random.Random(0))
    auth = SaslAuthenticator(mech, node_id=3, defer=True)
    first = auth.on_handshake(SaslHandshakeResponse(mechanisms=["SCRAM-SHA-256"]))
    assert first.kind is CredentialKind.SASL_STEP
    request = auth.resume(first.call(), None)
    step = auth.on_authenticate(
        SaslAuthenticateResponse(auth_bytes=server.first(bytes(request.auth_bytes)))
    )
    assert step.kind is CredentialKind.SASL_STEP and auth.state is SaslState.CREDENTIALS
    final = auth.resume(step.call(), None)
    last = auth.on_authenticate(
        SaslAuthenticateResponse(
            auth_bytes=server.final(bytes(final.auth_bytes)), session_lifetime_ms=7000
        )
    )
    assert auth.resume(last.call(), None) is None  # the step verified the server: done
    assert auth.state is SaslState.DONE and auth.session_lifetime_ms == 7000


def test_a_step_that_refuses_is_an_authentication_error() -> None:
    mech = BlockingScram("SCRAM-SHA-256", "u", "p", nonce="n")
    auth = SaslAuthenticator(mech, node_id=1, defer=True)
    auth.on_handshake(SaslHandshakeResponse(mechanisms=["SCRAM-SHA-256"]))
    with pytest.raises(AuthenticationError, match="KDC says no"):
        auth.resume(None, AuthenticationError("KDC says no"))
    assert auth.state is SaslState.FAILED


def test_without_defer_nothing_waits() -> None:
    provider = CountingProvider("tok")
    auth = SaslAuthenticator(OAuthBearerMechanism(provider), node_id=1)
    request = auth.on_handshake(SaslHandshakeResponse(mechanisms=["OAUTHBEARER"]))
    assert provider.calls == 1 and bytes(request.auth_bytes).startswith(b"n,,")


# -- through the core ------------------------------------------------------------------


def test_oauth_token_is_asked_for_and_answered() -> None:
    provider = CountingProvider()
    core, pump, _broker = boot("OAUTHBEARER", sasl_oauth_token_provider=provider)
    event = wait_for_need(pump)
    assert event.kind is CredentialKind.OAUTH_TOKEN and event.node_id == -1
    assert event.call is provider and provider.calls == 0
    assert event.deadline == pytest.approx(pump.now + 30.0)
    assert core.cluster.update_count == 0  # paused meanwhile
    assert core.credentials_ready(event.request_id, event.call(), now=pump.now)
    pump.run(until=lambda: core.cluster.update_count > 0)
    assert provider.calls == 1
    assert not core.credentials_ready(event.request_id, "again", now=pump.now)  # answered


def test_object_provider_call_is_its_token_method() -> None:
    class Provider:
        def token(self) -> str:
            return "good-token"

    core, pump, _ = boot("OAUTHBEARER", sasl_oauth_token_provider=Provider())
    event = wait_for_need(pump)
    assert getattr(event.call, "__name__", "") == "token"
    answer_all(core, pump, lambda: core.cluster.update_count > 0)


def test_a_provider_that_raises_fails_the_connection_not_the_client() -> None:
    core, pump, _ = boot("OAUTHBEARER", sasl_oauth_token_provider=CountingProvider())
    event = wait_for_need(pump)
    boom = RuntimeError("identity provider unreachable")
    core.credentials_ready(event.request_id, error=boom, now=pump.now)
    pump.drain()
    closed = [
        e
        for e in pump.events
        if isinstance(e, ConnectionStateChanged) and e.state is ConnectionState.CLOSED
    ]
    error = closed[-1].error
    assert isinstance(error, KafkaConnectionError)
    assert "SASL OAUTHBEARER token provider failed: RuntimeError: identity provider" in str(error)
    assert error.__cause__ is boom
    assert core.authentication_error is None  # retried, not stopped
    second = wait_for_need(pump, 2, jump=True)  # after the reconnect backoff, asked again
    assert second.request_id != event.request_id
    answer_all(core, pump, lambda: core.cluster.update_count > 0)


def test_no_answer_by_the_auth_deadline_times_the_connection_out() -> None:
    core, pump, _ = boot("OAUTHBEARER", sasl_oauth_token_provider=CountingProvider())
    event = wait_for_need(pump)
    assert core.next_deadline() == pytest.approx(event.deadline)
    pump.now = event.deadline
    core.handle_timeout(now=pump.now)
    pump.drain()
    closed = [e for e in pump.events if isinstance(e, ConnectionStateChanged) and e.error]
    assert isinstance(closed[-1].error, KafkaTimeoutError)
    assert "waited 30000 ms for credentials" in str(closed[-1].error)
    assert not core.credentials_ready(event.request_id, "late", now=pump.now)  # ignored


def test_a_bad_token_from_the_transport_is_a_local_error() -> None:
    core, pump, _ = boot("OAUTHBEARER", sasl_oauth_token_provider=CountingProvider())
    event = wait_for_need(pump)
    core.credentials_ready(event.request_id, "", now=pump.now)
    pump.drain()
    closed = [e for e in pump.events if isinstance(e, ConnectionStateChanged) and e.error]
    assert isinstance(closed[-1].error, LocalProtocolError)
    assert "returned no token" in str(closed[-1].error)


def blocking_plain(name: str, host: str) -> PlainMechanism:
    class Blocking(PlainMechanism):
        blocking = True

    return Blocking("alice", "alice-secret")


def test_blocking_mechanism_steps_are_asked_for() -> None:
    core, pump, _ = boot("PLAIN", sasl_mechanism_factory=blocking_plain)
    event = wait_for_need(pump)
    assert event.kind is CredentialKind.SASL_STEP and event.mechanism == "PLAIN"
    answer_all(core, pump, lambda: core.cluster.update_count > 0)
    kinds = [e.kind for e in needed(pump)]
    assert kinds == [CredentialKind.SASL_STEP, CredentialKind.SASL_STEP]  # first + last


def test_reauthentication_of_a_blocking_mechanism_asks_again() -> None:
    core, pump, broker = boot(
        "PLAIN", sasl_mechanism_factory=blocking_plain, metadata_max_age_ms=3_600_000
    )
    broker.session_lifetime_ms = 10_000
    handle = core.send(MetadataRequest(topics=[]), target=Node(0), now=0.0)
    answer_all(core, pump, lambda: handle.done)
    before = len(needed(pump))
    authenticated_at = pump.now
    pump.run(until=lambda: len(needed(pump)) > before, max_time=100.0)
    assert 8.5 - 1e-9 <= pump.now - authenticated_at <= 9.5 + 1e-9  # KIP-368
    assert needed(pump)[-1].node_id == 0
    again = core.send(MetadataRequest(topics=[]), target=Node(0), now=pump.now)
    answer_all(core, pump, lambda: again.done)
    assert again.error is None and core.connected(0)


def test_an_unknown_request_id_is_ignored() -> None:
    core = KafkaClientCore(ClientConfig(defer_credentials=True), now=0.0, rng=random.Random(0))
    assert not core.credentials_ready(99, "x", now=0.0)


def test_inline_provider_that_raises_no_longer_escapes_the_core() -> None:
    def broken() -> str:
        raise RuntimeError("no network")

    _, pump, _ = boot("OAUTHBEARER", sasl_oauth_token_provider=broken, defer_credentials=False)
    pump.run(rounds=20, jump=False)  # raised out of data_received before
    closed = [e for e in pump.events if isinstance(e, ConnectionStateChanged) and e.error]
    assert isinstance(closed[-1].error, KafkaConnectionError)
    assert "token provider failed: RuntimeError: no network" in str(closed[-1].error)
    assert not needed(pump)

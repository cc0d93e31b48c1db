"""The Kafka side of SASL on one connection, as its own small machine.

Theory of operation
-------------------
:class:`SaslAuthenticator` runs one SASL exchange (KIP-152): a
SaslHandshake naming the mechanism, then one SaslAuthenticate round trip per
mechanism token, until the mechanism has nothing more to say. It builds the
request messages and reads the responses; the connection that owns it writes
and matches them (and stays in its own SASL_* states meanwhile). A new
authenticator is made for every exchange, re-authentication included
(KIP-368), because mechanisms are single use.

    HANDSHAKE --handshake ok--> AUTHENTICATE --last token accepted--> DONE
        any refusal or bad server answer ----------------------------> FAILED

With ``defer=True`` (``ClientConfig.defer_credentials``), a call that may
block is not made here: the OAUTHBEARER token fetch, and every step of a
mechanism with ``blocking = True`` (GSSAPI). The exchange then returns a
:class:`~kafkacore.client.credentials.CredentialsCall` and waits in
CREDENTIALS until :meth:`SaslAuthenticator.resume` brings the answer:

    HANDSHAKE/AUTHENTICATE --blocking call due--> CREDENTIALS
    CREDENTIALS --answer--> AUTHENTICATE (a token to send) or DONE (none)

Refusals raise :class:`~kafkacore.errors.AuthenticationError` with the
broker's words (and the mechanisms it offers when the mechanism is refused).
A mechanism step or token provider that fails with anything else raises
:class:`~kafkacore.errors.KafkaConnectionError` naming it (its exception is
the cause): the connection is retried after the reconnect backoff.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Enum
from typing import TYPE_CHECKING, Any, TypeAlias

from kafkacore.client.credentials import CredentialKind, CredentialsCall
from kafkacore.client.sasl import OAuthBearerMechanism, SaslMechanism
from kafkacore.errors import (
    AuthenticationError,
    KafkaConnectionError,
    KafkaError,
    LocalProtocolError,
)

if TYPE_CHECKING:
    from kafkacore.protocol.messages import (
        SaslAuthenticateRequest,
        SaslAuthenticateResponse,
        SaslHandshakeRequest,
        SaslHandshakeResponse,
    )

#: What the exchange does next: send this request, wait for this call, or (None) done.
SaslStep: TypeAlias = "SaslAuthenticateRequest | CredentialsCall | None"

__all__ = ["TRANSITIONS", "SaslAuthenticator", "SaslState"]


class SaslState(Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    CREDENTIALS = "credentials"
    DONE = "done"
    FAILED = "failed"


_S = SaslState
TRANSITIONS: Mapping[SaslState, frozenset[SaslState]] = {
    _S.HANDSHAKE: frozenset({_S.AUTHENTICATE, _S.CREDENTIALS, _S.FAILED}),
    _S.AUTHENTICATE: frozenset({_S.AUTHENTICATE, _S.CREDENTIALS, _S.DONE, _S.FAILED}),
    _S.CREDENTIALS: frozenset({_S.AUTHENTICATE, _S.DONE, _S.FAILED}),
    _S.DONE: frozenset(),
    _S.FAILED: frozenset(),
}


class SaslAuthenticator:
    """One SASL exchange; see the module docstring."""

    def __init__(
        self,
        mechanism: SaslMechanism,
        *,
        node_id: int,
        error_name: Callable[[int], str] = lambda code: f"error code {code}",
        defer: bool = False,
    ) -> None:
        self.mechanism = mechanism
        self.node_id = node_id
        self._error_name = error_name
        self._defer = defer
        self.state = SaslState.HANDSHAKE
        #: SaslAuthenticate v1+ SessionLifetimeMs of the final answer (0 = none).
        self.session_lifetime_ms = 0
        #: The call the exchange waits for in CREDENTIALS (None otherwise).
        self.waiting: CredentialsCall | None = None
        # SessionLifetimeMs of an answer whose challenge is being evaluated.
        self._lifetime_ms = 0
        # The call waited for makes the first token (else it answers a challenge).
        self._initial = False

    def _goto(self, new: SaslState) -> None:
        if new not in TRANSITIONS[self.state]:
            raise LocalProtocolError(
                f"SASL exchange with node {self.node_id}: {self.state.value} -> {new.value}"
            )
        self.state = new

    def _fail(self, message: str) -> AuthenticationError:
        self._goto(SaslState.FAILED)
        return AuthenticationError(f"node {self.node_id}: {message}")

    def handshake_request(self) -> SaslHandshakeRequest:
        """The SaslHandshake request opening the exchange."""
        from kafkacore.protocol.messages import SaslHandshakeRequest

        if self.state is not SaslState.HANDSHAKE:
            raise LocalProtocolError(f"SASL exchange: handshake in state {self.state.value}")
        return SaslHandshakeRequest(mechanism=self.mechanism.name)

    def on_handshake(
        self, response: SaslHandshakeResponse
    ) -> SaslAuthenticateRequest | CredentialsCall:
        """Read the SaslHandshake answer; return the first SaslAuthenticate request
        (or, deferring, the :class:`CredentialsCall` the exchange now waits for)."""
        if response.error_code:
            offered = ", ".join(response.mechanisms) or "none"
            raise self._fail(
                f"SASL mechanism {self.mechanism.name} refused "
                f"({self._error_name(response.error_code)}); broker offers: {offered}"
            )
        mechanism = self.mechanism
        if self._defer and isinstance(mechanism, OAuthBearerMechanism):
            if not mechanism.has_token:
                return self._wait(CredentialKind.OAUTH_TOKEN, mechanism.token_call())
        elif self._defer and getattr(mechanism, "blocking", False):
            return self._wait(CredentialKind.SASL_STEP, mechanism.initial_response)
        self._goto(SaslState.AUTHENTICATE)
        return self._authenticate_request(self._evaluate(mechanism.initial_response))

    def on_authenticate(self, response: SaslAuthenticateResponse) -> SaslStep:
        """Read a SaslAuthenticate answer; the next request, None when DONE (or,
        deferring, the :class:`CredentialsCall` the exchange now waits for)."""
        if self.state is not SaslState.AUTHENTICATE:
            raise LocalProtocolError(f"SASL exchange: authenticate in state {self.state.value}")
        if response.error_code:
            message = response.error_message or self._error_name(response.error_code)
            raise self._fail(f"SASL {self.mechanism.name} authentication failed: {message}")
        challenge = bytes(response.auth_bytes)
        self._lifetime_ms = getattr(response, "session_lifetime_ms", 0) or 0
        step = lambda: self.mechanism.evaluate_challenge(challenge)  # noqa: E731
        if self._defer and getattr(self.mechanism, "blocking", False):
            return self._wait(CredentialKind.SASL_STEP, step)
        return self._next(self._evaluate(step))

    def resume(self, result: Any, error: BaseException | None) -> SaslStep:
        """The answer to the call the exchange waits for (``result``, or the
        ``error`` it raised): the next request, or None when DONE. Raises what
        fails the connection."""
        waiting = self.waiting
        if self.state is not SaslState.CREDENTIALS or waiting is None:
            raise LocalProtocolError(f"SASL exchange: credentials in state {self.state.value}")
        self.waiting = None

        def answer() -> Any:
            if error is not None:
                raise error
            return result

        if waiting.kind is CredentialKind.OAUTH_TOKEN:
            mechanism = self.mechanism
            assert isinstance(mechanism, OAuthBearerMechanism)
            self._evaluate(lambda: mechanism.accept_token(answer()))
            self._goto(SaslState.AUTHENTICATE)
            return self._authenticate_request(self._evaluate(mechanism.initial_response))
        token = self._evaluate(answer)
        if self._initial:
            self._goto(SaslState.AUTHENTICATE)
            return self._authenticate_request(token)
        return self._next(token)

    def _wait(self, kind: CredentialKind, call: Callable[[], Any]) -> CredentialsCall:
        self._initial = self.state is SaslState.HANDSHAKE
        self._goto(SaslState.CREDENTIALS)
        self.waiting = CredentialsCall(kind=kind, mechanism=self.mechanism.name, call=call)
        return self.waiting

    def _next(self, token: bytes | None) -> SaslAuthenticateRequest | None:
        """After a challenge: the next request, or None when the exchange is done."""
        if token is not None:
            self._goto(SaslState.AUTHENTICATE)
            return self._authenticate_request(token)
        self.session_lifetime_ms = self._lifetime_ms
        self._goto(SaslState.DONE)
        return None

    def _evaluate(self, step: Callable[[], bytes | None]) -> bytes | None:
        try:
            return step()
        except AuthenticationError as exc:
            raise self._fail(str(exc)) from exc
        except KafkaError:
            self._goto(SaslState.FAILED)
            raise
        except Exception as exc:
            # A token provider or mechanism that broke (an identity provider
            # or KDC out of reach, a bug): not the broker's verdict on our
            # credentials, so the connection is retried, not the client stopped.
            self._goto(SaslState.FAILED)
            what = (
                "token provider"
                if isinstance(self.mechanism, OAuthBearerMechanism)
                else "mechanism step"
            )
            raise KafkaConnectionError(
                f"node {self.node_id}: SASL {self.mechanism.name} {what} failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc

    @staticmethod
    def _authenticate_request(token: bytes | None) -> SaslAuthenticateRequest:
        from kafkacore.protocol.messages import SaslAuthenticateRequest

        return SaslAuthenticateRequest(auth_bytes=token or b"")

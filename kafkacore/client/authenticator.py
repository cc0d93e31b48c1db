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

Refusals raise :class:`~kafkacore.errors.AuthenticationError` with the
broker's words (and the mechanisms it offers when the mechanism is refused).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any

from kafkacore.client.sasl import SaslMechanism
from kafkacore.errors import AuthenticationError, LocalProtocolError

__all__ = ["TRANSITIONS", "SaslAuthenticator", "SaslState"]


class SaslState(Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    DONE = "done"
    FAILED = "failed"


_S = SaslState
TRANSITIONS: Mapping[SaslState, frozenset[SaslState]] = {
    _S.HANDSHAKE: frozenset({_S.AUTHENTICATE, _S.FAILED}),
    _S.AUTHENTICATE: frozenset({_S.AUTHENTICATE, _S.DONE, _S.FAILED}),
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
    ) -> None:
        self.mechanism = mechanism
        self.node_id = node_id
        self._error_name = error_name
        self.state = SaslState.HANDSHAKE
        #: SaslAuthenticate v1+ SessionLifetimeMs of the final answer (0 = none).
        self.session_lifetime_ms = 0

    def _goto(self, new: SaslState) -> None:
        if new not in TRANSITIONS[self.state]:
            raise LocalProtocolError(
                f"SASL exchange with node {self.node_id}: {self.state.value} -> {new.value}"
            )
        self.state = new

    def _fail(self, message: str) -> AuthenticationError:
        self._goto(SaslState.FAILED)
        return AuthenticationError(f"node {self.node_id}: {message}")

    def handshake_request(self) -> Any:
        """The SaslHandshake request opening the exchange."""
        from kafkacore.protocol.messages import SaslHandshakeRequest

        if self.state is not SaslState.HANDSHAKE:
            raise LocalProtocolError(f"SASL exchange: handshake in state {self.state.value}")
        return SaslHandshakeRequest(mechanism=self.mechanism.name)

    def on_handshake(self, response: Any) -> Any:
        """Read the SaslHandshake answer; return the first SaslAuthenticate request."""
        if response.error_code:
            offered = ", ".join(response.mechanisms) or "none"
            raise self._fail(
                f"SASL mechanism {self.mechanism.name} refused "
                f"({self._error_name(response.error_code)}); broker offers: {offered}"
            )
        self._goto(SaslState.AUTHENTICATE)
        return self._authenticate_request(self._evaluate(self.mechanism.initial_response))

    def on_authenticate(self, response: Any) -> Any | None:
        """Read a SaslAuthenticate answer; the next request, or None when DONE."""
        if self.state is not SaslState.AUTHENTICATE:
            raise LocalProtocolError(f"SASL exchange: authenticate in state {self.state.value}")
        if response.error_code:
            message = response.error_message or self._error_name(response.error_code)
            raise self._fail(f"SASL {self.mechanism.name} authentication failed: {message}")
        challenge = bytes(response.auth_bytes)
        token = self._evaluate(lambda: self.mechanism.evaluate_challenge(challenge))
        if token is not None:
            self._goto(SaslState.AUTHENTICATE)
            return self._authenticate_request(token)
        self.session_lifetime_ms = getattr(response, "session_lifetime_ms", 0) or 0
        self._goto(SaslState.DONE)
        return None

    def _evaluate(self, step: Callable[[], bytes | None]) -> bytes | None:
        try:
            return step()
        except AuthenticationError as exc:
            raise self._fail(str(exc)) from exc

    @staticmethod
    def _authenticate_request(token: bytes | None) -> Any:
        from kafkacore.protocol.messages import SaslAuthenticateRequest

        return SaslAuthenticateRequest(auth_bytes=token or b"")

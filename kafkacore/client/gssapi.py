"""SASL GSSAPI (Kerberos V5, RFC 4752) as a pure token machine.

Theory of operation
-------------------
The Kerberos work itself (tickets, keys, the wire tokens of RFC 4121) is
done by a GSS-API library behind the :class:`GssContext` protocol, which the
caller injects (``kafkacore.transports._gssapi`` binds MIT's ``libgssapi_krb5`` with
ctypes). This module only runs the SASL layer that Kafka's broker speaks
(the JDK's GSSAPI SaslServer, KIP-43 framing through SaslAuthenticate):

    ESTABLISHING --context established--> WAIT_OFFER
        the client feeds every server token to ``step`` and sends what it
        returns (the AP-REQ first, an empty token once the AP-REP is in);
    WAIT_OFFER --server's wrapped 4-byte offer--> SENT_LAYER
        RFC 4752 section 3.1: the offer is [layer mask, 3-byte max size];
        the client answers, wrapped, with [0x01 "no security layer",
        size 0, authorization id];
    SENT_LAYER --server's (empty) last answer--> COMPLETE

Kafka never negotiates integrity or confidentiality on GSSAPI connections
(TLS is the answer to that), so a server that does not offer "no security
layer" is refused. Any GSS failure raises
:class:`~kafkacore.errors.AuthenticationError`; the exchange is not retried
on the same mechanism object (mechanisms are single use).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Protocol

from kafkacore.client.sasl import SaslMechanism
from kafkacore.errors import AuthenticationError, LocalProtocolError

__all__ = [
    "GssContext",
    "GssapiMechanism",
    "GssapiState",
    "gssapi_mechanism_factory",
    "service_target",
]

# RFC 4752 section 3.1: security layer bit masks.
_LAYER_NONE = 0x01
# A broker that needs more round trips than this before the context is up is
# not speaking Kerberos V5 (which takes one, two with mutual authentication).
_MAX_CONTEXT_STEPS = 8


class GssContext(Protocol):
    """The slice of a GSS-API initiator context the mechanism needs.

    ``step`` is ``gss_init_sec_context``: it takes the server's token (None
    on the first call) and returns the token to send (b"" when there is none).
    ``wrap``/``unwrap`` are ``gss_wrap`` (integrity only) and ``gss_unwrap``.
    Failures raise :class:`~kafkacore.errors.AuthenticationError`.
    """

    @property
    def established(self) -> bool: ...

    def step(self, token: bytes | None) -> bytes: ...

    def wrap(self, data: bytes) -> bytes: ...

    def unwrap(self, data: bytes) -> bytes: ...


class GssapiState(Enum):
    INITIAL = "initial"
    ESTABLISHING = "establishing"
    WAIT_OFFER = "wait_offer"
    SENT_LAYER = "sent_layer"
    COMPLETE = "complete"
    FAILED = "failed"


class GssapiMechanism:
    """RFC 4752 client over an injected :class:`GssContext`; see the module docstring."""

    name = "GSSAPI"
    #: A context step may ask the KDC for a service ticket (network I/O in the
    #: GSS library): with defer_credentials the transport runs every step.
    blocking = True

    def __init__(self, context: GssContext, *, authorization_id: str = "") -> None:
        self._ctx = context
        # Empty: the broker then authorizes as the authenticated principal.
        self._authzid = authorization_id.encode()
        self._steps = 0
        self.state = GssapiState.INITIAL

    def initial_response(self) -> bytes:
        if self.state is not GssapiState.INITIAL:
            raise LocalProtocolError(f"GSSAPI: initial_response in state {self.state.value}")
        self.state = GssapiState.ESTABLISHING
        return self._guarded(lambda: self._establish(None))

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        state = self.state
        if state is GssapiState.ESTABLISHING:
            return self._guarded(lambda: self._establish(challenge))
        if state is GssapiState.WAIT_OFFER:
            return self._guarded(lambda: self._answer_offer(challenge))
        if state is GssapiState.SENT_LAYER:
            # The broker's answer to our layer choice carries nothing.
            self.state = GssapiState.COMPLETE
            return None
        raise LocalProtocolError(f"GSSAPI: evaluate_challenge in state {state.value}")

    def _guarded(self, step: Callable[[], bytes]) -> bytes:
        try:
            return step()
        except AuthenticationError:
            self.state = GssapiState.FAILED
            raise

    def _establish(self, token: bytes | None) -> bytes:
        self._steps += 1
        if self._steps > _MAX_CONTEXT_STEPS:
            raise AuthenticationError(
                f"GSSAPI: context not established after {_MAX_CONTEXT_STEPS} tokens; "
                "is the listener really Kerberos?"
            )
        out = self._ctx.step(token)
        if self._ctx.established:
            self.state = GssapiState.WAIT_OFFER
        return out

    def _answer_offer(self, wrapped: bytes) -> bytes:
        offer = self._ctx.unwrap(wrapped)
        if len(offer) != 4:
            raise AuthenticationError(
                f"GSSAPI: server security-layer offer is {len(offer)} bytes, expected 4"
            )
        if not offer[0] & _LAYER_NONE:
            raise AuthenticationError(
                f"GSSAPI: server offers security layers {offer[0]:#04x} without "
                "'none'; Kafka clients need sasl.kerberos QOP auth (use TLS for privacy)"
            )
        reply = bytes([_LAYER_NONE, 0, 0, 0]) + self._authzid
        self.state = GssapiState.SENT_LAYER
        return self._ctx.wrap(reply)


def service_target(service_name: str, host: str, domain_name: str | None = None) -> str:
    """The GSS host-based service name ``service@host`` (RFC 2743 section 4.1).

    ``domain_name`` replaces the connected host (the broker's advertised
    address may be an IP while its principal names a host, e.g.
    ``kafka/localhost``).
    """
    if not service_name or "@" in service_name or "/" in service_name:
        raise LocalProtocolError(
            f"GSSAPI: sasl_kerberos_service_name {service_name!r} must be a bare name like 'kafka'"
        )
    target_host = domain_name or host
    if not target_host:
        raise LocalProtocolError("GSSAPI: no host to name the broker's service principal")
    return f"{service_name}@{target_host}"


def gssapi_mechanism_factory(
    new_context: Callable[[str], GssContext],
    *,
    service_name: str = "kafka",
    domain_name: str | None = None,
    authorization_id: str = "",
) -> Callable[[str, str], SaslMechanism]:
    """A ``ClientConfig.sasl_mechanism_factory`` making GSSAPI mechanisms.

    ``new_context(target)`` builds a fresh initiator context for the
    host-based service name ``target`` (``service@host``) per connection.
    """
    service_target(service_name, "x", domain_name)  # refuse bad names early

    def factory(mechanism: str, host: str) -> SaslMechanism:
        if mechanism != "GSSAPI":
            raise LocalProtocolError(
                f"GSSAPI factory asked for mechanism {mechanism!r}; set sasl_mechanism='GSSAPI'"
            )
        target = service_target(service_name, host, domain_name)
        return GssapiMechanism(new_context(target), authorization_id=authorization_id)

    return factory

"""SASL mechanisms as pure token machines (no I/O, no clock, injected rng).

Theory of operation
-------------------
The connection machine runs the Kafka side of SASL (SaslHandshake v1, then
one SaslAuthenticate round trip per token, KIP-152). A mechanism here only
turns server challenges into client tokens:

    token = mech.initial_response()
    while token is not None:
        challenge = <server bytes answering token>
        token = mech.evaluate_challenge(challenge)

``evaluate_challenge`` returns the next client token, or None when the
exchange is complete on the client side (for SCRAM after verifying the
server signature). It raises :class:`~kafkacore.errors.AuthenticationError`
when the server's answer is wrong. Anything implementing
:class:`SaslMechanism` can be plugged in (e.g. GSSAPI backed by an optional
GSS-API package, through ``ClientConfig.sasl_mechanism_factory``).
"""

from __future__ import annotations

import base64
import random
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any, Protocol

from kafkacore.errors import AuthenticationError, LocalProtocolError

__all__ = [
    "TOKEN_AUTH_EXTENSION",
    "OAuthBearerMechanism",
    "PlainMechanism",
    "SaslMechanism",
    "ScramMechanism",
    "ScramState",
    "create_mechanism",
    "delegation_token_factory",
]


class SaslMechanism(Protocol):
    """A client-side SASL mechanism; see the module docstring.

    A mechanism whose steps may block (Kerberos asks the KDC for a service
    ticket) says so with a class attribute ``blocking = True``: with
    ``ClientConfig.defer_credentials`` the core then asks the transport to
    run each of its steps off the event loop (a ``CredentialsNeeded`` event)
    instead of running them inside its own step.
    """

    @property
    def name(self) -> str: ...

    def initial_response(self) -> bytes: ...

    def evaluate_challenge(self, challenge: bytes) -> bytes | None: ...


class PlainMechanism:
    """RFC 4616 PLAIN: one token ``authzid NUL user NUL password``.

    Kafka sends an empty authzid (the broker rejects one that differs from
    the user). The server's answer is empty; there is nothing to verify.
    """

    name = "PLAIN"

    def __init__(self, username: str, password: str) -> None:
        if "\x00" in username or "\x00" in password:
            raise LocalProtocolError("PLAIN: username and password must not contain NUL")
        self._token = b"\x00" + username.encode() + b"\x00" + password.encode()
        self._sent = False

    def initial_response(self) -> bytes:
        self._sent = True
        return self._token

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        if not self._sent:
            raise LocalProtocolError("PLAIN: evaluate_challenge before initial_response")
        return None


class ScramState(Enum):
    """Where a SCRAM exchange is (RFC 5802 section 3)."""

    INITIAL = "initial"
    SENT_CLIENT_FIRST = "sent_client_first"
    SENT_CLIENT_FINAL = "sent_client_final"
    COMPLETE = "complete"
    FAILED = "failed"


_SCRAM_HASHES: Mapping[str, str] = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
# RFC 7677 section 4 / Kafka ScramMechanism: fewer iterations are refused.
_SCRAM_MIN_ITERATIONS = 4096
# A server asking for absurd work would stall the event loop in PBKDF2.
_SCRAM_MAX_ITERATIONS = 1_000_000


def _saslname(username: str) -> str:
    # RFC 5802: "=" and "," are escaped in the user name.
    return username.replace("=", "=3D").replace(",", "=2C")


#: The SCRAM extension marking a delegation-token login (KIP-48; Kafka's
#: ``ScramLoginModule.TOKEN_AUTH_CONFIG``, the only one its brokers accept).
TOKEN_AUTH_EXTENSION = "tokenauth"


def _scram_extensions(extensions: Mapping[str, str]) -> str:
    """``,key=value`` for each extension (RFC 5802 section 7), checked first: a name of
    two or more letters (single letters are RFC 5802's own attributes), a value of
    printable text without ','."""
    out = []
    for key, value in extensions.items():
        if not isinstance(key, str) or len(key) < 2 or not (key.isascii() and key.isalpha()):
            raise LocalProtocolError(
                f"SCRAM: extension name {key!r} must be two or more ASCII letters "
                "(e.g. 'tokenauth')"
            )
        if not isinstance(value, str) or not value or "," in value or not value.isprintable():
            raise LocalProtocolError(
                f"SCRAM: extension {key!r}: value must be non-empty printable text "
                f"without ',', got {value!r}"
            )
        out.append(f",{key}={value}")
    return "".join(out)


def _parse_attrs(message: str, *, what: str) -> dict[str, str]:
    attrs: dict[str, str] = {}
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise AuthenticationError(f"SCRAM: malformed {what} message {message!r}")
        attrs.setdefault(part[0], part[2:])
    return attrs


class ScramMechanism:
    """SCRAM-SHA-256 / SCRAM-SHA-512 client (RFC 5802, RFC 7677).

    Kafka applies no SASLprep to the password, and uses gs2 header ``n,,``
    (no channel binding). The client nonce comes from the injected rng, or
    from ``nonce`` for test vectors. ``extensions`` travel in the client-first
    message after the nonce; Kafka knows one, ``tokenauth=true`` (a
    delegation-token login, :func:`delegation_token_factory`).
    """

    def __init__(
        self,
        mechanism: str,
        username: str,
        password: str,
        *,
        rng: random.Random | None = None,
        nonce: str | None = None,
        extensions: Mapping[str, str] | None = None,
    ) -> None:
        if mechanism not in _SCRAM_HASHES:
            raise LocalProtocolError(f"SCRAM: unknown mechanism {mechanism!r}")
        if nonce is None:
            if rng is None:
                raise LocalProtocolError("SCRAM: pass rng (random.Random) or a nonce")
            nonce = base64.b64encode(rng.getrandbits(192).to_bytes(24, "big")).decode()
        if not nonce or "," in nonce:
            raise LocalProtocolError("SCRAM: nonce must be non-empty printable text without ','")
        self.name = mechanism
        self._hash = _SCRAM_HASHES[mechanism]
        self._password = password.encode()
        self._nonce = nonce
        ext = _scram_extensions(extensions or {})
        self._client_first_bare = f"n={_saslname(username)},r={nonce}{ext}"
        self._auth_message = ""
        self._server_signature = b""
        self.state = ScramState.INITIAL

    def _hmac(self, key: bytes, msg: bytes) -> bytes:
        import hmac

        return hmac.new(key, msg, self._hash).digest()

    def initial_response(self) -> bytes:
        if self.state is not ScramState.INITIAL:
            raise LocalProtocolError(f"SCRAM: initial_response in state {self.state.name}")
        self.state = ScramState.SENT_CLIENT_FIRST
        return ("n,," + self._client_first_bare).encode()

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        try:
            text = challenge.decode()
        except UnicodeDecodeError:
            self.state = ScramState.FAILED
            raise AuthenticationError("SCRAM: server message is not UTF-8") from None
        if self.state is ScramState.SENT_CLIENT_FIRST:
            try:
                return self._client_final(text)
            except AuthenticationError:
                self.state = ScramState.FAILED
                raise
        if self.state is ScramState.SENT_CLIENT_FINAL:
            self._verify_server_final(text)
            return None
        raise LocalProtocolError(f"SCRAM: evaluate_challenge in state {self.state.name}")

    def _client_final(self, server_first: str) -> bytes:
        attrs = _parse_attrs(server_first, what="server-first")
        if "e" in attrs:
            raise AuthenticationError(f"SCRAM: server refused: {attrs['e']}")
        try:
            nonce, salt_b64, iter_text = attrs["r"], attrs["s"], attrs["i"]
        except KeyError as exc:
            raise AuthenticationError(f"SCRAM: server-first lacks {exc.args[0]}=") from None
        if not nonce.startswith(self._nonce) or len(nonce) <= len(self._nonce):
            raise AuthenticationError("SCRAM: server nonce does not extend the client nonce")
        if not iter_text.isdigit():
            raise AuthenticationError(f"SCRAM: bad iteration count {iter_text!r}")
        iterations = int(iter_text)
        if not _SCRAM_MIN_ITERATIONS <= iterations <= _SCRAM_MAX_ITERATIONS:
            raise AuthenticationError(
                f"SCRAM: iteration count {iterations} outside "
                f"[{_SCRAM_MIN_ITERATIONS}, {_SCRAM_MAX_ITERATIONS}]"
            )
        try:
            salt = base64.b64decode(salt_b64, validate=True)
        except ValueError:
            raise AuthenticationError("SCRAM: salt is not base64") from None
        # hashlib and hmac load OpenSSL's libcrypto (some 3.5 MiB of RSS): imported
        # by the SCRAM exchange that needs them, not by every client.
        import hashlib

        salted = hashlib.pbkdf2_hmac(self._hash, self._password, salt, iterations)
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(self._hash, client_key).digest()
        without_proof = f"c=biws,r={nonce}"  # biws = base64("n,,")
        self._auth_message = f"{self._client_first_bare},{server_first},{without_proof}"
        signature = self._hmac(stored_key, self._auth_message.encode())
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = self._hmac(salted, b"Server Key")
        self._server_signature = self._hmac(server_key, self._auth_message.encode())
        self.state = ScramState.SENT_CLIENT_FINAL
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def _verify_server_final(self, server_final: str) -> None:
        attrs = _parse_attrs(server_final, what="server-final")
        if "e" in attrs:
            self.state = ScramState.FAILED
            raise AuthenticationError(f"SCRAM: server refused: {attrs['e']}")
        try:
            got = base64.b64decode(attrs.get("v", ""), validate=True)
        except ValueError:
            got = b""
        import hmac

        if not hmac.compare_digest(got, self._server_signature):
            self.state = ScramState.FAILED
            raise AuthenticationError("SCRAM: server signature does not match; server not trusted")
        self.state = ScramState.COMPLETE


class OAuthBearerMechanism:
    """OAUTHBEARER client (RFC 7628; KIP-255, extensions KIP-342).

    The token comes from ``provider``: a callable returning it, or an object
    with ``token()`` and optionally ``extensions()``. On failure the server
    sends a JSON error challenge; RFC 7628 says the client answers with a
    single 0x01 byte, after which the broker fails the exchange.
    """

    name = "OAUTHBEARER"

    def __init__(self, provider: Any) -> None:
        self._provider = provider
        self._token: tuple[str, Mapping[str, str]] | None = None
        self._sent = False
        self._failed_challenge: str | None = None

    def token_call(self) -> Callable[[], Any]:
        """What fetches the token: the provider's ``token`` method, or the provider.

        The call that may block (an identity provider round trip); a transport
        may run it off its event loop and hand the result to :meth:`accept_token`.
        """
        provider = self._provider
        if hasattr(provider, "token"):
            call: Callable[[], Any] = provider.token
            return call
        if callable(provider):
            return provider  # type: ignore[no-any-return]
        raise LocalProtocolError("OAUTHBEARER: token provider is neither callable nor has token()")

    def accept_token(self, token: Any) -> None:
        """Take the token :meth:`token_call` returned (and the provider's extensions)."""
        extensions: Mapping[str, str] = {}
        if hasattr(self._provider, "extensions"):
            extensions = self._provider.extensions() or {}
        if not isinstance(token, str) or not token:
            raise LocalProtocolError("OAUTHBEARER: token provider returned no token")
        for key, value in extensions.items():
            if not key.isalpha() or key == "auth":
                raise LocalProtocolError(f"OAUTHBEARER: bad extension key {key!r}")
            if "\x01" in value:
                raise LocalProtocolError(f"OAUTHBEARER: extension {key!r} contains 0x01")
        self._token = (token, extensions)

    @property
    def has_token(self) -> bool:
        return self._token is not None

    def initial_response(self) -> bytes:
        if self._token is None:
            self.accept_token(self.token_call()())
        assert self._token is not None
        token, extensions = self._token
        ext = "".join(f"\x01{k}={v}" for k, v in extensions.items())
        self._sent = True
        return f"n,,\x01auth=Bearer {token}{ext}\x01\x01".encode()

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        if not self._sent:
            raise LocalProtocolError("OAUTHBEARER: evaluate_challenge before initial_response")
        if not challenge:
            return None
        if self._failed_challenge is not None:
            raise AuthenticationError(
                f"OAUTHBEARER: server refused the token: {self._failed_challenge}"
            )
        self._failed_challenge = challenge.decode(errors="replace")
        return b"\x01"

    @property
    def server_error(self) -> str | None:
        """The server's JSON error challenge, if it refused the token."""
        return self._failed_challenge


MechanismFactory = Callable[[str, str], SaslMechanism]


def delegation_token_factory(token_id: str, hmac: bytes, *, rng: random.Random) -> MechanismFactory:
    """Log in with a delegation token (KIP-48): pass the result as
    ``ClientConfig.sasl_mechanism_factory``, with ``sasl_mechanism``
    ``SCRAM-SHA-256`` or ``SCRAM-SHA-512``.

    The login is SCRAM with the token id as the user name, the token's HMAC
    in base64 as the password and the extension ``tokenauth=true``; the
    client then acts as the token's owner. ``rng`` draws each login's nonce
    (give a ``random.SystemRandom()``: the core draws no randomness itself).
    """
    if not isinstance(token_id, str) or not token_id:
        raise LocalProtocolError(
            f"delegation token: token_id must be a non-empty str, got {token_id!r}"
        )
    if not isinstance(hmac, bytes | bytearray) or not hmac:
        raise LocalProtocolError("delegation token: hmac must be the token's HMAC bytes")
    password = base64.b64encode(bytes(hmac)).decode()

    def make(mechanism: str, host: str) -> SaslMechanism:
        if mechanism not in _SCRAM_HASHES:
            raise LocalProtocolError(
                f"delegation token: tokens log in with {' or '.join(_SCRAM_HASHES)}, "
                f"not sasl_mechanism {mechanism!r}"
            )
        return ScramMechanism(
            mechanism, token_id, password, rng=rng, extensions={TOKEN_AUTH_EXTENSION: "true"}
        )

    return make


def create_mechanism(
    *,
    mechanism: str,
    host: str,
    username: str | None,
    password: str | None,
    oauth_token_provider: Any,
    factory: MechanismFactory | None,
    rng: random.Random,
) -> SaslMechanism:
    """Build a fresh mechanism for one connection (mechanisms are single use)."""
    if factory is not None:
        return factory(mechanism, host)
    if mechanism == "PLAIN":
        return PlainMechanism(username or "", password or "")
    if mechanism in _SCRAM_HASHES:
        return ScramMechanism(mechanism, username or "", password or "", rng=rng)
    if mechanism == "OAUTHBEARER":
        return OAuthBearerMechanism(oauth_token_provider)
    raise LocalProtocolError(
        f"SASL mechanism {mechanism!r} is not built in; pass sasl_mechanism_factory"
    )

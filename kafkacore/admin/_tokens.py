"""Delegation tokens (KIP-48; owners other than the requester, KIP-373), on any
broker (in KRaft the broker forwards the changes to the controller, KIP-900).

A token is issued only to a client that authenticated with SASL, and not
with a token: over PLAINTEXT, SSL or a token login the broker answers
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED; a broker without
``delegation.token.secret.key`` answers DELEGATION_TOKEN_AUTH_DISABLED. Each
command is about one thing, so its operation's value is the answer itself
and a refusal fails the operation with the generated error class, carrying
the id of the broker that refused (``node_id``). A retriable refusal is
asked again after the backoff, like every admin request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar

from kafkacore.admin._base import AdminBase, Job, answering_broker, single_outcome
from kafkacore.admin._checks import check_int, check_timeout
from kafkacore.admin.token_types import DelegationToken, split_principal
from kafkacore.client.core import KafkaClientCore
from kafkacore.client.handles import RequestHandle
from kafkacore.client.response_errors import broker_error as _code_error
from kafkacore.client.routing import AnyNode
from kafkacore.client.stack import R
from kafkacore.errors import BrokerError, NoCommonVersionError
from kafkacore.operation import Operation
from kafkacore.protocol import messages as m
from kafkacore.protocol._base import Request
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.messages.create_delegation_token_request import CreatableRenewers
from kafkacore.protocol.messages.describe_delegation_token_request import (
    DescribeDelegationTokenOwner,
)

__all__ = ["TokenCommands", "answering_broker", "broker_error"]


#: A token command's answer: one error code.
class _Coded(Protocol):
    error_code: int


_Created = m.CreateDelegationTokenResponse

#: The answers of the two commands that move a token's expiry.
_Expiry = TypeVar("_Expiry", m.RenewDelegationTokenResponse, m.ExpireDelegationTokenResponse)

#: CreateDelegationToken v3 lets the requester name another owner (KIP-373).
_OWNER_VERSION = 3

#: What to do about each token refusal (the broker sends a code, no message).
_HINTS: dict[int, str] = {
    ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED: (
        "the broker issues no tokens (delegation.token.secret.key is not set)"
    ),
    ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: (
        "token requests need a SASL login that is not itself a token login (not PLAINTEXT or SSL)"
    ),
    ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH: (
        "only the token's owner and its renewers may renew or expire it"
    ),
    ErrorCode.DELEGATION_TOKEN_NOT_FOUND: "no such token (an expired token is forgotten)",
    ErrorCode.DELEGATION_TOKEN_EXPIRED: "the token has expired; create a new one",
    ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED: (
        "the principal may not act on this token (an ACL on the token is missing)"
    ),
}


def broker_error(
    client: KafkaClientCore, code: int, message: str | None, api: str, *, node_id: int | None
) -> BrokerError:
    """The generated exception of ``code`` from ``api``'s answer, naming the broker
    that sent it; its ``node_id`` is that broker's id."""
    broker = answering_broker(client, node_id)
    who = "a broker" if broker is None else client.describe_node(broker)
    text = f"{api} ({who}): {message}" if message else f"{api} ({who})"
    error = _code_error(code, text, node_id=broker)
    assert error is not None, "broker_error needs a non-zero code"
    return error


def _principal(kind: str, name: str) -> str:
    return f"{kind}:{name}" if kind or name else ""


def _hmac(what: str, value: object) -> bytes:
    if isinstance(value, bytearray | memoryview):
        value = bytes(value)
    if not isinstance(value, bytes):
        hint = "; pass the token's .hmac" if isinstance(value, DelegationToken) else ""
        raise TypeError(f"{what}: hmac: expected the token's HMAC as bytes, got {value!r}{hint}")
    if not value:
        raise ValueError(f"{what}: hmac: must not be empty")
    return value


def _period(what: str, value: object) -> int:
    """A period in ms; negative (-1) means the broker's own choice (its default, or now)."""
    return check_int(what, value)


class TokenCommands(AdminBase):
    """Delegation-token commands of :class:`~kafkacore.admin.AdminCore`."""

    def create_delegation_token(
        self,
        *,
        owner: str | None = None,
        renewers: Iterable[str] = (),
        max_lifetime_ms: int = -1,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[DelegationToken]:
        """A new token for ``owner`` (None: the authenticated principal), renewable by
        ``renewers`` as well, living at most ``max_lifetime_ms`` (-1: the broker's
        ``delegation.token.max.lifetime.ms``)."""
        kind = "create_delegation_token"
        owned = None if owner is None else split_principal(f"{kind}: owner", owner)
        if isinstance(renewers, str) or not isinstance(renewers, Iterable):
            raise TypeError(
                f"{kind}: renewers: expected a collection of principals ('User:bob'), "
                f"got {renewers!r}"
            )
        renewing = [split_principal(f"{kind}: renewers item", r) for r in renewers]
        lifetime = check_int(f"{kind}: max_lifetime_ms", max_lifetime_ms)
        if lifetime == 0 or lifetime < -1:
            raise ValueError(
                f"{kind}: max_lifetime_ms: {lifetime} is neither -1 (the broker's maximum) "
                "nor a number of ms above 0"
            )
        job = self._begin(kind, [None], single_outcome, check_timeout(kind, timeout_ms), now)
        names = tuple(_principal(k, n) for k, n in renewing)

        def build(version: int) -> m.CreateDelegationTokenRequest:
            request = m.CreateDelegationTokenRequest(
                renewers=[
                    CreatableRenewers(principal_type=k, principal_name=n) for k, n in renewing
                ],
                max_lifetime_ms=lifetime,
            )
            if version >= _OWNER_VERSION:
                # Null owner fields: the token is the requester's own.
                request.owner_principal_type = None if owned is None else owned[0]
                request.owner_principal_name = None if owned is None else owned[1]
            elif owned is not None:
                raise NoCommonVersionError(
                    f"{kind}: naming an owner needs CreateDelegationToken v{_OWNER_VERSION}+ "
                    f"(KIP-373); the broker offers v{version}"
                )
            return request

        def answer(response: _Created, handle: RequestHandle[_Created], t: float) -> None:
            if self._refused(job, response, handle, "CreateDelegationToken", send, t):
                return
            owner_name = _principal(response.principal_type, response.principal_name)
            requester = _principal(
                response.token_requester_principal_type, response.token_requester_principal_name
            )
            token = DelegationToken(
                token_id=response.token_id,
                hmac=bytes(response.hmac),
                owner=owner_name,
                requester=requester or owner_name,  # before v3 only owners ask
                renewers=names,
                issue_timestamp_ms=response.issue_timestamp_ms,
                expiry_timestamp_ms=response.expiry_timestamp_ms,
                max_timestamp_ms=response.max_timestamp_ms,
            )
            job.settle(None, token)

        def send(keys: list[Any], t: float) -> None:
            self._send(
                job,
                keys,
                m.CreateDelegationTokenRequest(),
                answer,
                send,
                now=t,
                target=AnyNode(),
                build=build,
            )

        send([None], now)
        return self._started(job, now)

    def renew_delegation_token(
        self,
        hmac: bytes,
        renew_period_ms: int = -1,
        *,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[int]:
        """Push a token's expiry ``renew_period_ms`` past now (-1: the broker's
        ``delegation.token.expiry.time.ms``), never past its maximum; the value is
        the new expiry timestamp (ms). Only the owner and the renewers may."""
        kind = "renew_delegation_token"
        secret = _hmac(kind, hmac)
        period = _period(f"{kind}: renew_period_ms", renew_period_ms)
        request = m.RenewDelegationTokenRequest(hmac=secret, renew_period_ms=period)
        return self._expiry_change(kind, "RenewDelegationToken", request, timeout_ms, now)

    def expire_delegation_token(
        self,
        hmac: bytes,
        expiry_time_period_ms: int = -1,
        *,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[int]:
        """Make a token expire ``expiry_time_period_ms`` from now (negative: at once,
        and the broker forgets it); the value is the new expiry timestamp (ms)."""
        kind = "expire_delegation_token"
        secret = _hmac(kind, hmac)
        period = _period(f"{kind}: expiry_time_period_ms", expiry_time_period_ms)
        request = m.ExpireDelegationTokenRequest(hmac=secret, expiry_time_period_ms=period)
        return self._expiry_change(kind, "ExpireDelegationToken", request, timeout_ms, now)

    def describe_delegation_tokens(
        self,
        owners: Iterable[str] | None = None,
        *,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[tuple[DelegationToken, ...]]:
        """The tokens of ``owners`` (None: every token the principal may describe:
        its own, those it may renew, and any with a DESCRIBE ACL on the token)."""
        kind = "describe_delegation_tokens"
        wanted: list[tuple[str, str]] | None = None
        if owners is not None:
            if isinstance(owners, str) or not isinstance(owners, Iterable):
                raise TypeError(
                    f"{kind}: owners: expected a collection of principals ('User:alice') "
                    f"or None, got {owners!r}"
                )
            wanted = [split_principal(f"{kind}: owners item", o) for o in owners]
            if not wanted:
                raise ValueError(f"{kind}: owners: name at least one, or pass None for every token")
        job = self._begin(kind, [None], single_outcome, check_timeout(kind, timeout_ms), now)
        request = m.DescribeDelegationTokenRequest(
            owners=None
            if wanted is None
            else [
                DescribeDelegationTokenOwner(principal_type=k, principal_name=n) for k, n in wanted
            ]
        )

        def answer(
            response: m.DescribeDelegationTokenResponse,
            handle: RequestHandle[m.DescribeDelegationTokenResponse],
            t: float,
        ) -> None:
            if self._refused(job, response, handle, "DescribeDelegationToken", send, t):
                return
            tokens = []
            for d in response.tokens:
                owner_name = _principal(d.principal_type, d.principal_name)
                requester = _principal(
                    d.token_requester_principal_type, d.token_requester_principal_name
                )
                tokens.append(
                    DelegationToken(
                        token_id=d.token_id,
                        hmac=bytes(d.hmac),
                        owner=owner_name,
                        requester=requester or owner_name,
                        renewers=tuple(
                            _principal(r.principal_type, r.principal_name) for r in d.renewers
                        ),
                        issue_timestamp_ms=d.issue_timestamp,
                        expiry_timestamp_ms=d.expiry_timestamp,
                        max_timestamp_ms=d.max_timestamp,
                    )
                )
            job.settle(None, tuple(tokens))

        def send(keys: list[Any], t: float) -> None:
            self._send(job, keys, request, answer, send, now=t, target=AnyNode())

        send([None], now)
        return self._started(job, now)

    # ------------------------------------------------------------ helpers
    def _expiry_change(
        self, kind: str, api: str, request: Request[_Expiry], timeout_ms: int | None, now: float
    ) -> Operation[int]:
        """Renew or expire: one request, the new expiry timestamp as the value."""
        job = self._begin(kind, [None], single_outcome, check_timeout(kind, timeout_ms), now)

        def answer(response: _Expiry, handle: RequestHandle[_Expiry], t: float) -> None:
            if not self._refused(job, response, handle, api, send, t):
                job.settle(None, response.expiry_timestamp_ms)

        def send(keys: list[Any], t: float) -> None:
            self._send(job, keys, request, answer, send, now=t, target=AnyNode())

        send([None], now)
        return self._started(job, now)

    def _refused(
        self,
        job: Job,
        response: _Coded,
        handle: RequestHandle[R],
        api: str,
        again: Callable[[list[Any], float], None],
        now: float,
    ) -> bool:
        """True when the answer carries an error code: asked again if it is retriable,
        else the job fails with it."""
        if not response.error_code:
            return False
        code = response.error_code
        error = broker_error(self.client, code, _HINTS.get(code), api, node_id=handle.node_id)
        self._failed(job, [None], error, again, now)
        return True

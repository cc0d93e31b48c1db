"""Results and principal names of the delegation-token commands (KIP-48, KIP-373).

Principals are written as Kafka writes them, ``"TYPE:NAME"`` (``"User:alice"``),
as the ACL commands take them.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

__all__ = ["DelegationToken", "split_principal"]


def split_principal(what: str, value: object) -> tuple[str, str]:
    """``"User:alice"`` as ``("User", "alice")``; anything else is the caller's mistake."""
    if not isinstance(value, str):
        raise TypeError(
            f"{what}: expected a principal 'TYPE:NAME' (e.g. 'User:alice'), got {value!r}"
        )
    kind, colon, name = value.partition(":")
    if not colon or not kind or not name:
        raise ValueError(
            f"{what}: {value!r} is not a principal; expected 'TYPE:NAME' (e.g. 'User:alice')"
        )
    return kind, name


@dataclass(frozen=True, slots=True, kw_only=True)
class DelegationToken:
    """A delegation token (Java's ``DelegationToken`` with its ``TokenInformation``).

    A client logs in with it over SCRAM-SHA-256 or SCRAM-SHA-512 (KIP-48):
    the user name is :attr:`token_id`, the password :attr:`password` (the
    HMAC in base64), with the SCRAM extension ``tokenauth=true``, which
    :func:`kafkacore.client.sasl.delegation_token_factory` adds. The HMAC is
    the token's secret: it is left out of ``repr``.
    """

    token_id: str
    hmac: bytes = field(repr=False)
    #: The principal the token authenticates as (``"User:alice"``).
    owner: str
    #: Who asked for it (the owner, unless someone created it for the owner, KIP-373).
    requester: str
    #: Principals that may renew (and expire) it besides the owner.
    renewers: tuple[str, ...]
    issue_timestamp_ms: int
    #: When it stops working unless renewed.
    expiry_timestamp_ms: int
    #: When it stops working whatever renewals come.
    max_timestamp_ms: int

    @property
    def password(self) -> str:
        """The SCRAM password of a token login: the HMAC in base64."""
        return base64.b64encode(self.hmac).decode()

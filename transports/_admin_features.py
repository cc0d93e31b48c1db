"""The admin surface's feature-level and delegation-token calls.

See :mod:`kafkacore.transports._admin_common`: each is one core command under
the core's name (:mod:`kafkacore.admin._features`, :mod:`kafkacore.admin._tokens`),
with ``timeout=`` in seconds. A token logs a client in through
:func:`kafkacore.client.sasl.delegation_token_factory`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kafkacore.admin import DelegationToken, FeatureMetadata, FeatureUpdate, ItemResults

from ._admin_common import AdminSurface, Plan, names

__all__ = ["FeaturePlans"]


class FeaturePlans(AdminSurface):
    """Feature levels (KIP-584) and delegation tokens (KIP-48)."""

    # -- feature levels -------------------------------------------------------------------
    def _describe_features(self, *, timeout: float | None = None) -> Plan[FeatureMetadata]:
        """The finalized feature levels with their epoch, and the levels the answering
        broker supports (ApiVersions): Java's ``FeatureMetadata``."""
        return self._one(
            "describe_features",
            timeout,
            lambda core, now, ms: core.describe_features(timeout_ms=ms, now=now),
        )

    def _update_features(
        self,
        updates: Mapping[str, FeatureUpdate],
        *,
        validate_only: bool = False,
        timeout: float | None = None,
    ) -> Plan[ItemResults[str, None]]:
        """Move finalized levels, ``{"transaction.version": FeatureUpdate(2)}``
        (UpdateFeatures, the controller); ``validate_only``: only check."""
        return self._one(
            "update_features",
            timeout,
            lambda core, now, ms: core.update_features(
                updates, validate_only=validate_only, timeout_ms=ms, now=now
            ),
        )

    # -- delegation tokens ----------------------------------------------------------------
    def _create_delegation_token(
        self,
        *,
        owner: str | None = None,
        renewers: Iterable[str] = (),
        max_lifetime_ms: int = -1,
        timeout: float | None = None,
    ) -> Plan[DelegationToken]:
        """A new delegation token for ``owner`` (None: the logged-in principal; needs a
        SASL login), renewable by ``renewers`` too ('User:bob'); ``max_lifetime_ms``
        -1: the broker's maximum."""
        return self._one(
            "create_delegation_token",
            timeout,
            lambda core, now, ms: core.create_delegation_token(
                owner=owner,
                renewers=renewers,
                max_lifetime_ms=max_lifetime_ms,
                timeout_ms=ms,
                now=now,
            ),
        )

    def _renew_delegation_token(
        self, hmac: bytes, renew_period_ms: int = -1, *, timeout: float | None = None
    ) -> Plan[int]:
        """Push a token's expiry ``renew_period_ms`` past now (-1: the broker's
        default); the new expiry timestamp (ms)."""
        return self._one(
            "renew_delegation_token",
            timeout,
            lambda core, now, ms: core.renew_delegation_token(
                hmac, renew_period_ms, timeout_ms=ms, now=now
            ),
        )

    def _expire_delegation_token(
        self, hmac: bytes, expiry_time_period_ms: int = -1, *, timeout: float | None = None
    ) -> Plan[int]:
        """Expire a token ``expiry_time_period_ms`` from now (-1: at once); the new
        expiry timestamp (ms)."""
        return self._one(
            "expire_delegation_token",
            timeout,
            lambda core, now, ms: core.expire_delegation_token(
                hmac, expiry_time_period_ms, timeout_ms=ms, now=now
            ),
        )

    def _describe_delegation_tokens(
        self, owners: Iterable[str] | None = None, *, timeout: float | None = None
    ) -> Plan[tuple[DelegationToken, ...]]:
        """The tokens of ``owners`` ('User:alice'; None: every token the principal may
        describe)."""
        return self._one(
            "describe_delegation_tokens",
            timeout,
            lambda core, now, ms: core.describe_delegation_tokens(
                names(owners), timeout_ms=ms, now=now
            ),
        )

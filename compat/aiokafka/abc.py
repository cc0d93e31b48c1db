"""aiokafka's ``aiokafka.abc``: the rebalance listener base and the token provider base."""

from __future__ import annotations

import abc

from kafkacore.compat._listener import ConsumerRebalanceListener

__all__ = ["AbstractTokenProvider", "ConsumerRebalanceListener"]


class AbstractTokenProvider(abc.ABC):
    """An OAUTHBEARER token source: ``await token()`` returns the token (aiokafka's shape).

    kafkacore's clients take it as ``sasl_oauth_token_provider`` (see docs/client.md).
    """

    @abc.abstractmethod
    async def token(self) -> str:
        """The current token."""

    def extensions(self) -> dict[str, str]:
        """SASL extensions sent with the token (KIP-342); none by default."""
        return {}

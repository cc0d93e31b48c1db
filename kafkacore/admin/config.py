"""Admin settings: Java's admin client names in snake_case, checked once.

Connection settings (bootstrap servers, TLS, SASL, ``request_timeout_ms``,
``retry_backoff_ms``/``retry_backoff_max_ms``) are the client core's
:class:`~kafkacore.client.ClientConfig`; this record holds what the admin
machine decides with.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkacore.admin._checks import check_int

__all__ = ["AdminConfig"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AdminConfig:
    """Admin machine settings (defaults as in the Java admin client of Kafka 4.x)."""

    #: How long one command may take, retries included, unless the command
    #: gives its own ``timeout_ms`` (Java ``default.api.timeout.ms``).
    default_api_timeout_ms: int = 60000
    #: Bound of commands in progress at once; one more raises until some complete.
    max_pending_operations: int = 1000

    def __post_init__(self) -> None:
        check_int("AdminConfig.default_api_timeout_ms", self.default_api_timeout_ms, minimum=1)
        check_int("AdminConfig.max_pending_operations", self.max_pending_operations, minimum=1)

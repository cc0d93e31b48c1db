"""Consumer settings: Java's consumer config names in snake_case, validated once.

The connection-level settings (bootstrap servers, TLS, SASL, timeouts of
single requests) stay in :class:`~kafkacore.client.ClientConfig`; this
record holds only what the consumer and group machines decide with.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkacore.errors import ConfigError

__all__ = ["AUTO_OFFSET_RESET", "GROUP_PROTOCOLS", "ISOLATION_LEVELS", "ConsumerConfig"]

AUTO_OFFSET_RESET = ("earliest", "latest", "none")
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
GROUP_PROTOCOLS = ("classic", "consumer")


def _positive(name: str, value: object, *, allow_zero: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"ConsumerConfig.{name}: expected an int, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        want = "0 or more" if allow_zero else "more than 0"
        raise ConfigError(f"ConsumerConfig.{name}: {value} must be {want}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerConfig:
    """Consumer and group settings (defaults as in the Java consumer of Kafka 4.x)."""

    group_id: str | None = None
    #: "classic" (JoinGroup/SyncGroup) or "consumer" (KIP-848 ConsumerGroupHeartbeat).
    group_protocol: str = "classic"
    group_instance_id: str | None = None
    client_rack: str | None = None
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 3000
    max_poll_interval_ms: int = 300000
    #: Classic protocol assignors, by registry name, in preference order.
    partition_assignment_strategy: tuple[str, ...] = ("range", "cooperative-sticky")
    #: KIP-848 server-side assignor name ("uniform", "range"); None lets the broker choose.
    group_remote_assignor: str | None = None
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5000
    auto_offset_reset: str = "latest"
    isolation_level: str = "read_uncommitted"
    max_poll_records: int = 500
    fetch_min_bytes: int = 1
    fetch_max_wait_ms: int = 500
    fetch_max_bytes: int = 52428800
    max_partition_fetch_bytes: int = 1048576
    #: Bound of decoded-but-unread fetch data; no fetch is sent while it is exceeded.
    fetch_buffer_bytes: int = 64 * 1024 * 1024
    check_crcs: bool = True
    exclude_internal_topics: bool = True
    #: Bound of blocking calls (commit, committed, offset lookups, close).
    default_api_timeout_ms: int = 60000
    #: Pattern subscriptions re-list the cluster's topics this often.
    metadata_max_age_ms: int = 300000
    retry_backoff_ms: int = 100

    def __post_init__(self) -> None:
        if self.group_id is not None and (not isinstance(self.group_id, str) or not self.group_id):
            raise ConfigError(
                f"ConsumerConfig.group_id: {self.group_id!r} must be a non-empty str or None"
            )
        if self.group_protocol not in GROUP_PROTOCOLS:
            raise ConfigError(
                f"ConsumerConfig.group_protocol: {self.group_protocol!r} is not one of "
                f"{', '.join(GROUP_PROTOCOLS)}"
            )
        if self.auto_offset_reset not in AUTO_OFFSET_RESET:
            raise ConfigError(
                f"ConsumerConfig.auto_offset_reset: {self.auto_offset_reset!r} is not one of "
                f"{', '.join(AUTO_OFFSET_RESET)}"
            )
        if self.isolation_level not in ISOLATION_LEVELS:
            raise ConfigError(
                f"ConsumerConfig.isolation_level: {self.isolation_level!r} is not one of "
                f"{', '.join(ISOLATION_LEVELS)}"
            )
        for name in (
            "session_timeout_ms",
            "heartbeat_interval_ms",
            "max_poll_interval_ms",
            "auto_commit_interval_ms",
            "max_poll_records",
            "fetch_max_bytes",
            "max_partition_fetch_bytes",
            "fetch_buffer_bytes",
            "default_api_timeout_ms",
            "metadata_max_age_ms",
        ):
            _positive(name, getattr(self, name))
        for name in ("fetch_min_bytes", "fetch_max_wait_ms", "retry_backoff_ms"):
            _positive(name, getattr(self, name), allow_zero=True)
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ConfigError(
                "ConsumerConfig.heartbeat_interval_ms: must be below session_timeout_ms "
                f"({self.heartbeat_interval_ms} >= {self.session_timeout_ms})"
            )
        if isinstance(self.partition_assignment_strategy, str):
            object.__setattr__(
                self, "partition_assignment_strategy", (self.partition_assignment_strategy,)
            )
        if not self.partition_assignment_strategy:
            raise ConfigError(
                "ConsumerConfig.partition_assignment_strategy: name at least one assignor"
            )
        object.__setattr__(
            self, "partition_assignment_strategy", tuple(self.partition_assignment_strategy)
        )

    @property
    def read_committed(self) -> bool:
        return self.isolation_level == "read_committed"

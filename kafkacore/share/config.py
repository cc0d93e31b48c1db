"""Share consumer settings: Java's share consumer config names in snake_case."""

from __future__ import annotations

from dataclasses import dataclass

from kafkacore.errors import LocalProtocolError
from kafkacore.share.acks import AcknowledgementMode

__all__ = ["ShareConsumerConfig"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareConsumerConfig:
    """Share-group member settings (defaults as in Java's KafkaShareConsumer, Kafka 4.x)."""

    group_id: str
    client_rack: str | None = None
    #: "implicit" (the next poll accepts the previous poll's records) or "explicit".
    acknowledgement_mode: str = "implicit"
    max_poll_records: int = 500
    fetch_min_bytes: int = 1
    fetch_max_wait_ms: int = 500
    fetch_max_bytes: int = 52428800
    max_partition_fetch_bytes: int = 1048576
    check_crcs: bool = True
    #: Bound of commit and close.
    default_api_timeout_ms: int = 60000
    retry_backoff_ms: int = 100

    def __post_init__(self) -> None:
        if not isinstance(self.group_id, str) or not self.group_id:
            raise LocalProtocolError(
                f"ShareConsumerConfig.group_id: {self.group_id!r} must be a non-empty str"
            )
        modes = [m.value for m in AcknowledgementMode]
        if self.acknowledgement_mode not in modes:
            raise LocalProtocolError(
                f"ShareConsumerConfig.acknowledgement_mode: {self.acknowledgement_mode!r} "
                f"is not one of {', '.join(modes)}"
            )
        for name in (
            "max_poll_records",
            "fetch_max_bytes",
            "max_partition_fetch_bytes",
            "default_api_timeout_ms",
        ):
            _check(name, getattr(self, name), allow_zero=False)
        for name in ("fetch_min_bytes", "fetch_max_wait_ms", "retry_backoff_ms"):
            _check(name, getattr(self, name), allow_zero=True)

    @property
    def mode(self) -> AcknowledgementMode:
        return AcknowledgementMode(self.acknowledgement_mode)


def _check(name: str, value: object, *, allow_zero: bool) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise LocalProtocolError(f"ShareConsumerConfig.{name}: expected an int, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        want = "0 or more" if allow_zero else "more than 0"
        raise LocalProtocolError(f"ShareConsumerConfig.{name}: {value} must be {want}")

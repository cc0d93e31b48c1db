"""ConsumerConfig: every setting is checked once, with a message that names it."""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.consumer.config import ConsumerConfig
from kafkacore.errors import LocalProtocolError


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"group_id": ""}, "group_id: '' must be a non-empty str"),
        ({"group_id": 5}, "group_id: 5 must be a non-empty str"),
        ({"group_protocol": "new"}, "group_protocol: 'new' is not one of classic, consumer"),
        ({"auto_offset_reset": "smallest"}, "auto_offset_reset: 'smallest' is not one of"),
        ({"isolation_level": "serializable"}, "isolation_level: 'serializable' is not one of"),
        ({"max_poll_records": 0}, "max_poll_records: 0 must be more than 0"),
        ({"fetch_buffer_bytes": -1}, "fetch_buffer_bytes: -1 must be more than 0"),
        ({"retry_backoff_ms": -1}, "retry_backoff_ms: -1 must be 0 or more"),
        ({"session_timeout_ms": True}, "session_timeout_ms: expected an int, got True"),
        ({"fetch_min_bytes": 1.5}, "fetch_min_bytes: expected an int, got 1.5"),
        (
            {"heartbeat_interval_ms": 10_000, "session_timeout_ms": 10_000},
            "heartbeat_interval_ms: must be below session_timeout_ms",
        ),
        ({"partition_assignment_strategy": ()}, "partition_assignment_strategy: name at least"),
    ],
)
def test_bad_settings_are_named(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(LocalProtocolError, match=message.replace("(", r"\(")):
        ConsumerConfig(**settings)


def test_defaults_and_normalized_values() -> None:
    cfg = ConsumerConfig()
    assert cfg.group_id is None and not cfg.read_committed
    assert cfg.partition_assignment_strategy == ("range", "cooperative-sticky")
    one = ConsumerConfig(partition_assignment_strategy="range")  # type: ignore[arg-type]
    assert one.partition_assignment_strategy == ("range",)
    listed = ConsumerConfig(partition_assignment_strategy=["sticky"])  # type: ignore[arg-type]
    assert listed.partition_assignment_strategy == ("sticky",)
    assert ConsumerConfig(isolation_level="read_committed").read_committed
    assert ConsumerConfig(retry_backoff_ms=0, fetch_max_wait_ms=0).retry_backoff_ms == 0

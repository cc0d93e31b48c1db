"""docs/seed-map.md names a test for every seed row; every named test must exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SEED_MAP = ROOT / "docs" / "seed-map.md"


def test_every_referenced_test_exists() -> None:
    text = SEED_MAP.read_text()
    refs = re.findall(r"`(test_\w+\.py)(?:::(test_\w+(?:\*)?))?`", text)
    assert len(refs) > 40
    current_file = None
    missing = []
    for file_name, func in refs:
        path = ROOT / "tests" / "client" / file_name
        if not path.exists():
            missing.append(file_name)
            continue
        current_file = path.read_text()
        if func:
            pattern = func.rstrip("*")
            if not re.search(rf"def {pattern}", current_file):
                missing.append(f"{file_name}::{func}")
    # "`::test_x`" shorthand refers to the file named just before it.
    for ref in re.findall(r"`::(test_\w+)`", text):
        if not any(
            re.search(rf"def {ref}\b", p.read_text())
            for p in (ROOT / "tests" / "client").glob("test_*.py")
        ):
            missing.append(ref)
    assert not missing, f"docs/seed-map.md names tests that do not exist: {missing}"


def test_every_seed_row_of_the_checklist_is_mapped() -> None:
    text = SEED_MAP.read_text()
    for heading in ("## 001", "## 000", "## 002", "## 004"):
        assert heading in text
    for name in (
        "update_metadata",
        "failed_update",
        "request_update",
        "ttl()",
        "refresh_backoff",
        "brokers()",
        "broker_metadata",
        "partitions_for_topic",
        "available_partitions_for_topic",
        "leader_for_partition",
        "partitions_for_broker",
        "topics(exclude_internal_topics",
        "add_group_coordinator",
        "coordinator_for_group",
        "add_listener",
        "with_partitions",
        "cluster[broker_id]",
        "start()",
        "heal()",
        "get_metadata",
        "process_brokers",
        "get_leader",
        "stop()",
        "_get_unique_req_handler",
        "from_metadata",
        "socket_timeout_ms",
        "buffer_size",
        "source_host",
        "reconnect_backoff_max_ms",
        "receive_buffer_bytes",
        "security_protocol",
        "sasl_mechanism",
        "check_version",
        "least_loaded_node",
        "in_flight_request_count",
        "add_topic",
        "set_topics",
        "metric_group_prefix",
        "is_ready",
        "connection_delay",
        "maybe_connect",
        "bootstrap_connected",
    ):
        assert name in text, f"seed-map.md does not map {name}"

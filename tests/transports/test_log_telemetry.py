"""How the client log reports the telemetry machine's transitions (KIP-714)."""

from __future__ import annotations

import logging

import pytest

from kafkacore.errors import NoCommonVersionError
from kafkacore.transports._log import ClientLog


def _levels(caplog: pytest.LogCaptureFixture, **fields: object) -> list[tuple[int, str]]:
    caplog.clear()
    caplog.set_level(logging.DEBUG, logger="kafkacore")
    ClientLog(client_id="t")("telemetry", {"old": "push_needed", "why": "w", **fields})
    return [(r.levelno, r.getMessage()) for r in caplog.records]


def test_a_transition_is_a_debug_line_naming_both_states(caplog: pytest.LogCaptureFixture) -> None:
    ((level, text),) = _levels(caplog, state="push_in_progress", error=None)
    assert level == logging.DEBUG
    assert "client telemetry (KIP-714): push_needed -> push_in_progress (w)" in text


def test_a_broker_error_that_stops_telemetry_is_info(caplog: pytest.LogCaptureFixture) -> None:
    ((level, text),) = _levels(caplog, state="disabled", error=ValueError("code 42"))
    assert level == logging.INFO and "-> disabled" in text and "code 42" in text


def test_a_broker_without_a_plugin_stops_it_quietly(caplog: pytest.LogCaptureFixture) -> None:
    ((level, _),) = _levels(caplog, state="disabled", error=NoCommonVersionError("no plugin"))
    assert level == logging.DEBUG

"""A client on a listener of another security protocol is told which to set.

Real broker listeners (tests/transports/conftest.py ``kafka_broker``: PLAINTEXT,
SASL_PLAINTEXT, SSL, SASL_SSL), every transport. The core's side is unit
tested in tests/client/test_listener_hints.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Flavor

pytestmark = pytest.mark.anyio


def _chain(error: BaseException | None) -> str:
    """The error's text and every cause's (the hint may sit on the cause)."""
    parts = []
    while error is not None:
        parts.append(str(error))
        error = error.__cause__ or error.__context__
    return " <- ".join(parts)


async def test_plaintext_client_on_a_tls_listener_is_told_to_set_ssl(
    flavor: Flavor, kafka_broker: Any
) -> None:
    err = await flavor.connect_error(
        kafka_broker.bootstrap_for("SSL"), request_timeout_ms=4000, reconnect_backoff_ms=200
    )
    text = _chain(err)
    assert "answered with TLS: set security_protocol=SSL" in text, text
    assert "max_frame_size" not in text


async def test_plaintext_client_on_a_sasl_listener_gets_the_sasl_hint(
    flavor: Flavor, kafka_broker: Any
) -> None:
    err = await flavor.connect_error(
        kafka_broker.bootstrap_for("SASL_PLAINTEXT"),
        request_timeout_ms=4000,
        reconnect_backoff_ms=200,
    )
    text = _chain(err)
    assert "SASL listener" in text and "security_protocol=SASL_PLAINTEXT" in text, text

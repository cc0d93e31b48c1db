"""ACL denials surface as the right authorization error, at once, on every transport.

alice (SCRAM-SHA-512 over SASL_PLAINTEXT) may do everything on ``ok-*``
topics, groups and transactional ids and nothing on ``no-*`` ones (see
conftest). Each denial must reach the caller as the error class of its
resource (topic, group, transactional id), not as a timeout; each test
also runs the allowed twin, so a denial cannot pass for a broken setup.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kafkacore.client import TopicPartition
from kafkacore.producer import RecordMetadata
from kafkacore.protocol.error_codes import (
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)
from tests.campaign.adapters import CallTimer, open_producer, run_flavor
from tests.faults.drive import (
    chain,
    chain_text,
    consumer_assign_poll,
    consumer_poll_until_error,
    produce,
)
from tests.security.conftest import Secure

pytestmark = pytest.mark.timeout(180)

#: Well before any default timeout (60 s); a denial is a final answer.
PROMPT_S = 10.0
LONG = {"delivery_timeout_ms": 25000, "max_block_ms": 25000, "default_api_timeout_ms": 25000}


def _alice(secure: Secure) -> tuple[str, dict[str, Any]]:
    options = secure.sasl("SASL_PLAINTEXT", "SCRAM-SHA-512")
    return str(options.pop("bootstrap_servers")), options


def _denied(out: Any, cls: type[BaseException]) -> None:
    assert out.error is not None, f"expected {cls.__name__}, got {out.value!r}"
    assert any(isinstance(e, cls) for e in chain(out.error)), chain_text(out.error)
    assert out.elapsed < PROMPT_S, f"after {out.elapsed:.1f} s: {chain_text(out.error)}"


def _producer_options(options: dict[str, Any]) -> dict[str, Any]:
    return {**options, **{k: v for k, v in LONG.items() if k != "default_api_timeout_ms"}}


def test_produce_to_a_denied_topic(secure_kafka: Secure, flavor: str) -> None:
    bootstrap, options = _alice(secure_kafka)
    popts = _producer_options(options)
    allowed = produce(flavor, bootstrap, secure_kafka.ok("t"), [b"a"], bound_s=60, **popts)
    assert isinstance(allowed.outcomes[0].value, RecordMetadata), chain_text(
        allowed.outcomes[0].error
    )
    denied = produce(flavor, bootstrap, secure_kafka.no("t"), [b"a"], bound_s=60, **popts)
    _denied(denied.outcomes[0], TopicAuthorizationFailedError)


def test_fetch_from_a_denied_topic(secure_kafka: Secure, flavor: str) -> None:
    bootstrap, options = _alice(secure_kafka)
    common = {**options, "auto_offset_reset": "earliest", "enable_auto_commit": False}
    allowed = consumer_assign_poll(
        flavor, bootstrap, [TopicPartition(secure_kafka.ok("t"), 0)], want=1, window_s=10,
        **common, default_api_timeout_ms=25000,
    )  # fmt: skip
    assert allowed.error is None and allowed.value, chain_text(allowed.error)
    denied = consumer_assign_poll(
        flavor, bootstrap, [TopicPartition(secure_kafka.no("t"), 0)], want=1,
        window_s=PROMPT_S + 5, **common, default_api_timeout_ms=25000,
    )  # fmt: skip
    _denied(denied, TopicAuthorizationFailedError)


def test_join_a_denied_group(secure_kafka: Secure, flavor: str) -> None:
    bootstrap, options = _alice(secure_kafka)
    common = {**options, "auto_offset_reset": "earliest", "default_api_timeout_ms": 25000}
    topic = secure_kafka.ok("t")
    allowed = consumer_poll_until_error(
        flavor, bootstrap, topic, window_s=3.0, group_id=secure_kafka.ok(uuid.uuid4().hex[:6]),
        **common,
    )  # fmt: skip
    assert allowed.error is None, chain_text(allowed.error)
    denied = consumer_poll_until_error(
        flavor, bootstrap, topic, window_s=PROMPT_S + 5,
        group_id=secure_kafka.no(uuid.uuid4().hex[:6]), **common,
    )  # fmt: skip
    _denied(denied, GroupAuthorizationFailedError)


def test_transactions_with_a_denied_transactional_id(secure_kafka: Secure, flavor: str) -> None:
    bootstrap, options = _alice(secure_kafka)
    popts = _producer_options(options)

    def init(transactional_id: str) -> Any:
        async def main() -> Any:
            import time

            from tests.faults.drive import Outcome

            start = time.monotonic()
            try:
                async with open_producer(
                    flavor, bootstrap, CallTimer(), transactional_id=transactional_id, **popts
                ) as producer:
                    await producer.init_transactions(25.0)
                    await producer.begin_transaction()
                    await producer.commit_transaction(25.0)
            except Exception as exc:
                return Outcome(exc, time.monotonic() - start)
            return Outcome(None, time.monotonic() - start)

        return run_flavor(flavor, main)

    allowed = init(secure_kafka.ok(uuid.uuid4().hex[:6]))
    assert allowed.error is None, chain_text(allowed.error)
    _denied(init(secure_kafka.no(uuid.uuid4().hex[:6])), TransactionalIdAuthorizationFailedError)

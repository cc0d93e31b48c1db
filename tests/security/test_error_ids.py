"""A denial from the ACL broker keeps the code and the broker id, on every transport
(issue 13): alice may not write on ``no-*`` topics (see conftest)."""

from __future__ import annotations

import pytest

from kafkacore.protocol.error_codes import TopicAuthorizationFailedError
from tests.faults.drive import chain, chain_text, produce
from tests.security.conftest import Secure
from tests.security.test_acl import _alice, _producer_options

pytestmark = pytest.mark.timeout(120)


def test_a_denied_produce_names_the_broker(secure_kafka: Secure, flavor: str) -> None:
    bootstrap, options = _alice(secure_kafka)
    denied = produce(
        flavor, bootstrap, secure_kafka.no("ids"), [b"a"], bound_s=60, **_producer_options(options)
    )
    error = denied.outcomes[0].error
    refusals = [e for e in chain(error) if isinstance(e, TopicAuthorizationFailedError)]
    assert refusals, chain_text(error)
    brokers = {node.node_id for node in secure_kafka.kafka.nodes}
    for refusal in refusals:
        assert refusal.node_id in brokers, (refusal.node_id, brokers, chain_text(error))
        assert f"broker {refusal.node_id}" in str(refusal), chain_text(error)

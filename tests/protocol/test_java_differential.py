"""kafkacore's encoder against Kafka's own (kafka-clients 4.3.1), byte for byte.

For samples of every (message, version), the message is rendered in Kafka's
JSON form, read by the generated Java JsonConverter and serialized by the
Java message class; the bytes must equal kafkacore's encoding, and
kafkacore must decode Java's bytes back to the same message.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from kafkacore.protocol import messages
from kafkacore.protocol._base import Message
from tests.protocol.conftest import JavaCodec
from tests.protocol.javajson import dumps
from tests.protocol.strategies import all_cases, message_strategy

pytestmark = pytest.mark.java

PER_CASE = settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize(("name", "version"), all_cases())
def test_bytes_equal_javas(java_codec: JavaCodec, name: str, version: int) -> None:
    cls = getattr(messages, name)

    @PER_CASE
    @given(message_strategy(cls, version, java=True))
    def check(msg: Message) -> None:
        ours = msg.encode(version)
        theirs = java_codec.encode(cls.STRUCT_NAME, version, dumps(msg, version))
        assert ours == theirs
        assert cls.decode(theirs, version) == msg

    check()


def test_default_messages_equal_javas(java_codec: JavaCodec) -> None:
    for name, version in all_cases():
        cls = getattr(messages, name)
        msg = cls()
        assert msg.encode(version) == java_codec.encode(name, version, dumps(msg, version))

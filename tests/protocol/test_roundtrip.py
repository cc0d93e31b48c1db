"""Property tests over every (message, version) of the 4.3.1 schemas.

For messages drawn from the schemas' own field metadata:
decode(encode(x)) == x, re-encoding gives the same bytes, every strict
prefix of the encoding is a DecodeError, and so is one trailing byte.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from kafkacore.errors import DecodeError
from kafkacore.protocol import messages
from tests.protocol.strategies import all_cases, message_strategy

# ~625 (message, version) pairs: keep each property small so the whole
# module stays around a minute on two shared cores.
PER_CASE = settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize(("name", "version"), all_cases())
def test_round_trip(name: str, version: int) -> None:
    cls = getattr(messages, name)

    @PER_CASE
    @given(message_strategy(cls, version))
    def check(msg: messages.MetadataResponse) -> None:
        data = msg.encode(version)
        back = cls.decode(data, version)
        assert back == msg
        assert back.encode(version) == data
        with pytest.raises(DecodeError):
            cls.decode(data + b"\x00", version)
        step = max(1, len(data) // 32)
        for cut in range(0, len(data), step):
            with pytest.raises(DecodeError):
                cls.decode(data[:cut], version)

    check()

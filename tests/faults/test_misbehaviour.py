"""More ways a broker breaks the protocol, beyond the issue's list, on every transport.

Raw requests (``KafkaClient.send``) show the error each fault must give:
the right class, the broker named, within the request timeout; then the
same client must work again on a new connection. Producer runs show that
an idempotent producer rides over connection-level faults (its retry is the
same batch with the same sequence, which a real broker deduplicates).
"""

from __future__ import annotations

import re
import time

import pytest

from kafkacore.errors import (
    DecodeError,
    KafkaConnectionError,
    KafkaTimeoutError,
    RemoteProtocolError,
)
from kafkacore.producer import RecordMetadata
from kafkacore.protocol import messages as m
from kafkacore.protocol.messages.produce_response import (
    PartitionProduceResponse,
    TopicProduceResponse,
)
from tests.faults.drive import (
    Outcome,
    chain,
    chain_text,
    client_calls,
    metadata_request,
    produce,
)
from tests.faults.wirebroker import API, Fault, Kind, Seen, WireBroker, once

pytestmark = pytest.mark.timeout(120)

BROKER_NAMED = re.compile(r"node 1\b|broker 1\b|127\.0\.0\.1:\d+")
REQUEST_TIMEOUT_MS = 1500
SLACK_S = 0.6

#: MetadataResponse v12+ body: throttle_time_ms, then a compact array count of ~2**32.
HUGE_COMPACT_ARRAY = b"\0\0\0\0" + b"\xff\xff\xff\xff\x0f" + b"\0" * 8


def _twice(broker: WireBroker, flavor: str, fault: Fault) -> tuple[Outcome, Outcome]:
    """Fault the first raw Metadata after bootstrap, then send another one."""
    broker.topic("t")
    broker.faults[API.METADATA] = once(fault, nth=2)
    request = metadata_request("t")
    outs = client_calls(
        flavor,
        broker.bootstrap,
        [("send", request), ("send", request)],
        bound_s=20,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
    )
    assert len(outs) == 2, [chain_text(o.error) for o in outs]
    return outs[0], outs[1]


def _recovered(out: Outcome) -> None:
    assert isinstance(out.value, m.MetadataResponse), chain_text(out.error)


def _failed_with(out: Outcome, cls: type[BaseException], pattern: str) -> None:
    assert out.error is not None, f"expected {cls.__name__}, got {out.value!r}"
    assert any(isinstance(e, cls) for e in chain(out.error)), chain_text(out.error)
    assert re.search(pattern, chain_text(out.error), re.I), chain_text(out.error)
    assert BROKER_NAMED.search(str(out.error)), str(out.error)
    assert out.elapsed <= REQUEST_TIMEOUT_MS / 1000 + SLACK_S, out.elapsed


def test_truncated_frame_then_close(broker: WireBroker, flavor: str) -> None:
    first, second = _twice(broker, flavor, Fault(Kind.TRUNCATE_CLOSE))
    _failed_with(first, KafkaConnectionError, "lost|closed")
    _recovered(second)


def test_reset_mid_frame(broker: WireBroker, flavor: str) -> None:
    first, second = _twice(broker, flavor, Fault(Kind.RESET_MID_FRAME))
    _failed_with(first, KafkaConnectionError, "reset")
    _recovered(second)


def test_stall_ends_at_the_request_timeout(broker: WireBroker, flavor: str) -> None:
    first, second = _twice(broker, flavor, Fault(Kind.STALL))
    _failed_with(first, KafkaTimeoutError, str(REQUEST_TIMEOUT_MS))
    assert first.elapsed >= REQUEST_TIMEOUT_MS / 1000 - 0.05
    _recovered(second)


def test_slow_drip_one_byte_per_write_is_a_normal_answer(broker: WireBroker, flavor: str) -> None:
    first, second = _twice(broker, flavor, Fault(Kind.DRIP))
    _recovered(first)
    assert [t.name for t in first.value.topics] == ["t"]
    _recovered(second)


def test_wrong_correlation_id(broker: WireBroker, flavor: str) -> None:
    first, second = _twice(broker, flavor, Fault(Kind.WRONG_CORRELATION))
    _failed_with(first, RemoteProtocolError, "correlation id 10\\d\\d")
    _recovered(second)


def test_duplicate_response_delivers_the_first_and_drops_the_connection(
    broker: WireBroker, flavor: str
) -> None:
    first, second = _twice(broker, flavor, Fault(Kind.DUPLICATE))
    _recovered(first)
    _recovered(second)
    # The duplicate had nothing in flight to match: that connection was dropped.
    assert len(broker.connections) >= 3


def test_absurd_frame_size(broker: WireBroker, flavor: str) -> None:
    first, second = _twice(broker, flavor, Fault(Kind.ABSURD_SIZE))
    _failed_with(first, DecodeError, "frame size 2147483647")
    _recovered(second)


def test_absurd_array_count_fails_the_request_promptly(broker: WireBroker, flavor: str) -> None:
    """A response whose body does not decode must complete its request with the
    DecodeError, at once: not leave it waiting for the caller's own timeout."""
    first, second = _twice(broker, flavor, Fault(Kind.RAW_BODY, HUGE_COMPACT_ARRAY))
    _failed_with(first, DecodeError, "count")
    _recovered(second)


# -- the producer over connection faults ----------------------------------------------


@pytest.mark.parametrize(
    "kind", [Kind.TRUNCATE_CLOSE, Kind.RESET_MID_FRAME, Kind.WRONG_CORRELATION, Kind.DUPLICATE]
)
def test_producer_rides_over_a_broken_ack(broker: WireBroker, flavor: str, kind: Kind) -> None:
    broker.topic("t")
    broker.faults[API.PRODUCE] = once(Fault(kind))
    run = produce(
        flavor, broker.bootstrap, "t", [b"a", b"b"], bound_s=30, delivery_timeout_ms=10000,
        linger_ms=0,
    )  # fmt: skip
    for out in run.outcomes:
        assert isinstance(out.value, RecordMetadata), chain_text(out.error)
        assert out.elapsed < 5.0  # one retry after a short backoff, not a timeout


def test_producer_slow_drip_ack(broker: WireBroker, flavor: str) -> None:
    broker.topic("t")
    broker.faults[API.PRODUCE] = once(Fault(Kind.DRIP))
    run = produce(flavor, broker.bootstrap, "t", [b"a"], bound_s=30, linger_ms=0)
    [out] = run.outcomes
    assert isinstance(out.value, RecordMetadata), chain_text(out.error)
    assert out.value.offset == 0 and len(broker.seen(API.PRODUCE)) == 1


def _unknown_code(broker: WireBroker, seen: Seen) -> object:
    return m.ProduceResponse(
        responses=[
            TopicProduceResponse(
                name=t.name,
                topic_id=t.topic_id,
                partition_responses=[
                    PartitionProduceResponse(index=p.index, error_code=32767, base_offset=-1)
                    for p in t.partition_data
                ],
            )
            for t in seen.body.topic_data
        ]
    )


def test_unknown_error_code_in_a_produce_answer_fails_the_record_as_such(
    broker: WireBroker, flavor: str
) -> None:
    broker.topic("t")
    broker.bodies[API.PRODUCE] = _unknown_code
    start = time.monotonic()
    run = produce(flavor, broker.bootstrap, "t", [b"a"], bound_s=30, linger_ms=0)
    [out] = run.outcomes
    assert out.error is not None
    assert "32767" in str(out.error), chain_text(out.error)
    assert time.monotonic() - start < 5.0
    assert len(broker.seen(API.PRODUCE)) == 1  # not retried: the code is not known retriable

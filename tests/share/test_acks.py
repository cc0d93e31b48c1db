"""Acknowledgement bookkeeping (kafkacore.share.acks): states, ranges, modes."""

from __future__ import annotations

import pytest

from kafkacore.client.metadata import TopicPartition
from kafkacore.errors import LocalProtocolError
from kafkacore.share.acks import (
    AcknowledgementMode,
    Acknowledgements,
    AcknowledgeType,
    AckRange,
    PartitionAcks,
    ack_ranges,
)

TP = TopicPartition("t", 0)
A, R, J, G = (
    AcknowledgeType.ACCEPT,
    AcknowledgeType.RELEASE,
    AcknowledgeType.REJECT,
    AcknowledgeType.GAP,
)


@pytest.mark.parametrize(
    ("acks", "ranges"),
    [
        ({}, []),
        ({5: A}, [AckRange(5, 5, (1,))]),
        ({5: A, 6: A, 7: A}, [AckRange(5, 7, (1,))]),
        ({5: A, 6: R, 7: J}, [AckRange(5, 7, (1, 2, 3))]),
        ({5: A, 7: A}, [AckRange(5, 5, (1,)), AckRange(7, 7, (1,))]),
        ({9: G, 8: A}, [AckRange(8, 9, (1, 0))]),
    ],
)
def test_ack_ranges_group_consecutive_offsets(
    acks: dict[int, AcknowledgeType], ranges: list[AckRange]
) -> None:
    assert ack_ranges(acks) == ranges


def test_a_delivery_moves_delivered_pending_in_flight_settled() -> None:
    part = PartitionAcks(TP)
    part.deliver(3, 1, 10.0)
    assert part.delivered == {3: (1, 10.0)}
    part.acknowledge(3, 1, R, seq=1)
    assert (part.delivered, part.pending) == ({}, {3: (R, 1, 10.0)})
    batches, live, expired = part.take(now=5.0)
    assert (batches, live, expired) == ([AckRange(3, 3, (2,))], frozenset({3}), frozenset())
    assert part.in_flight == {3: (R, 1)} and part.min_seq() == 1
    assert part.settle({3}) == {3: R}
    assert part.min_seq() is None


@pytest.mark.parametrize(
    ("setup", "offset", "count", "message"),
    [
        ("none", 3, 1, "not handed out"),
        ("acked", 3, 1, "already acknowledged"),
        ("redelivered", 3, 1, "is stale"),
    ],
)
def test_acknowledge_refuses_what_is_not_held(
    setup: str, offset: int, count: int, message: str
) -> None:
    part = PartitionAcks(TP)
    if setup == "acked":
        part.deliver(3, 1, 10.0)
        part.acknowledge(3, 1, A, seq=1)
    elif setup == "redelivered":
        part.deliver(3, 1, 10.0)
        part.deliver(3, 2, 20.0)  # the lock ran out, the record came back
    with pytest.raises(LocalProtocolError, match=message):
        part.acknowledge(offset, count, A, seq=2)


def test_take_leaves_out_acknowledgements_whose_lock_ran_out() -> None:
    part = PartitionAcks(TP)
    part.deliver(1, 1, 5.0)
    part.deliver(2, 1, 50.0)
    part.acknowledge(1, 1, A, 1)
    part.acknowledge(2, 1, A, 2)
    batches, live, expired = part.take(now=10.0)
    assert batches == [AckRange(2, 2, (1,))]
    assert (live, expired) == (frozenset({2}), frozenset({1}))
    assert part.settle({1}) == {1: A}  # the expired one is settled by its owner too


def test_gaps_are_settled_without_being_reported() -> None:
    part = PartitionAcks(TP)
    part.gap(4, 1, 10.0)
    _, live, _ = part.take(0.0)
    assert part.settle(live) == {}


def test_implicit_mode_accepts_the_last_poll_and_refuses_acknowledge() -> None:
    acks = Acknowledgements(AcknowledgementMode.IMPLICIT)
    acks.deliver(TP, 1, 1, 10.0)
    acks.deliver(TP, 2, 1, 10.0)
    with pytest.raises(LocalProtocolError, match="implicit mode"):
        acks.acknowledge(TP, 1, 1, A)
    acks.before_poll()
    assert acks.part(TP).pending == {1: (A, 1, 10.0), 2: (A, 1, 10.0)}
    assert acks.unsettled_through(acks.seq) == {TP}
    assert acks.has_pending() and acks.has_pending([TP])


def test_explicit_mode_insists_every_record_is_acknowledged() -> None:
    acks = Acknowledgements(AcknowledgementMode.EXPLICIT)
    acks.deliver(TP, 1, 1, 10.0)
    with pytest.raises(LocalProtocolError, match="not acknowledged"):
        acks.before_poll()
    acks.accept_delivered()  # explicit mode: nothing implicit
    assert acks.unacknowledged() == [(TP, 1)]
    acks.acknowledge(TP, 1, 1, J)
    acks.before_poll()
    assert acks.part(TP).pending == {1: (J, 1, 10.0)}


@pytest.mark.parametrize("kind", [AcknowledgeType.GAP, 1, "accept"])
def test_acknowledge_takes_accept_release_or_reject(kind: object) -> None:
    acks = Acknowledgements(AcknowledgementMode.EXPLICIT)
    acks.deliver(TP, 1, 1, 10.0)
    with pytest.raises(LocalProtocolError, match="not ACCEPT, RELEASE or REJECT"):
        acks.acknowledge(TP, 1, 1, kind)  # type: ignore[arg-type]


def test_acknowledge_of_an_unknown_partition_and_lost_partitions() -> None:
    acks = Acknowledgements(AcknowledgementMode.EXPLICIT)
    with pytest.raises(LocalProtocolError, match="not handed out"):
        acks.acknowledge(TP, 1, 1, A)
    acks.deliver(TP, 1, 1, 10.0)
    acks.drop_delivered([TP, TopicPartition("t", 9)])
    assert acks.unacknowledged() == []
    assert [p.tp for p in acks] == [TP]

"""KIP-447 against a real broker: offsets committed in a transaction carry the
consumer's group identity, so the coordinator fences a member that left.

A consume-transform-produce loop passes ``consumer.group_metadata()`` to
``send_offsets_to_transaction``. While that member is in the group the commit
lands; once it has left (and another member took over) the same identity is
refused, where a bare group id would have been accepted.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
import trio

from kafkacore.client import TopicPartition
from kafkacore.consumer import ConsumerGroupMetadata
from kafkacore.transports.asyncio import AsyncKafkaConsumer
from kafkacore.transports.selector import KafkaConsumer
from kafkacore.transports.trio import TrioKafkaConsumer
from tests.producer.drivers import FLAVORS, run

PROTOCOLS = ("classic", "consumer")


def _joined(consumer: KafkaConsumer, within_s: float = 30.0) -> ConsumerGroupMetadata:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        consumer.poll_records(timeout=0.2)
        meta = consumer.group_metadata()
        if consumer.assignment() and meta.generation_id > 0 and meta.member_id:
            return meta
    raise AssertionError(f"not a group member after {within_s} s: {consumer.group_metadata()}")


def _txn(flavor: str, bootstrap: str, tp: TopicPartition, offset: int, group: Any) -> list[Any]:
    steps = [("init",), ("begin",), ("send", tp.topic, b"out", None, None, tp.partition)]
    steps += [("offsets", {tp: offset}, group), ("commit",)]
    return run(flavor, bootstrap, steps, transactional_id=f"t447-{uuid.uuid4().hex[:8]}")


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_a_member_commits_in_a_transaction_and_is_fenced_once_it_left(
    kafka_broker: Any, flavor: str, protocol: str
) -> None:
    topic = f"k447-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, partitions=1)
    group = f"g447-{uuid.uuid4().hex[:8]}"
    tp = TopicPartition(topic, 0)
    options = {"group_id": group, "group_protocol": protocol, "enable_auto_commit": False}
    with KafkaConsumer(topic, bootstrap_servers=kafka_broker.bootstrap, **options) as first:
        meta = _joined(first)
        assert meta.group_id == group
        *_, committed = _txn(flavor, kafka_broker.bootstrap, tp, 5, meta)
        assert committed is None, committed
        assert first.committed([tp])[tp].offset == 5  # type: ignore[union-attr]
    # ``first`` left; a new member owns the partition under a new generation.
    with KafkaConsumer(topic, bootstrap_servers=kafka_broker.bootstrap, **options) as second:
        _joined(second)
        fenced = _txn(flavor, kafka_broker.bootstrap, tp, 9, meta)
        refused = [r for r in fenced if isinstance(r, BaseException)]
        assert refused, f"a departed member's offsets were accepted: {fenced}"
        text = " ".join(f"{type(e).__name__}: {e}" for e in refused)
        assert any(
            code in text
            for code in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "STALE_MEMBER_EPOCH",
                         "FENCED_MEMBER_EPOCH", "UnknownMemberId", "IllegalGeneration")
        ), text  # fmt: skip
        assert second.committed([tp])[tp].offset == 5  # type: ignore[union-attr]
        # Without the identity nothing is fenced: that is what KIP-447 adds.
        *_, bare = _txn(flavor, kafka_broker.bootstrap, tp, 7, group)
        assert bare is None, bare
        assert second.committed([tp])[tp].offset == 7  # type: ignore[union-attr]


def test_group_metadata_on_the_async_consumers(kafka_broker: Any) -> None:
    topic = f"k447a-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, partitions=1)

    async def member(consumer: Any) -> ConsumerGroupMetadata:
        for _ in range(150):
            await consumer.poll_records(timeout=0.2)
            meta: ConsumerGroupMetadata = consumer.group_metadata()
            if consumer.assignment() and meta.generation_id > 0:
                return meta
        raise AssertionError("not a member after 30 s")

    async def on_asyncio() -> ConsumerGroupMetadata:
        async with AsyncKafkaConsumer(
            topic, bootstrap_servers=kafka_broker.bootstrap, group_id="ga447"
        ) as c:
            return await member(c)

    async def on_trio() -> ConsumerGroupMetadata:
        async with TrioKafkaConsumer(
            topic, bootstrap_servers=kafka_broker.bootstrap, group_id="gt447"
        ) as c:
            return await member(c)

    for meta, group in ((asyncio.run(on_asyncio()), "ga447"), (trio.run(on_trio), "gt447")):
        assert meta.group_id == group and meta.member_id and meta.generation_id > 0


def test_group_metadata_needs_a_group(kafka_broker: Any) -> None:
    with (
        KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap) as consumer,
        pytest.raises(Exception, match="no group_id"),
    ):
        consumer.group_metadata()

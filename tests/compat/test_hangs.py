"""The peers' usage that hung kafkacore with no error (issue 21), on every transport.

Each test did not finish before its fix (pytest-timeout ended it): the call
waited for ever, or until a bound far above what the answer takes. Each now
asserts the outcome the peers document, and is bounded by events (the call
returns or raises), never by how long it took.

- ``send_offsets_to_transaction({tp: OffsetAndMetadata(offset, metadata)},
  group)`` failed to encode on the client and was retried until its timeout;
  a request that cannot be encoded was retried the same way. Now the
  offsets commit with their metadata, and an unencodable one fails the call
  with the encoding error itself.
- ``auto_offset_reset="none"``: the first poll raised, later ones returned
  nothing, so aiokafka's ``getone()`` waited for ever. Now every poll raises
  until the user seeks.
- A consumer without a group subscribed to a topic that did not exist yet
  never saw it once created (named topics and patterns).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kafkacore import KafkaConsumer
from kafkacore.client import TopicPartition
from kafkacore.consumer import NoOffsetForPartitionError, OffsetAndMetadata
from kafkacore.errors import LocalProtocolError
from kafkacore.transports.selector import KafkaClient
from tests.compat.drive import TRANSPORTS, call, run, sleep
from tests.consumer.helpers import produce

pytestmark = pytest.mark.broker


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_send_offsets_to_transaction_takes_offset_and_metadata(
    kafka_broker: Any, transport: str
) -> None:
    topic, group = _name("txn-offsets"), _name("txn-group")
    kafka_broker.create_topic(topic, 1)
    tp = TopicPartition(topic, 0)

    async def scenario(producer: Any) -> None:
        await call(producer, "init_transactions")
        await call(producer, "begin_transaction")
        await call(producer, "send", topic, b"v")
        await call(
            producer, "send_offsets_to_transaction", {tp: OffsetAndMetadata(7, "m-7")}, group, 30
        )
        await call(producer, "commit_transaction")
        await call(producer, "begin_transaction")
        # Metadata that cannot be UTF-8 encoded passes every check of the call
        # and fails in the encoder: the call must fail with that, not retry.
        with pytest.raises(LocalProtocolError, match="cannot be encoded"):
            await call(
                producer,
                "send_offsets_to_transaction",
                {tp: OffsetAndMetadata(8, "\ud800")},
                group,
                30,
            )

    run(
        "producer",
        transport,
        scenario,
        kafka_broker.bootstrap,
        transactional_id=_name(f"txn-{transport}"),
    )
    with KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap, group_id=group) as consumer:
        assert consumer.committed(tp, metadata=True) == OffsetAndMetadata(7, "m-7", None)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_bad_offsets_fail_the_call_naming_the_partition(kafka_broker: Any, transport: str) -> None:
    topic = _name("txn-bad")
    kafka_broker.create_topic(topic, 1)
    tp = TopicPartition(topic, 0)

    async def scenario(producer: Any) -> None:
        await call(producer, "init_transactions")
        await call(producer, "begin_transaction")
        for bad, why in [(-1, "must be an int >= 0"), ("7", "give an int")]:
            with pytest.raises(ValueError, match=why) as raised:
                await call(producer, "send_offsets_to_transaction", {tp: bad}, "g", 30)
            assert topic in str(raised.value)
        await call(producer, "abort_transaction")

    run("producer", transport, scenario, kafka_broker.bootstrap, transactional_id=_name("bad"))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_no_reset_policy_raises_on_every_poll_until_seek(kafka_broker: Any, transport: str) -> None:
    topic = _name("no-reset")
    kafka_broker.create_topic(topic, 1)
    with KafkaClient(kafka_broker.bootstrap) as client:
        produce(client, topic, 0, [b"a", b"b", b"c"])
    tp = TopicPartition(topic, 0)

    async def scenario(consumer: Any) -> None:
        consumer.assign([tp])
        for _ in range(3):
            with pytest.raises(NoOffsetForPartitionError, match="auto_offset_reset is 'none'"):
                await call(consumer, "poll_records", timeout_ms=2000)
        if transport != "selector":  # aiokafka's getone(): raised, not waiting for ever
            with pytest.raises(NoOffsetForPartitionError):
                await call(consumer, "getone")
        await call(consumer, "seek", tp, 1)
        got: list[bytes] = []
        while len(got) < 2:
            got += [r.value for r in await call(consumer, "poll_records", timeout_ms=2000)]
        assert got == [b"b", b"c"]

    run(
        "consumer",
        transport,
        scenario,
        bootstrap_servers=kafka_broker.bootstrap,
        auto_offset_reset="none",
    )


@pytest.mark.parametrize("by", ["names", "pattern"])
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_groupless_subscription_picks_up_a_topic_created_later(
    kafka_broker: Any, transport: str, by: str
) -> None:
    base = _name(f"later-{by}")
    first, second = f"{base}-1", f"{base}-2"

    async def scenario(consumer: Any) -> None:
        if by == "names":
            consumer.subscribe([first, second])
        else:
            consumer.subscribe(pattern=f"{base}-")  # re.match: a prefix, as both peers
        assert await call(consumer, "poll_records", timeout_ms=500) == []
        kafka_broker.create_topic(first, 2)
        with KafkaClient(kafka_broker.bootstrap) as client:
            produce(client, first, 1, [b"one"])
        got: list[Any] = []
        while not got:
            got += await call(consumer, "poll_records", timeout_ms=1000)
        assert [(r.topic, r.partition, r.value) for r in got] == [(first, 1, b"one")]
        kafka_broker.create_topic(second, 1)
        while TopicPartition(second, 0) not in consumer.assignment():
            await call(consumer, "poll_records", timeout_ms=200)
            await sleep(transport, 0.05)
        assert consumer.assignment() == {
            TopicPartition(first, 0),
            TopicPartition(first, 1),
            TopicPartition(second, 0),
        }
        assert consumer.subscription() == {first, second}

    run(
        "consumer",
        transport,
        scenario,
        bootstrap_servers=kafka_broker.bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        metadata_max_age_ms=500,
    )

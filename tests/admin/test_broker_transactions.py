"""AdminCore against a real broker: a transaction left open by a real
transactional producer is listed, described and aborted (KIP-664)."""

from __future__ import annotations

import contextlib
import time

import pytest

from kafkacore.admin import AbortTransactionSpec, NewTopic, OffsetSpec, TransactionState
from kafkacore.client.metadata import TopicPartition as TP
from kafkacore.testing import LocalKafka
from kafkacore.transports.selector import KafkaProducer
from tests.admin.conftest import Admin

pytestmark = pytest.mark.broker


def test_a_hanging_transaction_is_found_and_aborted(
    admin: Admin, kafka_broker: LocalKafka, unique: str
) -> None:
    topic, tid = f"adm-tx-{unique}", f"adm-tx-{unique}"
    admin.run(admin.core.create_topics([NewTopic(topic, 1, 1)], now=admin.now))
    tp = TP(topic, 0)
    producer = KafkaProducer(kafka_broker.bootstrap, transactional_id=tid)
    try:
        producer.init_transactions(30)
        producer.begin_transaction()
        for i in range(3):
            producer.send(topic, b"v%d" % i, partition=0)
        producer.flush(30)

        listing = admin.run(
            admin.core.list_transactions(states=[TransactionState.ONGOING], now=admin.now)
        )
        mine = [t for t in listing.transactions if t.transactional_id == tid]
        assert len(mine) == 1 and listing.errors == {}
        described = admin.run(admin.core.describe_transactions([tid], now=admin.now))[tid].result()
        assert described.state is TransactionState.ONGOING and described.partitions == {tp}
        assert described.producer_id == mine[0].producer_id

        producers = admin.run(admin.core.describe_producers([tp], now=admin.now))[tp].result()
        open_txn = [p for p in producers if p.producer_id == described.producer_id]
        assert len(open_txn) == 1 and open_txn[0].current_transaction_start_offset == 0
        committed = admin.run(
            admin.core.list_offsets(
                {tp: OffsetSpec.latest()}, isolation_level="read_committed", now=admin.now
            )
        )
        assert committed[tp].result().offset == 0  # the open transaction holds the LSO back

        state = open_txn[0]
        spec = AbortTransactionSpec(
            partition=tp,
            producer_id=state.producer_id,
            producer_epoch=state.producer_epoch,
            # No marker written for this producer yet: none known, 0 (as Kafka's tool does).
            coordinator_epoch=state.coordinator_epoch or 0,
        )
        assert admin.run(admin.core.abort_transaction(spec, now=admin.now)) is None
        end = time.monotonic() + 30
        while True:
            lso = admin.run(
                admin.core.list_offsets(
                    {tp: OffsetSpec.latest()}, isolation_level="read_committed", now=admin.now
                )
            )
            if lso[tp].result().offset == 4:  # three records and the abort marker
                break
            assert time.monotonic() < end, lso
            time.sleep(0.2)
        after = admin.run(admin.core.describe_producers([tp], now=admin.now))[tp].result()
        assert all(p.current_transaction_start_offset is None for p in after)
    finally:
        with contextlib.suppress(Exception):
            producer.close(5)

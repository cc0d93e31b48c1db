"""Test data for consumer tests: produce through the client core's selector transport.

The producer engineer's producer may not be ready; these helpers build
record batches with the records layer and send ProduceRequests directly,
including hand-driven transactions (InitProducerId, AddPartitionsToTxn,
Produce, EndTxn) for read_committed tests.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from kafkacore.client import PartitionLeader
from kafkacore.protocol import messages as m
from kafkacore.protocol.messages.produce_request import PartitionProduceData, TopicProduceData
from kafkacore.records import Compression, RecordBatchBuilder
from kafkacore.transports.selector import KafkaClient


def produce(
    client: KafkaClient,
    topic: str,
    partition: int,
    values: Sequence[bytes],
    *,
    keys: Sequence[bytes | None] | None = None,
    headers: Sequence[tuple[tuple[str, bytes | None], ...]] | None = None,
    compression: Compression = Compression.NONE,
    batch_records: int = 1000,
    producer: tuple[int, int, int] | None = None,
    transactional_id: str | None = None,
) -> int:
    """Append ``values`` to ``topic-partition``; returns the first offset."""
    first: int | None = None
    ts = int(time.time() * 1000)
    topic_id = client.metadata([topic]).topic_id(topic)  # Produce v13+ names topics by id
    for start in range(0, len(values), batch_records):
        chunk = values[start : start + batch_records]
        if producer is not None:
            pid, epoch, seq = producer
            b = RecordBatchBuilder(
                compression=compression,
                producer_id=pid,
                producer_epoch=epoch,
                base_sequence=seq + start,
                transactional=transactional_id is not None,
                batch_size=1 << 30,
            )
        else:
            b = RecordBatchBuilder(compression=compression, batch_size=1 << 30)
        for i, v in enumerate(chunk):
            k = keys[start + i] if keys is not None else None
            h = headers[start + i] if headers is not None else ()
            b.append(v, k, timestamp=ts, headers=h)
        data = b.build()
        req = m.ProduceRequest(
            transactional_id=transactional_id,
            acks=-1,
            timeout_ms=30000,
            topic_data=[
                TopicProduceData(
                    name=topic,
                    topic_id=topic_id,
                    partition_data=[PartitionProduceData(index=partition, records=data)],
                )
            ],
        )
        resp = client.send(req, target=PartitionLeader(topic, partition), timeout=60)
        pr = resp.responses[0].partition_responses[0]
        assert pr.error_code == 0, f"produce to {topic}-{partition}: error {pr.error_code}"
        if first is None:
            first = pr.base_offset
    assert first is not None
    return first


def txn_produce(
    bootstrap: str, transactional_id: str, batches: Sequence[tuple[str, int, Sequence[bytes], bool]]
) -> None:
    """Transactions from a real transactional producer (confluent-kafka):
    each entry is (topic, partition, values, commit?)."""
    import confluent_kafka

    p = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 0}
    )
    p.init_transactions(30)
    for topic, partition, values, commit in batches:
        p.begin_transaction()
        for v in values:
            p.produce(topic, v, partition=partition)
        p.flush(30)
        if commit:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)

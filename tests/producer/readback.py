"""Read a topic back through kafkacore's own client (Fetch over the selector transport).

``read_partition`` fetches from offset 0 to the high watermark (or the
last stable offset for read_committed) and returns the data records in
offset order. With ``isolation_level=1`` records of aborted transactions are
dropped using the response's aborted-transactions list and the control
batches (KIP-98), which is what a read_committed consumer does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkacore.client import PartitionLeader
from kafkacore.protocol.messages import FetchRequest
from kafkacore.protocol.messages.fetch_request import FetchPartition, FetchTopic
from kafkacore.records import ControlRecordType, RecordBatch, iter_batches
from kafkacore.transports.selector import KafkaClient


@dataclass(frozen=True)
class ReadRecord:
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Any, ...]
    timestamp: int
    producer_id: int


def read_partition(
    client: KafkaClient, topic: str, partition: int, *, isolation_level: int = 0
) -> list[ReadRecord]:
    cluster = client.metadata([topic])
    topic_id = cluster.topic_id(topic)
    out: list[ReadRecord] = []
    aborted_open: dict[int, int] = {}  # producer id -> first offset of an aborted txn
    aborted_list: list[tuple[int, int]] = []
    offset = 0
    while True:
        request = FetchRequest(
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=64 * 1024 * 1024,
            isolation_level=isolation_level,
            topics=[
                FetchTopic(
                    topic=topic,
                    topic_id=topic_id,
                    partitions=[
                        FetchPartition(
                            partition=partition,
                            fetch_offset=offset,
                            partition_max_bytes=16 * 1024 * 1024,
                        )
                    ],
                )
            ],
        )
        response = client.send(request, target=PartitionLeader(topic, partition), timeout=30)
        part = response.responses[0].partitions[0]
        assert part.error_code == 0, f"fetch {topic}-{partition}: error {part.error_code}"
        end = part.high_watermark if isolation_level == 0 else part.last_stable_offset
        for a in part.aborted_transactions or []:
            aborted_list.append((a.producer_id, a.first_offset))
        data = bytes(part.records or b"")
        progressed = False
        for batch in iter_batches(data):
            assert isinstance(batch, RecordBatch), "a producer writes v2 batches only"
            if batch.base_offset + batch.last_offset_delta < offset:
                continue
            progressed = True
            for entry in list(aborted_list):
                pid, first = entry
                if pid == batch.producer_id and first <= batch.base_offset:
                    aborted_open.setdefault(pid, first)
                    aborted_list.remove(entry)
            if batch.is_control:
                marker = batch.control_record()
                if marker.type is ControlRecordType.ABORT:
                    aborted_open.pop(batch.producer_id, None)
                offset = batch.base_offset + batch.last_offset_delta + 1
                continue
            skip = (
                isolation_level == 1
                and batch.is_transactional
                and batch.producer_id in aborted_open
            )
            for record in batch:
                if record.offset >= offset and not skip:
                    out.append(
                        ReadRecord(
                            record.offset,
                            record.key,
                            record.value,
                            record.headers,
                            record.timestamp,
                            batch.producer_id,
                        )
                    )
            offset = batch.base_offset + batch.last_offset_delta + 1
        if offset >= end or not progressed:
            if offset >= end:
                return out
            raise AssertionError(f"fetch {topic}-{partition}: stuck at {offset} < {end}")

"""The consumer across a leader change on the real 3-node cluster (KIP-320).

The partition's leader is SIGKILLed while a consumer reads it. A new leader
takes over with a higher leader epoch; the consumer sees the epoch rise in
metadata, validates its position with OffsetForLeaderEpoch against the new
leader before fetching again, and goes on without losing or repeating a
record. (Provoking a real truncation needs an unclean election, which the
test cluster does not allow; the truncation branch itself is covered with a
scripted broker in test_core.py.)
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from kafkacore.client import TopicPartition
from kafkacore.transports._consumer_selector import KafkaConsumer
from kafkacore.transports.selector import KafkaClient
from tests.consumer.helpers import produce
from tests.consumer.workers import collect, wait_for

_OFFSET_FOR_LEADER_EPOCH = 23


def _produce_retrying(bootstrap: str, topic: str, values: list[bytes]) -> None:
    end = time.monotonic() + 90
    while True:
        try:
            with KafkaClient(bootstrap, request_timeout_ms=10000) as client:
                produce(client, topic, 0, values)
            return
        except (AssertionError, Exception):
            # NOT_LEADER / connection refused while the new leader takes over.
            if time.monotonic() > end:
                raise
            time.sleep(0.5)


def test_leader_kill_validates_position_and_loses_nothing(kafka_cluster: Any) -> None:
    topic = f"lead-{uuid.uuid4().hex[:8]}"
    kafka_cluster.create_topic(topic, 1, replication_factor=3, configs={"min.insync.replicas": "2"})
    bootstrap = ",".join(
        "{}:{}".format(*kafka_cluster.listener("PLAINTEXT", n.node_id)) for n in kafka_cluster.nodes
    )
    tp = TopicPartition(topic, 0)
    _produce_retrying(bootstrap, topic, [b"a%d" % i for i in range(100)])
    with KafkaClient(bootstrap) as client:
        meta = client.metadata([topic])
        leader = meta.leader_for_partition(tp)
        epoch_before = meta.leader_epoch_for_partition(tp)
    assert leader is not None and leader >= 0
    got: list[Any] = []
    with KafkaConsumer(
        bootstrap_servers=bootstrap, auto_offset_reset="earliest", metadata_max_age_ms=1000
    ) as c:
        c.assign([tp])
        wait_for(lambda: collect(c, got, 100), "first 100 records")
        kafka_cluster.kill(leader)
        _produce_retrying(bootstrap, topic, [b"b%d" % i for i in range(100)])
        wait_for(
            lambda: collect(c, got, 200),
            "all 200 records after the kill",
        )
        state = c.run_on_loop(lambda core: core.partition_state(tp))
        asked = c.run_on_loop(
            lambda core: core.client.metrics().requests_by_api.get(_OFFSET_FOR_LEADER_EPOCH, 0)
        )
    offsets = [r.offset for r in got]
    assert sorted(offsets) == list(range(200)) and len(offsets) == 200, "lost or repeated records"
    assert state.leader_epoch is not None and epoch_before is not None
    assert state.leader_epoch > epoch_before
    assert asked >= 1, (
        "the position was not validated with OffsetForLeaderEpoch after the leader change"
    )

"""Request builders shared by the conformance tests."""

from __future__ import annotations

from kafkacore.client import ClusterMetadata
from kafkacore.protocol.messages import FetchRequest, MetadataRequest
from kafkacore.protocol.messages.fetch_request import FetchPartition, FetchTopic
from kafkacore.protocol.messages.metadata_request import MetadataRequestTopic


def fetch_request(
    cluster: ClusterMetadata, topic: str, partition: int = 0, *, max_wait_ms: int
) -> FetchRequest:
    """A Fetch from offset 0 that waits up to ``max_wait_ms`` for 1 MB (an empty
    partition makes the broker hold it that long)."""
    part = FetchPartition(partition=partition, fetch_offset=0, partition_max_bytes=1024)
    entry = FetchTopic(topic=topic, topic_id=cluster.topic_id(topic), partitions=[part])
    return FetchRequest(max_wait_ms=max_wait_ms, min_bytes=1_000_000, topics=[entry])


def metadata_request(*names: str) -> MetadataRequest:
    return MetadataRequest(
        topics=[MetadataRequestTopic(name=n) for n in names], allow_auto_topic_creation=False
    )

"""ClusterMetadata: every seed 001 method, kiel's mapping access (000), KIP-320/516."""

from __future__ import annotations

import uuid

import pytest

from kafkacore.client.metadata import (
    BrokerMetadata,
    ClusterMetadata,
    PartitionMetadata,
    TopicPartition,
)
from kafkacore.errors import KafkaError, LocalProtocolError
from kafkacore.protocol.messages import FindCoordinatorResponse, MetadataResponse
from kafkacore.protocol.messages.find_coordinator_response import Coordinator
from kafkacore.protocol.messages.metadata_response import (
    MetadataResponseBroker as B,
)
from kafkacore.protocol.messages.metadata_response import (
    MetadataResponsePartition as P,
)
from kafkacore.protocol.messages.metadata_response import (
    MetadataResponseTopic as T,
)

TID = uuid.UUID("12345678-1234-5678-1234-567812345678")


def response(
    *,
    brokers: tuple[int, ...] = (0, 1),
    topics: list[T] | None = None,
    controller: int = 0,
) -> MetadataResponse:
    return MetadataResponse(
        brokers=[B(node_id=n, host=f"h{n}", port=9000 + n, rack=f"r{n}") for n in brokers],
        cluster_id="cid",
        controller_id=controller,
        topics=topics if topics is not None else [],
    )


def topic(
    name: str,
    leaders: list[int],
    *,
    epoch: int = 0,
    internal: bool = False,
    error: int = 0,
    topic_id: uuid.UUID = TID,
) -> T:
    return T(
        name=name,
        error_code=error,
        topic_id=topic_id,
        is_internal=internal,
        partitions=[
            P(
                partition_index=i,
                leader_id=leader,
                leader_epoch=epoch,
                replica_nodes=[leader],
                isr_nodes=[leader],
            )
            for i, leader in enumerate(leaders)
        ],
    )


def test_defaults_and_bootstrap() -> None:
    c = ClusterMetadata()
    assert c.retry_backoff_ms == 100
    assert c.metadata_max_age_ms == 300000
    assert c.brokers() == {BrokerMetadata(node_id=-1, host="localhost", port=9092)}
    c2 = ClusterMetadata(bootstrap_servers=["a:1", "[::1]:2"])
    assert {(b.host, b.port) for b in c2.brokers()} == {("a", 1), ("::1", 2)}
    with pytest.raises(LocalProtocolError):
        ClusterMetadata(bootstrap_servers="x:y")


def test_update_and_queries() -> None:
    c = ClusterMetadata()
    c.update_metadata(
        response(topics=[topic("t", [0, 1, -1]), topic("__consumer_offsets", [1], internal=True)]),
        now=10.0,
    )
    assert c.brokers() == {
        BrokerMetadata(node_id=0, host="h0", port=9000, rack="r0"),
        BrokerMetadata(node_id=1, host="h1", port=9001, rack="r1"),
    }
    assert c.broker_metadata(1) == BrokerMetadata(node_id=1, host="h1", port=9001, rack="r1")
    assert c.broker_metadata(7) is None
    assert c.partitions_for_topic("t") == {0, 1, 2}
    assert c.available_partitions_for_topic("t") == {0, 1}
    assert c.partitions_for_topic("nope") is None
    assert c.available_partitions_for_topic("nope") is None
    assert c.leader_for_partition(TopicPartition("t", 0)) == 0
    assert c.leader_for_partition(TopicPartition("t", 2)) == -1
    assert c.leader_for_partition(TopicPartition("t", 9)) is None
    assert c.partitions_for_broker(1) == {
        TopicPartition("t", 1),
        TopicPartition("__consumer_offsets", 0),
    }
    assert c.partitions_for_broker(5) is None
    assert c.topics() == {"t"}
    assert c.topics(exclude_internal_topics=False) == {"t", "__consumer_offsets"}
    assert c.cluster_id == "cid"
    assert c.controller_id == 0
    assert c.topic_id("t") == TID
    assert c.topic_name(TID) in {"t", "__consumer_offsets"}
    assert c.get_leader("t", 1) == 1


def test_kiel_mapping_access() -> None:
    c = ClusterMetadata()
    c.update_metadata(response(brokers=(3, 1, 2)), now=0.0)
    assert c[2].host == "h2"
    assert 3 in c and 9 not in c
    assert list(c) == [1, 2, 3]
    assert len(c) == 3
    with pytest.raises(KeyError):
        c[9]


def test_ttl_and_refresh_backoff() -> None:
    c = ClusterMetadata(retry_backoff_ms=100, metadata_max_age_ms=1000)
    assert c.ttl(now=0.0) == 0  # never updated
    c.update_metadata(response(), now=5.0)
    assert c.ttl(now=5.0) == pytest.approx(1000)
    assert c.ttl(now=5.4) == pytest.approx(600)
    assert c.ttl(now=7.0) == 0
    c.request_update()
    assert c.ttl(now=5.05) == pytest.approx(50)  # flagged, but within retry backoff
    assert c.ttl(now=5.2) == 0
    c.failed_update(KafkaError("boom"), now=6.0)
    assert c.refresh_backoff(now=6.0) == pytest.approx(100)
    assert c.refresh_backoff(now=6.03) == pytest.approx(70)
    assert c.refresh_backoff(now=7.0) == 0
    assert c.ttl(now=6.05) == pytest.approx(50)


def test_request_update_waiters() -> None:
    c = ClusterMetadata()
    w1 = c.request_update()
    w2 = c.request_update()
    assert not w1.done and c.need_update
    c.failed_update(KafkaError("nope"), now=1.0)
    assert w1.done and isinstance(w1.error, KafkaError)
    w3 = c.request_update()
    c.update_metadata(response(), now=2.0)
    assert w3.done and w3.error is None
    assert c.take_finished_waiters() == [w1, w2, w3]
    assert c.take_finished_waiters() == []
    assert not c.need_update


def test_empty_broker_list_is_a_failure() -> None:
    c = ClusterMetadata()
    w = c.request_update()
    c.update_metadata(response(brokers=()), now=1.0)
    assert w.done and w.error is not None
    assert c.update_count == 0


def test_retriable_errors_and_unknown_leaders_flag_refresh() -> None:
    # They mark the answer incomplete, which lengthens the backoff but flags no
    # refresh by itself: whoever needs the missing leader asks (an idle client
    # must not poll).
    c = ClusterMetadata()
    c.update_metadata(response(topics=[topic("t", [0])]), now=0.0)
    assert not c.need_update and not c.incomplete
    c.update_metadata(response(topics=[topic("t", [], error=5)]), now=1.0)  # LEADER_NOT_AVAILABLE
    assert c.incomplete and not c.need_update
    assert c.partitions_for_topic("t") == {0}  # kept what we knew
    c.update_metadata(response(topics=[topic("t", [0])]), now=1.5)
    assert not c.incomplete
    c.update_metadata(response(topics=[topic("gone", [], error=3)]), now=2.0)
    assert c.topic_error("gone") == 3
    # A missing topic is not polled on its own; an answer lacking it backs off
    # like one lacking a leader (a consumer waiting for it asks again).
    assert not c.need_update and c.incomplete
    assert c.topic_failure("gone") is None  # retriable: it may be created
    c.update_metadata(response(topics=[topic("t", [7])]), now=3.0)  # leader not a known broker
    assert c.incomplete and not c.need_update
    c.update_metadata(response(topics=[topic("t", [-1])]), now=4.0)
    assert c.incomplete and not c.need_update
    c.update_metadata(response(topics=[topic("secret", [], error=29)]), now=5.0, source="broker 1")
    assert c.unauthorized_topics == {"secret"}
    failure = c.topic_failure("secret")
    assert failure is not None and failure.code == 29
    assert "error code 29 from broker 1 for topic 'secret'" in str(failure)
    c.update_metadata(response(topics=[topic("b@d", [], error=17)]), now=6.0)
    assert c.invalid_topics == {"b@d"}
    assert c.topic_failure("b@d") is not None and c.topic_failure("secret") is None


def test_unknown_topic_error_code_is_kept_with_broker_and_topic() -> None:
    c = ClusterMetadata()
    c.update_metadata(response(topics=[topic("t", [], error=32767)]), now=0.0, source="broker 1")
    failure = c.topic_failure("t")
    assert failure is not None
    assert failure.code == 32767 and not failure.retriable
    assert "unknown error code 32767 from broker 1 for topic 't'" in str(failure)
    assert "create" not in str(failure)


def test_stale_leader_epoch_is_ignored_kip320() -> None:
    c = ClusterMetadata()
    c.update_metadata(response(topics=[topic("t", [1], epoch=5)]), now=0.0)
    c.update_metadata(response(topics=[topic("t", [0], epoch=3)]), now=1.0)
    assert c.leader_for_partition(TopicPartition("t", 0)) == 1
    assert c.leader_epoch_for_partition(TopicPartition("t", 0)) == 5
    assert c.incomplete
    c.update_metadata(response(topics=[topic("t", [0], epoch=6)]), now=2.0)
    assert c.leader_for_partition(TopicPartition("t", 0)) == 0
    assert c.leader_epoch_for_partition(TopicPartition("t", 0)) == 6


def test_recreated_topic_resets_epochs_kip516() -> None:
    c = ClusterMetadata()
    c.update_metadata(response(topics=[topic("t", [1], epoch=5)]), now=0.0)
    other = uuid.UUID(int=99)
    c.update_metadata(response(topics=[topic("t", [0], epoch=0, topic_id=other)]), now=1.0)
    assert c.leader_for_partition(TopicPartition("t", 0)) == 0
    assert c.topic_id("t") == other


def test_zero_topic_id_means_none() -> None:
    c = ClusterMetadata()
    c.update_metadata(response(topics=[topic("t", [0], topic_id=uuid.UUID(int=0))]), now=0.0)
    assert c.topic_id("t") is None


def test_group_and_transaction_coordinators() -> None:
    c = ClusterMetadata()
    c.update_metadata(response(), now=0.0)
    old = FindCoordinatorResponse(node_id=1, host="h1", port=9001)
    assert c.add_group_coordinator("g", old) == 1
    assert c.coordinator_for_group("g") == 1
    assert c.coordinator_for_group("other") is None
    batched = FindCoordinatorResponse(
        coordinators=[
            Coordinator(key="tx", node_id=0, host="h0", port=9000),
            Coordinator(key="tx2", node_id=-1, host="", port=-1, error_code=15),
        ]
    )
    assert c.add_transaction_coordinator("tx", batched) == 0
    assert c.add_transaction_coordinator("tx2", batched) is None
    assert c.add_transaction_coordinator("missing", batched) is None
    assert c.coordinator_for_transaction("tx") == 0
    assert c.add_group_coordinator("g", FindCoordinatorResponse(error_code=15, node_id=-1)) is None
    assert c.coordinator_for_group("g") is None
    c.add_group_coordinator("g2", FindCoordinatorResponse(node_id=5, host="h5", port=1))
    assert c.broker_metadata(5) == BrokerMetadata(node_id=5, host="h5", port=1)


def test_listeners() -> None:
    c = ClusterMetadata()
    seen: list[int] = []

    def listener(cluster: ClusterMetadata) -> None:
        seen.append(cluster.update_count)

    c.add_listener(listener)
    c.update_metadata(response(), now=0.0)
    c.remove_listener(listener)
    c.update_metadata(response(), now=1.0)
    assert seen == [1]
    with pytest.raises(LocalProtocolError):
        c.remove_listener(listener)


def test_with_partitions_copies() -> None:
    c = ClusterMetadata()
    c.update_metadata(response(topics=[topic("t", [0])]), now=0.0)
    extra = PartitionMetadata(topic="t", partition=1, leader=1)
    new = PartitionMetadata(topic="n", partition=0, leader=0)
    copy = c.with_partitions([extra, new])
    assert copy.partitions_for_topic("t") == {0, 1}
    assert copy.partitions_for_topic("n") == {0}
    assert c.partitions_for_topic("t") == {0}
    assert c.partitions_for_topic("n") is None


def test_topics_added_while_a_refresh_is_in_flight_are_not_lost() -> None:
    """An answer to a request built before topics were added cannot know them:
    it must not clear the flag nor complete the waiters queued since."""
    c = ClusterMetadata()
    early = c.request_update()
    c.update_started()  # the client built its Metadata request here
    late = c.request_update(new_topics=True)  # add_topic() while the request is on its way
    c.update_metadata(response(topics=[topic("a", [0])]), now=1.0)
    assert early.done and early.error is None
    assert not late.done
    assert c.need_update
    assert c.ttl(now=1.0) == pytest.approx(c.retry_backoff_ms)  # due after the retry backoff
    assert c.ttl(now=1.0 + c.retry_backoff_ms / 1000) == 0
    c.update_started()
    c.update_metadata(response(topics=[topic("a", [0]), topic("b", [1])]), now=2.0)
    assert late.done and late.error is None
    assert not c.need_update
    assert c.take_finished_waiters() == [early, late]


def test_plain_refresh_request_is_served_by_the_answer_in_flight() -> None:
    """As in the Java client, a plain refresh request (no new topics) made
    while a refresh is on its way is satisfied by that answer."""
    c = ClusterMetadata()
    c.request_update()
    c.update_started()
    plain = c.request_update()
    c.update_metadata(response(topics=[topic("a", [0])]), now=1.0)
    assert plain.done and not c.need_update

"""What only the blocking client has: many user threads, and its own loop thread."""

from __future__ import annotations

import concurrent.futures
from typing import Any

import pytest

from kafkacore.client import TopicPartition
from kafkacore.errors import LocalProtocolError, RequestCancelled
from kafkacore.transports.selector import ClientState, KafkaClient

from .helpers import metadata_request


def test_many_user_threads_share_one_client(kafka_broker: Any) -> None:
    with KafkaClient(kafka_broker.bootstrap) as client:

        def work(i: int) -> int:
            total = 0
            for _ in range(20):
                response = client.send(metadata_request(), node_id=1)
                total += len(response.brokers)
            return total

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            assert list(pool.map(work, range(8))) == [20] * 8
        # Every request went through the one loop thread and one connection.
        metrics = client.run_on_loop(lambda core: core.metrics())
        assert metrics.responses_received >= 160


def test_blocking_on_the_loop_thread_is_refused(kafka_broker: Any) -> None:
    with KafkaClient(kafka_broker.bootstrap) as client:
        seen: list[BaseException] = []

        def inside(core: Any) -> None:
            # We are on the loop thread: a blocking send would deadlock.
            try:
                client.send(metadata_request(), node_id=1)
            except LocalProtocolError as exc:
                seen.append(exc)

        client.run_on_loop(inside)
        assert len(seen) == 1 and "loop thread" in str(seen[0])


def test_close_is_idempotent_and_fails_later_calls(kafka_broker: Any) -> None:
    client = KafkaClient(kafka_broker.bootstrap)
    client.connect()
    pending = client.submit(metadata_request(), node_id=1)
    client.close()
    client.close()
    assert client.state is ClientState.CLOSED
    # Either it completed before close, or close cancelled it: never left hanging.
    assert pending.done()
    if pending.exception() is not None:
        assert isinstance(pending.exception(), RequestCancelled)
    with pytest.raises(LocalProtocolError, match="closed"):
        client.send(metadata_request())


def test_names_are_resolved_off_the_loop_thread(kafka_broker: Any) -> None:
    # "localhost" needs a lookup (IP literals do not); it runs on the DNS
    # helper pool and the connection proceeds from the loop thread.
    with KafkaClient(f"localhost:{kafka_broker.port}") as client:
        assert set(client.cluster()) == {1}
        assert client.send(metadata_request(), node_id=1).brokers[0].node_id == 1


# The loop thread re-raises its crash so that it is never silent.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.parametrize("kind", ["client", "producer", "consumer"])
def test_a_crashed_loop_fails_waiters_instead_of_hanging(kafka_broker: Any, kind: str) -> None:
    from kafkacore.transports.selector import KafkaConsumer, KafkaProducer

    obj: Any
    if kind == "client":
        obj = KafkaClient(kafka_broker.bootstrap)
        obj.connect()
    elif kind == "producer":
        obj = KafkaProducer(kafka_broker.bootstrap)
    else:
        obj = KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap)
    try:
        boom = RuntimeError("simulated bug in the core")

        def explode(now: float) -> None:
            raise boom

        # Something raising on the loop thread itself (not inside a user command).
        obj._loop.io.call_soon_threadsafe(lambda: explode(0.0))
        assert obj._loop.thread is not None
        obj._loop.thread.join(10)
        assert not obj._loop.thread.is_alive()
        with pytest.raises(LocalProtocolError, match="loop thread died"):
            if kind == "client":
                obj.send(metadata_request())
            elif kind == "producer":
                obj.flush()
            else:
                obj.assignment()
        if kind == "producer":
            with pytest.raises(LocalProtocolError, match="loop thread died"):
                obj.send("t", b"v")
    finally:
        obj.close()


@pytest.mark.parametrize("kind", ["client", "producer", "consumer"])
def test_a_blocking_object_used_long_after_it_was_built_still_connects(
    kafka_broker: Any, kind: str
) -> None:
    # The loop thread starts on first use; time spent before that must not
    # count against connection set-up (the core used to time out connects it
    # had asked for at construction, failing the first call at once).
    import time

    from kafkacore.transports.selector import KafkaConsumer, KafkaProducer

    options: dict[str, Any] = {"socket_connection_setup_timeout_ms": 300}
    if kind == "client":
        client = KafkaClient(kafka_broker.bootstrap, **options)
        time.sleep(0.8)
        try:
            assert client.send(metadata_request(), timeout=10).brokers
        finally:
            client.close()
    elif kind == "producer":
        producer = KafkaProducer(kafka_broker.bootstrap, **options)
        time.sleep(0.8)
        try:
            topic = "late-use-producer"
            kafka_broker.create_topic(topic, partitions=1)
            assert producer.send(topic, b"v").result(timeout=15).offset == 0
        finally:
            producer.close()
    else:
        consumer = KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap, **options)
        time.sleep(0.8)
        try:
            topic = "late-use-consumer"
            kafka_broker.create_topic(topic, partitions=2)
            assert len(consumer.end_offsets([TopicPartition(topic, 0)], timeout=10)) == 1
        finally:
            consumer.close()

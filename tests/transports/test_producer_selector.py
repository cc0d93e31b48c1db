"""The blocking producer's per-record path (issue 12), against a real broker.

``send`` appends in the caller's thread under the core lock (no hand-off
queue, no ``concurrent.futures.Future``), and wakes the I/O thread only
when a batch opened; the loop-thread rules stay: a full buffer is waited
for (bounded by ``max_block_ms``), and a loop that dies fails the waiters.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kafkacore import KafkaProducer
from kafkacore.errors import LocalProtocolError
from kafkacore.producer import BufferExhaustedError, RecordMetadata
from kafkacore.transports._producer_future import RecordFuture


@pytest.fixture
def topic(kafka_broker: Any) -> Iterator[str]:
    name = f"sel-{uuid.uuid4().hex[:10]}"
    kafka_broker.create_topic(name, partitions=1)
    yield name


def _warm(producer: KafkaProducer, topic: str) -> None:
    """Metadata, connection and producer id in place (flush: the batch may linger)."""
    fut = producer.send(topic, b"warm")
    producer.flush(timeout=30)
    fut.get(timeout=0)


def test_send_appends_in_the_callers_thread_with_a_light_future(
    kafka_broker: Any, topic: str
) -> None:
    with KafkaProducer(kafka_broker.bootstrap, linger_ms=60_000) as producer:
        _warm(producer, topic)
        before = producer.run_on_loop(lambda core: core.pending_records)
        with producer._lock:  # the loop cannot touch the core meanwhile
            fut = producer.send(topic, b"now")
            # Already in the core: appended by this thread, not queued for the loop.
            assert producer._core.pending_records == before + 1
        assert type(fut) is RecordFuture
        assert not isinstance(fut, concurrent.futures.Future)
        producer.flush(timeout=30)
        assert isinstance(fut.get(timeout=0), RecordMetadata)


def test_the_loop_is_woken_only_when_a_batch_opens(kafka_broker: Any, topic: str) -> None:
    with KafkaProducer(kafka_broker.bootstrap, linger_ms=60_000, batch_size=16384) as producer:
        _warm(producer, topic)
        producer.flush(timeout=30)
        io = producer._loop.io
        posted: list[Any] = []
        original = io.call_soon_threadsafe

        def counting(fn: Any) -> None:
            posted.append(fn)
            original(fn)

        io.call_soon_threadsafe = counting  # type: ignore[method-assign]
        try:
            futs = [producer.send(topic, b"x" * 100) for _ in range(1000)]
        finally:
            io.call_soon_threadsafe = original  # type: ignore[method-assign]
        # 1000 records of ~121 bytes fill 8 batches of 16 KiB: about one wake per
        # batch, never one per record.
        assert 1 <= len(posted) <= 12, len(posted)
        producer.flush(timeout=30)
        assert all(f.succeeded() for f in futs)


def test_a_full_buffer_blocks_send_for_max_block_ms_then_raises(
    kafka_broker: Any, topic: str
) -> None:
    with KafkaProducer(
        kafka_broker.bootstrap, buffer_memory=4096, max_block_ms=300, linger_ms=60_000
    ) as producer:
        _warm(producer, topic)
        producer.flush(timeout=30)
        started = time.monotonic()
        with pytest.raises(BufferExhaustedError, match="max_block_ms=300"):
            for _ in range(100):  # the batch lingers: nothing frees the buffer
                producer.send(topic, b"z" * 500)
        assert 0.25 <= time.monotonic() - started < 5
        producer.flush(timeout=30)
        again = producer.send(topic, b"z" * 500)  # room again
        producer.flush(timeout=30)
        assert again.succeeded()


def test_a_send_waiting_for_room_resumes_when_batches_complete(
    kafka_broker: Any, topic: str
) -> None:
    with KafkaProducer(
        kafka_broker.bootstrap, buffer_memory=4096, max_block_ms=20_000, linger_ms=60_000
    ) as producer:
        _warm(producer, topic)
        sent: list[RecordFuture] = []
        worker = threading.Thread(
            target=lambda: sent.extend(producer.send(topic, b"z" * 500) for _ in range(20))
        )
        worker.start()
        time.sleep(0.3)
        assert worker.is_alive() and len(sent) < 20  # blocked in send on the full buffer
        for _ in range(20):  # each flush sends the lingering batch and frees its room
            producer.flush(timeout=30)
            worker.join(0.1)
            if not worker.is_alive():
                break
        assert not worker.is_alive()
        producer.flush(timeout=30)
        assert len(sent) == 20 and all(f.succeeded() for f in sent)


def test_send_inside_a_callback_with_a_full_buffer_refuses_at_once(
    kafka_broker: Any, topic: str
) -> None:
    errors: list[BaseException] = []
    with KafkaProducer(kafka_broker.bootstrap, buffer_memory=2048, linger_ms=60_000) as producer:
        _warm(producer, topic)

        def fill(md: Any, error: BaseException | None) -> None:
            try:
                for _ in range(20):
                    producer.send(topic, b"w" * 500)
            except BufferExhaustedError as exc:
                errors.append(exc)

        producer.send(topic, b"v", on_delivery=fill)
        producer.flush(timeout=30)
    assert errors and "cannot wait" in str(errors[0])


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_dead_loop_fails_waiters_instead_of_hanging(kafka_broker: Any, topic: str) -> None:
    producer = KafkaProducer(kafka_broker.bootstrap, linger_ms=60_000)
    try:
        _warm(producer, topic)
        fut = producer.send(topic, b"pending")

        def boom(now: float) -> None:
            raise RuntimeError("a bug on the loop")

        producer._loop.io.call_soon_threadsafe(lambda: producer._loop.bridge.command(boom))
        with pytest.raises(LocalProtocolError, match="loop thread died"):
            fut.result(timeout=10)
        with pytest.raises(LocalProtocolError, match="loop thread died"):
            producer.send(topic, b"after")
    finally:
        producer.close(timeout=1)

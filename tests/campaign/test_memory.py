"""Memory stays bounded when the broker stalls or the application stops polling.

Producer: the broker (the misbehaving fake) answers one Produce, then takes
the next ones and never answers; the application keeps sending far more than ``buffer_memory``.
Sends beyond the buffer must fail with BufferExhaustedError after
``max_block_ms`` and the process's Python allocations (tracemalloc peak, all
threads) must stay near ``buffer_memory``.

Consumer: a real broker holds far more than ``fetch_buffer_bytes``; the
application does not poll for a while (and, in a second phase, the broker's
proxy holds every byte), then polls everything. The fetch buffer must stop
fetching at its bound, so the peak stays near ``fetch_buffer_bytes`` plus
one fetch response (``fetch_max_bytes``).

The numbers are printed ("memory: ...") and recorded in docs/reliability.md.
"""

from __future__ import annotations

import time
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

from kafkacore.client import TopicPartition
from kafkacore.producer import BufferExhaustedError
from kafkacore.testing import LocalKafka
from kafkacore.testing.pytest_plugin import repair
from tests.campaign.adapters import FLAVORS, CallTimer, open_consumer, open_producer, run_flavor
from tests.campaign.conftest import say
from tests.faults.wirebroker import API, Fault, Kind, WireBroker

pytestmark = pytest.mark.timeout(300)

MIB = 1024 * 1024
BUFFER = 8 * MIB
VALUE = b"x" * (256 * 1024)
#: What may be allocated besides the bounded buffer (codec, sockets, objects).
OVERHEAD = 16 * MIB


def _rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _collector() -> tuple[list[object], Callable[[object, float], None]]:
    got: list[object] = []

    def record(result: object, when: float) -> None:
        got.append(result)

    return got, record


@pytest.fixture(params=FLAVORS)
def flavor(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_producer_memory_is_bounded_by_buffer_memory_under_a_stalled_broker(
    flavor: str, request: pytest.FixtureRequest
) -> None:
    attempts = 160  # 40 MiB offered to an 8 MiB buffer
    with WireBroker() as broker:
        broker.topic("t")
        # The first Produce is answered (metadata and the connection warm up),
        # every later one is taken and never answered.
        broker.faults[API.PRODUCE] = lambda seen: None if seen.nth == 1 else Fault(Kind.STALL)

        async def main() -> tuple[int, int, int]:
            exhausted = accepted = 0
            timer = CallTimer()
            async with open_producer(
                flavor, broker.bootstrap, timer, buffer_memory=BUFFER, max_block_ms=20,
                linger_ms=0, delivery_timeout_ms=60000, request_timeout_ms=30000,
                max_request_size=2 * MIB,
            ) as producer:  # fmt: skip
                async with anyio.create_task_group() as tg:
                    for _ in range(100):  # until metadata came (max_block_ms bounds its wait)
                        warm, record = _collector()
                        await producer.send(tg, "t", b"warm-up", None, record)
                        with anyio.fail_after(30):
                            while not warm:
                                await anyio.sleep(0.01)
                        if not isinstance(warm[0], BaseException):
                            break
                        await anyio.sleep(0.1)
                    assert not isinstance(warm[0], BaseException), warm
                    for i in range(attempts):
                        got, record = _collector()
                        # A fresh object per record, or every record would share one.
                        value = b"%08d" % i + VALUE[8:]
                        await producer.send(tg, "t", value, None, record)
                        await anyio.sleep(0)
                        if got and isinstance(got[0], BufferExhaustedError):
                            exhausted += 1
                        else:
                            accepted += 1
                    _, peak = tracemalloc.get_traced_memory()
                    tg.cancel_scope.cancel()  # nothing will be acknowledged
                await producer.close(0.5)
            return exhausted, accepted, peak

        rss0 = _rss()
        tracemalloc.start()
        try:
            exhausted, accepted, peak = run_flavor(flavor, main)
        finally:
            tracemalloc.stop()
        rss = _rss() - rss0
    say(
        request.config,
        f"memory: producer {flavor}: buffer_memory {BUFFER // MIB} MiB, offered "
        f"{attempts * len(VALUE) // MIB} MiB, {accepted} accepted, {exhausted} refused, "
        f"tracemalloc peak {peak / MIB:.1f} MiB, RSS growth {rss / MIB:.1f} MiB",
    )
    assert exhausted > 0, "the buffer never filled: the broker did not stall?"
    assert accepted * len(VALUE) <= BUFFER + 2 * len(VALUE)
    assert peak < BUFFER + OVERHEAD, f"peak {peak / MIB:.1f} MiB"


@pytest.fixture(scope="module")
def big_topic(kafka_broker: LocalKafka) -> str:
    """64 MiB in 3 partitions, written once for the module."""
    from kafkacore.transports.selector import KafkaProducer

    topic = f"mem-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, partitions=3)
    value = b"y" * (64 * 1024)
    with KafkaProducer(kafka_broker.bootstrap, linger_ms=5, batch_size=256 * 1024) as producer:
        for i in range(1024):
            producer.send(topic, value, partition=i % 3)
        producer.flush(120)
    return topic


@pytest.fixture
def kafka(kafka_broker: LocalKafka) -> Iterator[LocalKafka]:
    yield kafka_broker
    repair(kafka_broker)


def test_consumer_fetch_buffer_stays_bounded_when_the_app_or_the_broker_stalls(
    kafka: LocalKafka, big_topic: str, flavor: str, request: pytest.FixtureRequest
) -> None:
    fetch_buffer = 8 * MIB
    fetch_max = 4 * MIB
    proxy = kafka.proxies[0]

    async def main() -> tuple[int, int, int, float]:
        timer = CallTimer()
        count = 0
        async with open_consumer(
            flavor, [], timer, bootstrap_servers=kafka.proxy_bootstrap, enable_auto_commit=False,
            auto_offset_reset="earliest", fetch_buffer_bytes=fetch_buffer,
            fetch_max_bytes=fetch_max, max_partition_fetch_bytes=MIB, max_poll_records=200,
        ) as consumer:  # fmt: skip
            consumer.assign([TopicPartition(big_topic, p) for p in range(3)])
            count += len(
                await consumer.poll_records(timeout=0.5)
            )  # fetching starts; then the app stalls
            await anyio.sleep(4.0)  # the loop fetches in the background meanwhile
            _, app_stalled = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            start = time.monotonic()
            held = False
            hold_end = 0.0
            while count < 1024 and time.monotonic() - start < 120:
                if count >= 400 and not held:
                    proxy.hold()  # the broker stalls mid-stream, fetches in flight
                    held = True
                    hold_end = time.monotonic() + 2.0
                if proxy.held and time.monotonic() > hold_end:
                    proxy.release()
                count += len(await consumer.poll_records(timeout=0.5))
            _, draining = tracemalloc.get_traced_memory()
            took = time.monotonic() - start
        return count, app_stalled, draining, took

    rss0 = _rss()
    tracemalloc.start()
    try:
        count, app_stalled, draining, took = run_flavor(flavor, main)
    finally:
        tracemalloc.stop()
        proxy.release()
    rss = _rss() - rss0
    say(
        request.config,
        f"memory: consumer {flavor}: fetch_buffer_bytes {fetch_buffer // MIB} MiB, "
        f"fetch_max_bytes {fetch_max // MIB} MiB, topic 64 MiB; peak while the app stalled "
        f"{app_stalled / MIB:.1f} MiB, while draining {draining / MIB:.1f} MiB; "
        f"RSS growth {rss / MIB:.1f} MiB; read {count} records in {took:.1f} s",
    )
    assert count == 1024, f"read {count} of 1024 records after the stalls"
    bound = fetch_buffer + fetch_max + OVERHEAD
    assert app_stalled < bound, f"{app_stalled / MIB:.1f} MiB while the application stalled"
    assert draining < bound, f"{draining / MIB:.1f} MiB while draining"

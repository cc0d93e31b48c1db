"""Record batches against a real Kafka 4.3.1 broker (and the Java producer).

Everything goes over a plain blocking socket with kafkacore's own Produce and
Fetch messages; the broker validates our CRCs and decompresses our batches,
then hands back what it stored, which we decode.
"""

from __future__ import annotations

import itertools
import socket
import struct
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkacore.protocol.framing import decode_response, encode_request
from kafkacore.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FetchRequest,
    FetchResponse,
    ProduceRequest,
    ProduceResponse,
)
from kafkacore.protocol.messages.fetch_request import FetchPartition, FetchTopic
from kafkacore.protocol.messages.produce_request import PartitionProduceData, TopicProduceData
from kafkacore.records import (
    Compression,
    ControlRecordType,
    LegacyBatch,
    Record,
    RecordBatch,
    RecordBatchBuilder,
    iter_batches,
)
from kafkacore.testing import LocalKafka

pytestmark = pytest.mark.broker

PRODUCE_VERSION = 11  # flexible, topic names (v13 switches to topic ids), zstd needs v7+
FETCH_VERSION = 12  # flexible, topic names (v13+ use topic ids), zstd needs v10+
MAX_FRAME = 64 * 1024 * 1024


class Wire:
    """One blocking connection speaking kafkacore's framing (test helper, not a client)."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=30)
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def _read_exact(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(min(n, 1 << 20))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def call(self, request: object, version: int) -> object:
        self.correlation_id += 1
        frame = encode_request(
            request,  # type: ignore[arg-type]
            version=version,
            correlation_id=self.correlation_id,
            client_id="kafkacore-records-test",
        )
        self.sock.sendall(frame)
        (size,) = struct.unpack(">i", self._read_exact(4))
        assert 0 < size <= MAX_FRAME
        correlation_id, response = decode_response(
            self._read_exact(size),
            request.API_KEY,  # type: ignore[attr-defined]
            version,
        )
        assert correlation_id == self.correlation_id
        return response


@pytest.fixture(scope="module")
def wire(kafka_broker: LocalKafka) -> Iterator[Wire]:
    conn = Wire(kafka_broker.host, kafka_broker.port)
    answer = conn.call(
        ApiVersionsRequest(client_software_name="kafkacore", client_software_version="0"), 3
    )
    assert isinstance(answer, ApiVersionsResponse)
    ranges = {a.api_key: (a.min_version, a.max_version) for a in answer.api_keys}
    for key, version in (
        (ProduceRequest.API_KEY, PRODUCE_VERSION),
        (FetchRequest.API_KEY, FETCH_VERSION),
    ):
        low, high = ranges[key]
        assert low <= version <= high, f"broker does not speak API {key} v{version}"
    yield conn
    conn.close()


def _topic(kafka_broker: LocalKafka, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(name, partitions=1)
    return name


def produce(wire: Wire, topic: str, batch: bytes) -> int:
    request = ProduceRequest(
        acks=-1,
        timeout_ms=30000,
        topic_data=[
            TopicProduceData(
                name=topic, partition_data=[PartitionProduceData(index=0, records=batch)]
            )
        ],
    )
    response = wire.call(request, PRODUCE_VERSION)
    assert isinstance(response, ProduceResponse)
    (part,) = response.responses[0].partition_responses
    assert part.error_code == 0, (part.error_code, part.error_message, part.record_errors)
    return part.base_offset


def fetch_all(
    wire: Wire, topic: str, *, until: int, isolation_level: int = 0
) -> list[RecordBatch | LegacyBatch]:
    """Fetch from offset 0 until ``until`` (exclusive), returning every batch."""
    batches: list[RecordBatch | LegacyBatch] = []
    offset = 0
    for _ in range(1000):  # a bound, not a timer: each round trip moves forward
        if offset >= until:
            return batches
        request = FetchRequest(
            replica_id=-1,
            max_wait_ms=500,
            min_bytes=1,
            max_bytes=8 * 1024 * 1024,
            isolation_level=isolation_level,
            topics=[
                FetchTopic(
                    topic=topic,
                    partitions=[
                        FetchPartition(
                            partition=0, fetch_offset=offset, partition_max_bytes=4 << 20
                        )
                    ],
                )
            ],
        )
        response = wire.call(request, FETCH_VERSION)
        assert isinstance(response, FetchResponse)
        assert response.error_code == 0
        (part,) = response.responses[0].partitions
        assert part.error_code == 0
        for batch in iter_batches(part.records or b""):
            if batch.next_offset <= offset:
                continue
            batches.append(batch)
            offset = batch.next_offset
    raise AssertionError(f"fetch made no progress past offset {offset} of {until}")


RECORDS: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]] = [
    (b"key-0", b"value-0" * 20, [("trace", b"\x00\x01\x02"), ("empty", b""), ("null", None)]),
    (None, b"no key", []),
    (b"tombstone", None, [("\u00fcnicode-h\u00e9ader", b"v")]),
    (b"", b"", []),
    (b"big", bytes(range(256)) * 40, []),
]


@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.name.lower())
def test_produce_then_fetch_each_codec(
    kafka_broker: LocalKafka, wire: Wire, codec: Compression
) -> None:
    topic = _topic(kafka_broker, f"rec-{codec.name.lower()}")
    base_ts = 1_700_000_000_000
    offsets = []
    for round_ in range(2):
        builder = RecordBatchBuilder(compression=codec)
        for i, (key, value, headers) in enumerate(RECORDS):
            builder.append(value, key, timestamp=base_ts + 10 * round_ + i, headers=headers)
        offsets.append(produce(wire, topic, builder.build()))
    assert offsets == [0, len(RECORDS)]

    batches = fetch_all(wire, topic, until=2 * len(RECORDS))
    assert len(batches) == 2
    for round_, batch in enumerate(batches):
        assert isinstance(batch, RecordBatch)
        assert batch.compression is codec
        assert batch.crc_valid()
        assert batch.partition_leader_epoch >= 0  # set by the broker
        want = [
            Record(round_ * len(RECORDS) + i, base_ts + 10 * round_ + i, k, v, tuple(h))
            for i, (k, v, h) in enumerate(RECORDS)
        ]
        assert list(batch) == want
        assert batch.columns().records() == want


def test_append_many_batch_of_1000_through_the_broker(kafka_broker: LocalKafka, wire: Wire) -> None:
    topic = _topic(kafka_broker, "rec-many")
    values = [b"%05d" % i * 20 for i in range(1000)]
    keys = [b"k%05d" % i for i in range(1000)]
    builder = RecordBatchBuilder(compression=Compression.ZSTD)
    builder.append_many(values, keys, timestamps=[1000 + i // 7 for i in range(1000)])
    assert produce(wire, topic, builder.build()) == 0
    (batch,) = fetch_all(wire, topic, until=1000)
    cols = batch.columns()
    assert cols.values == values and cols.keys == keys
    assert list(cols.offsets) == list(range(1000))


def test_broker_rejects_a_corrupt_batch(kafka_broker: LocalKafka, wire: Wire) -> None:
    topic = _topic(kafka_broker, "rec-corrupt")
    builder = RecordBatchBuilder()
    builder.append(b"value", timestamp=1)
    data = bytearray(builder.build())
    data[-1] ^= 0xFF
    request = ProduceRequest(
        acks=-1,
        timeout_ms=30000,
        topic_data=[
            TopicProduceData(
                name=topic, partition_data=[PartitionProduceData(index=0, records=bytes(data))]
            )
        ],
    )
    response = wire.call(request, PRODUCE_VERSION)
    assert isinstance(response, ProduceResponse)
    (part,) = response.responses[0].partition_responses
    assert part.error_code == 2  # CORRUPT_MESSAGE: the broker checks the CRC-32C we check


# ---- records written by the Java producer ------------------------------------

JAVA_OPTS = ["-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto"]


def _java(kafka_libs: Path, main: str, args: list[str], stdin: bytes | None = None) -> str:
    proc = subprocess.run(
        ["java", *JAVA_OPTS, "-cp", str(kafka_libs / "*"), main, *args],
        input=stdin,
        capture_output=True,
        timeout=240,
        check=False,
    )
    output = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert proc.returncode == 0, output[-3000:]
    return output


@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.name.lower())
def test_java_console_producer_values(
    kafka_broker: LocalKafka, kafka_libs: Path, wire: Wire, codec: Compression
) -> None:
    topic = _topic(kafka_broker, f"java-console-{codec.name.lower()}")
    lines = [f"key{i}:value {i} " + "x" * (i % 97) for i in range(300)]
    _java(
        kafka_libs,
        "org.apache.kafka.tools.ConsoleProducer",
        [
            "--bootstrap-server",
            kafka_broker.bootstrap,
            "--topic",
            topic,
            "--compression-codec",
            codec.name.lower(),
            "--reader-property",
            "parse.key=true",
            "--reader-property",
            "key.separator=:",
            "--command-property",
            "linger.ms=50",
        ],
        stdin=("\n".join(lines) + "\n").encode(),
    )
    batches = fetch_all(wire, topic, until=len(lines))
    assert {b.compression for b in batches} == {codec}
    records = [r for b in batches for r in b]
    assert [r.offset for r in records] == list(range(len(lines)))
    assert [(r.key, r.value) for r in records] == [
        tuple(line.encode().split(b":", 1)) for line in lines
    ]


@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.name.lower())
def test_java_producer_performance_transactional(
    kafka_broker: LocalKafka, kafka_libs: Path, wire: Wire, codec: Compression
) -> None:
    """ProducerPerformance with transactions: data batches plus broker-written COMMIT markers."""
    topic = _topic(kafka_broker, f"java-perf-{codec.name.lower()}")
    count = 5000
    _java(
        kafka_libs,
        "org.apache.kafka.tools.ProducerPerformance",
        [
            "--bootstrap-server",
            kafka_broker.bootstrap,
            "--topic",
            topic,
            "--num-records",
            str(count),
            "--payload-monotonic",
            "--throughput",
            "-1",
            "--transactional-id",
            f"perf-{uuid.uuid4().hex[:8]}",
            "--transaction-duration-ms",
            "200",
            "--command-property",
            f"compression.type={codec.name.lower()}",
            "linger.ms=20",
            "batch.size=65536",
        ],
    )
    # The last transaction's marker sits after the last record: fetch until the
    # log end (high watermark) known from one fetch with READ_COMMITTED.
    request = FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        isolation_level=1,
        topics=[
            FetchTopic(
                topic=topic,
                partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1)],
            )
        ],
    )
    response = wire.call(request, FETCH_VERSION)
    assert isinstance(response, FetchResponse)
    end = response.responses[0].partitions[0].high_watermark
    batches = fetch_all(wire, topic, until=end, isolation_level=1)
    data = [b for b in batches if not b.is_control]
    markers = [b for b in batches if b.is_control]
    assert markers, "a transactional producer leaves COMMIT markers"
    for marker in markers:
        assert isinstance(marker, RecordBatch)
        control = marker.control_record()
        assert control.type is ControlRecordType.COMMIT
        assert control.coordinator_epoch is not None
        assert marker.producer_id >= 0 and marker.is_transactional
    assert {b.compression for b in data} == {codec}
    assert all(b.is_transactional and b.producer_id >= 0 for b in data)
    values = [r.value for b in data for r in b]
    # --payload-monotonic: values are consecutive decimal integers.
    assert len(values) == count
    numbers = [int(v) for v in values if v is not None]
    assert numbers == list(range(numbers[0], numbers[0] + count))
    # Sequence numbers run on from batch to batch within one producer epoch; with
    # transactions v2 (KIP-890) every commit bumps the epoch and restarts them at 0.
    seqs = [
        (b.producer_epoch, b.base_sequence, b.last_sequence)
        for b in data
        if isinstance(b, RecordBatch)
    ]
    for (epoch, _, last), (next_epoch, base, _) in itertools.pairwise(seqs):
        assert base == (last + 1 if next_epoch == epoch else 0)

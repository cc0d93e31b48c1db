"""Capture record-set bytes written by the Java producer through a real broker.

Not a test: run it to regenerate ``tests/records/vectors/`` (the offline
known-answer vectors that tests/records/test_vectors.py decodes)::

    .venv/bin/python -m tests.records.capture_vectors

It starts a local Kafka 4.3.1 broker, writes with the Java console producer
(one topic per codec, keys and values known in advance) and with a
transactional ProducerPerformance run (data batches plus COMMIT markers),
then stores each partition's fetched ``records`` bytes as they came off the
wire, plus ``expected.json`` describing them.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from kafkacore.records import Compression, RecordBatch, iter_batches
from kafkacore.testing import LocalKafka
from kafkacore.testing.libs import ensure_libs

from .test_broker import Wire, _java, fetch_all

VECTORS = Path(__file__).parent / "vectors"
LINES = [f"key{i}:value {i} \u00e9 " + "x" * (i % 13) for i in range(40)]


def _raw(wire: Wire, topic: str, end: int, isolation_level: int = 0) -> bytes:
    batches = fetch_all(wire, topic, until=end, isolation_level=isolation_level)
    return b"".join(bytes(b.buffer) for b in batches)  # type: ignore[union-attr]


def main() -> None:
    libs = ensure_libs()
    VECTORS.mkdir(exist_ok=True)
    expected: dict[str, object] = {"console_lines": LINES}
    with LocalKafka(size=1, listeners=("PLAINTEXT",)) as kafka:
        wire = Wire(kafka.host, kafka.port)
        for codec in Compression:
            _capture_console(libs, kafka, wire, codec)
        expected.update(_capture_transactional(libs, kafka, wire))
        wire.close()
    (VECTORS / "expected.json").write_text(
        json.dumps(expected, indent=1, ensure_ascii=False) + "\n"
    )


def _capture_console(libs: Path, kafka: LocalKafka, wire: Wire, codec: Compression) -> None:
    """LINES through the Java console producer with ``codec``, stored as fetched."""
    name = codec.name.lower()
    topic = f"vec-{name}-{uuid.uuid4().hex[:6]}"
    kafka.create_topic(topic)
    _java(
        libs,
        "org.apache.kafka.tools.ConsoleProducer",
        [
            "--bootstrap-server",
            kafka.bootstrap,
            "--topic",
            topic,
            "--compression-codec",
            name,
            "--reader-property",
            "parse.key=true",
            "--reader-property",
            "key.separator=:",
            "--command-property",
            "linger.ms=100",
        ],
        stdin=("\n".join(LINES) + "\n").encode("utf-8"),
    )
    (VECTORS / f"java_console_{name}.bin").write_bytes(_raw(wire, topic, len(LINES)))


def _capture_transactional(libs: Path, kafka: LocalKafka, wire: Wire) -> dict[str, object]:
    """A transactional lz4 run (data batches and COMMIT markers); returns its expected counts."""
    topic = f"vec-txn-{uuid.uuid4().hex[:6]}"
    kafka.create_topic(topic)
    _java(
        libs,
        "org.apache.kafka.tools.ProducerPerformance",
        [
            "--bootstrap-server",
            kafka.bootstrap,
            "--topic",
            topic,
            "--num-records",
            "300",
            "--payload-monotonic",
            "--throughput",
            "-1",
            "--transactional-id",
            "vec-txn",
            "--transaction-duration-ms",
            "100",
            "--command-property",
            "compression.type=lz4",
            "linger.ms=20",
        ],
    )
    raw = _raw(wire, topic, _high_watermark(wire, topic), isolation_level=1)
    (VECTORS / "java_txn_lz4.bin").write_bytes(raw)
    batches = list(iter_batches(raw))
    return {
        "txn_records": sum(
            b.record_count for b in batches if isinstance(b, RecordBatch) and not b.is_control
        ),
        "txn_markers": sum(1 for b in batches if b.is_control),
    }


def _high_watermark(wire: Wire, topic: str) -> int:
    """Partition 0's high watermark, from a READ_COMMITTED fetch of one byte."""
    from kafkacore.protocol.messages import FetchRequest
    from kafkacore.protocol.messages.fetch_request import FetchPartition, FetchTopic

    from .test_broker import FETCH_VERSION

    response = wire.call(
        FetchRequest(
            replica_id=-1,
            isolation_level=1,
            topics=[
                FetchTopic(
                    topic=topic,
                    partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1)],
                )
            ],
        ),
        FETCH_VERSION,
    )
    end: int = response.responses[0].partitions[0].high_watermark  # type: ignore[attr-defined]
    return end


if __name__ == "__main__":
    main()

"""Compression choice and the TelemetryMaxBytes bound."""

from __future__ import annotations

import pytest
from opentelemetry.proto.metrics.v1 import metrics_pb2

from kafkacore.records.compression import Compression, decompress
from kafkacore.telemetry.otlp import MetricKind, MetricPoint
from kafkacore.telemetry.payload import build_payload, choose_compression


@pytest.mark.parametrize(
    ("accepted", "chosen"),
    [
        ([1, 2, 3, 4], Compression.ZSTD),
        ([2, 1, 3], Compression.LZ4),
        ([2, 1], Compression.GZIP),
        ([2], Compression.SNAPPY),
        ([], Compression.NONE),
        ([0, 9], Compression.NONE),  # NONE listed, or a code kafkacore does not know
    ],
)
def test_best_codec_both_sides_accept(accepted: list[int], chosen: Compression) -> None:
    assert choose_compression(accepted) is chosen


def _points(n: int) -> list[MetricPoint]:
    return [
        MetricPoint(
            name=f"org.apache.kafka.client.metric.{i:04d}.total",
            kind=MetricKind.GAUGE,
            value=float(i),
            time_ns=i,
            attributes=(("client_id", "c"),),
        )
        for i in range(n)
    ]


def _names(data: bytes) -> list[str]:
    decoded = metrics_pb2.MetricsData.FromString(data)
    return [m.name for m in decoded.resource_metrics[0].scope_metrics[0].metrics]


@pytest.mark.parametrize("codec", list(Compression))
def test_every_codec_decompresses_to_the_otlp_payload(codec: Compression) -> None:
    payload = build_payload((), _points(20), compression=codec, max_bytes=1 << 20, version="1")
    assert payload is not None
    assert payload.compression is codec and payload.metrics == 20 and payload.dropped == 0
    raw = payload.data if codec is Compression.NONE else decompress(codec, payload.data)
    assert len(_names(raw)) == 20


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
@pytest.mark.parametrize("bound", [200, 700, 1400])
def test_payload_never_exceeds_the_bound(codec: Compression, bound: int) -> None:
    points = _points(200)
    payload = build_payload((), points, compression=codec, max_bytes=bound, version="1")
    assert payload is not None
    assert len(payload.data) <= bound
    assert payload.metrics + payload.dropped == 200 and payload.dropped > 0
    raw = payload.data if codec is Compression.NONE else decompress(codec, payload.data)
    # The first metrics are kept, in order.
    assert _names(raw) == [p.name for p in points[: payload.metrics]]


def test_nothing_fits() -> None:
    assert (
        build_payload((), _points(3), compression=Compression.NONE, max_bytes=5, version="1")
        is None
    )

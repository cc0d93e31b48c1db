"""The PushTelemetry payload: compressed as both sides allow, within the broker's bound.

Theory of operation
-------------------
KIP-714: the broker lists the compression types it accepts for
PushTelemetry (``AcceptedCompressionTypes``) and the largest payload it
takes (``TelemetryMaxBytes``, measured on the bytes sent, i.e. after
compression). The client picks one of the accepted types:
:func:`choose_compression` takes the first of kafkacore's preference
(zstd, lz4, gzip, snappy: best ratio first) that the broker accepts, and
no compression when it accepts none of them. Compression uses the record
batches' codecs (:mod:`kafkacore.records.compression`, the framing Java
writes, which is what the broker decompresses).

:func:`build_payload` encodes the points as one OTLP ``MetricsData``; when
the result is larger than the bound it leaves metrics out from the end
(the subscription's order is the collector's, most basic first) until it
fits, and gives up (None) when not even an empty ``MetricsData`` fits.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Final

from kafkacore.records.compression import Compression, compress
from kafkacore.telemetry.otlp import Attributes, MetricPoint, encode_metrics_data

__all__ = ["PREFERENCE", "Payload", "build_payload", "choose_compression"]

#: kafkacore's preference among the codecs a broker may accept.
PREFERENCE: Final = (Compression.ZSTD, Compression.LZ4, Compression.GZIP, Compression.SNAPPY)

SCOPE_NAME: Final = "kafkacore"


@dataclass(frozen=True, slots=True, kw_only=True)
class Payload:
    """What one PushTelemetry carries."""

    data: bytes
    compression: Compression
    #: How many of the points given are in ``data`` (the first ones).
    metrics: int
    #: How many were left out to stay within ``TelemetryMaxBytes``.
    dropped: int


def choose_compression(accepted: Collection[int]) -> Compression:
    """The best codec both sides support (NONE when the broker accepts none of ours)."""
    for codec in PREFERENCE:
        if codec in accepted:
            return codec
    return Compression.NONE


def build_payload(
    resource: Attributes,
    points: Sequence[MetricPoint],
    *,
    compression: Compression,
    max_bytes: int,
    version: str,
) -> Payload | None:
    """``points`` (as many as fit in ``max_bytes`` once compressed) as one payload."""
    keep = len(points)
    while True:
        raw = encode_metrics_data(
            resource, points[:keep], scope_name=SCOPE_NAME, scope_version=version
        )
        data = compress(compression, raw) if compression is not Compression.NONE else raw
        if len(data) <= max_bytes:
            return Payload(
                data=data, compression=compression, metrics=keep, dropped=len(points) - keep
            )
        if keep == 0:
            return None
        # Shrink in proportion to the excess (at least one metric per try).
        keep = min(keep - 1, keep * max_bytes // len(data))

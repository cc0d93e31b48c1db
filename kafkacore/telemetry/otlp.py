"""The OTLP ``MetricsData`` message KIP-714 pushes, encoded with :mod:`.protobuf`.

Theory of operation
-------------------
KIP-714's PushTelemetry carries one OpenTelemetry
``opentelemetry.proto.metrics.v1.MetricsData`` (OTLP 1.x), which nests:

    MetricsData.resource_metrics[1]
      ResourceMetrics.resource[1]       Resource.attributes[1]: KeyValue*
      ResourceMetrics.scope_metrics[2]  ScopeMetrics.scope[1]: name[1], version[2]
                                        ScopeMetrics.metrics[2]: Metric*
    Metric: name[1] description[2] unit[3] gauge[5] | sum[7]
    Gauge: data_points[1]
    Sum: data_points[1] aggregation_temporality[2] is_monotonic[3]
    NumberDataPoint: start_time_unix_nano[2] (fixed64) time_unix_nano[3]
        (fixed64) as_double[4] (double) as_int[6] (sfixed64) attributes[7]
    KeyValue: key[1] value[2]  AnyValue: string_value[1]

(field numbers in brackets). kafkacore sends one data point per metric,
numbers only (gauges and sums; no histograms), which is what the client
metrics KIP-714 lists are.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum, IntEnum

from kafkacore.telemetry.protobuf import (
    bool_field,
    double_field,
    fixed64_field,
    message_field,
    sfixed64_field,
    string_field,
    varint_field,
)

__all__ = [
    "Attributes",
    "MetricKind",
    "MetricPoint",
    "Temporality",
    "encode_metric",
    "encode_metrics_data",
]

#: Key/value string attributes (resource labels, data point labels), in order.
Attributes = tuple[tuple[str, str], ...]


class MetricKind(Enum):
    """The OTLP metric types kafkacore emits."""

    GAUGE = "gauge"
    SUM = "sum"


class Temporality(IntEnum):
    """OTLP ``AggregationTemporality`` (KIP-714: the broker's ``DeltaTemporality``)."""

    DELTA = 1
    CUMULATIVE = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricPoint:
    """One metric with its single data point, ready to encode.

    ``value`` is written as ``as_int`` when it is an ``int`` and ``as_double``
    when it is a ``float``. ``start_ns`` and ``temporality`` matter for sums:
    the point covers ``start_ns`` to ``time_ns``.
    """

    name: str
    kind: MetricKind
    value: int | float
    time_ns: int
    start_ns: int = 0
    temporality: Temporality = Temporality.CUMULATIVE
    monotonic: bool = True
    description: str = ""
    unit: str = ""
    attributes: Attributes = ()


def _key_values(field: int, attributes: Iterable[tuple[str, str]]) -> bytes:
    return b"".join(
        message_field(field, string_field(1, key), message_field(2, string_field(1, value)))
        for key, value in attributes
    )


def _data_point(point: MetricPoint) -> bytes:
    parts = []
    if point.start_ns:
        parts.append(fixed64_field(2, point.start_ns))
    parts.append(fixed64_field(3, point.time_ns))
    if isinstance(point.value, int):
        parts.append(sfixed64_field(6, point.value))
    else:
        parts.append(double_field(4, point.value))
    parts.append(_key_values(7, point.attributes))
    return message_field(1, *parts)


def encode_metric(point: MetricPoint) -> bytes:
    """One ``Metric`` message (without the field key that embeds it)."""
    parts = [string_field(1, point.name)]
    if point.description:
        parts.append(string_field(2, point.description))
    if point.unit:
        parts.append(string_field(3, point.unit))
    data = _data_point(point)
    if point.kind is MetricKind.GAUGE:
        parts.append(message_field(5, data))
    else:
        parts.append(
            message_field(
                7,
                data,
                varint_field(2, point.temporality),
                bool_field(3, point.monotonic),
            )
        )
    return b"".join(parts)


def encode_metrics_data(
    resource: Attributes,
    points: Sequence[MetricPoint],
    *,
    scope_name: str,
    scope_version: str,
) -> bytes:
    """The whole ``MetricsData``: one resource, one scope, ``points`` in order."""
    scope = message_field(1, string_field(1, scope_name), string_field(2, scope_version))
    metrics = b"".join(message_field(2, encode_metric(p)) for p in points)
    resource_msg = message_field(1, _key_values(1, resource))
    return message_field(1, resource_msg, message_field(2, scope, metrics))

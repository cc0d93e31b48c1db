"""The OTLP payload decoded by an independent decoder (opentelemetry-proto)."""

from __future__ import annotations

from opentelemetry.proto.metrics.v1 import metrics_pb2

from kafkacore.telemetry.otlp import MetricKind, MetricPoint, Temporality, encode_metrics_data


def _decode(data: bytes) -> metrics_pb2.MetricsData:
    return metrics_pb2.MetricsData.FromString(data)


def test_metrics_data_round_trip() -> None:
    points = [
        MetricPoint(
            name="org.apache.kafka.producer.request.total",
            kind=MetricKind.SUM,
            value=42,
            time_ns=2_000_000_000,
            start_ns=1_000_000_000,
            temporality=Temporality.CUMULATIVE,
            unit="{request}",
            description="Requests sent, in total",
            attributes=(("client_id", "c1"),),
        ),
        MetricPoint(
            name="org.apache.kafka.producer.request.rate",
            kind=MetricKind.GAUGE,
            value=2.5,
            time_ns=2_000_000_000,
        ),
        MetricPoint(
            name="org.apache.kafka.producer.outgoing.byte.total",
            kind=MetricKind.SUM,
            value=-3,
            time_ns=5,
            temporality=Temporality.DELTA,
            monotonic=False,
        ),
    ]
    data = _decode(
        encode_metrics_data(
            (("client_id", "c1"), ("client_rack", "r")),
            points,
            scope_name="kafkacore",
            scope_version="1.2",
        )
    )
    (rm,) = data.resource_metrics
    assert [(a.key, a.value.string_value) for a in rm.resource.attributes] == [
        ("client_id", "c1"),
        ("client_rack", "r"),
    ]
    (sm,) = rm.scope_metrics
    assert (sm.scope.name, sm.scope.version) == ("kafkacore", "1.2")
    total, rate, delta = sm.metrics
    assert total.name == points[0].name
    assert total.unit == "{request}" and total.description == "Requests sent, in total"
    assert total.WhichOneof("data") == "sum"
    assert total.sum.is_monotonic is True
    assert total.sum.aggregation_temporality == metrics_pb2.AGGREGATION_TEMPORALITY_CUMULATIVE
    (dp,) = total.sum.data_points
    assert dp.as_int == 42 and dp.WhichOneof("value") == "as_int"
    assert (dp.start_time_unix_nano, dp.time_unix_nano) == (1_000_000_000, 2_000_000_000)
    assert [(a.key, a.value.string_value) for a in dp.attributes] == [("client_id", "c1")]
    assert rate.WhichOneof("data") == "gauge"
    (gp,) = rate.gauge.data_points
    assert gp.as_double == 2.5 and gp.start_time_unix_nano == 0 and not gp.attributes
    assert delta.sum.aggregation_temporality == metrics_pb2.AGGREGATION_TEMPORALITY_DELTA
    assert delta.sum.is_monotonic is False and delta.sum.data_points[0].as_int == -3


def test_empty_metrics_data_still_names_resource_and_scope() -> None:
    data = _decode(encode_metrics_data((), [], scope_name="kafkacore", scope_version="0"))
    (rm,) = data.resource_metrics
    assert not rm.resource.attributes
    assert rm.scope_metrics[0].scope.name == "kafkacore"
    assert not rm.scope_metrics[0].metrics

"""benchmarks/plot.py: the issue-12 targets checked on fixed rows, and the PNG drawn from them."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import plot
import pytest
from _harness import Row, with_ratios, write_rows


def r(harness: str, table: str, contender: str, rate: float, **kw: Any) -> Row:
    return Row(harness=harness, table=table, contender=contender, rate=rate, unit="u", **kw)


def producer_rows() -> list[Row]:
    out = []
    for table in ("100B acks=1 none", "1KiB acks=all lz4"):
        out += [
            r("producer", table, "kafkacore selector send", 400.0, extra={"p99_ms": 30.0}),
            r("producer", table, "kafkacore asyncio send", 310.0, extra={"p99_ms": 10.0}),
            r("producer", table, "kafkacore asyncio send (pure)", 10.0, path="pure"),
            r("producer", table, "kafkacore asyncio send_many", 1600.0),
            r("producer", table, "aiokafka", 100.0, rss_mib=40.0),
            r("producer", table, "kafka-python", 60.0),
            r("producer", table, "confluent-kafka", 1000.0),
        ]
    return with_ratios(out)


def outcome(outcomes: list[plot.Outcome], start: str) -> plot.Outcome:
    return next(o for o in outcomes if o.label.startswith(start))


def test_peer_targets_take_the_worst_compiled_row_and_leave_the_pure_twin_out() -> None:
    outcomes = plot.check_targets(producer_rows())
    send_aio = outcome(outcomes, "producer: per-record send >= 3x aiokafka")
    # 400/100 and 310/100 in two tables; the pure twin's 0.1x does not count.
    assert (send_aio.rows, send_aio.worst, send_aio.met) == (4, 3.1, True)
    send_kp = outcome(outcomes, "producer: per-record send >= 5x kafka-python")
    assert send_kp.worst == pytest.approx(310 / 60) and send_kp.met
    send_ck = outcome(outcomes, "producer: per-record send >= 0.5x confluent-kafka")
    assert (send_ck.worst, send_ck.met) == (0.31, False)
    assert send_ck.worst_row == "100B acks=1 none / kafkacore asyncio send"
    many = outcome(outcomes, "producer: send_many >= 1.5x confluent-kafka")
    assert (many.rows, many.worst, many.met) == (2, 1.6, True)
    p99 = outcome(outcomes, "producer: selector send p99 <= 2x asyncio")
    assert (p99.rows, p99.worst, p99.met) == (2, 3.0, False)


def test_targets_without_rows_say_so_instead_of_passing() -> None:
    outcomes = plot.check_targets(producer_rows())
    consumer = outcome(outcomes, "consumer: per-record iteration")
    assert consumer.rows == 0 and math.isnan(consumer.worst) and not consumer.met
    assert "| 0 | - | - | no data |" in plot.targets_markdown([consumer])


def test_consumer_uncompressed_is_held_against_lz4_of_the_same_contender() -> None:
    rows = [
        r("consumer", "100 B records, none", "kafkacore trio, per record", 90.0),
        r("consumer", "100 B records, lz4", "kafkacore trio, per record", 100.0),
        r("consumer", "100 B records, none", "kafkacore trio, poll_batches", 300.0),
        r("consumer", "100 B records, lz4", "kafkacore trio, poll_batches", 200.0),
        r("consumer", "100 B records, none", "aiokafka", 1.0),
        r("consumer", "100 B records, lz4", "aiokafka", 1000.0),
    ]
    got = outcome(plot.check_targets(with_ratios(rows)), "consumer: uncompressed")
    assert (got.rows, got.worst, got.worst_row, got.met) == (
        2,
        0.9,
        "kafkacore trio, per record",
        False,
    )


PARSE = "parse 1000 records, none"


def test_memory_is_held_against_aiokafka_or_its_compiled_codec() -> None:
    rows = [
        r("producer", "t", "kafkacore selector send", 1.0, rss_mib=50.0),
        r("producer", "t", "aiokafka", 1.0, rss_mib=40.0),
        r("producer", "t", "kafkacore selector send (pure)", 1.0, rss_mib=90.0, path="pure"),
        r(
            "codec",
            "parse 1000 records, none",
            "kafkacore compiled append / iter",
            1.0,
            rss_mib=30.0,
        ),
        r("codec", "parse 1000 records, none", "aiokafka (C ext)", 1.0, rss_mib=32.0),
    ]
    points = {(p.harness, p.contender): v for p, v in plot.rss_points(rows)}
    assert points == {
        ("producer", "kafkacore selector send"): 1.25,
        ("producer", "kafkacore selector send (pure)"): 2.25,
        ("codec", "kafkacore compiled append / iter"): 30 / 32,
    }
    memory = outcome(plot.check_targets(rows), "memory:")
    assert (memory.rows, memory.worst, memory.met) == (2, 1.25, False)


def test_codec_targets_apply_to_the_record_tables_and_compiled_rows_only() -> None:
    rows = with_ratios(
        [
            r("codec", "parse 1000 records, lz4", "kafkacore compiled append / iter", 20.0),
            r("codec", "parse 1000 records, lz4", "kafkacore pure append / iter", 1.0),
            r("codec", "parse 1000 records, lz4", "aiokafka (C ext)", 10.0),
            r("codec", "parse 1000 records, lz4", "kafka-python", 1.0),
            r("codec", "decode Metadata v5 response", "kafkacore", 1.0),
            r("codec", "decode Metadata v5 response", "aiokafka", 100.0),
        ]
    )
    outcomes = plot.check_targets(rows)
    assert outcome(outcomes, "codec: compiled records >= 1x aiokafka").rows == 1
    ten = outcome(outcomes, "codec: compiled records >= 10x kafka-python")
    assert (ten.rows, ten.worst, ten.met) == (1, 20.0, True)


def test_panels_group_kafkacore_ratios_by_harness_and_peer() -> None:
    groups = plot.panels(producer_rows())
    assert list(groups) == [
        ("producer", "aiokafka"),
        ("producer", "kafka-python"),
        ("producer", "confluent-kafka"),
    ]
    pure = [p for p in groups["producer", "aiokafka"] if p.pure]
    assert [(p.contender, p.ratio) for p in pure] == [("kafkacore asyncio send", 0.1)] * 2


def test_plot_writes_a_png_from_the_json(tmp_path: Path) -> None:
    rows = producer_rows()
    rows[0].rss_mib = 55.0
    results = tmp_path / "results.json"
    write_rows(str(results), rows, {"title": "test run"})
    lines: list[str] = []
    assert plot.main([str(results)], out=lines.append) == 0
    png = tmp_path / "results.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 10_000
    assert lines[0] == f"wrote {png}"
    assert "per-record send >= 3x aiokafka" in lines[1]


def test_plot_refuses_rows_with_nothing_to_draw(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no kafkacore row has a ratio"):
        plot.plot([r("producer", "t", "aiokafka", 1.0)], str(tmp_path / "x.png"))

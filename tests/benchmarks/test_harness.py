"""benchmarks/_harness.py: rows, ratios, JSON, tables, and the isolated runs that give peak RSS."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _harness import (
    ContenderFailed,
    Row,
    isolated,
    peak_rss_mib,
    read_rows,
    render_table,
    variants,
    with_ratios,
    write_rows,
)

MIB = 1 << 20


def row(contender: str, rate: float, table: str = "t", **kw: Any) -> Row:
    return Row(harness="h", table=table, contender=contender, rate=rate, unit="records/s", **kw)


# -- ratios -------------------------------------------------------------------------------


def test_every_row_gets_its_ratio_against_every_peer_of_its_own_table() -> None:
    rows = with_ratios(
        [
            row("kafkacore a", 300.0),
            row("kafkacore b", 50.0),
            row("aiokafka", 100.0),
            row("confluent-kafka", 600.0),
            row("kafkacore a", 10.0, table="other"),
            row("aiokafka", 40.0, table="other"),
        ]
    )
    a, b, aio, ck, other, _ = rows
    assert a.ratios == {"aiokafka": 3.0, "confluent-kafka": 0.5}
    assert b.ratios == {"aiokafka": 0.5, "confluent-kafka": 50 / 600}
    # Peers are compared with the other peers, never with kafkacore rows or themselves.
    assert aio.ratios == {"confluent-kafka": 100 / 600}
    assert ck.ratios == {"aiokafka": 6.0}
    assert other.ratios == {"aiokafka": 0.25}


def test_a_duration_row_ratio_is_above_one_when_it_takes_less_time() -> None:
    rows = with_ratios(
        [
            row("kafkacore", 2.0, higher_is_better=False),
            row("peer", 6.0, higher_is_better=False),
        ]
    )
    assert rows[0].ratios == {"peer": 3.0}


def test_a_rate_that_is_not_a_positive_number_gives_no_ratio() -> None:
    rows = with_ratios([row("kafkacore", 100.0), row("dead", math.nan), row("zero", 0.0)])
    assert rows[0].ratios == {}


# -- JSON ------------------------------------------------------------------------------------


def test_rows_round_trip_through_json_with_nan_as_null(tmp_path: Path) -> None:
    rows = with_ratios(
        [
            row(
                "kafkacore x",
                1234.5,
                rss_mib=45.25,
                path="compiled",
                extra={"p50_ms": 3.0, "p99_ms": math.nan},
            ),
            row("aiokafka", 617.25),
        ]
    )
    path = tmp_path / "rows.json"
    write_rows(str(path), rows, {"harness": "h", "records": 10})
    assert "NaN" not in path.read_text()  # strict JSON: other tools can read it
    meta, back = read_rows(str(path))
    assert meta == {"harness": "h", "records": 10}
    assert back[0].ratios == {"aiokafka": 2.0}
    assert back[0].rss_mib == 45.25 and back[0].path == "compiled"
    assert back[0].extra["p50_ms"] == 3.0 and math.isnan(back[0].extra["p99_ms"])
    assert back[1].rss_mib is None and back[1].path is None
    assert [r.key for r in back] == [r.key for r in rows]


# -- tables -----------------------------------------------------------------------------------


def test_render_table_puts_peak_rss_next_to_the_rate_then_extras_then_ratios() -> None:
    rows = with_ratios(
        [
            row("kafkacore x", 250_000.0, rss_mib=52.4, extra={"p99_ms": 12.34, "cpu": 0.5}),
            row("aiokafka", 100_000.0, rss_mib=40.0),
        ]
    )
    text = render_table(
        rows, extras=[("p99 ms", "p99_ms", ".1f"), ("CPU vs", "cpu", ".2fx")], peers=["aiokafka"]
    )
    lines = text.splitlines()
    assert lines[0] == "| client | records/s | peak RSS MiB | p99 ms | CPU vs | vs aiokafka |"
    assert lines[2] == "| kafkacore x | 250,000 | 52 | 12.3 | 0.50x | 2.50x |"
    assert lines[3] == "| aiokafka | 100,000 | 40 | - | - | - |"


def test_render_table_leaves_out_the_rss_column_when_nothing_measured_it() -> None:
    text = render_table([row("kafkacore", 1.5)], peers=[])
    assert text.splitlines()[0] == "| client | records/s |"
    assert text.splitlines()[2] == "| kafkacore | 1.50 |"


def test_pure_variants_twin_only_the_kafkacore_contenders() -> None:
    def f() -> None: ...

    runs = variants({"kafkacore a": f, "aiokafka": f}, pure=True)
    assert [(r.label, dict(r.env)) for r in runs] == [
        ("kafkacore a", {"KAFKACORE_PURE": None}),
        ("kafkacore a (pure)", {"KAFKACORE_PURE": "1"}),
        ("aiokafka", {}),
    ]
    assert [r.label for r in variants({"kafkacore a": f, "aiokafka": f}, pure=False)] == [
        "kafkacore a",
        "aiokafka",
    ]


# -- isolation and peak RSS ----------------------------------------------------------------------


def allocate(mib: int) -> int:
    block = bytearray(mib * MIB)
    block[::4096] = b"x" * len(block[::4096])  # touch every page: resident, not just reserved
    return len(block)


def allocate_in_a_child_process(mib: int) -> int:
    code = f"b = bytearray({mib} << 20); b[::4096] = b'x' * len(b[::4096])"
    return subprocess.run([sys.executable, "-c", code], check=True).returncode


def record_path() -> str | None:
    """Import kafkacore's record layer (it picks its path at import); the variable it saw."""
    import kafkacore.records  # noqa: F401

    return os.environ.get("KAFKACORE_PURE")


def fail() -> None:
    raise KeyError("the contender broke")


def test_isolated_returns_the_result_and_the_peak_rss_of_its_own_process() -> None:
    small = isolated(allocate, 1)
    big = isolated(allocate, 200)
    assert big.result == 200 * MIB
    assert small.rss_mib is not None and big.rss_mib is not None
    # The 200 MiB are the child's, not this process's, and show in its peak.
    assert big.rss_mib - small.rss_mib > 180
    assert small.rss_mib < 150


def test_peak_rss_counts_a_child_it_ran_such_as_a_jvm() -> None:
    got = isolated(allocate_in_a_child_process, 300)
    assert got.rss_mib is not None and got.rss_mib > 290


def test_isolated_sets_the_childs_environment_and_labels_the_record_path() -> None:
    outside = os.environ.get("KAFKACORE_PURE")
    pure = isolated(record_path, env={"KAFKACORE_PURE": "1"})
    assert pure.result == "1"
    assert pure.path == "pure"
    compiled = isolated(record_path, env={"KAFKACORE_PURE": None})
    assert compiled.result is None
    from kafkacore.records import _backend

    assert compiled.path == ("compiled" if _backend.NATIVE_UNAVAILABLE is None else "pure")
    # This process's environment is as it was.
    assert os.environ.get("KAFKACORE_PURE") == outside


def test_a_peer_that_does_not_import_kafkacore_has_no_record_path() -> None:
    assert isolated(allocate, 1).path is None


def test_a_failing_contender_raises_with_its_traceback() -> None:
    with pytest.raises(ContenderFailed, match="the contender broke") as info:
        isolated(fail)
    assert "Traceback" in str(info.value) and "KeyError" in str(info.value)


def test_in_process_runs_here_without_rss_and_refuses_an_environment() -> None:
    got = isolated(allocate, 1, enabled=False)
    assert got.result == MIB and got.rss_mib is None
    with pytest.raises(ValueError, match="needs a child process"):
        isolated(allocate, 1, env={"KAFKACORE_PURE": "1"}, enabled=False)


def test_peak_rss_of_this_process_is_at_least_its_current_rss() -> None:
    with open("/proc/self/status") as f:
        rss_kib = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    assert peak_rss_mib() >= rss_kib / 1024

"""benchmarks/run_all.py: the codec table reader, harness commands, the before/after comparison."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import run_all
from _harness import Row, with_ratios, write_rows
from run_all import compare, compare_report, harness_command, parse_codec_markdown

# What bench_codec.py --markdown prints (its header lines, then one table per case).
CODEC_MD = """\
# 2026-11-24 09:27 UTC on AMD EPYC, 2 cores, Python 3.11.7, Linux
# start: load average 3.4 (1 min), 2.9 (5 min)
# end: load average 3.4 (1 min), 2.9 (5 min)

| build 1000 records, none | per s | vs kafka-python | vs aiokafka |
|---|---:|---:|---:|
| kafkacore compiled append / iter | 12,244,648 | 14.84x | 2.01x |
| kafkacore pure append_many / columns | 2,809,320 | 3.41x | 0.46x |
| kafka-python | 824,836 | 1.00x | 0.14x |
| aiokafka (C ext) | 6,091,000 | 7.38x | 1.00x |

| decode Metadata v5 response, 50 topics x 20 partitions | per s | vs kafka-python | vs aiokafka |
|---|---:|---:|---:|
| kafkacore | 1,451 | 1.55x | 3.99x |
| aiokafka | 364 | 0.39x | 1.00x |
"""


def test_the_codec_tables_become_rows_with_their_path_and_unit() -> None:
    rows = parse_codec_markdown(CODEC_MD)
    assert [(r.table[:5], r.contender, r.rate, r.unit, r.path) for r in rows] == [
        ("build", "kafkacore compiled append / iter", 12_244_648.0, "records/s", "compiled"),
        ("build", "kafkacore pure append_many / columns", 2_809_320.0, "records/s", "pure"),
        ("build", "kafka-python", 824_836.0, "records/s", None),
        ("build", "aiokafka (C ext)", 6_091_000.0, "records/s", None),
        ("decod", "kafkacore", 1451.0, "messages/s", "compiled"),
        ("decod", "aiokafka", 364.0, "messages/s", None),
    ]
    ratios = with_ratios(rows)[0].ratios
    assert ratios["aiokafka (C ext)"] == pytest.approx(12_244_648 / 6_091_000)


def test_codec_output_without_a_table_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"no '\| <case> \| per s"):
        parse_codec_markdown("# only a header\nTraceback: something broke\n")


def test_codec_rss_goes_to_the_record_tables_only() -> None:
    rows = parse_codec_markdown(CODEC_MD)
    rss = {"kafkacore compiled append / iter": 37.0, "kafkacore": 99.0}
    out = run_all.with_codec_rss(rows, rss)
    assert out[0].rss_mib == 37.0
    assert all(r.rss_mib is None for r in out[1:])  # the protocol row is not record work


def test_codec_record_work_runs_for_a_peer_without_kafkacore() -> None:
    # The work the RSS child does, run here: every compression aiokafka has, 110 bytes a record.
    assert run_all.codec_record_work("aiokafka (C ext)") == 5 * 110 * 1000


@pytest.mark.parametrize(
    ("name", "want", "absent"),
    [
        ("codec", ["bench_codec.py", "--markdown", "--quick"], ["--json", "--bootstrap", "--pure"]),
        ("codec messages", ["--json", "out.json", "--markdown"], ["--bootstrap", "--pure"]),
        ("producer", ["--json", "out.json", "--bootstrap", "h:1", "--pure", "--in-process"], []),
        ("spark", ["--bootstrap", "h:1", "--quick"], ["--pure", "--in-process"]),
    ],
)
def test_each_harness_gets_only_the_options_it_takes(
    name: str, want: list[str], absent: list[str]
) -> None:
    cmd = harness_command(
        name, bootstrap="h:1", json_path="out.json", quick=True, pure=True, in_process=True
    )
    assert cmd[0] == sys.executable
    text = " ".join(cmd)
    assert all(w in text for w in want), cmd
    assert not any(a in cmd for a in absent), cmd


def test_harness_args_split_like_a_shell() -> None:
    got = run_all._harness_args(["producer=--records 5000 --only 'kafkacore trio'", "codec=-x"])
    assert got == {"producer": ["--records", "5000", "--only", "kafkacore trio"], "codec": ["-x"]}
    with pytest.raises(SystemExit, match="HARNESS='ARGS'"):
        run_all._harness_args(["nosuch=--x"])


# -- before / after -------------------------------------------------------------------------


def rows(kc: dict[str, float], peer: float, table: str = "t") -> list[Row]:
    out = [
        Row(harness="producer", table=table, contender=c, rate=r, unit="records/s")
        for c, r in kc.items()
    ]
    out.append(Row(harness="producer", table=table, contender="aiokafka", rate=peer, unit="rec/s"))
    return with_ratios(out)


def test_compare_flags_a_row_slower_in_rate_and_against_the_peers() -> None:
    old = rows({"kafkacore slow": 100.0, "kafkacore same": 100.0, "kafkacore fast": 100.0}, 50.0)
    new = rows({"kafkacore slow": 80.0, "kafkacore same": 95.0, "kafkacore fast": 130.0}, 50.0)
    changes, only_old, only_new = compare(old, new, threshold=0.10)
    got = {
        c.contender: (round(c.rate_change, 2), round(c.peer_change or 0, 2), c.verdict)
        for c in changes
    }
    assert got == {
        "kafkacore slow": (-0.2, -0.2, "SLOWER"),
        "kafkacore same": (-0.05, -0.05, ""),
        "kafkacore fast": (0.3, 0.3, "faster"),
    }
    assert only_old == only_new == []


def test_a_slower_machine_moves_the_rate_but_not_the_ratio_so_it_is_only_a_question() -> None:
    # Everyone 20% slower (busier machine): kafkacore's rate fell, its ratio held.
    changes, _, _ = compare(rows({"kafkacore x": 100.0}, 50.0), rows({"kafkacore x": 80.0}, 40.0))
    assert [(c.verdict, round(c.peer_change or 0, 6)) for c in changes] == [("slower?", 0.0)]


def test_without_peers_the_rate_alone_decides() -> None:
    old = [Row(harness="h", table="t", contender="kafkacore", rate=100.0, unit="u")]
    new = [Row(harness="h", table="t", contender="kafkacore", rate=85.0, unit="u")]
    changes, _, _ = compare(old, new, threshold=0.10)
    assert changes[0].peer_change is None and changes[0].verdict == "SLOWER"
    changes, _, _ = compare(old, new, threshold=0.20)
    assert changes[0].verdict == ""


def test_a_duration_row_is_slower_when_it_takes_longer() -> None:
    def rebalance(seconds: float) -> list[Row]:
        return [
            Row(
                harness="consumer",
                table="rebalance",
                contender="kafkacore, classic",
                rate=seconds,
                unit="seconds",
                higher_is_better=False,
            )
        ]

    changes, _, _ = compare(rebalance(1.0), rebalance(2.0))
    assert changes[0].rate_change == -0.5 and changes[0].verdict == "SLOWER"


def test_compare_lists_rows_only_one_run_has_and_ignores_peers() -> None:
    old = rows({"kafkacore gone": 1.0, "kafkacore kept": 1.0}, 1.0)
    new = rows({"kafkacore kept": 1.0, "kafkacore new": 1.0}, 1.0)
    changes, only_old, only_new = compare(old, new)
    assert [c.contender for c in changes] == ["kafkacore kept"]
    assert only_old == ["producer / t / kafkacore gone"]
    assert only_new == ["producer / t / kafkacore new"]
    report = compare_report(changes, only_old, only_new, 0.1)
    assert "1 rows compared: 0 SLOWER" in report
    assert "Only in the old run (1): producer / t / kafkacore gone" in report


def test_compare_refuses_a_threshold_that_is_not_a_fraction() -> None:
    with pytest.raises(ValueError, match="not a fraction"):
        compare([], [], threshold=10)


def test_compare_command_exits_1_when_a_row_is_slower(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new, same = tmp_path / "old.json", tmp_path / "new.json", tmp_path / "same.json"
    write_rows(str(old), rows({"kafkacore x": 100.0}, 50.0))
    write_rows(str(new), rows({"kafkacore x": 70.0}, 50.0))
    write_rows(str(same), rows({"kafkacore x": 98.0}, 50.0))
    assert run_all.main(["--compare", str(old), str(new)]) == 1
    out = capsys.readouterr().out
    assert "| producer | t | kafkacore x | 100 | 70.00 | -30% | -30% | SLOWER |" in out
    assert "SLOWER: producer / t / kafkacore x: rate -30%" in out
    assert run_all.main(["--compare", str(old), str(same)]) == 0
    assert run_all.main(["--compare", str(old), str(new), "--threshold", "0.5"]) == 0


def test_several_runs_per_side_compare_by_their_medians(tmp_path: Path) -> None:
    # One outlier per side (a noisy single shot) must not decide the verdict.
    paths = []
    for i, rate in enumerate([100.0, 40.0, 101.0, 99.0, 98.0, 300.0]):
        path = tmp_path / f"run{i}.json"
        write_rows(str(path), rows({"kafkacore x": rate}, 50.0))
        paths.append(str(path))
    old, new = ",".join(paths[:3]), ",".join(paths[3:])
    assert run_all.main(["--compare", old, new]) == 0
    merged = run_all.median_rows([rows({"kafkacore x": r}, 50.0) for r in (100.0, 40.0, 101.0)])
    mine = next(r for r in merged if r.contender == "kafkacore x")
    assert mine.rate == 100.0 and mine.ratios == {"aiokafka": 2.0}


def test_a_row_missing_from_one_run_takes_the_median_of_the_others() -> None:
    merged = run_all.median_rows(
        [rows({"kafkacore x": 10.0}, 5.0), rows({}, 5.0), rows({"kafkacore x": 30.0}, 5.0)]
    )
    assert [r.rate for r in merged if r.contender == "kafkacore x"] == [20.0]
    with pytest.raises(ValueError, match="no runs"):
        run_all.median_rows([])

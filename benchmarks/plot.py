"""Plot kafkacore's ratios against its peers from a ``run_all.py`` JSON, and check the targets.

Run: ``.venv/bin/python benchmarks/plot.py RESULTS.json [-o ratios.png]``

One panel per (harness, peer): every kafkacore row's ratio against that
peer (its rate over the peer's in the same table; above 1.0 is faster),
one marker series per kafkacore contender across the harness's tables,
filled for the compiled record path and hollow for the pure-Python one,
on a log scale, with a line at 1.0 and a dashed line at each issue-12
target that applies to the panel. A last panel shows peak RSS against
aiokafka's in the same table (below 1.0 is less memory).

:data:`TARGETS` are the issue's peer-ratio targets as data;
:func:`check_targets` evaluates them and the targets that are not peer
ratios (consumer uncompressed vs lz4, selector p99 vs asyncio p99, peak
RSS vs aiokafka) on the compiled rows.
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from _harness import Row, read_rows

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "TARGETS",
    "Outcome",
    "Target",
    "check_targets",
    "panels",
    "plot",
    "rss_points",
    "targets_markdown",
]


@dataclass(frozen=True)
class Target:
    """Issue 12: the kafkacore rows of ``harness`` whose contender matches ``contender``
    (and table ``table``; regular expressions, searched) reach ``ratio`` against ``peer``.

    ``what`` names those rows for people ("per-record send").
    """

    harness: str
    peer: str
    contender: str
    ratio: float
    what: str
    table: str = ""

    @property
    def label(self) -> str:
        return f"{self.harness}: {self.what} >= {self.ratio:g}x {self.peer}"

    @property
    def short(self) -> str:
        return f"{self.what} {self.ratio:g}x"

    def applies(self, row: Row) -> bool:
        return (
            row.harness == self.harness
            and row.is_kafkacore
            and not _is_pure(row)
            and re.search(self.contender, row.contender) is not None
            and re.search(self.table, row.table) is not None
        )


_RECORDS = r"^(build|parse) "
TARGETS: tuple[Target, ...] = (
    Target("codec", "aiokafka (C ext)", r"^kafkacore compiled", 1.0, "compiled records", _RECORDS),
    Target("codec", "kafka-python", r"^kafkacore compiled", 10.0, "compiled records", _RECORDS),
    Target("producer", "aiokafka", r" send$", 3.0, "per-record send"),
    Target("producer", "kafka-python", r" send$", 5.0, "per-record send"),
    Target("producer", "confluent-kafka", r" send$", 0.5, "per-record send"),
    Target("producer", "confluent-kafka", r" send_many$", 1.5, "send_many"),
    Target("consumer", "aiokafka", r"per record$", 1.5, "per-record iteration"),
    Target("consumer", "java ConsumerPerformance", r"poll_batches$", 1.0, "poll_batches"),
    Target("roundtrip", "aiokafka", r"^kafkacore", 1.0, "round trips"),
    # Issue 14: share-group consumption at or above Java's share consumer.
    Target("share", "java ShareConsumerPerformance", r"^kafkacore", 1.0, "share consume"),
)

#: Whose memory kafkacore's is held against (issue 12: at or below aiokafka's), per harness.
RSS_PEERS = {"codec": "aiokafka (C ext)"}
RSS_PEER = "aiokafka"


def _is_pure(row: Row) -> bool:
    return row.path == "pure" or row.contender.endswith("(pure)")


@dataclass(frozen=True)
class Outcome:
    """One target over the rows it applies to: met when every row reaches it."""

    label: str
    rows: int
    worst: float  # the worst ratio (NaN when no row applies)
    worst_row: str
    met: bool


def _outcome(
    label: str, goal: float, points: Sequence[tuple[str, float]], *, at_most: bool
) -> Outcome:
    """``points`` are (row name, value); met when every value is >= goal (<= with ``at_most``)."""
    if not points:
        return Outcome(label, 0, math.nan, "-", False)
    pick = max if at_most else min
    name, worst = pick(points, key=lambda p: p[1])
    met = worst <= goal if at_most else worst >= goal
    return Outcome(label, len(points), worst, name, met)


def check_targets(rows: Sequence[Row]) -> list[Outcome]:
    """Every issue-12 target the rows can speak to, on the compiled (non-pure) kafkacore rows."""
    out = []
    for t in TARGETS:
        points = [
            (f"{r.table} / {r.contender}", r.ratios[t.peer])
            for r in rows
            if t.applies(r) and t.peer in r.ratios
        ]
        out.append(_outcome(t.label, t.ratio, points, at_most=False))
    out.append(_uncompressed_vs_lz4(rows))
    out.append(_selector_p99(rows))
    out.append(_rss_vs_peer(rows))
    return out


def _uncompressed_vs_lz4(rows: Sequence[Row]) -> Outcome:
    rate = {
        (r.contender, r.table): r.rate
        for r in rows
        if r.harness == "consumer" and r.is_kafkacore and not _is_pure(r)
    }
    points = []
    for (contender, table), none_rate in rate.items():
        if table.endswith(", none"):
            lz4 = rate.get((contender, table[: -len("none")] + "lz4"))
            if lz4:
                points.append((contender, none_rate / lz4))
    return _outcome(
        "consumer: uncompressed >= 1.0x lz4 (same contender)", 1.0, points, at_most=False
    )


def _selector_p99(rows: Sequence[Row]) -> Outcome:
    p99 = {
        (r.contender, r.table): r.extra.get("p99_ms", math.nan)
        for r in rows
        if r.harness == "producer" and not _is_pure(r)
    }
    points = []
    for (contender, table), selector in p99.items():
        if contender == "kafkacore selector send":
            asyncio_p99 = p99.get(("kafkacore asyncio send", table), math.nan)
            if math.isfinite(selector) and math.isfinite(asyncio_p99) and asyncio_p99 > 0:
                points.append((table, selector / asyncio_p99))
    return _outcome("producer: selector send p99 <= 2x asyncio send p99", 2.0, points, at_most=True)


def _rss_vs_peer(rows: Sequence[Row]) -> Outcome:
    points = [
        (f"{r.harness}: {r.table} / {r.contender}", ratio)
        for r, ratio in rss_points(rows)
        if not _is_pure(r)
    ]
    return _outcome(
        f"memory: peak RSS <= 1.0x {RSS_PEER}'s (same table)", 1.0, points, at_most=True
    )


def rss_points(rows: Sequence[Row]) -> list[tuple[Row, float]]:
    """Each kafkacore row with a peak RSS, and its RSS over aiokafka's in its table.

    aiokafka's is :data:`RSS_PEER`, or the harness's entry of :data:`RSS_PEERS`.
    """
    peer_rss = {
        (r.harness, r.table): r.rss_mib
        for r in rows
        if r.contender == RSS_PEERS.get(r.harness, RSS_PEER) and r.rss_mib
    }
    out = []
    for r in rows:
        base = peer_rss.get((r.harness, r.table))
        if r.is_kafkacore and r.rss_mib is not None and base:
            out.append((r, r.rss_mib / base))
    return out


def targets_markdown(outcomes: Sequence[Outcome]) -> str:
    lines = ["| target | rows | worst | worst row | met |", "|---|---|---|---|---|"]
    for o in outcomes:
        worst = "-" if math.isnan(o.worst) else f"{o.worst:.2f}x"
        met = "yes" if o.met else ("no data" if o.rows == 0 else "**no**")
        lines.append(f"| {o.label} | {o.rows} | {worst} | {o.worst_row} | {met} |")
    return "\n".join(lines)


# -- drawing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    table: str
    contender: str  # without " (pure)"
    pure: bool
    ratio: float


def panels(rows: Sequence[Row]) -> dict[tuple[str, str], list[Point]]:
    """(harness, peer) -> the kafkacore rows' ratios against that peer, in row order."""
    out: dict[tuple[str, str], list[Point]] = {}
    for r in rows:
        if not r.is_kafkacore:
            continue
        for peer, ratio in r.ratios.items():
            if math.isfinite(ratio) and ratio > 0:
                name = r.contender.removesuffix(" (pure)")
                out.setdefault((r.harness, peer), []).append(
                    Point(r.table, name, _is_pure(r), ratio)
                )
    return out


def _targets_for(harness: str, peer: str) -> list[Target]:
    return [t for t in TARGETS if t.harness == harness and t.peer == peer]


def plot(rows: Sequence[Row], path: str, title: str = "") -> None:
    """Write the ratio panels (and the RSS panel, when RSS was measured) to ``path`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = panels(rows)
    rss = [(r, v) for r, v in rss_points(rows)]
    count = len(groups) + (1 if rss else 0)
    if count == 0:
        raise ValueError(f"plot(): no kafkacore row has a ratio to draw ({len(rows)} rows)")
    cols = 2 if count > 1 else 1
    nrows = math.ceil(count / cols)
    fig, axes = plt.subplots(
        nrows, cols, figsize=(10 * cols, 4.2 * nrows), squeeze=False, layout="constrained"
    )
    flat = [ax for line in axes for ax in line]
    for ax, ((harness, peer), points) in zip(flat, groups.items(), strict=False):
        _draw_panel(ax, f"{harness}: kafkacore / {peer}", points, _targets_for(harness, peer))
        ax.set_ylabel("rate ratio (log; > 1 faster)")
    if rss:
        _draw_rss(flat[len(groups)], rss)
    for ax in flat[count:]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _draw_panel(ax: Axes, title: str, points: Sequence[Point], targets: Sequence[Target]) -> None:
    tables = list(dict.fromkeys(p.table for p in points))
    series = list(dict.fromkeys(p.contender for p in points))
    width = 0.8 / max(len(series), 1)
    colours = _colours(len(series))
    for i, name in enumerate(series):
        for pure in (False, True):
            mine = [p for p in points if p.contender == name and p.pure == pure]
            if not mine:
                continue
            xs = [tables.index(p.table) - 0.4 + width * (i + 0.5) for p in mine]
            ax.scatter(
                xs,
                [p.ratio for p in mine],
                s=28,
                marker="o",
                facecolors="none" if pure else colours[i],
                edgecolors=colours[i],
                label=f"{name}{' (pure)' if pure else ''}",
                zorder=3,
            )
    ax.set_yscale("log")
    ax.axhline(1.0, color="0.3", linewidth=1.0, zorder=1)
    for t in targets:
        ax.axhline(t.ratio, color="tab:red", linestyle="--", linewidth=0.9, zorder=2)
        ax.annotate(
            t.short,
            xy=(1.0, t.ratio),
            xycoords=("axes fraction", "data"),
            xytext=(-4, 2),
            textcoords="offset points",
            ha="right",
            fontsize=7,
            color="tab:red",
        )
    values = [p.ratio for p in points] + [t.ratio for t in targets] + [1.0]
    _log_axis(ax, min(values) / 1.6, max(values) * 1.6)
    ax.set_xticks(range(len(tables)))
    ax.set_xticklabels([_short(t) for t in tables], rotation=25, ha="right", fontsize=7)
    ax.set_xlim(-0.6, len(tables) - 0.4)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", which="both", alpha=0.25)
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)


def _draw_rss(ax: Axes, rss: Sequence[tuple[Row, float]]) -> None:
    """Each kafkacore row's peak RSS over aiokafka's, spread out within its harness."""
    harnesses = list(dict.fromkeys(r.harness for r, _ in rss))
    for pure in (False, True):
        xs: list[float] = []
        ys: list[float] = []
        for i, harness in enumerate(harnesses):
            mine = [v for r, v in rss if r.harness == harness and _is_pure(r) == pure]
            step = 0.8 / max(len(mine), 1)
            xs += [i - 0.4 + step * (k + 0.5) for k in range(len(mine))]
            ys += mine
        if xs:
            ax.scatter(
                xs,
                ys,
                s=16,
                facecolors="none" if pure else "C0",
                edgecolors="C0",
                label="pure path" if pure else "compiled path",
                zorder=3,
            )
    ax.set_yscale("log")
    values = [v for _, v in rss] + [1.0]
    _log_axis(ax, min(values) / 1.3, max(values) * 1.3)
    ax.axhline(1.0, color="tab:red", linestyle="--", linewidth=0.9, zorder=2)
    counts = [sum(r.harness == h for r, _ in rss) for h in harnesses]
    ax.set_xticks(range(len(harnesses)))
    ax.set_xticklabels([f"{h} ({n} rows)" for h, n in zip(harnesses, counts, strict=True)])
    ax.set_title(f"peak RSS: kafkacore / {RSS_PEER} in the same table (< 1 is less memory)")
    ax.set_ylabel("RSS ratio (log)")
    ax.grid(axis="y", which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)


def _log_axis(ax: Axes, low: float, high: float) -> None:
    """Limits and "2x"-style labels; within a decade or two the minor ticks get labels too."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_ylim(low, high)
    label = FuncFormatter(lambda y, _pos: f"{y:g}x")
    if high / low < 30:
        ax.yaxis.set_major_formatter(label)
        ax.yaxis.set_minor_locator(LogLocator(base=10, subs=(2.0, 3.0, 5.0)))
        ax.yaxis.set_minor_formatter(label)
        ax.tick_params(axis="y", which="minor", labelsize=7)
    else:
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(label)
        ax.yaxis.set_minor_formatter(NullFormatter())


def _short(table: str) -> str:
    return table if len(table) <= 34 else table[:32] + "..."


def _colours(n: int) -> list[str]:
    base = [f"C{i}" for i in range(10)]
    return [base[i % 10] for i in range(n)]


def summary(rows: Sequence[Row]) -> str:
    """The geometric mean ratio per (harness, peer) over the compiled kafkacore rows."""
    lines = []
    for (harness, peer), points in panels(rows).items():
        compiled = [p.ratio for p in points if not p.pure]
        if compiled:
            mean = statistics.geometric_mean(compiled)
            lines.append(
                f"{harness:16s} vs {peer:28s} geometric mean {mean:6.2f}x "
                f"(min {min(compiled):.2f}x, {len(compiled)} rows)"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None, *, out: Callable[[str], None] = print) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", help="the JSON run_all.py wrote")
    parser.add_argument("-o", "--output", help="PNG to write (default: next to the JSON)")
    args = parser.parse_args(argv)
    meta, rows = read_rows(args.results)
    png = args.output or re.sub(r"\.json$", "", args.results) + ".png"
    plot(rows, png, title=str(meta.get("title", "")))
    out(f"wrote {png}")
    out(targets_markdown(check_targets(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

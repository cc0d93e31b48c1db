"""Run every benchmark harness in one go against one broker; or compare two such runs.

Run::

    .venv/bin/python benchmarks/run_all.py [--quick] [--pure] [--spark] [--bootstrap H:P]
        [--only HARNESS ...] [--out DIR] [--harness-args HARNESS='--records 100000']
    .venv/bin/python benchmarks/run_all.py --compare OLD.json[,OLD2.json...] NEW.json[,...]
        [--threshold 0.10]

A run executes, in this order, ``codec`` (``bench_codec.py --markdown``),
``codec messages``, ``roundtrip``, ``producer``, ``consumer`` and ``share``
(KIP-932 share groups against Java's share consumer) (and
``spark`` with ``--spark``: it takes long), each as its own process with
its own method (interleaving, best-of, CPU or wall time, as each harness
documents), the broker ones all against one broker (started here unless
``--bootstrap`` names one). Into ``--out`` (default
``benchmarks/runs/<UTC time>``) it writes each harness's markdown
(``<harness>.md``) and its progress log (``<harness>.log``), every row in
``results.json`` (harness, table, contender, rate, unit, peak RSS, ratios
against every peer of the same table, record path; see
:class:`_harness.Row`), the ratio plot ``ratios.png`` (:mod:`plot`) and
``summary.md`` (the targets of issue 12, met or not, and every table).

``--pure`` makes the producer, consumer and round-trip harnesses run each
kafkacore contender twice, compiled and with ``KAFKACORE_PURE=1``
(labelled "(pure)"); the codec harness always measures both paths, and
the generated message classes (``codec messages``) are Python on both.
``--quick`` is a smoke run (every harness's ``--quick``). Codec peak RSS:
each codec contender's record-batch work (build and parse once per
compression) runs again in a fresh process of its own, after the timed
run (``--no-codec-rss`` skips it).

``--compare OLD.json NEW.json`` prints, for every kafkacore row in both,
the change in its rate and the change in its ratios against the peers
(which a busier or quieter machine moves less), and flags a row SLOWER
when both fell by more than the threshold (default 10%, the run-to-run
spread the codec harness documents under load; single-shot producer and
consumer rows on 2 shared cores can spread more); ``slower?`` when only
one did. The exit status is 1 when any row is SLOWER. Either side may name
several runs, comma-separated (interleave them: old, new, old, new...):
each row then stands for its runs' median rate and median ratios, which
single-shot rows on a 2-core machine need.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib
import math
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import IO, Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _harness import (  # noqa: E402
    ContenderFailed,
    Row,
    broker,
    isolated,
    markdown_table,
    read_rows,
    with_ratios,
    write_rows,
)

ROOT = os.path.dirname(HERE)

#: Harness name -> script; run in this order.
SCRIPTS = {
    "codec": "bench_codec.py",
    "codec messages": "bench_codec_messages.py",
    "roundtrip": "bench_roundtrip.py",
    "producer": "bench_producer.py",
    "consumer": "bench_consumer.py",
    "share": "bench_share.py",
    "spark": "bench_spark.py",
}
#: Harnesses that talk to the broker (take --bootstrap).
NEEDS_BROKER = {"roundtrip", "producer", "consumer", "share", "spark"}
#: Harnesses that run kafkacore contenders twice with --pure.
TAKES_PURE = {"roundtrip", "producer", "consumer"}
#: Harnesses whose contenders run in a fresh process each (--in-process turns it off).
ISOLATES = {"roundtrip", "producer", "consumer", "share"}
DEFAULT_THRESHOLD = 0.10


# -- running the harnesses -----------------------------------------------------------


@dataclass
class HarnessRun:
    """What one harness produced: its rows and its meta, or why it failed."""

    name: str
    rows: list[Row] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None


def harness_command(
    name: str,
    *,
    bootstrap: str | None,
    json_path: str,
    quick: bool,
    pure: bool,
    in_process: bool,
    extra: Sequence[str] = (),
) -> list[str]:
    """The command line that runs harness ``name`` (its markdown goes to stdout)."""
    cmd = [sys.executable, os.path.join(HERE, SCRIPTS[name])]
    if name == "codec":
        cmd.append("--markdown")  # no --json: its markdown is parsed (parse_codec_markdown)
    else:
        cmd += ["--json", json_path]
    if name == "codec messages":
        cmd.append("--markdown")
    if name in NEEDS_BROKER and bootstrap:
        cmd += ["--bootstrap", bootstrap]
    if quick:
        cmd.append("--quick")
    if pure and name in TAKES_PURE:
        cmd.append("--pure")
    if in_process and name in ISOLATES:
        cmd.append("--in-process")
    return cmd + list(extra)


def _tee(stream: IO[str], log: IO[str], prefix: str) -> None:
    for line in stream:
        log.write(line)
        log.flush()
        sys.stderr.write(f"[{prefix}] {line}")
        sys.stderr.flush()


def run_harness(name: str, cmd: Sequence[str], out_dir: str, json_path: str) -> HarnessRun:
    """Run one harness: stdout to ``<name>.md``, stderr to ``<name>.log`` and to ours."""
    stem = os.path.join(out_dir, name.replace(" ", "_"))
    began = time.monotonic()
    run = HarnessRun(name)
    with open(stem + ".md", "w") as md, open(stem + ".log", "w") as log:
        log.write("$ " + shlex.join(cmd) + "\n")
        proc = subprocess.Popen(cmd, stdout=md, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        assert proc.stderr is not None
        tee = threading.Thread(target=_tee, args=(proc.stderr, log, name), daemon=True)
        tee.start()
        code = proc.wait()
        tee.join()
    run.seconds = time.monotonic() - began
    if code != 0:
        run.error = f"exit status {code}; see {stem}.log"
        return run
    try:
        if name == "codec":
            with open(stem + ".md") as f:
                run.rows = with_ratios(parse_codec_markdown(f.read()))
            run.meta = {"harness": "codec"}
        else:
            run.meta, run.rows = read_rows(json_path)
    except (OSError, ValueError, KeyError) as exc:
        run.error = f"output not understood: {exc!r}"
    return run


_CODEC_HEAD = re.compile(r"^\| (?P<case>.+?) \| per s \|")
_CODEC_ROW = re.compile(r"^\| (?P<who>[^|]+?) \| (?P<rate>[\d,.]+) \|")


def parse_codec_markdown(text: str) -> list[Row]:
    """The rows of ``bench_codec.py --markdown``: one table per case, a rate per contender.

    Its own ratio columns are not read; :func:`_harness.with_ratios` recomputes
    them against every peer. kafkacore rows get the record path their name says.
    """
    rows: list[Row] = []
    case: str | None = None
    for line in text.splitlines():
        head = _CODEC_HEAD.match(line)
        if head:
            case = head["case"]
            continue
        if not line.startswith("|"):
            case = None
            continue
        row = _CODEC_ROW.match(line)
        if case is None or row is None:
            continue
        who = row["who"].strip()
        path = None
        if who.startswith("kafkacore"):
            path = "pure" if " pure " in f"{who} " else "compiled"
        rows.append(
            Row(
                harness="codec",
                table=case,
                contender=who,
                rate=float(row["rate"].replace(",", "")),
                unit="records/s" if "records" in case else "messages/s",
                path=path,
            )
        )
    if not rows:
        raise ValueError("no '| <case> | per s | ...' table in bench_codec.py's output")
    return rows


# -- codec peak RSS: each contender's record work in a process of its own ----------------

#: The record-batch contenders of bench_codec.py, as its markdown names them.
CODEC_CONTENDERS = (
    "kafkacore compiled append / iter",
    "kafkacore compiled append_many / columns",
    "kafkacore compiled append_many / arrow",
    "kafkacore pure append / iter",
    "kafkacore pure append_many / columns",
    "kafka-python",
    "aiokafka (C ext)",
    "aiokafka (pure Python)",
)
_COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")


def codec_record_work(contender: str) -> int:
    """Build and parse bench_codec's 1,000-record batch once per compression, as ``contender``.

    Runs in a fresh process (:func:`_harness.isolated`) for its peak RSS. The
    peers' work imports only the peer (not kafkacore: bench_codec imports it
    at the top), with the same keys, values and timestamps; kafkacore's uses
    bench_codec's own functions. A compression the contender lacks is skipped.
    Returns the bytes read, as a check that the work was done.
    """
    keys = [b"key-%06d" % i for i in range(1000)]
    values = [(b"%03d" % (i % 1000)) * 33 + b"x" for i in range(1000)]
    stamps = [1_700_000_000_000 + i // 10 for i in range(1000)]
    if contender.startswith("kafkacore"):
        return _kafkacore_record_work(contender)
    package = "kafka" if contender == "kafka-python" else "aiokafka"
    module: Any = importlib.import_module(f"{package}.record.default_records")
    pure = contender == "aiokafka (pure Python)"
    builder_cls = module._DefaultRecordBatchBuilderPy if pure else module.DefaultRecordBatchBuilder
    batch_cls = module._DefaultRecordBatchPy if pure else module.DefaultRecordBatch
    total = 0
    for codec in range(len(_COMPRESSIONS)):
        try:
            builder = builder_cls(
                magic=2,
                compression_type=codec,
                is_transactional=0,
                producer_id=-1,
                producer_epoch=-1,
                base_sequence=-1,
                batch_size=1 << 20,
            )
            for offset, (k, v, ts) in enumerate(zip(keys, values, stamps, strict=True)):
                builder.append(offset, timestamp=ts, key=k, value=v, headers=[])
            data = bytes(builder.build())
        except Exception:  # e.g. kafka-python without python-snappy
            continue
        for record in batch_cls(data):
            total += len(record.key) + len(record.value)
    return total


def _kafkacore_record_work(contender: str) -> int:
    import bench_codec as bc

    from kafkacore.records.builder import NativeRecordBatchBuilder, PyRecordBatchBuilder

    compiled = " compiled " in contender
    builder = NativeRecordBatchBuilder if compiled else PyRecordBatchBuilder
    batch = bc.CompiledBatch if compiled else bc.PureBatch
    build: Callable[[Any, Any], bytes] = (
        bc.kc_build_append if "append /" in contender else bc.kc_build_many
    )
    parse: Callable[[Any, bytes], int] = bc.kc_parse_iter
    if "columns" in contender:
        parse = bc.kc_parse_columns
    elif "arrow" in contender:
        parse = bc.kc_parse_arrow
    total = 0
    for codec in bc.CODECS.values():
        total += parse(batch, build(builder, codec))
    return total


def codec_rss(names: Sequence[str], *, log: Callable[[str], None]) -> dict[str, float]:
    """Peak RSS (MiB) per codec contender, each measured in a fresh process."""
    out: dict[str, float] = {}
    for name in names:
        try:
            got = isolated(codec_record_work, name, timeout=600)
        except ContenderFailed as exc:
            log(f"codec RSS of {name}: {str(exc).splitlines()[0]}")
            continue
        if got.rss_mib is not None and got.result > 0:
            out[name] = got.rss_mib
            log(f"codec RSS {name:42s} {got.rss_mib:6.1f} MiB")
    return out


def with_codec_rss(rows: Sequence[Row], rss: dict[str, float]) -> list[Row]:
    """The codec record rows (build/parse tables) with their contender's peak RSS."""
    return [
        replace(r, rss_mib=rss[r.contender])
        if r.harness == "codec" and r.contender in rss and re.match(r"(build|parse) ", r.table)
        else r
        for r in rows
    ]


def append_codec_rss(md_path: str, rss: dict[str, float]) -> None:
    """Add the codec contenders' peak RSS to the codec markdown (its tables have no column)."""
    if not rss:
        return
    table = markdown_table(
        ["codec contender (record work alone, fresh process)", "peak RSS MiB"],
        [[name, f"{mib:.1f}"] for name, mib in rss.items()],
    )
    with open(md_path, "a") as f:
        f.write(f"\n{table}\n")


# -- the run ------------------------------------------------------------------------------


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()}"


def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


@contextlib.contextmanager
def _maybe_broker(needed: bool, bootstrap: str | None) -> Iterator[str | None]:
    if not needed:
        yield bootstrap
        return
    with broker(bootstrap) as address:
        yield address


def run(args: argparse.Namespace) -> int:
    if args.only:
        unknown = sorted(set(args.only) - set(SCRIPTS))
        if unknown:
            raise SystemExit(f"run_all: unknown harness {unknown}; known: {list(SCRIPTS)}")
        names = [n for n in SCRIPTS if n in args.only]
    else:
        names = [n for n in SCRIPTS if n != "spark" or args.spark]
    extra = _harness_args(args.harness_args)
    stamp = datetime.datetime.now(datetime.UTC)
    out_dir = args.out or os.path.join(HERE, "runs", stamp.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(out_dir, exist_ok=True)
    meta: dict[str, Any] = {
        "title": f"kafkacore benchmarks, {stamp:%Y-%m-%d %H:%M} UTC"
        + (" (quick)" if args.quick else ""),
        "date": f"{stamp:%Y-%m-%d %H:%M} UTC",
        "command": shlex.join([sys.executable, *sys.argv]),
        "python": platform.python_version(),
        "machine": _machine(),
        "git": _git("rev-parse", "HEAD"),
        "git_dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "quick": args.quick,
        "pure": args.pure,
        "load_before": _load(),
        "harnesses": {},
        "failures": [],
    }
    log = _stderr
    rows: list[Row] = []
    began = time.monotonic()
    with _maybe_broker(any(n in NEEDS_BROKER for n in names), args.bootstrap) as bootstrap:
        meta["bootstrap"] = bootstrap
        for name in names:
            json_path = os.path.join(out_dir, name.replace(" ", "_") + ".json")
            cmd = harness_command(
                name,
                bootstrap=bootstrap,
                json_path=json_path,
                quick=args.quick,
                pure=args.pure,
                in_process=args.in_process,
                extra=extra.get(name, ()),
            )
            log(f"== {name}: {shlex.join(cmd)}")
            done = run_harness(name, cmd, out_dir, json_path)
            if name == "codec" and done.error is None and not args.no_codec_rss:
                present = [c for c in CODEC_CONTENDERS if any(r.contender == c for r in done.rows)]
                rss = codec_rss(present, log=log)
                done.rows = with_codec_rss(done.rows, rss)
                done.meta["rss"] = "per contender: its record work alone in a fresh process"
                append_codec_rss(os.path.join(out_dir, "codec.md"), rss)
            done.meta["seconds"] = round(done.seconds, 1)
            meta["harnesses"][name] = done.meta
            if done.error:
                meta["failures"].append(f"{name}: {done.error}")
                log(f"== {name} FAILED: {done.error}")
            else:
                log(f"== {name}: {len(done.rows)} rows in {done.seconds:.0f} s")
            rows += done.rows
    meta["load_after"] = _load()
    meta["seconds"] = round(time.monotonic() - began, 1)
    json_out = os.path.join(out_dir, "results.json")
    write_rows(json_out, rows, meta)
    log(f"wrote {json_out} ({len(rows)} rows)")
    write_summary(out_dir, names, rows, meta, log=log)
    return 1 if meta["failures"] else 0


def write_summary(
    out_dir: str,
    names: Sequence[str],
    rows: Sequence[Row],
    meta: dict[str, Any],
    *,
    log: Callable[[str], None],
) -> None:
    """``ratios.png`` and ``summary.md`` (targets, then each harness's markdown)."""
    import plot

    parts = [f"# {meta['title']}", ""]
    parts.append(
        f"* Command: `{meta['command']}`\n* Commit: {meta['git']}"
        f"{' (with uncommitted changes)' if meta['git_dirty'] else ''}\n"
        f"* Machine: {meta['machine']}; Python {meta['python']}; load average "
        f"{meta['load_before']} before, {meta['load_after']} after; {meta['seconds']:.0f} s"
    )
    if rows:
        png = os.path.join(out_dir, "ratios.png")
        try:
            plot.plot(rows, png, title=str(meta["title"]))
            parts.append("\n![kafkacore's ratios against its peers](ratios.png)")
            log(f"wrote {png}")
        except ValueError as exc:
            log(f"no plot: {exc}")
        parts += ["", "## Targets (issue 12)", "", plot.targets_markdown(plot.check_targets(rows))]
    for failure in meta["failures"]:
        parts.append(f"\n* FAILED: {failure}")
    for name in names:
        md = os.path.join(out_dir, name.replace(" ", "_") + ".md")
        with contextlib.suppress(OSError), open(md) as f:
            parts += ["", f"## {name}", "", f.read().strip()]
    summary = os.path.join(out_dir, "summary.md")
    with open(summary, "w") as f:
        f.write("\n".join(parts) + "\n")
    log(f"wrote {summary}")


def _harness_args(specs: Sequence[str] | None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for spec in specs or ():
        name, sep, rest = spec.partition("=")
        if not sep or name not in SCRIPTS:
            raise SystemExit(
                f"run_all: --harness-args wants HARNESS='ARGS' with one of {list(SCRIPTS)}"
            )
        out.setdefault(name, []).extend(shlex.split(rest))
    return out


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# -- before / after ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One kafkacore row in both runs: how its rate and its ratios to the peers moved.

    ``rate_change`` and ``peer_change`` are relative, positive = better (for a
    duration row, a shorter time is better); ``peer_change`` is the geometric
    mean over the peers both runs measured of new ratio / old ratio, minus 1.
    """

    harness: str
    table: str
    contender: str
    old: float
    new: float
    rate_change: float
    peer_change: float | None
    verdict: str  # "SLOWER", "slower?", "faster", "" (within the threshold)


def compare(
    old: Sequence[Row], new: Sequence[Row], threshold: float = DEFAULT_THRESHOLD
) -> tuple[list[Change], list[str], list[str]]:
    """Changes of the kafkacore rows in both runs, and the row keys only one of them has."""
    if not 0 < threshold < 1:
        raise ValueError(f"compare(): threshold {threshold} is not a fraction in (0, 1)")
    before = {r.key: r for r in old if r.is_kafkacore}
    after = {r.key: r for r in new if r.is_kafkacore}
    changes = []
    for key, b in before.items():
        a = after.get(key)
        if a is None or not (_finite(a.rate) and _finite(b.rate)):
            continue
        gain = a.rate / b.rate if a.higher_is_better else b.rate / a.rate
        peers = [
            a.ratios[p] / b.ratios[p]
            for p in a.ratios.keys() & b.ratios.keys()
            if _finite(a.ratios[p]) and _finite(b.ratios[p])
        ]
        peer_change = statistics.geometric_mean(peers) - 1 if peers else None
        rate_change = gain - 1
        slower_rate = rate_change < -threshold
        slower_peers = peer_change is not None and peer_change < -threshold
        if slower_rate and (slower_peers or peer_change is None):
            verdict = "SLOWER"
        elif slower_rate or slower_peers:
            verdict = "slower?"
        elif rate_change > threshold:
            verdict = "faster"
        else:
            verdict = ""
        changes.append(Change(*key, b.rate, a.rate, rate_change, peer_change, verdict))
    only_old = [" / ".join(k) for k in before if k not in after]
    only_new = [" / ".join(k) for k in after if k not in before]
    return changes, only_old, only_new


def median_rows(runs: Sequence[Sequence[Row]]) -> list[Row]:
    """One row per key: the median rate and the median of each ratio over
    the runs that have that row (a row missing from a run is not a zero)."""
    if not runs:
        raise ValueError("median_rows(): no runs given")
    by_key: dict[tuple[str, str, str], list[Row]] = {}
    for rows in runs:
        for row in rows:
            by_key.setdefault(row.key, []).append(row)
    out = []
    for group in by_key.values():
        rates = [r.rate for r in group if _finite(r.rate)]
        peers = {p for r in group for p in r.ratios}
        ratios = {}
        for peer in sorted(peers):
            values = [r.ratios[peer] for r in group if _finite(r.ratios.get(peer, math.nan))]
            ratios[peer] = statistics.median(values) if values else math.nan
        rate = statistics.median(rates) if rates else math.nan
        out.append(replace(group[0], rate=rate, ratios=ratios))
    return out


def _rate(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.2f}"


def _finite(x: float) -> bool:
    return math.isfinite(x) and x > 0


def compare_report(
    changes: Sequence[Change], only_old: Sequence[str], only_new: Sequence[str], threshold: float
) -> str:
    lines = [
        f"kafkacore rows, new run against old; SLOWER = rate and ratios to peers both fell by "
        f"more than {threshold:.0%}; slower? = only one of them did (machine load or noise: "
        f"re-run that harness)",
        "",
        "| harness | table | contender | old | new | rate change | vs peers change | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in changes:
        peer = "-" if c.peer_change is None else f"{c.peer_change:+.0%}"
        lines.append(
            f"| {c.harness} | {c.table} | {c.contender} | {_rate(c.old)} | {_rate(c.new)} "
            f"| {c.rate_change:+.0%} | {peer} | {c.verdict} |"
        )
    slower = [c for c in changes if c.verdict == "SLOWER"]
    maybe = [c for c in changes if c.verdict == "slower?"]
    lines += [
        "",
        f"{len(changes)} rows compared: {len(slower)} SLOWER, {len(maybe)} slower?, "
        f"{sum(c.verdict == 'faster' for c in changes)} faster.",
    ]
    lines += [
        f"{c.verdict}: {c.harness} / {c.table} / {c.contender}: rate {c.rate_change:+.0%}"
        for c in slower + maybe
    ]
    if only_old:
        lines.append(f"Only in the old run ({len(only_old)}): " + "; ".join(only_old))
    if only_new:
        lines.append(f"Only in the new run ({len(only_new)}): " + "; ".join(only_new))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smoke run of every harness")
    parser.add_argument("--pure", action="store_true", help="kafkacore also with KAFKACORE_PURE=1")
    parser.add_argument("--spark", action="store_true", help="also run the (long) Spark harness")
    parser.add_argument("--bootstrap", help="a running broker (default: start one)")
    parser.add_argument("--only", action="append", help=f"harness to run (of {list(SCRIPTS)})")
    parser.add_argument("--out", help="output directory (default: benchmarks/runs/<UTC time>)")
    parser.add_argument(
        "--harness-args",
        action="append",
        metavar="HARNESS=ARGS",
        help="extra arguments for one harness, e.g. producer='--records 50000'",
    )
    parser.add_argument("--no-codec-rss", action="store_true", help="skip the codec RSS runs")
    parser.add_argument(
        "--in-process", action="store_true", help="no fresh process per contender (no RSS)"
    )
    parser.add_argument(
        "--compare",
        nargs=2,
        metavar=("OLD.json[,...]", "NEW.json[,...]"),
        help="compare runs (several per side, comma-separated: medians)",
    )
    parser.add_argument(
        "--threshold",
        type=float,
        default=DEFAULT_THRESHOLD,
        help=f"--compare: relative slowdown flagged (default {DEFAULT_THRESHOLD})",
    )
    args = parser.parse_args(argv)
    if args.compare:
        old = median_rows([read_rows(path)[1] for path in args.compare[0].split(",")])
        new = median_rows([read_rows(path)[1] for path in args.compare[1].split(",")])
        changes, only_old, only_new = compare(old, new, args.threshold)
        print(compare_report(changes, only_old, only_new, args.threshold))
        return 1 if any(c.verdict == "SLOWER" for c in changes) else 0
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())

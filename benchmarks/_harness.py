"""Shared setup for the client benchmarks: one broker, topics, isolation, rows, tables.

``broker()`` starts one local Kafka 4.3.1 broker with the BENCHMARK JVM
profile (or yields ``--bootstrap`` when given); ``create_topics()`` makes
topics with kafkacore's own client (one CreateTopics request, no JVM
tool per topic); ``percentile()`` and ``markdown_table()`` format results.

``isolated()`` runs one contender's measurement in a fresh interpreter
(``multiprocessing`` spawn) and returns its result with the peak resident
set of that process (``VmHWM``; for a contender that runs a JVM, the JVM's
peak through ``RUSAGE_CHILDREN`` when larger), so each contender's memory
is its own and not what the harness or an earlier contender left behind.
Before its first child it byte-compiles kafkacore
(``byte_compile_kafkacore``), as an installed package is: the peers come
compiled from their wheels, while a checkout run with
``PYTHONDONTWRITEBYTECODE=1`` would compile some 220 modules from source in
every fresh process, inside the contender's timing and its peak RSS. A
harness module that a child imports (it is the child's ``__main__``) should
import an event loop library only inside the contenders that use it, so a
selector contender does not carry asyncio's memory.
``variants()`` doubles every kafkacore contender with a pure-Python twin
(``KAFKACORE_PURE=1`` in its child) for ``--pure``.

:class:`Row` is one measured cell (harness, table, contender, rate, peak
RSS, ratios against the peers of the same table); ``with_ratios()`` fills
the ratios, ``render_table()`` prints a table of rows in markdown and
``write_rows()`` / ``read_rows()`` keep them as JSON for ``run_all.py``,
``plot.py`` and the before/after comparison.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import multiprocessing
import os
import resource
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, Generic, TypeVar

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

__all__ = [
    "KAFKACORE",
    "ContenderFailed",
    "Measured",
    "Row",
    "Variant",
    "broker",
    "byte_compile_kafkacore",
    "create_topics",
    "isolated",
    "markdown_table",
    "peak_rss_mib",
    "percentile",
    "read_rows",
    "render_table",
    "variants",
    "with_ratios",
    "write_rows",
]

#: Contenders whose name starts with this are kafkacore's; every other one is a peer.
KAFKACORE = "kafkacore"
#: Upper bound on one isolated measurement; a hung contender is killed, not waited for.
ISOLATION_TIMEOUT_S = 3600.0

T = TypeVar("T")


@contextlib.contextmanager
def broker(bootstrap: str | None = None) -> Iterator[str]:
    """A broker's bootstrap address: ``bootstrap`` itself, or a fresh local broker."""
    if bootstrap:
        yield bootstrap
        return
    from kafkacore.testing.cluster import LocalKafka
    from kafkacore.testing.config import Profile

    with LocalKafka(size=1, profile=Profile.BENCHMARK) as kafka:
        yield kafka.bootstrap


def create_topics(bootstrap: str, names: Sequence[str], partitions: int = 1) -> None:
    """Create ``names`` (replication 1) and wait until each has a leader."""
    from kafkacore.protocol.messages import CreateTopicsRequest
    from kafkacore.protocol.messages.create_topics_request import CreatableTopic
    from kafkacore.transports.selector import KafkaClient

    with KafkaClient(bootstrap) as client:
        request = CreateTopicsRequest(
            topics=[
                CreatableTopic(name=n, num_partitions=partitions, replication_factor=1)
                for n in names
            ],
            timeout_ms=30000,
        )
        response = client.send(request, timeout=60)
        for topic in response.topics:
            if topic.error_code not in (0, 36):  # 36: TOPIC_ALREADY_EXISTS
                raise RuntimeError(f"create topic {topic.name}: error {topic.error_code}")
        deadline = time.monotonic() + 60
        while True:
            cluster = client.metadata(list(names))
            if all(
                len(cluster.available_partitions_for_topic(n) or ()) == partitions for n in names
            ):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"topics {list(names)} got no leaders in 60 s")
            time.sleep(0.2)


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0-100) by nearest rank; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def markdown_table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# -- memory and isolation ----------------------------------------------------------

_compiled_once = False


def byte_compile_kafkacore() -> None:
    """Byte-compile kafkacore and its transports (once per process), as an installed
    package is: pip compiles a wheel's modules at install time (the peers' are),
    while an editable checkout run with PYTHONDONTWRITEBYTECODE=1 compiles some
    220 modules from source in every fresh contender process, inside its timing
    and its peak RSS. Finds kafkacore without importing it, so a harness can
    call this before its own kafkacore imports."""
    global _compiled_once
    if _compiled_once:
        return
    import compileall
    import importlib.util
    import pathlib

    spec = importlib.util.find_spec("kafkacore")
    if spec is None or spec.origin is None:
        raise RuntimeError("byte_compile_kafkacore: kafkacore is not importable from here")
    root = pathlib.Path(spec.origin).resolve().parent
    # compileall does not follow symbolic links: transports and testing are
    # directories of the checkout linked under kafkacore/.
    folders = {root, (root / "transports").resolve(), (root / "testing").resolve()}
    for folder in sorted(f for f in folders if f.is_dir()):
        compileall.compile_dir(str(folder), quiet=1)
    compileall.compile_file(__file__, quiet=1)
    _compiled_once = True


def peak_rss_mib() -> float:
    """Peak resident set of this process, or of its largest finished child if larger, in MiB.

    ``VmHWM`` is this process's high-water mark; ``RUSAGE_CHILDREN`` covers a
    JVM the contender ran (ProducerPerformance, ConsumerPerformance) and
    waited for. Both are kernel counters, so nothing is sampled or missed.
    """
    own_kib = 0
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    own_kib = int(line.split()[1])
                    break
    except OSError:  # not Linux: ru_maxrss is KiB on Linux, bytes on macOS
        scale = 1024 if sys.platform == "darwin" else 1
        own_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // scale
    children_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if sys.platform == "darwin":
        children_kib //= 1024
    return max(own_kib, children_kib) / 1024


def _kafkacore_path() -> str | None:
    """Say "compiled" or "pure" when this process imported kafkacore's records, else None.

    Read from the backend module when it was loaded (it decides once, at
    import); looked up by name and tolerated when absent, so a refactor
    that moves it costs the label, not the benchmark.
    """
    backend = sys.modules.get("kafkacore.records._backend")
    native = getattr(backend, "NATIVE", None)
    if isinstance(native, bool):
        return "compiled" if native else "pure"
    if "kafkacore" in sys.modules:
        pure = os.environ.get("KAFKACORE_PURE", "").strip() not in ("", "0")
        return "pure" if pure else "compiled"
    return None


class ContenderFailed(RuntimeError):
    """The isolated measurement raised, died or timed out; the message has its traceback."""


@dataclass(frozen=True)
class Measured(Generic[T]):
    """What an isolated measurement returned, with the memory it took."""

    result: T
    rss_mib: float | None
    path: str | None  # "compiled", "pure", or None (no kafkacore in that process)


def _child_main(conn: Connection, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    try:
        result = fn(*args)
    except BaseException:
        conn.send(("error", traceback.format_exc(), None, None))
    else:
        conn.send(("ok", result, peak_rss_mib(), _kafkacore_path()))
    finally:
        conn.close()


@contextlib.contextmanager
def _environ(changes: Mapping[str, str | None]) -> Iterator[None]:
    """Set (or, for None, remove) variables for the block: a spawned child copies them."""
    saved = {name: os.environ.get(name) for name in changes}
    try:
        for name, value in changes.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def isolated(
    fn: Callable[..., T],
    *args: Any,
    env: Mapping[str, str | None] | None = None,
    enabled: bool = True,
    timeout: float = ISOLATION_TIMEOUT_S,
) -> Measured[T]:
    """Run ``fn(*args)`` in a fresh interpreter and return its result and peak RSS.

    ``fn`` and ``args`` must pickle (module-level functions, ``functools.partial``
    of them). ``env`` changes the child's environment only (e.g.
    ``KAFKACORE_PURE``, read once at import). With ``enabled=False`` the call
    runs here instead (no RSS: this process's peak is not the contender's).
    """
    if not enabled:
        if env:
            raise ValueError(
                f"isolated(): env {dict(env)} needs a child process; drop --in-process"
            )
        return Measured(fn(*args), None, _kafkacore_path())
    byte_compile_kafkacore()
    ctx = multiprocessing.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    with _environ(env or {}):
        proc = ctx.Process(target=_child_main, args=(send, fn, args), daemon=True)
        proc.start()
    send.close()
    try:
        if not receive.poll(timeout):
            raise ContenderFailed(f"{_name(fn)} gave no result in {timeout:.0f} s (killed)")
        try:
            status, payload, rss, path = receive.recv()
        except EOFError:
            proc.join(10)
            raise ContenderFailed(
                f"{_name(fn)}: child process died (exit code {proc.exitcode})"
            ) from None
    finally:
        if proc.is_alive():
            proc.join(30)
        if proc.is_alive():
            proc.kill()
            proc.join()
    if status == "error":
        raise ContenderFailed(f"{_name(fn)} failed in its child process:\n{payload}")
    return Measured(payload, rss, path)


def _name(fn: Callable[..., Any]) -> str:
    inner = getattr(fn, "func", fn)
    return getattr(inner, "__qualname__", repr(inner))


@dataclass(frozen=True)
class Variant:
    """One contender as run: its label, its function and the environment of its child."""

    label: str
    fn: Callable[..., Any]
    env: Mapping[str, str | None]


def variants(contenders: Mapping[str, Callable[..., Any]], pure: bool) -> list[Variant]:
    """Each contender as run; with ``pure``, every kafkacore one is followed by its pure twin.

    The compiled variant runs with ``KAFKACORE_PURE`` removed, the twin (labelled
    ``"<name> (pure)"``) with ``KAFKACORE_PURE=1``; peers run in the environment as is.
    """
    out: list[Variant] = []
    for name, fn in contenders.items():
        if not name.startswith(KAFKACORE):
            out.append(Variant(name, fn, {}))
            continue
        if pure:
            out.append(Variant(name, fn, {"KAFKACORE_PURE": None}))
            out.append(Variant(f"{name} (pure)", fn, {"KAFKACORE_PURE": "1"}))
        else:
            out.append(Variant(name, fn, {}))
    return out


# -- rows ------------------------------------------------------------------------------


@dataclass
class Row:
    """One measured cell: a contender's rate in one table of one harness.

    ``rate`` is in ``unit``; for most rows a throughput (higher is better),
    for a few a duration (``higher_is_better`` False, e.g. rebalance seconds).
    ``ratios[peer]`` is this row's advantage over ``peer`` in the same table:
    ``rate / peer_rate`` (or ``peer_rate / rate`` for durations), so above
    1.0 is always better. ``path`` is ``"compiled"`` or ``"pure"`` for
    kafkacore rows and None for peers; ``extra`` holds a harness's other
    numbers (latency percentiles, CPU time per request, ...).
    """

    harness: str
    table: str
    contender: str
    rate: float
    unit: str
    rss_mib: float | None = None
    ratios: dict[str, float] = field(default_factory=dict)
    higher_is_better: bool = True
    path: str | None = None
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def is_kafkacore(self) -> bool:
        return self.contender.startswith(KAFKACORE)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.harness, self.table, self.contender)


def with_ratios(rows: Sequence[Row]) -> list[Row]:
    """``rows`` with ``ratios`` filled: each row against every peer of its table.

    The peers of a table are its contenders that are not kafkacore's; a row
    is not compared with itself. A rate that is not a positive finite number
    gives no ratio.
    """
    by_table: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        by_table.setdefault((row.harness, row.table), []).append(row)
    out = []
    for row in rows:
        ratios: dict[str, float] = {}
        for peer in by_table[(row.harness, row.table)]:
            if peer.is_kafkacore or peer.contender == row.contender:
                continue
            if not (_usable(row.rate) and _usable(peer.rate)):
                continue
            ratio = row.rate / peer.rate if row.higher_is_better else peer.rate / row.rate
            ratios[peer.contender] = ratio
        out.append(dataclasses.replace(row, ratios=ratios))
    return out


def _usable(x: float) -> bool:
    return math.isfinite(x) and x > 0


def render_table(
    rows: Sequence[Row],
    *,
    first: str = "client",
    extras: Sequence[tuple[str, str, str]] = (),
    peers: Sequence[str] | None = None,
) -> str:
    """A markdown table of ``rows``: contender, rate, peak RSS MiB, extras, ratio per peer.

    The RSS column is left out when no row measured it.

    ``extras`` are ``(heading, key in Row.extra, format spec)`` (a spec
    ending in "x" appends it, for ratios); ``peers``
    (default: every peer any row has a ratio against) gives the ratio columns.
    """
    if peers is None:
        peers = list(dict.fromkeys(p for r in rows for p in r.ratios))
    unit = rows[0].unit if rows else "per s"
    show_rss = any(r.rss_mib is not None for r in rows)
    head = [
        first,
        unit,
        *(["peak RSS MiB"] if show_rss else []),
        *(h for h, _, _ in extras),
        *(f"vs {p}" for p in peers),
    ]
    cells = []
    for r in rows:
        rate = f"{r.rate:,.0f}" if r.rate >= 100 else f"{r.rate:.2f}"
        rss = "-" if r.rss_mib is None else f"{r.rss_mib:.0f}"
        extra = [_cell(r.extra.get(k, math.nan), spec) for _, k, spec in extras]
        ratios = [f"{r.ratios[p]:.2f}x" if p in r.ratios else "-" for p in peers]
        cells.append([r.contender, rate, *([rss] if show_rss else []), *extra, *ratios])
    return markdown_table(head, cells)


def _cell(value: float, spec: str) -> str:
    """``value`` formatted by ``spec``; a trailing "x" in ``spec`` is appended (ratios)."""
    if not math.isfinite(value):
        return "-"
    if spec.endswith("x"):
        return format(value, spec[:-1]) + "x"
    return format(value, spec)


def write_rows(path: str, rows: Sequence[Row], meta: Mapping[str, Any] | None = None) -> None:
    """Write ``{"meta": ..., "rows": [...]}`` to ``path`` (JSON, NaN written as null)."""
    doc = {
        "meta": dict(meta or {}),
        "rows": [_jsonable(dataclasses.asdict(r)) for r in rows],
    }
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, allow_nan=False)
        f.write("\n")


def read_rows(path: str) -> tuple[dict[str, Any], list[Row]]:
    """The meta and the rows of a file :func:`write_rows` wrote."""
    with open(path) as f:
        doc = json.load(f)
    rows = []
    for raw in doc["rows"]:
        raw = dict(raw)
        raw["rate"] = _number(raw["rate"])
        raw["ratios"] = {k: _number(v) for k, v in raw.get("ratios", {}).items()}
        raw["extra"] = {k: _number(v) for k, v in raw.get("extra", {}).items()}
        rows.append(Row(**raw))
    return dict(doc.get("meta", {})), rows


def _number(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value

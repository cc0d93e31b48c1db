"""Design gates: the sans-IO core stays free of I/O, clocks, threads and randomness.

Two independent checks, because each alone has a blind spot:

* a runtime check imports every module under ``kafkacore/`` in a fresh
  interpreter and reports forbidden modules that appeared (naming the core
  module whose import pulled each one in). Forbidden modules the bare
  interpreter already holds (3.11 loads ``time`` at start-up) are dropped
  from ``sys.modules`` first, so a core import of one loads it again and
  shows up;
* a static (AST) check reads every core source file for imports of those
  modules and for calls that draw randomness or read a clock. Imports under
  ``if TYPE_CHECKING:`` are allowed (they never run).

Lint and type checks (ruff, mypy --strict) are run by ``./dev test`` before
pytest, not here, so they run once.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "kafkacore"
FORBIDDEN = frozenset(
    {"socket", "ssl", "select", "selectors", "asyncio", "trio", "anyio", "threading", "time"}
)
# Modules whose mere import means the core draws its own randomness.
FORBIDDEN_STATIC = FORBIDDEN | {"secrets", "datetime"}


def core_modules() -> list[str]:
    names = []
    for path in sorted(CORE.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return names


def core_files() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


_PROBE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
forbidden = set(json.loads(sys.argv[2]))
baseline = sorted(forbidden & set(sys.modules))
# The bare interpreter may already hold some (3.11 loads 'time' at start-up).
# Forget them, so that a core import of one loads it again and is seen.
for mod in baseline:
    del sys.modules[mod]
culprits = {}
errors = {}
import importlib
for name in json.loads(sys.argv[3]):
    before = set(sys.modules)
    try:
        importlib.import_module(name)
    except Exception as exc:
        errors[name] = f"{type(exc).__name__}: {exc}"
        continue
    for mod in sorted((set(sys.modules) - before) & forbidden):
        culprits.setdefault(mod, name)
print(json.dumps({"baseline": baseline, "culprits": culprits, "errors": errors}))
"""


def test_core_imports_no_io_clock_or_thread_modules() -> None:
    # -I: isolated (no user site, no PYTHON* env, no cwd on sys.path); -S: no
    # site module, so nothing from site-packages runs before the probe. The
    # repository root is put on sys.path by hand; third-party packages the
    # core needs are reachable through the venv's site-packages path.
    site_paths = [p for p in sys.path if p.endswith("site-packages")]
    probe = "import sys; sys.path[:0] = " + repr(site_paths) + "\n" + _PROBE
    proc = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            probe,
            str(ROOT),
            json.dumps(sorted(FORBIDDEN)),
            json.dumps(core_modules()),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["errors"] == {}, f"core modules failed to import: {result['errors']}"
    assert result["culprits"] == {}, (
        "importing the core pulled in forbidden modules (module: first core importer): "
        f"{result['culprits']}. If a third-party package's __init__ pulls it in (crc32c's "
        "does, via importlib.metadata and its CLI), load the package's extension module "
        "by file (importlib.util.spec_from_file_location) or pick another package."
    )


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    """ids of nodes inside ``if TYPE_CHECKING:`` blocks."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", "")
            if name.endswith("TYPE_CHECKING"):
                for child in node.body:
                    inside.update(id(n) for n in ast.walk(child))
    return inside


def static_violations(source: str, filename: str) -> list[str]:
    """Every forbidden import or call in ``source``, as 'file:line: what'."""
    tree = ast.parse(source, filename)
    skip = _type_checking_nodes(tree)
    out = []

    def add(node: ast.AST, what: str) -> None:
        out.append(f"{filename}:{getattr(node, 'lineno', 0)}: {what}")

    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in FORBIDDEN_STATIC:
                    add(node, f"imports {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            top = node.module.split(".")[0]
            if top in FORBIDDEN_STATIC:
                add(node, f"imports from {node.module}")
            elif top == "random" and any(a.name != "Random" for a in node.names):
                add(node, "imports a random function (inject a random.Random instead)")
            elif top == "os" and any(a.name == "urandom" for a in node.names):
                add(node, "imports os.urandom")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            base, attr = node.func.value, node.func.attr
            if not isinstance(base, ast.Name):
                continue
            if base.id == "random" and not (attr == "Random" and (node.args or node.keywords)):
                add(node, f"calls random.{attr} (use the injected random.Random)")
            elif base.id == "os" and attr in ("urandom", "getrandom"):
                add(node, f"calls os.{attr}")
            elif base.id == "uuid" and attr in ("uuid1", "uuid4"):
                add(node, f"calls uuid.{attr} (randomness or a clock)")
            elif base.id in ("datetime", "date") and attr in ("now", "utcnow", "today"):
                add(node, f"calls {base.id}.{attr} (time enters as now=...)")
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "time"
        ):
            add(node, f"uses time.{node.attr} (time enters as now=...)")
    return out


def test_core_sources_have_no_forbidden_imports_or_calls() -> None:
    files = core_files()
    assert len(files) > 5, f"found only {len(files)} core files under {CORE}"
    violations = []
    for path in files:
        violations += static_violations(path.read_text(), str(path.relative_to(ROOT)))
    assert violations == []


@pytest.mark.parametrize(
    ("snippet", "expected"),
    [
        ("import socket", "imports socket"),
        ("import asyncio.events", "imports asyncio.events"),
        ("from time import monotonic", "imports from time"),
        ("import random\nx = random.random()", "calls random.random"),
        ("import random\nr = random.Random()", "calls random.Random"),
        ("from random import choice", "imports a random function"),
        ("import os\nb = os.urandom(8)", "calls os.urandom"),
        ("import uuid\nu = uuid.uuid4()", "calls uuid.uuid4"),
        ("t = time.monotonic()", "uses time.monotonic"),
        ("def f():\n    import threading", "imports threading"),
        ("from datetime import datetime", "imports from datetime"),
    ],
)
def test_static_gate_catches(snippet: str, expected: str) -> None:
    found = static_violations(snippet, "x.py")
    assert any(expected in v for v in found), found


@pytest.mark.parametrize(
    "snippet",
    [
        "import random\ndef f(rng: random.Random) -> float:\n    return rng.random()",
        "import random\nok = isinstance(object(), random.Random)",
        "import random\nr = random.Random(42)",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import ssl",
        "from random import Random",
    ],
)
def test_static_gate_allows(snippet: str) -> None:
    assert static_violations(snippet, "x.py") == []

"""Design gates: the sans-IO core stays free of I/O, clocks, threads and randomness.

Two independent checks, because each alone has a blind spot:

* a runtime check imports every module under ``kafkacore/`` in a fresh
  interpreter and reports forbidden modules that appeared (naming the core
  module whose import pulled each one in). Forbidden modules the bare
  interpreter already holds (3.11 loads ``time`` at start-up) are dropped
  from ``sys.modules`` first, so a core import of one loads it again and
  shows up;
* a static (AST) check reads every core source file for imports of those
  modules (and of more: files, processes, logging, platform facts) however
  spelled: aliased, inside functions, ``from`` imports, ``__import__`` or
  ``importlib.import_module`` with a literal name (a computed name fails, as
  the gate cannot follow it). It resolves aliases to flag uses of the clock,
  randomness (anything of ``random`` but the ``Random`` class, which the core
  takes injected; ``from random import Random`` is refused because a bare
  ``Random()`` could then be called unseeded), ``uuid.uuid1``/``uuid4``,
  ``os.urandom``, process and environment reads (``os.getpid``,
  ``os.environ``), file I/O (``open``, ``io.open``, ``os.path.exists``,
  ``sys.stdout``) and ``datetime.now``. Code under ``if TYPE_CHECKING:``
  never runs and is skipped. ``ALLOWED`` lists the few exceptions, each with
  its reason; an entry nothing needs any more fails the test.

Lint and type checks (ruff, mypy --strict) are run by ``./dev test`` before
pytest, not here, so they run once.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "kafkacore"
FORBIDDEN = frozenset(
    {"socket", "ssl", "select", "selectors", "asyncio", "trio", "anyio", "threading", "time"}
)
# Modules the core has no business importing at all: randomness or a clock
# (secrets, datetime, zoneinfo), threads and processes, files and networks,
# process facts (platform, getpass), logging (handlers write to streams and take
# thread locks; the core reports through its trace hook), arbitrary foreign calls
# (ctypes). Checked statically: some are already in a bare interpreter, so the
# runtime check could not see them.
FORBIDDEN_STATIC = FORBIDDEN | {
    "secrets",
    "datetime",
    "zoneinfo",
    "_thread",
    "multiprocessing",
    "concurrent",
    "subprocess",
    "signal",
    "sched",
    "queue",
    "socketserver",
    "http",
    "urllib",
    "ftplib",
    "smtplib",
    "pathlib",
    "shutil",
    "tempfile",
    "glob",
    "fileinput",
    "mmap",
    "platform",
    "getpass",
    "logging",
    "ctypes",
}


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
    """ids of nodes inside ``if TYPE_CHECKING:`` blocks (never run; ``else:`` runs)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", "")
            if name == "TYPE_CHECKING":
                for child in node.body:
                    inside.update(id(n) for n in ast.walk(child))
    return inside


# What an otherwise allowed module offers that reads a clock, draws randomness,
# reads the process's surroundings or does I/O. Process and environment reads
# (os.getpid, os.environ, ...) count: a core whose output depends on the process
# it runs in cannot be replayed byte for byte by the test pump; the transport
# passes such facts in (client_id, config) instead.
#: ``random``: only the class, for annotations, isinstance and seeded instances.
RANDOM_ALLOWED = frozenset({"Random"})
#: ``uuid``: uuid1/uuid6/uuid7 read the clock (and the MAC), uuid4 draws os.urandom.
UUID_FORBIDDEN = frozenset({"uuid1", "uuid4", "uuid6", "uuid7", "getnode"})
#: ``os``: path spelling only; everything else is a process, environment or file call.
OS_ALLOWED = frozenset(
    {"path", "fspath", "fsencode", "fsdecode", "PathLike", "sep", "altsep", "extsep"}
    | {"pathsep", "linesep", "curdir", "pardir", "devnull", "name"}
)
#: ``os.path``: the functions that only transform strings.
OS_PATH_ALLOWED = frozenset(
    {"join", "basename", "dirname", "split", "splitext", "splitdrive", "normpath"}
    | {"normcase", "commonpath", "commonprefix", "isabs", "sep", "altsep", "extsep"}
)
SYS_FORBIDDEN = frozenset(
    {"stdin", "stdout", "stderr", "__stdin__", "__stdout__", "__stderr__", "argv"}
    # sys.modules reaches loaded modules by name, around the import rules.
    | {"orig_argv", "exit", "modules"}
)
IO_FORBIDDEN = frozenset({"open", "open_code", "FileIO"})
#: Builtins that do I/O or run or import code the gate cannot read.
BUILTIN_FORBIDDEN = frozenset({"open", "print", "input", "breakpoint", "exec", "eval"})
#: Ways to import a module by name at run time; the name is checked when literal.
DYNAMIC_IMPORTS = frozenset(
    {"builtins.__import__", "importlib.import_module", "importlib.__import__"}
)
#: Loading code by file path bypasses imports by name (issue 11: no private-module tricks).
FILE_LOADERS = frozenset(
    {"importlib.util.spec_from_file_location", "importlib.util.module_from_spec"}
    | {"importlib.machinery.SourceFileLoader", "importlib.machinery.ExtensionFileLoader"}
)
#: Modules whose import by name at run time the gate could not follow.
TRACKED = frozenset({"random", "uuid", "os", "sys", "io", "builtins", "importlib"})

# The drivers, the test kit and the peers' layouts are installed under the
# kafkacore name (kafkacore.transports, kafkacore.testing, kafkacore.compat) but
# sit outside the core: the core never imports them (kafkacore/__init__.py names
# the blocking clients only lazily, by string, on first access;
# test_import_kafkacore_loads_no_transport).
TRANSPORT_PACKAGES = frozenset({"kafkacore.transports", "kafkacore.testing", "kafkacore.compat"})

#: (core file, forbidden name) -> why it is allowed there anyway.
ALLOWED: dict[tuple[str, str], str] = {
    ("kafkacore/records/_backend.py", "os.environ"): (
        "reads KAFKACORE_PURE once, at import, to choose the pure or the compiled record "
        "path; both give the same bytes (tests/native compares them), so no decision of "
        "the core depends on the environment"
    ),
}


def _forbidden_name(qual: str) -> str | None:
    """The forbidden prefix of a dotted name (``os.environ`` of ``os.environ.get``)."""
    parts = qual.split(".")
    top = parts[0]
    if top in FORBIDDEN_STATIC:
        return top
    if len(parts) < 2:
        return None
    first = ".".join(parts[:2])
    if first in TRANSPORT_PACKAGES:
        return first
    if top == "random" and parts[1] not in RANDOM_ALLOWED:
        return first
    if top == "uuid" and parts[1] in UUID_FORBIDDEN:
        return first
    if top == "os" and parts[1] not in OS_ALLOWED:
        return first
    if first == "os.path" and len(parts) > 2 and parts[2] not in OS_PATH_ALLOWED:
        return ".".join(parts[:3])
    if (top == "sys" and parts[1] in SYS_FORBIDDEN) or (top == "io" and parts[1] in IO_FORBIDDEN):
        return first
    if top == "builtins" and (parts[1] in BUILTIN_FORBIDDEN or parts[1] == "__import__"):
        return first
    for name in FILE_LOADERS:
        if qual == name or qual.startswith(name + "."):
            return name
    return None


def _aliases(tree: ast.Module, skip: set[int]) -> dict[str, str]:
    """Local name -> the dotted name it stands for, from every import in the file
    (module level or inside functions: the gate does not track scopes)."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    out[top] = top
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                out[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return out


def _bound_names(tree: ast.Module) -> set[str]:
    """Names the file binds itself (defs, parameters, assignments): not builtins there."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
    return out


def _dynamic_target(arg: ast.expr | None) -> str | None:
    """The module a dynamic import names: a literal, ``kafkacore.`` for an f-string that
    starts inside kafkacore (or with ``__name__``), "" when the gate cannot tell."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values:
        head = arg.values[0]
        if isinstance(head, ast.Constant) and str(head.value).startswith("kafkacore."):
            return "kafkacore."
        if (
            isinstance(head, ast.FormattedValue)
            and isinstance(head.value, ast.Name)
            and head.value.id in ("__name__", "__package__")
        ):
            return "kafkacore."
    return ""


def static_findings(source: str, filename: str) -> list[tuple[int, str, str]]:
    """Every forbidden import, use or call in ``source``: (line, what, forbidden name)."""
    tree = ast.parse(source, filename)
    skip = _type_checking_nodes(tree)
    aliases = _aliases(tree, skip)
    bound = _bound_names(tree)
    parents = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    out: list[tuple[int, str, str]] = []

    def add(node: ast.AST, what: str, name: str) -> None:
        out.append((getattr(node, "lineno", 0), what, name))

    def qualify(node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            if node.id in aliases:
                return aliases[node.id]
            if node.id in bound:
                return None  # a value of this file's own (``queue = ...``)
            if node.id in BUILTIN_FORBIDDEN | {"__import__"}:
                return f"builtins.{node.id}"
            # An unimported module name still reads as that module (``time.time()``).
            return node.id
        if isinstance(node, ast.Attribute):
            base = qualify(node.value)
            return None if base is None else f"{base}.{node.attr}"
        return None

    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (bad := _forbidden_name(alias.name)) is not None:
                    add(node, f"imports {alias.name}", bad)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            top = node.module.split(".")[0]
            if top in FORBIDDEN_STATIC:
                add(node, f"imports from {node.module}", top)
                continue
            for alias in node.names:
                qual = f"{node.module}.{alias.name}"
                if top == "random":
                    # A bare ``Random`` could be called unseeded where the gate no
                    # longer sees the module; annotate with ``random.Random``.
                    add(node, f"imports {qual} (use import random; inject random.Random)", qual)
                elif (bad := _forbidden_name(qual)) is not None:
                    add(node, f"imports {qual}", bad)
                elif alias.name == "*" and top in TRACKED:
                    add(node, f"imports * from {node.module}", qual)
        elif isinstance(node, ast.Attribute | ast.Name) and not isinstance(
            parents.get(id(node)), ast.Attribute
        ):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                continue
            name = qualify(node)
            if name is None:
                continue
            parent = parents.get(id(node))
            called = isinstance(parent, ast.Call) and parent.func is node
            if name in DYNAMIC_IMPORTS:
                if not called:  # called, it is judged with its argument below
                    add(node, f"uses {name} without calling it (the gate cannot follow)", name)
                continue
            if (bad := _forbidden_name(name)) is None:
                continue
            if isinstance(node, ast.Name) and node.id not in aliases and "." not in name:
                continue  # a bare local name that happens to equal a module's
            verb = "calls" if called else "uses"
            add(node, f"{verb} {name}" + _why(bad), bad)
        if isinstance(node, ast.Call):
            func = qualify(node.func)
            arg = node.args[0] if node.args else None
            if func == "random.Random" and not node.args and not node.keywords:
                add(node, "calls random.Random() unseeded (inject a random.Random)", func)
            elif func in DYNAMIC_IMPORTS:
                target = _dynamic_target(arg)
                if target is None or target == "":
                    add(node, f"calls {func} with a computed name the gate cannot check", func)
                elif not target.startswith("kafkacore."):
                    top = target.split(".")[0]
                    if top in FORBIDDEN_STATIC:
                        add(node, f"imports {target} (via {func})", top)
                    elif top in TRACKED:
                        add(node, f"imports {target} by name (via {func}); import it plainly", top)
            elif (
                func == "getattr"
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
                and (base := qualify(node.args[0])) is not None
                and (bad := _forbidden_name(f"{base}.{node.args[1].value}")) is not None
            ):
                add(node, f"uses {base}.{node.args[1].value} (via getattr)", bad)
            elif (
                isinstance(node.func, ast.Attribute)
                and node.func.attr in ("now", "utcnow", "today")
                and qualify(node.func.value) == "date"
            ):
                # ``datetime.*`` is caught as a forbidden module; a bare ``date``
                # is most likely ``from datetime import date`` seen elsewhere.
                add(node, f"calls date.{node.func.attr} (time enters as now=...)", "datetime")
    return out


def _why(name: str) -> str:
    top = name.split(".")[0]
    if top == "time" or name.startswith("datetime"):
        return " (time enters as now=...)"
    if top in ("random", "secrets") or name in ("uuid.uuid4", "os.urandom"):
        return " (use the injected random.Random)"
    return ""


def static_violations(source: str, filename: str) -> list[str]:
    """Every forbidden import or call in ``source``, as 'file:line: what'."""
    return [f"{filename}:{line}: {what}" for line, what, _ in static_findings(source, filename)]


def test_core_sources_have_no_forbidden_imports_or_calls() -> None:
    files = core_files()
    assert len(files) > 5, f"found only {len(files)} core files under {CORE}"
    violations = []
    used: set[tuple[str, str]] = set()
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        for line, what, name in static_findings(path.read_text(), rel):
            if (rel, name) in ALLOWED:
                used.add((rel, name))
            else:
                violations.append(f"{rel}:{line}: {what}")
    assert violations == []
    # An allowance nothing needs any more is removed, so it cannot hide a new use.
    assert set(ALLOWED) == used, f"stale ALLOWED entries: {set(ALLOWED) - used}"


@pytest.mark.parametrize(
    ("snippet", "expected"),
    [
        # Forbidden modules, however imported.
        ("import socket", "imports socket"),
        ("from kafkacore.transports.selector import KafkaProducer", "imports kafkacore.transports"),
        ("import kafkacore.testing", "imports kafkacore.testing"),
        ("import asyncio.events", "imports asyncio.events"),
        ("from time import monotonic", "imports from time"),
        ("import time as t", "imports time"),
        ("import time as t\nx = t.monotonic()", "calls time.monotonic"),
        ("def f():\n    import threading", "imports threading"),
        ("def f():\n    from threading import Thread as T", "imports from threading"),
        ("import concurrent.futures", "imports concurrent.futures"),
        ("import _thread", "imports _thread"),
        ("import subprocess", "imports subprocess"),
        ("import logging", "imports logging"),
        ("from pathlib import Path", "imports from pathlib"),
        ("import secrets", "imports secrets"),
        ("import platform", "imports platform"),
        ("t = time.monotonic()", "calls time.monotonic"),
        ("f = time.monotonic", "uses time.monotonic"),
        # Randomness.
        ("import random\nx = random.random()", "calls random.random"),
        ("import random\nr = random.Random()", "calls random.Random() unseeded"),
        ("import random\nr = random.SystemRandom()", "calls random.SystemRandom"),
        ("import random as r\nx = r.choice([1])", "calls random.choice"),
        ("import random\nf = random.getrandbits", "uses random.getrandbits"),
        ("from random import choice", "imports random.choice"),
        ("from random import Random", "imports random.Random"),
        ("from random import Random as R", "imports random.Random"),
        ("def f():\n    from random import Random\n    return Random()", "imports random.Random"),
        ("from random import *", "imports random.*"),
        ("import os\nb = os.urandom(8)", "calls os.urandom"),
        ("import os as o\nb = o.urandom(8)", "calls os.urandom"),
        ("from os import urandom", "imports os.urandom"),
        ("from os import urandom as u\nb = u(8)", "calls os.urandom"),
        ("import uuid\nu = uuid.uuid4()", "calls uuid.uuid4"),
        ("import uuid as U\nu = U.uuid1()", "calls uuid.uuid1"),
        ("from uuid import uuid4", "imports uuid.uuid4"),
        ("from uuid import uuid4 as new_id\nx = new_id()", "calls uuid.uuid4"),
        ("import uuid\nn = uuid.getnode()", "calls uuid.getnode"),
        # Clocks through datetime.
        ("from datetime import datetime", "imports from datetime"),
        ("import datetime as dt\nx = dt.datetime.now()", "calls datetime.datetime.now"),
        ("x = datetime.now()", "calls datetime.now"),
        ("x = date.today()", "calls date.today"),
        # Dynamic imports with literal (or computed) names.
        ('t = __import__("time")', "imports time (via builtins.__import__)"),
        ('import importlib\ns = importlib.import_module("socket")', "imports socket"),
        ('from importlib import import_module\ns = import_module("ssl")', "imports ssl"),
        ('import importlib\nr = importlib.import_module("random")', "imports random by name"),
        ('import builtins\nt = builtins.__import__("time")', "imports time"),
        ("import importlib\nm = importlib.import_module(name)", "computed name"),
        ('import importlib\nm = importlib.import_module(f"{x}.y")', "computed name"),
        ("import importlib\nf = importlib.import_module", "without calling it"),
        ("loader = __import__", "uses builtins.__import__"),
        ("import importlib.util\ns = importlib.util.spec_from_file_location('m', p)", "calls"),
        ("from importlib.util import spec_from_file_location", "imports importlib.util"),
        # Process, environment and file reads.
        ("import os\np = os.getpid()", "calls os.getpid"),
        ("import os\nv = os.environ['X']", "uses os.environ"),
        ("import os\nv = os.environ.get('X')", "calls os.environ.get"),
        ("import os\nv = os.getenv('X')", "calls os.getenv"),
        ("from os import environ", "imports os.environ"),
        ("import os.path\nok = os.path.exists('f')", "calls os.path.exists"),
        ("from os import path\nok = path.isfile('f')", "calls os.path.isfile"),
        ("import sys\nsys.stdout.write('x')", "calls sys.stdout.write"),
        ('import sys\nm = sys.modules["time"]', "uses sys.modules"),
        ("import io\nf = io.open('f')", "calls io.open"),
        ("f = open('f')", "calls builtins.open"),
        ("print('x')", "calls builtins.print"),
        ("exec('import time')", "calls builtins.exec"),
        ('import os\nr = getattr(os, "urandom")(8)', "uses os.urandom (via getattr)"),
        ('import time as t\nf = getattr(t, "monotonic")', "time.monotonic"),
        ("if not TYPE_CHECKING:\n    import time", "imports time"),
        ("if TYPE_CHECKING:\n    pass\nelse:\n    import time", "imports time"),
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
        "import typing\nif typing.TYPE_CHECKING:\n    from random import Random",
        "from uuid import UUID\nz = UUID(int=0)",
        "import uuid\nz = uuid.UUID(int=0)\nn = uuid.uuid5(uuid.NAMESPACE_DNS, 'x')",
        "import os\np = os.path.join('a', os.fspath('b'))",
        "import sys\nle = sys.byteorder == 'little'",
        "import io\nb = io.BytesIO()",
        'import importlib\nm = importlib.import_module("kafkacore.protocol.api")',
        'import importlib\nm = importlib.import_module(f"kafkacore.protocol.messages.{x}")',
        'import importlib\nm = importlib.import_module(f"{__name__}.{x}")',
        # A file's own values that happen to share a module's name.
        "queue = []\nqueue.append(1)",
        "def f(random):\n    return random.random()",
        "def f(self):\n    self.print('x')\n    return self.open()",
        "def open():\n    pass\nopen()",
    ],
)
def test_static_gate_allows(snippet: str) -> None:
    assert static_violations(snippet, "x.py") == []


def test_every_allowance_says_why() -> None:
    for (path, name), why in ALLOWED.items():
        assert (ROOT / path).is_file(), path
        assert _forbidden_name(name) == name, name
        assert len(why) > 40, f"{path} {name}: give the reason"


# ---------------------------------------------------------------- named numbers
#: Where error codes and API keys show up in hand-written code: a name ending
#: in ``code``/``error_code`` or ``api_key``/``API_KEY``.
_CODE_NAME = re.compile(r"(^|_)code$|api_key$", re.IGNORECASE)
_GENERATED = ("kafkacore/protocol/messages/", "error_codes.py", "_api_table.py", "enums.py")


def raw_protocol_numbers(source: str, filename: str) -> list[str]:
    """Error codes or API keys spelled as numbers: a comparison of a ``*code`` or
    ``*api_key`` value with an int literal, or a module constant named like an
    ``ErrorCode``/``ApiKey`` member bound to an int (use the member itself)."""
    from kafkacore.protocol.enums import ApiKey, ErrorCode

    members = set(ErrorCode.__members__) | set(ApiKey.__members__)
    tree = ast.parse(source, filename)
    out = []

    def label(node: ast.expr) -> str:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            return node.attr
        return ""

    def is_int(node: ast.expr) -> bool:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            node = node.operand
        return isinstance(node, ast.Constant) and type(node.value) is int

    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id.lstrip("_") in members
            and is_int(node.value)
        ):
            out.append(f"{filename}:{node.lineno}: {node.targets[0].id} is a number")
    for cmp in ast.walk(tree):
        if isinstance(cmp, ast.Compare):
            sides = [cmp.left, *cmp.comparators]
            if any(_CODE_NAME.search(label(s)) for s in sides):
                for side in sides:
                    items = (
                        side.elts if isinstance(side, ast.Tuple | ast.Set | ast.List) else [side]
                    )
                    if any(is_int(i) for i in items):
                        out.append(f"{filename}:{cmp.lineno}: compares a code with a number")
                        break
    return out


def test_core_names_error_codes_and_api_keys() -> None:
    found = []
    for base in ("kafkacore", "transports", "pyspark_kafkacore"):
        for path in sorted((ROOT / base).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if not any(g in rel for g in _GENERATED):
                found += raw_protocol_numbers(path.read_text(), rel)
    assert found == [], "use kafkacore.protocol.enums (ErrorCode, ApiKey, groups): " + str(found)


@pytest.mark.parametrize(
    ("snippet", "caught"),
    [
        ("if resp.error_code == 15: pass", True),
        ("if code in (22, 25): pass", True),
        ("ok = msg.API_KEY != 0", True),
        ("_NOT_COORDINATOR = 16", True),
        ("_API_VERSIONS = 18", True),
        ("from kafkacore.protocol.enums import ErrorCode\nok = code == ErrorCode.NONE", False),
        ("if codec == 0: pass", False),
        ("_MAX_EPOCH = 2**31 - 1", False),
    ],
)
def test_named_numbers_check(snippet: str, caught: bool) -> None:
    assert bool(raw_protocol_numbers(snippet, "x.py")) is caught

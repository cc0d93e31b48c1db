"""docs/architecture.md names only what exists (issue 11).

The page's traces name every function a produce and a poll pass through,
as ``kafkacore.<module>.<qualname>``; the code moves faster than the page.
Every such dotted name in backticks must import and resolve (a nested
function, ``f.<locals>.g``, as a code object inside ``f``), every
repository path in backticks must match a file, and no numbered trace
lists a function twice.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from types import CodeType, ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
_SPAN = re.compile(r"`([^`\n]+)`")
_DOTTED = re.compile(r"\bkafkacore(?:\.(?:<locals>|<lambda>|[A-Za-z_]\w*))+")
_PATH = re.compile(r"^(?:kafkacore|transports|tests|benchmarks|native|localkafka|docs)/[\w./*-]*$")
_STEP = re.compile(r"^(\d+)\. `(kafkacore\.[^`]+)`", re.M)


def dotted_names(text: str) -> set[str]:
    return {m.group(0) for span in _SPAN.findall(text) for m in _DOTTED.finditer(span)}


def repository_paths(text: str) -> set[str]:
    return {span for span in _SPAN.findall(text) if _PATH.match(span)}


def _nested(code: CodeType, name: str) -> CodeType | None:
    for const in code.co_consts:
        if isinstance(const, CodeType) and const.co_name == name:
            return const
    return None


def resolve(name: str) -> object:
    """The object ``name`` names; LookupError saying which part is missing."""
    parts = name.split(".")
    module: ModuleType | None = None
    used = 0
    for i in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        used = i
        break
    if module is None:
        raise LookupError(f"{name}: no importable module")
    obj: object = module
    rest = parts[used:]
    while rest:
        part = rest.pop(0)
        if part == "<locals>":
            if not rest:
                raise LookupError(f"{name}: nothing after <locals>")
            inner = rest.pop(0)
            code = obj if isinstance(obj, CodeType) else getattr(obj, "__code__", None)
            if not isinstance(code, CodeType):
                raise LookupError(f"{name}: {part} of something that is not a function")
            found = _nested(code, inner)
            if found is None:
                raise LookupError(f"{name}: no {inner} inside {code.co_name}")
            obj = found
            continue
        if isinstance(obj, CodeType):
            raise LookupError(f"{name}: {part} after a nested function")
        # A module's attribute may be a lazy export (PEP 562); a class's is
        # taken as defined, so a property is not run.
        if isinstance(obj, ModuleType):
            attr = getattr(obj, part, None)
        else:
            attr = inspect.getattr_static(obj, part, None)
        if attr is None:
            raise LookupError(f"{name}: {type(obj).__name__} {obj!r} has no {part}")
        if isinstance(attr, staticmethod | classmethod):
            attr = attr.__func__
        elif isinstance(attr, property) and attr.fget is not None:
            attr = attr.fget
        obj = attr
    _check_defined_there(name, ".".join(parts[:used]), ".".join(parts[used:]), obj)
    return obj


def _check_defined_there(name: str, module: str, qualname: str, obj: object) -> None:
    """A function or class is named where it is defined, not where it is imported."""
    if isinstance(obj, CodeType):
        if obj.co_qualname != qualname:
            raise LookupError(f"{name}: that function is {obj.co_qualname}")
        return
    if not (inspect.isfunction(obj) or inspect.isclass(obj)) or not qualname:
        return
    where = f"{obj.__module__}.{obj.__qualname__}"
    if where != f"{module}.{qualname}":
        raise LookupError(f"{name}: defined as {where}")


TEXT = PAGE.read_text()
NAMES = sorted(dotted_names(TEXT))


def test_the_page_names_the_traced_functions() -> None:
    # The extraction itself must work: a broken pattern would pass everything.
    assert len(NAMES) >= 80
    assert "kafkacore.transports._producer_selector.KafkaProducer.send" in NAMES
    assert "kafkacore.transports._consumer_selector.KafkaConsumer._call.<locals>.<lambda>" in NAMES


@pytest.mark.parametrize("name", NAMES)
def test_every_dotted_name_exists(name: str) -> None:
    resolve(name)


def test_a_stale_name_is_refused() -> None:
    for stale in (
        "kafkacore.transports._producer_selector.KafkaProducer._submit",
        "kafkacore.client.no_such_module.Thing",
        "kafkacore.transports._producer_common.fan_out",  # imported there, defined elsewhere
        "kafkacore.transports._consumer_selector.KafkaConsumer._call.<locals>.missing",
    ):
        with pytest.raises(LookupError):
            resolve(stale)


def test_every_repository_path_exists() -> None:
    paths = repository_paths(TEXT)
    assert "transports/cli/" in paths  # the extraction works
    missing = [p for p in sorted(paths) if not any(ROOT.glob(p.rstrip("/")))]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_each_trace_lists_a_function_once_in_numbered_order() -> None:
    sections = re.split(r"^## ", TEXT, flags=re.M)
    traces = [s for s in sections if _STEP.search(s)]
    assert len(traces) == 3  # produce out, produce back, poll
    for section in traces:
        steps = _STEP.findall(section)
        numbers = [int(n) for n, _ in steps]
        assert numbers == list(range(1, len(steps) + 1)), section.splitlines()[0]
        names = [n for _, n in steps]
        repeated = sorted({n for n in names if names.count(n) > 1})
        assert not repeated, f"{section.splitlines()[0]}: listed twice: {repeated}"

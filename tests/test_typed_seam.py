"""The request seam keeps its types (issue 23): no ``Any`` where the
hand-written core takes or returns a request, a response or their callbacks.

The rule, checked by an AST scan of ``kafkacore/`` without the generated
code (``protocol/messages``, ``_api_table.py``, ``error_codes.py``,
``enums.py``) and without the transports and compat layers (``kafkacore/transports`` and
``kafkacore/compat`` are links to the top-level packages, not the core):

- a parameter named ``resp``, ``response``, ``request`` or ``req`` is not
  annotated with ``Any`` (nor with anything that has ``Any`` inside, such as
  ``RequestHandle[Any]``);
- neither is a request/response callback: a parameter named ``on_done``,
  ``on_answer``, ``on_response``, ``build`` or ``send``, or any parameter
  whose annotation is a ``Callable`` whose first argument is ``Any``;
- no function returns a request or response as ``Any``: a function named
  ``build`` or ``*_request``/``*_response``, or one whose return annotation
  names ``Request``, ``Response``, ``RequestHandle``, ``Answer`` or
  ``OnAnswer``, does not have ``Any`` in that annotation.

A generated request class is a ``Request[R]`` naming its response class, so
the concrete type is always at hand: ``Answer[m.HeartbeatResponse]``,
``RequestHandle[m.MetadataResponse]``, ``Callable[[int], m.OffsetFetchRequest]``.
A table that must hold callbacks of every response type (the stacked
machine's pending callbacks) erases it in an attribute, not in a signature.

So that a broken scan cannot pass, the test also counts the typed handlers
it sees (parameters annotated with an ``Answer[...]`` or a concrete
``...Response``) and requires a floor.

The client core's own requests (Metadata, FindCoordinator and telemetry,
sent below the stacked-machine seam through the dispatcher) follow the same
rule: their ``on_done`` is an ``OnAnswer[R]`` too, so no site is exempt.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "kafkacore"

#: Generated code and the layers that are not the core.
EXCLUDED_DIRS = ("protocol/messages", "transports", "compat")
EXCLUDED_FILES = ("protocol/_api_table.py", "protocol/error_codes.py", "protocol/enums.py")

NAMES = frozenset({"resp", "response", "request", "req"})
CALLBACK_NAMES = frozenset({"on_done", "on_answer", "on_response", "build", "send"})
SEAM_TYPES = frozenset({"Request", "Response", "RequestHandle", "Answer", "OnAnswer"})

#: Typed handlers the scan must see at least (there are well over this many).
MIN_TYPED_HANDLERS = 100


def core_files() -> list[Path]:
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(EXCLUDED_DIRS) or rel in EXCLUDED_FILES:
            continue
        out.append(path)
    return out


def _names_in(node: ast.AST | None) -> set[str]:
    """Every name an annotation mentions (``m.FooResponse`` gives ``FooResponse``)."""
    if node is None:
        return set()
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval")
        except SyntaxError:
            return set()
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            found.add(sub.attr)
    return found


def _callable_of_any(node: ast.AST | None) -> bool:
    """True for ``Callable[[Any, ...], ...]``: a callback whose first argument is Any."""
    if node is None:
        return False
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Subscript)
            and _names_in(sub.value) & {"Callable"}
            and isinstance(sub.slice, ast.Tuple)
            and sub.slice.elts
            and isinstance(args := sub.slice.elts[0], ast.List)
            and args.elts
            and _names_in(args.elts[0]) == {"Any"}
        ):
            return True
    return False


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    a = fn.args
    params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    params += [p for p in (a.vararg, a.kwarg) if p is not None]
    return params


def violations(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """What in ``fn``'s signature breaks the rule (see the module docstring)."""
    out = []
    for p in _params(fn):
        names = _names_in(p.annotation)
        if (p.arg in NAMES | CALLBACK_NAMES and "Any" in names) or _callable_of_any(p.annotation):
            out.append(f"{fn.name}({p.arg})")
    ret = _names_in(fn.returns)
    named = fn.name == "build" or fn.name.endswith(("_request", "_response"))
    if "Any" in ret and (named or ret & SEAM_TYPES):
        out.append(f"{fn.name} -> returns Any")
    return out


def scan() -> tuple[list[str], int]:
    """(the signatures that break the rule, the typed handlers seen)."""
    bad: list[str] = []
    typed = 0
    for path in core_files():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        rel = path.relative_to(ROOT.parent).as_posix()
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            bad.extend(f"{rel} {v}" for v in violations(fn))
            for p in _params(fn):
                names = _names_in(p.annotation)
                if "Answer" in names or any(n.endswith("Response") for n in names):
                    typed += 1
    return bad, typed


def test_the_scan_covers_the_core() -> None:
    files = {p.relative_to(ROOT).as_posix() for p in core_files()}
    assert {"client/stack.py", "group/classic.py", "admin/_base.py"} <= files
    assert not any(f.startswith("protocol/messages/") for f in files)


def test_no_any_in_the_request_seam() -> None:
    bad, typed = scan()
    assert typed >= MIN_TYPED_HANDLERS, f"the scan saw only {typed} typed handlers"
    assert not bad, "Any in request/response signatures:\n" + "\n".join(sorted(bad))


def test_the_scan_finds_an_untyped_handler() -> None:
    """The rule itself, on a sample: each kind of violation is seen."""
    sample = ast.parse(
        "def on_x(resp: Any, err: BaseException | None, now: float) -> None: ...\n"
        "def go(cb: Callable[[Any, float], None]) -> None: ...\n"
        "def build(version: int) -> Any: ...\n"
        "def ok(resp: Answer[m.HeartbeatResponse], now: float) -> None: ...\n"
    )
    fns = [n for n in sample.body if isinstance(n, ast.FunctionDef)]
    assert [v for fn in fns for v in violations(fn)] == [
        "on_x(resp)",
        "go(cb)",
        "build -> returns Any",
    ]

"""Gate: every BrokerError the core builds from an answer names the broker (issue 13).

A :class:`~kafkacore.errors.BrokerError` keeps the error code and the id of
the broker that answered it (``node_id``). This static (AST) check reads every
source file under ``kafkacore/`` but the generated codec (``kafkacore/protocol/``),
and the drivers (``transports/``, installed as ``kafkacore.transports``), and
finds each place an error is built from a code:

* a call of a builder: ``error_for_code``, ``broker_error``, ``code_error``
  (admin), ``broker_refusal``, and the producer's ``topic_error`` and
  ``metadata_timeout`` (these two called by name, under any import alias:
  ``cluster.topic_error(t)`` is the metadata's code, not an error);
* ``error_class(code)(...)``, or a call of a name bound to ``error_class(...)``
  in the same function;
* a call of a :class:`BrokerError` subclass by name (the generated classes and
  the core's own, found in the sources).

Each must pass ``node_id=`` (not the literal ``None``), or bind the error to a
name whose ``node_id`` the same function then sets. ``ALLOWED`` lists the
exceptions by (file, function), each with its reason; an entry nothing needs
any more fails the test. The unit tests of each area (tests/admin,
tests/producer, tests/group, tests/share ``test_error_ids.py``) check that
the id is the answering broker's.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kafkacore.protocol import error_codes

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "kafkacore"
#: Read too: installed, the drivers are ``kafkacore.transports`` (a symlink here,
#: which ``rglob`` does not follow).
TRANSPORTS = ROOT / "transports"

#: Helpers that turn a code into an error: each takes ``node_id``.
BUILDERS = frozenset({"error_for_code", "broker_error", "code_error", "broker_refusal"})
#: Builders matched only when called by a bare name (their attribute namesakes are not).
NAME_BUILDERS = frozenset({"topic_error", "metadata_timeout"})

#: (file under kafkacore/, enclosing function) -> why an error built there has no broker id.
ALLOWED: dict[tuple[str, str], str] = {
    ("consumer/committer.py", "Committer.send"): "refused locally before sending (the "
    "member is rebalancing): no broker answered",
    # RecordTooLargeError is MESSAGE_TOO_LARGE's class too (Java's RecordTooLargeException),
    # but these are the producer's own checks of a record before anything is sent.
    ("producer/accumulator.py", "RecordAccumulator.check_size"): "the producer's own size "
    "check (max_request_size, buffer_memory) before sending: no broker answered",
    ("producer/core.py", "ProducerCore.append_many"): "the producer's own check that the "
    "records fit buffer_memory, before sending: no broker answered",
}


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


#: The generated error classes (``kafkacore.protocol.error_codes``).
GENERATED = frozenset(c.__name__ for c in error_codes.ERRORS.values()) | {"UnknownErrorCodeError"}


def _broker_error_classes() -> frozenset[str]:
    """Names that are BrokerError classes wherever they are called: the generated
    ones and the core's classes derived from them (read from the sources), less
    the names the core also gives other classes (``producer.errors`` has its own
    ``ProducerFencedError``): those count where imported from error_codes."""
    bases: dict[str, set[str]] = {}
    for path in CORE.rglob("*.py"):
        if path.relative_to(CORE).parts[0] == "protocol":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases.setdefault(node.name, set()).update(
                    n for b in node.bases if (n := _name(b)) is not None
                )
    broker = set(GENERATED)
    grown = True
    while grown:
        more = {name for name, of in bases.items() if of & (broker | {"BrokerError"})}
        grown = not more <= broker
        broker |= more
    others = {name for name in bases if name not in broker or not bases[name] & broker}
    return frozenset(broker - (others & GENERATED))


ERROR_CLASSES = _broker_error_classes()


def _is_error_class_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and _name(node.func) == "error_class"


def _passes_node_id(call: ast.Call) -> bool:
    return any(
        k.arg == "node_id" and not (isinstance(k.value, ast.Constant) and k.value.value is None)
        for k in call.keywords
    )


class _Scan(ast.NodeVisitor):
    """Builds of an error from a code that name no broker, by enclosing function."""

    def __init__(self, aliases: dict[str, str], generated: set[str]) -> None:
        #: local name -> imported name (``from m import topic_error as t``).
        self.aliases = aliases
        #: Local names of classes imported from kafkacore.protocol.error_codes.
        self.generated = generated
        self.scope: list[str] = []
        self.found: list[tuple[str, int]] = []  # (qualified function, line)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scope.append(node.name)
        self._check(node)
        self.generic_visit(node)
        self.scope.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_Module(self, node: ast.Module) -> None:
        self.scope.append("<module>")
        self._check(node)
        self.scope.pop()
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    def _own_nodes(self, func: ast.AST) -> list[ast.AST]:
        """The nodes of ``func`` outside its nested functions (checked on their own)."""
        out: list[ast.AST] = []
        todo = list(ast.iter_child_nodes(func))
        while todo:
            node = todo.pop()
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            out.append(node)
            todo.extend(ast.iter_child_nodes(node))
        return out

    def _check(self, func: ast.AST) -> None:
        nodes = self._own_nodes(func)
        classes = {  # names bound to error_class(...) here (``... if code else None`` too)
            t.id
            for n in nodes
            if isinstance(n, ast.Assign) and any(_is_error_class_call(v) for v in ast.walk(n.value))
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        stamped = {  # X of every ``X.node_id = <not None>`` here
            t.value.id
            for n in nodes
            if isinstance(n, ast.Assign)
            and not (isinstance(n.value, ast.Constant) and n.value.value is None)
            for t in n.targets
            if isinstance(t, ast.Attribute)
            and t.attr == "node_id"
            and isinstance(t.value, ast.Name)
        }
        bound = {  # id(call) -> the name its result is assigned to
            id(n.value): n.targets[0].id
            for n in nodes
            if isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)
        }
        for node in nodes:
            if not isinstance(node, ast.Call):
                continue
            name = _name(node.func)
            bare = node.func.id if isinstance(node.func, ast.Name) else None
            builds = (
                name in BUILDERS
                or self.aliases.get(bare or "", bare) in BUILDERS | NAME_BUILDERS
                or name in ERROR_CLASSES
                or bare in self.generated
                or _is_error_class_call(node.func)
                or (isinstance(node.func, ast.Name) and node.func.id in classes)
            )
            if not builds or _passes_node_id(node) or bound.get(id(node)) in stamped:
                continue
            self.found.append((".".join(self.scope), node.lineno))


def unnamed_builds(source: str) -> list[tuple[str, int]]:
    """(function, line) of each error built from a code with no broker id in ``source``."""
    tree = ast.parse(source)
    aliases = {
        a.asname: a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom)
        for a in n.names
        if a.asname is not None
    }
    generated = {
        a.asname or a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module == "kafkacore.protocol.error_codes"
        for a in n.names
        if a.name in GENERATED
    }
    scan = _Scan(aliases, generated)
    scan.visit(tree)
    return scan.found


def _core_findings() -> dict[tuple[str, str], list[int]]:
    found: dict[tuple[str, str], list[int]] = {}
    paths = [*CORE.rglob("*.py"), *TRANSPORTS.rglob("*.py")]
    for path in sorted(paths):
        rel = path.relative_to(ROOT).as_posix().removeprefix("kafkacore/")
        if rel.startswith("protocol/"):
            continue  # the generated codec: the client core wraps its error_for_code
        for function, line in unnamed_builds(path.read_text(encoding="utf-8")):
            found.setdefault((rel, function), []).append(line)
    return found


def test_every_broker_error_built_from_a_code_names_the_broker() -> None:
    found = _core_findings()
    missing = [
        f"{rel}:{line} in {function}: pass node_id= (the broker that answered)"
        for (rel, function), lines in found.items()
        if (rel, function) not in ALLOWED
        for line in lines
    ]
    assert not missing, "errors built with no broker id:\n" + "\n".join(missing)
    stale = sorted(set(ALLOWED) - set(found))
    assert not stale, f"ALLOWED entries nothing needs any more: {stale}"


def test_every_allowance_says_why() -> None:
    assert all(len(why) > 20 for why in ALLOWED.values())


def test_the_core_error_classes_are_found() -> None:
    # Generated, and derived in the core (consumer/events.py): both kinds are checked.
    assert {"TopicAuthorizationFailedError", "RebalanceInProgressCommitError"} <= ERROR_CLASSES
    assert "CommitFailedError" not in ERROR_CLASSES  # a KafkaError, not a BrokerError
    assert "ProducerFencedError" not in ERROR_CLASSES  # two classes: known by the import


@pytest.mark.parametrize(
    "snippet",
    [
        "def f(code):\n    return error_for_code(code, 'x')\n",
        "def f(code):\n    return code_error(code, None, 'topic', node_id=None)\n",
        "def f(code):\n    return error_class(code)('x')\n",
        "def f(code):\n    cls = error_class(code)\n    return cls('x')\n",
        "def f(code):\n    cls = error_class(code) if code else None\n    return cls('x')\n",
        "def f():\n    return TopicAuthorizationFailedError('no')\n",
        "def f(code):\n    e = broker_error(code)\n    e.node_id = None\n    return e\n",
        "class C:\n    def f(self, code):\n        return self.x.broker_refusal(code, 'd')\n",
        "from p.causes import topic_error as t\ndef f(code):\n    return t('x', code)\n",
        "REFUSED = error_for_code(31)\n",
        "from kafkacore.protocol.error_codes import ProducerFencedError as F\n"
        "def f():\n    return F('x')\n",
        "def f(code):\n    return metadata_timeout('t', 1, code, None, node_id=None)\n",
    ],
)
def test_gate_catches(snippet: str) -> None:
    assert unnamed_builds(snippet), snippet


@pytest.mark.parametrize(
    "snippet",
    [
        "def f(code, n):\n    return error_for_code(code, 'x', node_id=n)\n",
        "def f(code, n):\n    cls = error_class(code)\n    return cls('x', node_id=n)\n",
        "def f(code, n):\n    e = error_class(code)('x')\n    e.node_id = n\n    return e\n",
        "def f(code):\n    cls = error_class(code)\n    return cls is not None and cls.retriable\n",
        "def f(code):\n    return error_class(code).name\n",
        "def f(cluster):\n    return cluster.topic_error('t')\n",
        # The producer's own ProducerFencedError is no BrokerError.
        "from kafkacore.producer.errors import ProducerFencedError\n"
        "def f():\n    return ProducerFencedError('x')\n",
    ],
)
def test_gate_allows(snippet: str) -> None:
    assert unnamed_builds(snippet) == [], snippet

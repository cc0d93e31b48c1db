"""Gate: only the accumulator writes batch and partition-queue state (issue 23, step 3).

An AST scan of ``kafkacore/producer/*.py`` finds every write of the
attributes in :data:`BATCH_STATE` (a :class:`ProducerBatch`'s), :data:`QUEUE_STATE`
(a :class:`PartitionQueue`'s) and :data:`ACCUMULATOR_STATE` (the
:class:`RecordAccumulator`'s own bytes and queues), however spelled:

* assignment, augmented and annotated assignment, tuple targets, ``del``
  and item assignment (``x.batches[0] = ...``);
* a mutating call (``append``, ``popleft``, ``remove``, ``clear``, ...) on
  the attribute or on a local name bound to it (``batches = q.batches``);
* a mutating method taken without a call (``add = batch.tokens.append``):
  whoever holds it writes later;
* a call of a method of the batch or the queue that writes its state
  (``batch.seal(...)``, ``q.reinsert(...)``).

``self.<attr>`` inside a class is that class's own attribute: it counts only
inside the classes that own this state. The names are shared by other
objects too (a transaction's ``state``, a coordinator call's ``attempts``),
so :data:`OTHER_OBJECTS` names those receivers, each with what it is.

Writes are allowed in ``accumulator.py`` and in ``ProducerBatch``'s own
methods; :data:`EXCEPTIONS` lists the few others, each with its reason (the
per-record fast path, which may not pay a method call). An entry nothing
needs any more fails the test, and the scan must find the owner's writes
(and every spelling in a synthetic module), so a broken scan cannot pass.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCER = ROOT / "kafkacore" / "producer"

BATCH_STATE = frozenset(
    {
        "accounted",
        "attempts",
        "base_sequence",
        "builder",
        "data",
        "deadline",
        "last_error",
        "order",
        "producer_epoch",
        "producer_id",
        "retry_at",
        "state",
        "timestamps",
        "tokens",
        "unknown",
        "written",
    }
)
QUEUE_STATE = frozenset({"batches", "in_flight", "next_sequence"})
ACCUMULATOR_STATE = frozenset({"queues", "refused", "used"})
STATE = BATCH_STATE | QUEUE_STATE | ACCUMULATOR_STATE

#: Classes whose ``self.<attr>`` is the state this gate guards.
OWNING_CLASSES = frozenset({"ProducerBatch", "PartitionQueue", "RecordAccumulator"})
#: Methods of ProducerBatch and PartitionQueue that write their state.
WRITING_METHODS = frozenset({"build", "seal", "reinsert", "insert_before_later"})
MUTATORS = frozenset(
    {
        "__setitem__",
        "__delitem__",
        "__iadd__",
        "add",
        "append",
        "appendleft",
        "clear",
        "discard",
        "extend",
        "extendleft",
        "insert",
        "pop",
        "popitem",
        "popleft",
        "remove",
        "reverse",
        "rotate",
        "setdefault",
        "sort",
        "update",
    }
)

#: Modules free to write the state.
OWNER = "accumulator.py"

#: (module, receiver.attr): a write of the same name on another object.
OTHER_OBJECTS = {
    ("coordinator.py", "call.attempts"): "a coordinator request's retries",
    ("producer_id.py", "self._failures.producer_id"): "FailureLog: the last InitProducerId failure",
    ("producer_id.py", "self._identity.state"): "ProducerIdentity's state machine",
    ("txn_driver.py", "self.txn.state"): "TransactionManager's state",
    ("sender.py", "flight.deadline"): "the sender's own Flight, moved by apply_expiry",
}

#: (module, function, what is written): allowed outside the owner, with why.
EXCEPTIONS = {
    ("core.py", "ProducerCore.try_append", "batch.accounted"): (
        "the per-record fast path charges the lane's batch directly: a method call "
        "per record is what the lanes exist to avoid (benchmarks/bench_producer.py)"
    ),
    ("core.py", "ProducerCore.try_append", "acc.used"): "the same fast path's buffer_memory",
    ("lanes.py", "Lane.__init__", "batch.tokens.append"): (
        "a lane binds the open batch's mutators once, to append per record without lookups"
    ),
    ("lanes.py", "Lane.__init__", "batch.timestamps.append"): "the same lane",
    ("lanes.py", "Lane.__init__", "batch.builder.append"): "the same lane (the batch's builder)",
}


@dataclass(frozen=True)
class Write:
    module: str
    function: str  # Class.method, or "" at module level
    what: str  # the receiver expression written
    line: int


class _Scanner(ast.NodeVisitor):
    """Collects the writes of :data:`STATE` in one module (see the module docstring)."""

    def __init__(self, module: str) -> None:
        self.module = module
        self.scope: list[str] = []
        self.classes: list[str] = []
        self.aliases: list[dict[str, str]] = [{}]  # local name -> "recv.attr", per function
        self.writes: list[Write] = []

    # -- scopes
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.classes.append(node.name)
        self.generic_visit(node)
        self.classes.pop()
        self.scope.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.scope.append(node.name)
        self.aliases.append({})
        self.generic_visit(node)
        self.aliases.pop()
        self.scope.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    # -- what counts
    def _guarded(self, node: ast.expr) -> str | None:
        """``recv.attr`` if ``node`` is (an alias of) guarded state, else None."""
        if isinstance(node, ast.Name):
            return self.aliases[-1].get(node.id)
        if not isinstance(node, ast.Attribute) or node.attr not in STATE:
            return None
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            owner = self.classes[-1] if self.classes else ""
            if owner not in OWNING_CLASSES:
                return None  # another class's own attribute
        return ast.unparse(node)

    def _record(self, node: ast.AST, what: str) -> None:
        line = getattr(node, "lineno", 0)
        self.writes.append(Write(self.module, ".".join(self.scope), what, line))

    def _target(self, target: ast.expr, node: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._target(elt, node)
        elif isinstance(target, ast.Starred):
            self._target(target.value, node)
        elif isinstance(target, ast.Attribute):
            what = self._guarded(target)
            if what is not None:
                self._record(node, what)
        elif isinstance(target, ast.Subscript):
            what = self._guarded(target.value)
            if what is not None:
                self._record(node, what)

    # -- writes
    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._target(target, node)
        # Aliases: a local name bound to guarded state (``batches = q.batches``).
        if isinstance(node.value, ast.Attribute):
            what = self._guarded(node.value)
            for target in node.targets:
                if isinstance(target, ast.Name):
                    if what is not None:
                        self.aliases[-1][target.id] = what
                    else:
                        self.aliases[-1].pop(target.id, None)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._target(node.target, node)
        if isinstance(node.target, ast.Name):
            what = self.aliases[-1].get(node.target.id)
            if what is not None:
                self._record(node, what)  # ``tokens += ...`` extends the list in place
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._target(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._target(target, node)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        # ``x.batches.popleft`` called or not (a bound mutator escapes as a writer).
        if node.attr in MUTATORS:
            what = self._guarded(node.value)
            if what is not None:
                self._record(node, f"{what}.{node.attr}")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr in WRITING_METHODS
            and not (isinstance(func.value, ast.Name) and func.value.id == "self")
            and not _is_builder(func.value)
        ):
            self._record(node, ast.unparse(func))
        self.generic_visit(node)


def _is_builder(node: ast.expr) -> bool:
    """``self.builder.build()`` (the records builder's, not the batch's ``build``)."""
    return isinstance(node, ast.Attribute) and node.attr == "builder"


def scan(source: str, module: str) -> list[Write]:
    scanner = _Scanner(module)
    scanner.visit(ast.parse(source))
    return scanner.writes


def _all_writes() -> list[Write]:
    writes: list[Write] = []
    for path in sorted(PRODUCER.glob("*.py")):
        writes += scan(path.read_text(encoding="utf-8"), path.name)
    return writes


def _allowed(w: Write) -> bool:
    if w.module == OWNER:
        return True
    if w.module == "batch.py" and w.function.startswith("ProducerBatch."):
        return True
    if (w.module, w.what) in OTHER_OBJECTS:
        return True
    return (w.module, w.function, w.what) in EXCEPTIONS


def test_only_the_accumulator_writes_batch_and_queue_state() -> None:
    stray = [w for w in _all_writes() if not _allowed(w)]
    assert not stray, "batch or queue state written outside the accumulator:\n" + "\n".join(
        f"  {w.module}:{w.line} {w.function}: {w.what}" for w in stray
    )


def test_every_exception_is_still_needed() -> None:
    writes = _all_writes()
    seen = {(w.module, w.function, w.what) for w in writes}
    assert not set(EXCEPTIONS) - seen, "stale EXCEPTIONS entries"
    others = {(w.module, w.what) for w in writes}
    assert not set(OTHER_OBJECTS) - others, "stale OTHER_OBJECTS entries"


def test_the_scan_finds_the_owners_writes() -> None:
    owner = [w for w in _all_writes() if w.module == OWNER]
    # The accumulator writes its state in many places; a scan that sees few is broken.
    assert len(owner) >= 40, owner
    found = {(w.function, w.what) for w in owner}
    for expected in [
        ("RecordAccumulator.drain_heads", "batch.state"),
        ("RecordAccumulator.drain_heads", "batch.attempts"),
        ("RecordAccumulator.drain_heads", "q.in_flight"),
        ("RecordAccumulator.drain_heads", "q.next_sequence"),
        ("RecordAccumulator.drain_heads", "q.batches.popleft"),
        ("RecordAccumulator.drain_heads", "batch.seal"),
        ("RecordAccumulator.complete", "self.used"),
        ("RecordAccumulator.expire", "self.queues[batch.tp].batches.popleft"),  # an alias
        ("RecordAccumulator.reset_sequences", "batch.base_sequence"),
        ("RecordAccumulator.landed", "queues[batch.tp].in_flight"),
        ("PartitionQueue.reinsert", "self.batches.insert"),
    ]:
        assert expected in found, (expected, sorted(found))


def test_the_scan_sees_every_spelling_of_a_write() -> None:
    source = """
class Elsewhere:
    def __init__(self):
        self.state = 1                 # its own attribute: not counted
    def work(self, batch, q, other):
        batch.state = 2                # 1 assignment
        batch.attempts += 1            # 2 augmented assignment
        batch.unknown, x = True, 1     # 3 tuple target
        q.batches[0] = batch           # 4 item assignment
        del q.batches[0]               # 5 del
        q.batches.popleft()            # 6 mutating call
        batches = q.batches
        batches.remove(batch)          # 7 through an alias
        add = batch.tokens.append      # 8 a bound mutator escapes
        batch.seal(1, 2, 3, False)     # 9 a writing method of the batch
        q.reinsert(batch)              # 10 ... and of the queue
        q.next_sequence: int = 4       # 11 annotated assignment
        tokens = batch.tokens
        tokens += [1]                  # 12 in place through an alias
        other.name = 5                 # not state
        batch.builder.build()          # the records builder's build: not the batch's
"""
    writes = scan(source, "x.py")
    assert [w.line for w in writes] == [6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 19], writes

"""The group members' transition tables are the whole automaton (issue 23).

Every state change of the classic and KIP-848 members goes through
:func:`kafkacore.group.transitions.advance`; these tests pin the tables'
shape, that an unlisted move raises, and that the machines never write
their state any other way.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Mapping

import pytest

from kafkacore.group import classic, kip848
from kafkacore.group.transitions import (
    CLASSIC,
    KIP848,
    ClassicState,
    ClassicTrigger,
    Kip848State,
    Kip848Trigger,
    advance,
)

TABLES: list[tuple[Mapping[tuple[object, object], object], type, type, object]] = [
    (CLASSIC, ClassicState, ClassicTrigger, ClassicState.UNJOINED),
    (KIP848, Kip848State, Kip848Trigger, Kip848State.UNSUBSCRIBED),
]


@pytest.mark.parametrize(("table", "states", "triggers", "initial"), TABLES)
def test_every_state_is_reached_and_every_trigger_used(
    table: Mapping[tuple[object, object], object], states: type, triggers: type, initial: object
) -> None:
    reached = {initial}
    frontier = [initial]
    while frontier:
        state = frontier.pop()
        for (src, _), dst in table.items():
            if src is state and dst not in reached:
                reached.add(dst)
                frontier.append(dst)
    assert reached == set(states)  # type: ignore[call-overload]
    assert {trigger for _, trigger in table} == set(triggers)  # type: ignore[call-overload]


@pytest.mark.parametrize(("table", "states", "triggers", "initial"), TABLES)
def test_closed_and_failed_are_final(
    table: Mapping[tuple[object, object], object], states: type, triggers: type, initial: object
) -> None:
    final = {states.CLOSED, states.FAILED}  # type: ignore[attr-defined]
    assert not [pair for pair in table if pair[0] in final]


def test_an_unlisted_move_raises_naming_the_machine_state_and_trigger() -> None:
    with pytest.raises(AssertionError, match=r"group 'g': 'SyncGroup answered' is not a move from"):
        advance(CLASSIC, "group 'g'", ClassicState.CLOSED, ClassicTrigger.SYNCED)
    assert advance(CLASSIC, "g", ClassicState.SYNCING, ClassicTrigger.SYNCED) is ClassicState.STABLE


@pytest.mark.parametrize("module", [classic, kip848])
def test_the_members_write_their_state_only_through_the_table(module: object) -> None:
    tree = ast.parse(inspect.getsource(module))  # type: ignore[arg-type]
    writes = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Assign | ast.AugAssign | ast.AnnAssign):
                    targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                    for target in targets:
                        if isinstance(target, ast.Attribute) and target.attr == "state":
                            writes.append((node.name, sub.lineno))
    # __init__ sets the initial state; _move applies the table.
    assert sorted({name for name, _ in writes}) == ["__init__", "_move"], writes

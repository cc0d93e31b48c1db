"""Every cross-reference in the code's docstrings names something that exists.

A docstring's ``:class:`~kafkacore.x.Y``` (or ``:func:``, ``:meth:``, ``:mod:``,
``:attr:``, ``:exc:``) with a full dotted path is read by a newcomer as a
pointer; a module renamed or split leaves it pointing nowhere (issue 23
found one). Generated messages are left out: their docstrings come from the
schemas.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.test_architecture_names import resolve

ROOT = Path(__file__).resolve().parents[2]
_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj):`~?(kafkacore(?:\.\w+)+)`")


def references() -> list[tuple[str, str]]:
    found = []
    for package in ("kafkacore", "transports", "pyspark_kafkacore", "compat"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if "protocol/messages" in path.as_posix():
                continue
            for match in _ROLE.finditer(path.read_text()):
                found.append((path.resolve().relative_to(ROOT).as_posix(), match.group(1)))
    return found


REFERENCES = references()


def test_the_references_are_found() -> None:
    assert len(REFERENCES) >= 300  # a broken pattern would pass everything


@pytest.mark.parametrize(("path", "name"), sorted(set(REFERENCES)))
def test_every_reference_resolves(path: str, name: str) -> None:
    try:
        resolve(name)
    except LookupError as exc:
        # A name imported into the module it is cited from is a fair pointer.
        if "defined as" not in str(exc):
            raise AssertionError(f"{path}: {exc}") from None

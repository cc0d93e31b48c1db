"""Find the code examples in the README and docs/, and run one page's worth.

A page's ``python`` blocks run in order in one fresh interpreter and one
namespace, as a reader typing them in would run them; ``console`` and
``text`` blocks are output or shell, not Python. The only change made to an
example is its broker address: ``127.0.0.1:9092`` / ``localhost:9092``
become the address of the test's broker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTED_ADDRESSES = ("127.0.0.1:9092", "localhost:9092")
_FENCE = re.compile(r"^```([A-Za-z0-9_+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    code: str


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def examples(page: Path) -> list[Example]:
    text = page.read_text()
    found = []
    for match in _FENCE.finditer(text):
        if match.group(1) == "python":
            line = text.count("\n", 0, match.start(2)) + 1
            found.append(Example(page.relative_to(ROOT).as_posix(), line, match.group(2)))
    return found


def with_broker(code: str, bootstrap: str, more: dict[str, str] | None = None) -> str:
    for address in DOCUMENTED_ADDRESSES:
        code = code.replace(address, bootstrap)
    for address, actual in (more or {}).items():
        code = code.replace(address, actual)
    return code


# Runs in the child: each block compiled under its page and line, so a
# traceback points at the documentation.
RUNNER = r"""
import json, sys, traceback
blocks = json.load(open(sys.argv[1]))
namespace = {"__name__": "__main__"}
for block in blocks:
    where = f"{block['page']}:{block['line']}"
    try:
        exec(compile(block["code"], where, "exec"), namespace)
    except BaseException:
        print(f"EXAMPLE FAILED: {where}", file=sys.stderr)
        traceback.print_exc()
        sys.exit(1)
    print(f"EXAMPLE OK: {where}", flush=True)
"""

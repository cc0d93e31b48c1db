"""The benchmark scripts are not a package: their directory goes on ``sys.path``.

The harnesses import each other by bare name (``from _harness import ...``,
``import plot``), as they do when run as scripts; the tests import them
the same way. ``multiprocessing`` hands this ``sys.path`` to the processes
:func:`_harness.isolated` spawns.
"""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

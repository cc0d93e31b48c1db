"""Starving the test process of CPU, so that races hidden by a quiet machine show.

Issue 25: on a busy 2-core machine (load average 5-7) the consumer's loop
thread (heartbeats, JoinGroup, SyncGroup, commits) and the user's thread
(polls, rebalance listeners, commits) run late against each other, and
orders of events a quiet machine never produces happen. :func:`starve`
runs a block with

- ``neighbours`` CPU-bound processes, each pinned to one of the cores this
  process may run on (the other work of a busy machine), and
- ``hogs`` threads in this process that sort a large list over and over: a
  sort holds the GIL from start to end (tens of milliseconds on a quiet
  machine, more on a busy one), so every other thread of the process, the
  loop threads included, waits behind it, as behind a user's CPU-bound
  C code.

Everything it started is stopped when the block ends, also when it raises.
"""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import sys
import threading
from collections.abc import Iterator

__all__ = ["crunch", "starve"]

#: A neighbour: CPU-bound until its parent (this process) is gone, even killed.
_SPIN = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass\n"
#: Items a hog sorts per pass (one GIL hold of tens of milliseconds).
_HOG_ITEMS = 200_000


_ITEMS = [random.Random(25).random() for _ in range(_HOG_ITEMS)]


def crunch(passes: int = 1) -> None:
    """CPU-bound work holding the GIL: ``passes`` sorts (a user's processing of a batch)."""
    for _ in range(passes):
        sorted(_ITEMS)


def _hog(stop: threading.Event) -> None:
    while not stop.is_set():
        crunch()


@contextlib.contextmanager
def starve(neighbours: int = 2, hogs: int = 1) -> Iterator[None]:
    """Run the block with the process starved of CPU (see the module docstring)."""
    cores = sorted(os.sched_getaffinity(0))
    procs: list[subprocess.Popen[bytes]] = []
    stop = threading.Event()
    threads = [
        threading.Thread(target=_hog, args=(stop,), name=f"starve-hog-{i}", daemon=True)
        for i in range(hogs)
    ]
    try:
        for i in range(neighbours):
            proc = subprocess.Popen([sys.executable, "-c", _SPIN])
            procs.append(proc)
            os.sched_setaffinity(proc.pid, {cores[i % len(cores)]})
        for thread in threads:
            thread.start()
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)  # one sort at most
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait(30)

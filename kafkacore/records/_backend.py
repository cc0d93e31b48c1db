"""Which implementation runs the record byte loops: compiled (Rust) or pure Python.

This module is the one place that decides, once, at import:

* the compiled extension :mod:`kafkacore.records._native` (built from
  ``native/`` by the normal install) when it imports;
* the pure-Python modules of this package otherwise, or when the
  environment variable ``KAFKACORE_PURE`` is set to anything but ``""`` or
  ``"0"`` (read here, at import; changing it later has no effect).

The pure-Python code is the reference: the compiled path returns the same
records and raises the same :class:`~kafkacore.errors.DecodeError` for the
same bytes (tests/native checks it property by property). Modules consult
:data:`NATIVE` to bind their implementation; tests can still reach both,
the extension directly and the pure functions by their ``_py`` names.
"""

from __future__ import annotations

import os
from typing import Final

__all__ = ["IMPLEMENTATION", "NATIVE", "NATIVE_UNAVAILABLE", "PURE_REQUESTED"]

#: ``KAFKACORE_PURE`` asked for the pure-Python path.
PURE_REQUESTED: Final = os.environ.get("KAFKACORE_PURE", "").strip() not in ("", "0")


def _probe() -> str | None:
    """Why the extension cannot be imported, or None when it can."""
    try:
        from kafkacore.records import _native  # noqa: F401
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


#: Why the compiled extension is unavailable (None when it imports).
NATIVE_UNAVAILABLE: Final = _probe()
#: The compiled path is active.
NATIVE: Final = NATIVE_UNAVAILABLE is None and not PURE_REQUESTED
#: ``"native"`` or ``"python"``: what this process runs.
IMPLEMENTATION: Final = "native" if NATIVE else "python"

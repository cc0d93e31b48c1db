"""CRC-32C (Castagnoli) from the native ``crc32c`` package, loaded without its ``__init__``.

The package's ``__init__`` imports ``importlib.metadata`` and its command-line
entry point, which pull in ``socket``, ``selectors`` and ``threading``; the
core must not import those (tests/test_gates.py). Its compiled extension
``crc32c._crc32c`` has no such imports, so it is loaded here by file. The
result is the same function: hardware-accelerated (SSE 4.2 / ARMv8 CRC)
where the CPU offers it, the package's own software tables otherwise.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
from collections.abc import Callable
from typing import cast

__all__ = ["crc32c"]

Crc32c = Callable[..., int]


def _load() -> Crc32c:
    spec = importlib.util.find_spec("crc32c")  # finds, does not execute, the package
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("kafkacore.records needs the crc32c package: pip install crc32c")
    for location in spec.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(location, "_crc32c" + suffix)
            if not os.path.exists(path):
                continue
            ext_spec = importlib.util.spec_from_file_location("crc32c._crc32c", path)
            if ext_spec is None or ext_spec.loader is None:
                continue
            module = importlib.util.module_from_spec(ext_spec)
            ext_spec.loader.exec_module(module)
            return cast(Crc32c, module.crc32c)
    raise ImportError("the crc32c package has no compiled _crc32c extension; reinstall crc32c")


#: ``crc32c(data, value=0) -> int``: CRC-32C of a bytes-like object, continuing from ``value``.
crc32c: Crc32c = _load()

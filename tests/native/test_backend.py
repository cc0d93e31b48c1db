"""One place decides the implementation; the compiled one is what the suite runs by default."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkacore import partitioner
from kafkacore.records import RecordBatchBuilder, _backend, compression, crc32c
from kafkacore.records import _native as native
from kafkacore.records.builder import NativeRecordBatchBuilder, PyRecordBatchBuilder

ROOT = Path(__file__).resolve().parents[2]

_PROBE = """
import json
from kafkacore import partitioner
from kafkacore.records import RecordBatch, RecordBatchBuilder, _backend, crc32c
print(json.dumps({
    "implementation": _backend.IMPLEMENTATION,
    "requested": _backend.PURE_REQUESTED,
    "builder": RecordBatchBuilder.__name__,
    "compiled": RecordBatch._compiled,
    "crc": crc32c.__module__,
    "murmur2": getattr(partitioner.murmur2, "__module__", None),
}))
"""


def _probe(env_value: str | None) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "KAFKACORE_PURE"}
    if env_value is not None:
        env["KAFKACORE_PURE"] = env_value
    out = subprocess.run(
        [sys.executable, "-c", _PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


def test_the_extension_is_built_and_active_unless_pure_is_requested() -> None:
    # ./dev setup builds native/ (cargo is a required tool): a missing
    # extension is a broken install, not a reason to run slower.
    assert _backend.NATIVE_UNAVAILABLE is None, _backend.NATIVE_UNAVAILABLE
    assert _backend.NATIVE is (not _backend.PURE_REQUESTED)
    assert ("python" if _backend.PURE_REQUESTED else "native") == _backend.IMPLEMENTATION


def test_the_active_implementation_is_bound_everywhere_consistently() -> None:
    if _backend.NATIVE:
        assert RecordBatchBuilder is NativeRecordBatchBuilder
        assert crc32c is native.crc32c
        assert partitioner.murmur2 is native.murmur2
    else:
        assert RecordBatchBuilder is PyRecordBatchBuilder
        assert partitioner.murmur2 is partitioner.murmur2_py
    assert compression.compress_py is not compression.compress


@pytest.mark.parametrize(
    ("value", "implementation"),
    [(None, "native"), ("", "native"), ("0", "native"), ("1", "python"), ("yes", "python")],
)
def test_kafkacore_pure_selects_the_python_path_at_import(
    value: str | None, implementation: str
) -> None:
    got = _probe(value)
    assert got["implementation"] == implementation
    python = implementation == "python"
    assert got["requested"] is python
    assert got["builder"] == ("PyRecordBatchBuilder" if python else "NativeRecordBatchBuilder")
    assert got["compiled"] is (not python)
    assert got["crc"] == ("kafkacore.records._crc" if python else "kafkacore.records._native")

"""What an installed kafkacore puts on the import path, and how it is imported.

The repository keeps its layout (``kafkacore/`` the sans-IO core,
``transports/`` the drivers, ``localkafka/`` the local-Kafka kit and ``compat/``
the peers' module layouts beside it), but an install adds only ``kafkacore`` (with
the drivers as ``kafkacore.transports``, the kit as ``kafkacore.testing`` and the
layouts as ``kafkacore.compat``) and
``pyspark_kafkacore`` (the package PySpark discovers data sources by) to
site-packages: generic top-level names such as ``transports`` would collide
with other projects. In the repository ``kafkacore/transports``,
``kafkacore/testing`` and ``kafkacore/compat`` are symbolic links to the directories, so the same
module names work in a checkout, under mypy and in the wheel.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE_DIRS = (
    "kafkacore",
    "transports",
    "localkafka",
    "compat",
    "pyspark_kafkacore",
    "tests",
    "benchmarks",
)
DIRECTORY_NAMES = frozenset({"transports", "localkafka", "compat"})


def _python_files() -> list[Path]:
    files: list[Path] = []
    for base in SOURCE_DIRS:
        # rglob does not descend into kafkacore/transports and kafkacore/testing
        # (symbolic links), so each file is read once, under its real directory.
        files += sorted((ROOT / base).rglob("*.py"))
    return files


def _top_level_imports(source: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def test_no_code_imports_the_directories_by_their_own_names() -> None:
    # `import transports...` in a checkout would load a second copy of every
    # driver module beside kafkacore.transports (two classes of each name).
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in _python_files()
        for line, name in _top_level_imports(path.read_text())
        if name.split(".")[0] in DIRECTORY_NAMES
    ]
    assert wrong == [], "import kafkacore.transports / kafkacore.testing instead: " + str(wrong)


def test_the_package_links_point_at_the_directories() -> None:
    assert (ROOT / "kafkacore" / "transports").resolve() == ROOT / "transports"
    assert (ROOT / "kafkacore" / "testing").resolve() == ROOT / "localkafka"
    assert (ROOT / "kafkacore" / "compat").resolve() == ROOT / "compat"


_PROBE = """
import json, sys
import kafkacore
drivers = ("kafkacore.transports", "kafkacore.testing")
before = sorted(m for m in sys.modules if m.startswith(drivers))
producer = kafkacore.KafkaProducer
from kafkacore.transports.selector import KafkaProducer
print(json.dumps({"before": before, "same": producer is KafkaProducer,
                  "names": [n for n in ("KafkaProducer", "KafkaConsumer", "KafkaAdminClient",
                                         "KafkaClient") if hasattr(kafkacore, n)]}))
"""


def test_import_kafkacore_loads_no_transport_until_a_client_is_named() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {
        "before": [],
        "same": True,
        "names": ["KafkaProducer", "KafkaConsumer", "KafkaAdminClient", "KafkaClient"],
    }


def test_an_unknown_name_on_kafkacore_is_an_attribute_error() -> None:
    import kafkacore

    with pytest.raises(AttributeError, match="has no attribute 'KafkaProducr'"):
        kafkacore.KafkaProducr  # noqa: B018

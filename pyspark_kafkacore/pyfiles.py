"""Zip kafkacore for ``spark-submit --py-files``: the pure-Python packages, nothing compiled.

Run ``python -m pyspark_kafkacore.pyfiles kafkacore-pure.zip`` with the
Python that has kafkacore installed (any install: a wheel, an editable
checkout, a build without the Rust extension). The zip holds the
``kafkacore`` and ``pyspark_kafkacore`` packages as they are imported here,
``.py`` files only: no compiled extension (an extension cannot be imported
from a zip, and one built here may not load on the executors), no byte
code, and not the test kit (``kafkacore.testing``). Executors then run
kafkacore's pure-Python record path; set ``KAFKACORE_PURE=1`` for them
(``spark.executorEnv.KAFKACORE_PURE=1``) so the choice is explicit. What the
zip cannot carry must be installed in the executors' Python: pyarrow and
kafkacore's compression libraries (``lz4``, ``zstandard``, ``cramjam``),
all published as binary wheels. See docs/spark.md, "Deploying".
"""

from __future__ import annotations

import argparse
import zipfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["main", "write_pure_zip"]

#: Sub-packages executors never import: the broker launcher and test kit.
_LEFT_OUT = ("kafkacore/testing/",)


def _package_files(package: str) -> Iterator[tuple[Path, str]]:
    """``(file, name in the zip)`` for every ``.py`` and ``py.typed`` of ``package``."""
    module = __import__(package)
    root = Path(next(iter(module.__path__)))
    # rglob does not follow directory symlinks; a checkout links
    # kafkacore/transports and kafkacore/testing to their directories.
    stack = [root]
    while stack:
        directory = stack.pop()
        for path in sorted(directory.iterdir()):
            name = f"{package}/{path.relative_to(root).as_posix()}"
            if path.is_dir():
                if path.name != "__pycache__" and not f"{name}/".startswith(_LEFT_OUT):
                    stack.append(path)
            elif path.suffix == ".py" or path.name == "py.typed":
                yield path, name


def write_pure_zip(out: Path) -> list[str]:
    """Write the zip to ``out``; return the names it holds."""
    names: list[str] = []
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for package in ("kafkacore", "pyspark_kafkacore"):
            for path, name in _package_files(package):
                zf.write(path, name)
                names.append(name)
    return names


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m pyspark_kafkacore.pyfiles",
        description="Zip kafkacore's pure-Python packages for spark-submit --py-files.",
    )
    parser.add_argument("output", type=Path, help="the zip to write, e.g. kafkacore-pure.zip")
    args = parser.parse_args(argv)
    names = write_pure_zip(args.output)
    print(f"{args.output}: {len(names)} files (kafkacore, pyspark_kafkacore; no extension)")


if __name__ == "__main__":
    main()

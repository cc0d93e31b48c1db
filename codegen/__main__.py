"""``python -m codegen [--out DIR]``: regenerate the protocol modules."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from codegen import generate


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m codegen", description=__doc__)
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent.parent,
        help="repository root to write into (default: this checkout)",
    )
    args = parser.parse_args()
    files = generate.generate_all()
    root: Path = args.out
    messages = root / generate.MESSAGES_DIR
    if messages.exists():
        shutil.rmtree(messages)
    for rel, text in sorted(files.items()):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    print(f"wrote {len(files)} files under {root}")


if __name__ == "__main__":
    main()

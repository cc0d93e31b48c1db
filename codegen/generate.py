"""Turn the schemas into the text of every generated file."""

from __future__ import annotations

from codegen import emit
from codegen.schema import JAR, KAFKA_VERSION, load_raw, parse_message, resolve_jar

MESSAGES_DIR = "kafkacore/protocol/messages"


def generate_all() -> dict[str, str]:
    """Map of repository-relative path -> file text."""
    raw = load_raw(resolve_jar(JAR))
    files: dict[str, str] = {}
    specs = [parse_message(r) for r in raw.values()]
    live = [m for m in specs if m.valid is not None]
    exports: list[tuple[str, str]] = []
    for msg in sorted(live, key=lambda m: m.name):
        mod = emit.module_name(msg)
        files[f"{MESSAGES_DIR}/{mod}.py"] = emit.generate_module(msg, KAFKA_VERSION)
        exports.append((mod, msg.name))
    files[f"{MESSAGES_DIR}/__init__.py"] = messages_init(exports)
    return files


def messages_init(exports: list[tuple[str, str]]) -> str:
    lines = [
        emit.HEADER.format(kafka=KAFKA_VERSION).rstrip("\n"),
        '"""Every top-level message class (requests, responses, headers, data types).',
        "",
        "Nested structs live in the message's own module, e.g.",
        "``kafkacore.protocol.messages.metadata_response.MetadataResponseTopic``.",
        '"""',
        "",
    ]
    # Importing all ~190 modules costs about a second, so they load on first
    # use (PEP 562); type checkers see ordinary imports.
    lines += [
        "from __future__ import annotations",
        "",
        "import importlib as _importlib",
        "from typing import TYPE_CHECKING as _TYPE_CHECKING",
        "from typing import Any as _Any",
        "",
        "if _TYPE_CHECKING:",
    ]
    for mod, name in exports:
        lines.append(f"    from kafkacore.protocol.messages.{mod} import {name} as {name}")
    lines += [
        "",
        "#: Class name -> module name (under kafkacore.protocol.messages).",
        "MODULES: dict[str, str] = {",
    ]
    lines += [f'    "{name}": "{mod}",' for mod, name in exports]
    lines += ["}", "", "__all__ = ["]
    lines += [f'    "{name}",' for _, name in sorted(exports, key=lambda e: e[1])]
    lines += [
        "]",
        "",
        "",
        "def __getattr__(name: str) -> _Any:",
        "    mod = MODULES.get(name)",
        "    if mod is None:",
        '        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")',
        '    value = getattr(_importlib.import_module(f"{__name__}.{mod}"), name)',
        "    globals()[name] = value",
        "    return value",
        "",
        "",
        "def __dir__() -> list[str]:",
        "    return sorted([*globals(), *MODULES])",
    ]
    return "\n".join(lines) + "\n"

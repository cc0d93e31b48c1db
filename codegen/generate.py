"""Turn the schemas into the text of every generated file."""

from __future__ import annotations

from codegen import emit, enums, errors
from codegen.routing import ROUTING
from codegen.schema import (
    KAFKA_VERSION,
    MessageSpec,
    kafka_clients_jar,
    load_raw,
    parse_message,
)

MESSAGES_DIR = "kafkacore/protocol/messages"


def generate_all() -> dict[str, str]:
    """Map of repository-relative path -> file text."""
    raw = load_raw(kafka_clients_jar())
    files: dict[str, str] = {}
    specs = [parse_message(r) for r in raw.values()]
    live = [m for m in specs if m.valid is not None]
    names = {m.name for m in live}
    for msg in live:
        if msg.kind == "request" and emit.response_name(msg) not in names:
            raise ValueError(f"{msg.name}: no {emit.response_name(msg)} schema to type it with")
    exports: list[tuple[str, str]] = []
    for msg in sorted(live, key=lambda m: m.name):
        mod = emit.module_name(msg)
        files[f"{MESSAGES_DIR}/{mod}.py"] = emit.generate_module(msg, KAFKA_VERSION)
        exports.append((mod, msg.name))
    files[f"{MESSAGES_DIR}/__init__.py"] = messages_init(exports)
    files["kafkacore/protocol/_api_table.py"] = api_table(specs)
    sources = kafka_clients_jar("sources")
    error_table = errors.read_errors(sources)
    files["kafkacore/protocol/error_codes.py"] = errors.generate(error_table)
    files["kafkacore/protocol/enums.py"] = enums.generate(
        error_table, live_apis(specs), enums.read_coordinator_types(sources)
    )
    return files


def live_apis(specs: list[MessageSpec]) -> list[tuple[int, str]]:
    """(api_key, name) of every API with a valid version, by key."""
    return sorted(
        (m.api_key, m.name.removesuffix("Request"))
        for m in specs
        if m.kind == "request" and m.api_key is not None and m.valid is not None
    )


def api_table(specs: list[MessageSpec]) -> str:
    requests = {m.api_key: m for m in specs if m.kind == "request"}
    responses = {m.api_key: m for m in specs if m.kind == "response"}
    if set(requests) != set(responses):
        raise ValueError("every API needs a request and a response schema")
    lines = [
        emit.HEADER.format(kafka=KAFKA_VERSION).rstrip("\n"),
        '"""Facts of every API key (see kafkacore.protocol.api, which builds APIS from it)."""',
        "",
        "from __future__ import annotations",
        "",
        "#: (api_key, name, min_version, max_version, first_flexible_version,",
        "#:  request module, routing, latest_version_unstable, listeners)",
        "API_TABLE: tuple[",
        "    tuple[int, str, int, int, int | None, str, str, bool, tuple[str, ...]], ...",
        "] = (",
    ]
    removed = []
    for key in sorted(k for k in requests if k is not None):
        req, resp = requests[key], responses[key]
        name = req.name.removesuffix("Request")
        if req.valid is None:
            removed.append((key, name))
            continue
        if req.valid != resp.valid or req.flexible != resp.flexible:
            raise ValueError(f"{name}: request and response disagree on versions")
        routing = ROUTING[name]
        if "broker" not in req.listeners and routing != "INTERNAL":
            raise ValueError(f"{name}: listeners {req.listeners} lack broker; route INTERNAL")
        flexible = emit.first_flexible(req)
        listeners = repr(tuple(sorted(req.listeners))).replace("'", '"')
        lines.append(
            f'    ({key}, "{name}", {req.valid[0]}, {req.valid[1]}, {flexible}, '
            f'"{emit.module_name(req)}", "{routing}", {req.latest_unstable}, {listeners}),'
        )
    lines += [
        ")",
        "",
        "#: API keys whose schemas exist in kafka-clients but have no valid version",
        "#: (ZooKeeper-era inter-broker APIs removed in Kafka 4.0).",
        "REMOVED_APIS: dict[int, str] = {",
    ]
    lines += [f'    {k}: "{n}",' for k, n in removed]
    lines.append("}")
    return "\n".join(lines) + "\n"


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

"""Generate ``kafkacore/protocol/enums.py``: the protocol's numbers, named.

* ``ErrorCode``: every code of Kafka's ``Errors.java`` (names as in Java).
* ``ApiKey``: every API with a valid version in the schemas (names as Java's
  ``ApiKeys``: the schema name in upper snake case).
* ``CoordinatorType``: FindCoordinator's key types, from Java's
  ``FindCoordinatorRequest.CoordinatorType``.
* ``Routing`` and ``ROUTING``: each API's routing kind (``codegen/routing.py``),
  the default target kind of a request.
* Named error groups (``codegen/error_groups.py``) as frozensets of ``ErrorCode``.

The output is ruff-format clean, so it needs no formatter exclusion.
"""

from __future__ import annotations

import re
import textwrap
import zipfile
from pathlib import Path

from codegen.emit import HEADER
from codegen.error_groups import ERROR_GROUPS
from codegen.errors import ErrorCode
from codegen.routing import KINDS, ROUTING
from codegen.schema import KAFKA_VERSION, snake

COORDINATOR_TYPE_JAVA = "org/apache/kafka/common/requests/FindCoordinatorRequest.java"


def read_coordinator_types(sources_jar: Path) -> list[tuple[str, int]]:
    with zipfile.ZipFile(sources_jar) as zf:
        text = zf.read(COORDINATOR_TYPE_JAVA).decode("utf-8")
    m = re.search(r"enum CoordinatorType \{\s*(.*?);", text, re.S)
    if m is None:
        raise ValueError(f"{COORDINATOR_TYPE_JAVA}: no CoordinatorType enum; parser out of date")
    pairs = re.findall(r"([A-Z_]+)\(\(byte\) (\d+)\)", m.group(1))
    if not pairs or [int(v) for _, v in pairs] != list(range(len(pairs))):
        raise ValueError(f"{COORDINATOR_TYPE_JAVA}: CoordinatorType ids not 0..n; check parser")
    return [(name, int(value)) for name, value in pairs]


def api_member(api_name: str) -> str:
    """``OffsetForLeaderEpoch`` -> ``OFFSET_FOR_LEADER_EPOCH`` (Java's ApiKeys spelling)."""
    return snake(api_name).rstrip("_").upper()


def _comment(text: str, indent: str) -> list[str]:
    return [f"{indent}#: {line}" for line in textwrap.wrap(text, width=96 - len(indent))]


def generate(
    errors: list[ErrorCode],
    apis: list[tuple[int, str]],
    coordinator_types: list[tuple[str, int]],
) -> str:
    """``apis``: (api_key, name) of every live API, by key."""
    by_name = {e.name: e for e in errors}
    if set(ROUTING.values()) - set(KINDS):
        raise ValueError(f"codegen/routing.py: unknown kinds {set(ROUTING.values()) - set(KINDS)}")
    lines = [
        HEADER.format(kafka=KAFKA_VERSION).rstrip("\n"),
        '"""The protocol\'s numbers, named: error codes, API keys, coordinator types, routing.',
        "",
        "``ErrorCode`` and ``ApiKey`` are ``IntEnum``s, so a member compares equal to the",
        "int on the wire (``response.error_code == ErrorCode.NONE``) and hashes like it",
        "(``code in COORDINATOR_MOVED``). Codes a broker sends that this version does not",
        "know stay plain ints: never call ``ErrorCode(code)`` on a response's code.",
        "The error groups are client decisions (``codegen/error_groups.py``); the routing",
        "kinds are from ``codegen/routing.py``.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import enum",
        "from collections.abc import Mapping",
        "from types import MappingProxyType",
        "",
    ]
    group_names = sorted(ERROR_GROUPS)
    # Constants first, then classes: ruff's isort-style order (RUF022).
    exports = [
        *sorted(["ROUTING", *group_names]),
        "ApiKey",
        "CoordinatorType",
        "ErrorCode",
        "Routing",
    ]
    lines += ["__all__ = [", *(f'    "{n}",' for n in exports), "]", "", ""]

    lines += [
        "class ErrorCode(enum.IntEnum):",
        '    """Kafka error codes (Errors.java); exceptions are in ``error_codes``."""',
        "",
    ]
    lines += [f"    {e.name} = {e.code}" for e in sorted(errors, key=lambda e: e.code)]
    lines += ["", ""]

    lines += [
        "class ApiKey(enum.IntEnum):",
        '    """Kafka API keys (request header ``request_api_key``)."""',
        "",
    ]
    lines += [f"    {api_member(name)} = {key}" for key, name in apis]
    lines += ["", ""]

    lines += [
        "class CoordinatorType(enum.IntEnum):",
        '    """FindCoordinator ``key_type``: what kind of coordinator is looked up."""',
        "",
    ]
    lines += [f"    {name} = {value}" for name, value in coordinator_types]
    lines += ["", ""]

    lines += [
        "class Routing(enum.Enum):",
        '    """Where the client layer sends a request (see codegen/routing.py)."""',
        "",
    ]
    for kind, meaning in KINDS.items():
        lines += _comment(meaning, "    ")
        lines.append(f'    {kind} = "{kind}"')
    lines.append("")
    lines += [
        "",
        "#: API key -> its routing kind: the default target kind of the request.",
        "ROUTING: Mapping[ApiKey, Routing] = MappingProxyType(",
        "    {",
    ]
    for _key, name in apis:
        lines.append(f"        ApiKey.{api_member(name)}: Routing.{ROUTING[name]},")
    lines += ["    }", ")"]

    for group in group_names:
        why, names = ERROR_GROUPS[group]
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise ValueError(f"codegen/error_groups.py: {group} names unknown codes {unknown}")
        members = sorted(set(names), key=lambda n: by_name[n].code)
        lines += ["", *_comment(why, ""), f"{group}: frozenset[ErrorCode] = frozenset("]
        lines += ["    {", *(f"        ErrorCode.{n}," for n in members), "    }", ")"]
    return "\n".join(lines) + "\n"

"""Generate ``kafkacore/protocol/error_codes.py`` from Kafka's ``Errors.java``.

Facts taken from the kafka-clients sources jar: code, enum name, and whether
the Java exception class descends from ``RetriableException``,
``InvalidMetadataException``, ``AuthorizationException`` or
``AuthenticationException`` (each class derives from kafkacore's base of the
same meaning, see :func:`bases`). The one-line descriptions are kafkacore's own
(``/work/shared/kafka-protocol/errors.tsv`` style), kept in ``DESCRIPTIONS``
below; Java's message strings are not copied.
"""

from __future__ import annotations

import re
import textwrap
import zipfile
from dataclasses import dataclass
from pathlib import Path

from codegen.emit import HEADER
from codegen.schema import KAFKA_VERSION, kafka_clients_jar

ERRORS_JAVA = "org/apache/kafka/common/protocol/Errors.java"
TSV = Path(__file__).with_name("errors.tsv")


@dataclass(frozen=True)
class ErrorCode:
    code: int
    name: str
    java_exception: str
    retriable: bool
    invalid_metadata: bool
    authorization: bool = False
    authentication: bool = False


def read_errors(jar: Path) -> list[ErrorCode]:
    parents: dict[str, str] = {}
    with zipfile.ZipFile(jar) as zf:
        text = zf.read(ERRORS_JAVA).decode("utf-8")
        for name in zf.namelist():
            if name.endswith(".java"):
                src = zf.read(name).decode("utf-8", "replace")
                for m in re.finditer(r"\bclass\s+(\w+)(?:<[^>]*>)?\s+extends\s+(\w+)", src):
                    parents.setdefault(m.group(1), m.group(2))
    start = text.index("\n    UNKNOWN_SERVER_ERROR(")
    body = text[start + 1 : text.index(";\n", start)]
    entries = re.findall(r"^    ([A-Z0-9_]+)\((-?\d+),(.*?)\)(?=,\n|\Z)", body, re.M | re.S)

    def ancestors(cls: str) -> list[str]:
        out = []
        while cls in parents:
            cls = parents[cls]
            out.append(cls)
        return out

    result = []
    for name, code, rest in entries:
        m = re.search(r"(\w+)::new", rest) or re.search(r"new (\w+)\(", rest)
        exc = m.group(1) if m else ""
        anc = ancestors(exc)
        result.append(
            ErrorCode(
                code=int(code),
                name=name,
                java_exception=exc,
                retriable="RetriableException" in anc,
                invalid_metadata="InvalidMetadataException" in anc,
                authorization="AuthorizationException" in anc,
                authentication="AuthenticationException" in anc,
            )
        )
    codes = [e.code for e in result]
    if sorted(codes) != list(range(-1, max(codes) + 1)):
        raise ValueError("Errors.java: codes are not contiguous; parser out of date")
    return result


def read_descriptions() -> dict[int, str]:
    out = {}
    for line in TSV.read_text(encoding="utf-8").splitlines()[1:]:
        cols = line.split("\t")
        out[int(cols[0])] = cols[1] + "\t" + cols[3]
    return out


def _docstring(text: str) -> list[str]:
    wrapped = textwrap.wrap(text, width=88)
    if len(wrapped) == 1:
        return [f'    """{text}"""']
    return ['    """' + wrapped[0], *(f"    {w}" for w in wrapped[1:]), '    """']


def class_name(enum_name: str) -> str:
    """``INVALID_TOPIC_EXCEPTION`` -> ``InvalidTopicError``: one "Error" suffix,
    never "ExceptionError" (a trailing "Exception" is Java's word for the same)."""
    camel = "".join(part.capitalize() for part in enum_name.split("_"))
    camel = camel.removesuffix("Exception")
    return camel if camel.endswith("Error") else camel + "Error"


def class_names(errors: list[ErrorCode]) -> dict[int, str]:
    """Each code's class name; two codes that would share one are a generator error."""
    out: dict[int, str] = {}
    seen: dict[str, ErrorCode] = {}
    for e in errors:
        if e.code == 0:
            continue
        cls = class_name(e.name)
        if cls in seen:
            raise ValueError(
                f"codegen/errors.py: {seen[cls].name} ({seen[cls].code}) and {e.name} "
                f"({e.code}) would both be class {cls}; extend class_name()"
            )
        seen[cls] = e
        out[e.code] = cls
    return out


def bases(e: ErrorCode) -> str:
    """The class's bases: BrokerError and kafkacore's base of the Java ancestor, so
    ``except RetriableError`` (or ``InvalidMetadataError``, ``AuthorizationError``,
    ``AuthenticationError``) catches the codes Java's hierarchy puts under it."""
    if e.authorization:
        return "AuthorizationError"
    extra = [
        "InvalidMetadataError" if e.invalid_metadata else "RetriableError" if e.retriable else "",
        "AuthenticationError" if e.authentication else "",
    ]
    return ", ".join(["BrokerError", *[b for b in extra if b]])


def generate(errors: list[ErrorCode] | None = None) -> str:
    if errors is None:
        errors = read_errors(kafka_clients_jar("sources"))
    descriptions = read_descriptions()
    lines = [
        HEADER.format(kafka=KAFKA_VERSION).rstrip("\n"),
        '"""Kafka error codes as exceptions (one class per code).',
        "",
        "Facts (code, name, retriable, invalid_metadata) come from kafka-clients'",
        "``Errors.java``: ``retriable`` when the Java exception extends",
        "``RetriableException``, ``invalid_metadata`` when it extends",
        "``InvalidMetadataException`` (the client should refresh metadata).",
        "Use :func:`error_for_code` to turn a response's error code into an exception.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from collections.abc import Mapping",
        "",
        "from kafkacore.errors import (",
        "    AuthenticationError,",
        "    AuthorizationError,",
        "    BrokerError,",
        "    InvalidMetadataError,",
        "    RetriableError,",
        ")",
        "",
    ]
    names = []
    body: list[str] = []
    classes = class_names(errors)
    for e in errors:
        if e.code == 0:
            continue
        cls = classes[e.code]
        names.append(cls)
        desc = descriptions.get(e.code, "")
        tsv_name, _, text = desc.partition("\t")
        if tsv_name != e.name or not text:
            raise ValueError(f"codegen/errors.tsv: add a description for {e.code} {e.name}")
        body += [
            "",
            "",
            f"class {cls}({bases(e)}):",
            *_docstring(f"{e.code} {e.name}: {text}."),
            "",
            f"    code = {e.code}",
            f'    name = "{e.name}"',
            f"    retriable = {e.retriable}",
            f"    invalid_metadata = {e.invalid_metadata}",
        ]
    body += [
        "",
        "",
        "class UnknownErrorCodeError(BrokerError):",
        '    """An error code this version of kafkacore does not know (the subclass names it)."""',
        "",
        "",
        "#: Error code -> exception class (0, NONE, has no class).",
        "ERRORS: Mapping[int, type[BrokerError]] = {",
    ]
    body += [f"    {e.code}: {classes[e.code]}," for e in errors if e.code != 0]
    body += [
        "}",
        "",
        "_unknown: dict[int, type[BrokerError]] = {}",
        "",
        "",
        "def error_class(code: int) -> type[BrokerError] | None:",
        '    """The exception class of ``code``; None for 0 (no error)."""',
        "    if code == 0:",
        "        return None",
        "    cls = ERRORS.get(code)",
        "    if cls is None:",
        "        cls = _unknown.get(code)",
        "        if cls is None:",
        "            # One subclass per unknown number, so that ``code`` stays a class fact.",
        "            cls = type(",
        '                f"UnknownErrorCode{code}Error".replace("-", "Minus"),',
        "                (UnknownErrorCodeError,),",
        '                {"code": code, "name": f"UNKNOWN_ERROR_CODE_{code}", "__slots__": ()},',
        "            )",
        "            _unknown[code] = cls",
        "    return cls",
        "",
        "",
        "def error_for_code(code: int, message: str | None = None) -> BrokerError | None:",
        '    """An exception for a response\'s error code, or None when ``code`` is 0."""',
        "    cls = error_class(code)",
        "    return None if cls is None else cls(message)",
    ]
    all_names = sorted(
        [*names, "ERRORS", "UnknownErrorCodeError", "error_class", "error_for_code"],
        key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n),
    )
    lines.append("__all__ = [")
    lines += [f'    "{n}",' for n in all_names]
    lines.append("]")
    return "\n".join(lines + body) + "\n"

"""Load Kafka's JSON message schemas from the kafka-clients jar and model them.

Only facts are kept (names, types, version ranges, defaults, tags); the
schemas' prose ("about") is dropped on purpose and never reaches the
generated code.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KAFKA_VERSION = "4.3.1"
MAX_VERSION = 0x7FFF
ARTIFACT = f"org.apache.kafka:kafka-clients:{KAFKA_VERSION}"

Range = tuple[int, int] | None


def kafka_clients_jar(classifier: str | None = None) -> Path:
    """The kafka-clients jar (``classifier="sources"``: its sources), in the
    project's own cache (``kafkacore/codegen-<version>`` under the launcher's
    cache root), copied there by Maven the first time.

    Not Maven's local repository: where that is depends on the user's
    settings (``-Dmaven.repo.local``, a settings.xml, another HOME), so only
    Maven may be asked for it; ``dependency:copy`` puts the jar where we say.
    """
    from kafkacore.testing.libs import cache_root

    name = f"kafka-clients-{KAFKA_VERSION}{f'-{classifier}' if classifier else ''}.jar"
    home = cache_root() / f"codegen-{KAFKA_VERSION}"
    jar = home / name
    if jar.exists():
        return jar
    home.mkdir(parents=True, exist_ok=True)
    # Into a private directory, then renamed: a cache never holds half a jar.
    with tempfile.TemporaryDirectory(dir=home) as partial:
        artifact = f"{ARTIFACT}:jar:{classifier}" if classifier else ARTIFACT
        try:
            copy = ["dependency:copy", f"-Dartifact={artifact}", f"-DoutputDirectory={partial}"]
            subprocess.run(
                ["mvn", "-B", "-q", *copy],
                check=True,
                cwd=partial,
            )
        except FileNotFoundError:
            raise SystemExit(
                f"codegen: {name} is not in {home} and Maven ('mvn') is not on PATH to fetch it"
            ) from None
        os.replace(Path(partial) / name, jar)
    return jar


def strip_comments(text: str) -> str:
    """Remove ``//`` line comments, leaving string literals untouched."""
    out: list[str] = []
    i = 0
    in_string = False
    while i < len(text):
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_string = False
            i += 1
        elif c == '"':
            in_string = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = len(text) if j < 0 else j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def load_raw(jar: Path) -> dict[str, dict[str, Any]]:
    """All schemas in the jar, by message name."""
    specs: dict[str, dict[str, Any]] = {}
    with zipfile.ZipFile(jar) as zf:
        for name in sorted(zf.namelist()):
            if name.startswith("common/message/") and name.endswith(".json"):
                spec = json.loads(strip_comments(zf.read(name).decode("utf-8")))
                specs[spec["name"]] = spec
    return specs


def parse_range(text: str | None) -> Range:
    if text is None or text == "none":
        return None
    if text.endswith("+"):
        return (int(text[:-1]), MAX_VERSION)
    if "-" in text:
        lo, hi = text.split("-")
        return (int(lo), int(hi))
    return (int(text), int(text))


def intersect(a: Range, b: Range) -> Range:
    if a is None or b is None:
        return None
    lo, hi = max(a[0], b[0]), min(a[1], b[1])
    return (lo, hi) if lo <= hi else None


def contains(r: Range, v: int) -> bool:
    return r is not None and r[0] <= v <= r[1]


PRIMITIVES = {
    "bool",
    "int8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "float64",
    "string",
    "bytes",
    "records",
    "uuid",
}
KEYWORDS = {"from", "global", "is", "in", "import", "class", "def", "lambda", "pass", "type_"}


def snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    s = re.sub(r"(?<=[A-Z])(?=[A-Z][a-z])", "_", s)
    s = s.lower()
    return s + "_" if s in KEYWORDS else s


@dataclass
class FieldSpec:
    name: str
    attr: str
    type: str  # raw schema type
    versions: Range
    nullable: Range
    tagged: Range
    tag: int | None
    ignorable: bool
    default: Any  # raw schema default (None when absent)
    flexible_override: Range | bool  # False when the field follows the message
    zero_copy: bool
    struct: StructSpec | None = None

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def base(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.base not in PRIMITIVES

    @property
    def ever_nullable(self) -> bool:
        return self.nullable is not None or self.default_is_null

    @property
    def default_is_null(self) -> bool:
        return isinstance(self.default, str) and self.default == "null"

    def flexible_at(self, v: int, msg_flexible: Range) -> bool:
        if self.flexible_override is False:
            return contains(msg_flexible, v)
        assert not isinstance(self.flexible_override, bool)
        return contains(self.flexible_override, v)


@dataclass
class StructSpec:
    name: str
    fields: list[FieldSpec]
    versions: Range
    used: set[int] = field(default_factory=set)


@dataclass
class MessageSpec:
    name: str
    kind: str  # request / response / header / data
    api_key: int | None
    valid: Range
    flexible: Range
    listeners: list[str]
    latest_unstable: bool
    root: StructSpec
    structs: dict[str, StructSpec]  # every struct of this message (nested and common)


def parse_message(raw: dict[str, Any]) -> MessageSpec:
    structs: dict[str, StructSpec] = {}
    common_raw = {c["name"]: c for c in raw.get("commonStructs", [])}

    def parse_fields(fields: list[dict[str, Any]], parent: Range) -> list[FieldSpec]:
        out = []
        for f in fields:
            versions = parse_range(f.get("versions", f.get("taggedVersions")))
            versions = intersect(versions, parent)
            ftype = f["type"]
            override: Range | bool = False
            if "flexibleVersions" in f:
                override = parse_range(f["flexibleVersions"])
            tag = f.get("tag")
            spec = FieldSpec(
                name=f["name"],
                attr=snake(f["name"]),
                type=ftype,
                versions=versions,
                nullable=intersect(parse_range(f.get("nullableVersions")), versions),
                tagged=intersect(parse_range(f.get("taggedVersions")), versions),
                tag=None if tag is None else int(tag),
                ignorable=bool(f.get("ignorable", False)),
                default=f.get("default"),
                flexible_override=override,
                zero_copy=bool(f.get("zeroCopy", False)),
            )
            base = spec.base
            if base not in PRIMITIVES:
                if "fields" in f:
                    if base in structs or base in common_raw:
                        raise ValueError(f"{raw['name']}: struct {base} defined twice")
                    structs[base] = StructSpec(base, [], versions)
                    structs[base].fields = parse_fields(f["fields"], versions)
                elif base in common_raw:
                    if base not in structs:
                        c = common_raw[base]
                        cv = parse_range(c.get("versions", "0+"))
                        structs[base] = StructSpec(base, [], cv)
                        structs[base].fields = parse_fields(c["fields"], cv)
                else:
                    raise ValueError(f"{raw['name']}: unknown type {ftype}")
                spec.struct = structs[base]
            out.append(spec)
        return out

    valid = parse_range(raw["validVersions"])
    root = StructSpec(raw["name"], [], valid)
    root.fields = parse_fields(raw.get("fields", []), valid)
    # Link late (a field may name a common struct before it was parsed).
    for s in [root, *structs.values()]:
        for f in s.fields:
            if f.is_struct:
                f.struct = structs[f.base]
    msg = MessageSpec(
        name=raw["name"],
        kind=raw["type"],
        api_key=raw.get("apiKey"),
        valid=valid,
        flexible=parse_range(raw.get("flexibleVersions")),
        listeners=list(raw.get("listeners", [])),
        latest_unstable=bool(raw.get("latestVersionUnstable", False)),
        root=root,
        structs=structs,
    )
    _mark_used(root, set(range(valid[0], valid[1] + 1)) if valid else set())
    return msg


def _mark_used(s: StructSpec, versions: set[int]) -> None:
    new = versions - s.used
    if not new:
        return
    s.used |= new
    for f in s.fields:
        if f.struct is not None:
            _mark_used(f.struct, {v for v in new if contains(f.versions, v)})

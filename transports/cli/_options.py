"""Connection options of the ``kafkacore`` command line, from three places.

Kafka's own tools take a properties file (``--command-config``), kcat takes
``-X name=value``; both speak Kafka's dotted property names
(``bootstrap.servers``, ``security.protocol``, ``sasl.jaas.config``). The
command line accepts both, plus environment variables, and maps each
property onto kafkacore's keyword options (``security_protocol``, ...).

Precedence, highest first: a flag (``--bootstrap-server``, ``-X``), then the
environment (``KAFKACORE_BOOTSTRAP_SERVERS``: ``KAFKACORE_`` and the
property name upper-cased, dots as underscores), then the properties file
(``--command-config`` or ``KAFKACORE_COMMAND_CONFIG``).

A property no client knows is a usage error naming it and the closest known
names; a property of the producer given to ``consume`` is ignored with a
warning on stderr (Kafka's tools ignore unused properties too).
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

import click

from kafkacore import ClientConfig, ConsumerConfig, ProducerConfig

__all__ = [
    "ENV_PREFIX",
    "Connection",
    "Role",
    "parse_properties",
    "resolve_connection",
]

ENV_PREFIX = "KAFKACORE_"

#: The kinds of client a command builds; each accepts the ``ClientConfig`` options
#: and its own config's.
Role = Literal["admin", "producer", "consumer"]


def _init_fields(cls: type) -> dict[str, Any]:
    """Each constructor field of a config class and its default (None when required)."""
    out: dict[str, Any] = {}
    for f in fields(cls):
        if f.init:
            out[f.name] = None if f.default is MISSING else f.default
    return out


_CLIENT = _init_fields(ClientConfig)
_ROLES: dict[str, dict[str, Any]] = {
    "admin": {},
    "producer": _init_fields(ProducerConfig),
    "consumer": _init_fields(ConsumerConfig),
}
# Options the command line sets itself or that are not plain values.
_NOT_PROPERTIES = frozenset(
    {
        "ssl_context",
        "socket_options",
        "source_address",
        "sasl_oauth_token_provider",
        "sasl_mechanism_factory",
        "bootstrap_addresses",
        "client",
        "rng",
    }
)

#: Kafka properties whose kafkacore name is not simply the dotted name with underscores.
_RENAMED = {
    "ssl.endpoint.identification.algorithm": "ssl_check_hostname",
    "ssl.key.password": "ssl_password",
    "ssl.cipher.suites": "ssl_ciphers",
    "sasl.kerberos.service.name": "sasl_kerberos_service_name",
}
#: Properties read and turned into other options (see ``_special``).
_SPECIAL = frozenset(
    {
        "sasl.jaas.config",
        "ssl.truststore.location",
        "ssl.truststore.type",
        "ssl.keystore.location",
        "ssl.keystore.type",
        "ssl.truststore.certificates",
    }
)


def _known_names() -> set[str]:
    names = set(_CLIENT) | {n for role in _ROLES.values() for n in role}
    return {n for n in names if n not in _NOT_PROPERTIES}


def _dotted(name: str) -> str:
    return name.replace("_", ".")


def env_name(prop: str) -> str:
    """The environment variable of a Kafka property: ``KAFKACORE_SECURITY_PROTOCOL``."""
    return ENV_PREFIX + prop.upper().replace(".", "_").replace("-", "_")


def parse_properties(text: str, *, source: str) -> dict[str, str]:
    """A Java ``.properties`` text: ``name=value`` or ``name: value`` lines, ``#`` and
    ``!`` comments, backslash continuation lines (``sasl.jaas.config`` often spans two)."""
    props: dict[str, str] = {}
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip() if not pending else raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending += line[:-1]
            continue
        logical.append(pending + line)
        pending = ""
    if pending:
        logical.append(pending)
    for number, line in enumerate(logical, 1):
        match = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
        if not match:
            raise click.UsageError(f"{source}: property {number} has no value: {line!r}")
        props[match.group(1)] = match.group(2).strip()
    return props


def _jaas(value: str, where: str) -> dict[str, Any]:
    """The user name and password of a PLAIN or SCRAM ``sasl.jaas.config``."""
    module = value.split(None, 1)[0] if value.strip() else ""
    if not module.endswith(("PlainLoginModule", "ScramLoginModule")):
        raise click.UsageError(
            f"{where}: sasl.jaas.config: only PlainLoginModule and ScramLoginModule "
            f"(username/password) are understood, got {module or 'nothing'!r}; for GSSAPI "
            "use sasl.kerberos.service.name and a Kerberos ticket cache"
        )
    try:
        words = shlex.split(value.rstrip().rstrip(";"))
    except ValueError as exc:
        raise click.UsageError(f"{where}: sasl.jaas.config: {exc}") from None
    options = dict(w.split("=", 1) for w in words if "=" in w)
    missing = [k for k in ("username", "password") if k not in options]
    if missing:
        raise click.UsageError(f"{where}: sasl.jaas.config has no {' or '.join(missing)}")
    return {"sasl_plain_username": options["username"], "sasl_plain_password": options["password"]}


def _convert(name: str, value: str, default: Any, where: str) -> Any:
    """A property's text as the option's type, read off the option's default."""
    if name == "ssl_check_hostname":  # Kafka: "" turns host name checks off, "https" on
        return value.strip().lower() == "https"
    if isinstance(default, bool) or value.lower() in ("true", "false"):
        if value.lower() not in ("true", "false"):
            raise click.UsageError(f"{where}: {_dotted(name)} must be true or false, got {value!r}")
        return value.lower() == "true"
    if isinstance(default, int) or (default is None and re.fullmatch(r"-?\d+", value)):
        try:
            return int(value)
        except ValueError:
            raise click.UsageError(
                f"{where}: {_dotted(name)} must be a whole number, got {value!r}"
            ) from None
    if isinstance(default, float):
        try:
            return float(value)
        except ValueError:
            raise click.UsageError(
                f"{where}: {_dotted(name)} must be a number, got {value!r}"
            ) from None
    return value


@dataclass
class Connection:
    """kafkacore options for each kind of client, resolved once per command line."""

    bootstrap_servers: str
    client: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, tuple[Any, str]] = field(default_factory=dict)  # name -> (value, source)

    def options(self, role: Role, *, warn: bool = True) -> dict[str, Any]:
        """Keyword options for an admin client, a producer or a consumer; ``warn``: say
        on stderr which given properties this kind of client ignores."""
        opts = dict(self.client)
        accepted = _ROLES[role]
        for name, (value, source) in self.extra.items():
            if name in accepted:
                opts[name] = value
            elif warn:
                article = "an" if role[0] in "aeiou" else "a"
                click.echo(
                    f"kafkacore: warning: {_dotted(name)} ({source}) is not {article} {role} "
                    "property; ignored",
                    err=True,
                )
        return opts


def _suggest(prop: str) -> str:
    known = sorted({_dotted(n) for n in _known_names()} | _SPECIAL | set(_RENAMED))
    close = difflib.get_close_matches(prop, known, n=3, cutoff=0.6)
    return f"; did you mean {', '.join(close)}?" if close else ""


def _apply(
    props: Mapping[str, str], where: str, client: dict[str, Any], extra: dict[str, tuple[Any, str]]
) -> None:
    known = _known_names()
    # Kafka's default store type is JKS; kafkacore reads PEM (ssl.*store.type=PEM).
    truststore_type = props.get("ssl.truststore.type", "JKS").upper()
    keystore_type = props.get("ssl.keystore.type", "JKS").upper()
    for prop, value in props.items():
        if prop == "sasl.jaas.config":
            client.update(_jaas(value, where))
            continue
        if prop in ("ssl.truststore.location", "ssl.keystore.location"):
            kind = truststore_type if prop.startswith("ssl.truststore") else keystore_type
            if kind != "PEM":
                raise click.UsageError(
                    f"{where}: {prop}: only PEM files are read, and this store is {kind}; "
                    f"convert it to PEM (keytool, openssl) and set "
                    f"{prop.rsplit('.', 1)[0]}.type=PEM"
                )
            client["ssl_cafile" if prop.startswith("ssl.truststore") else "ssl_certfile"] = value
            continue
        if prop in _SPECIAL:
            continue
        name = _RENAMED.get(prop, prop.replace(".", "_").replace("-", "_"))
        if name not in known:
            raise click.UsageError(f"{where}: unknown property {prop!r}{_suggest(prop)}")
        if name == "bootstrap_servers":
            client[name] = value
        elif name in _CLIENT:
            client[name] = _convert(name, value, _CLIENT[name], where)
        else:
            default = next((r[name] for r in _ROLES.values() if name in r), None)
            extra[name] = (_convert(name, value, default, where), where)


def _env_properties(environ: Mapping[str, str]) -> dict[str, str]:
    """The properties the environment sets: only names kafkacore knows (so an unrelated
    ``KAFKACORE_*`` variable, e.g. ``KAFKACORE_PURE``, is left alone)."""
    props = {}
    candidates = {_dotted(n) for n in _known_names()} | _SPECIAL | set(_RENAMED)
    for prop in candidates:
        value = environ.get(env_name(prop))
        if value is not None:
            props[prop] = value
    return props


def resolve_connection(
    *,
    bootstrap_server: str | None,
    command_config: str | None,
    properties: Iterable[str],
    environ: Mapping[str, str] | None = None,
) -> Connection:
    """Merge the properties file, the environment and the flags (in that order)."""
    env = os.environ if environ is None else environ
    client: dict[str, Any] = {}
    extra: dict[str, tuple[Any, str]] = {}
    config_path = command_config or env.get(ENV_PREFIX + "COMMAND_CONFIG")
    if config_path:
        path = Path(config_path)
        try:
            text = path.read_text()
        except OSError as exc:
            raise click.UsageError(f"--command-config {config_path}: {exc.strerror}") from None
        _apply(parse_properties(text, source=str(path)), str(path), client, extra)
    _apply(_env_properties(env), "environment", client, extra)
    flags: dict[str, str] = {}
    for item in properties:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise click.UsageError(f"-X {item!r}: expected name=value, e.g. -X acks=all")
        flags[name.strip()] = value
    _apply(flags, "-X", client, extra)
    if bootstrap_server:
        client["bootstrap_servers"] = bootstrap_server
    servers = client.pop("bootstrap_servers", None) or "localhost:9092"
    return Connection(bootstrap_servers=servers, client=client, extra=extra)

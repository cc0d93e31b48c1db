"""``kafka.*`` options of a Spark query, turned into kafkacore keyword options.

Theory of operation
-------------------
Spark users configure the Kafka client with the Java client's property names
prefixed by ``kafka.`` (``kafka.bootstrap.servers``, ``kafka.security.protocol``,
``kafka.isolation.level``...), exactly as for the JVM connector. kafkacore's
options are the same names in snake_case, so ``kafka.a.b.c`` becomes ``a_b_c``
when kafkacore knows that name for the role (consumer or producer). A few Java
properties have no one-to-one kafkacore name and are translated here
(``sasl.jaas.config``, PEM ``ssl.truststore/keystore.location``,
``ssl.endpoint.identification.algorithm``). Everything else is refused before
any data moves, with an error that names the option: what the JVM connector
refuses itself (it manages offsets, deserialization and commits), and any key
kafkacore does not know (a typo must not pass silently).

Values arrive as strings (Spark's options are a string map) and are converted
to the type of kafkacore's field.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import Field
from typing import Any, Literal

from kafkacore.client import ClientConfig
from kafkacore.consumer import ConsumerConfig
from kafkacore.producer import ProducerConfig

__all__ = ["KafkaOptionError", "Role", "kafka_options"]

Role = Literal["consumer", "producer"]

_PREFIX = "kafka."


class KafkaOptionError(ValueError):
    """A ``kafka.*`` option that cannot be used; the message names it."""


# What the JVM connector refuses, with its reason (KafkaSourceProvider's checks).
_REFUSED: dict[Role, dict[str, str]] = {
    "consumer": {
        "auto.offset.reset": "set the source option 'startingOffsets' instead",
        "key.deserializer": "keys are always read as binary; cast or parse them in a query",
        "value.deserializer": "values are always read as binary; cast or parse them in a query",
        "enable.auto.commit": "the source tracks offsets itself (see 'commitOffsetsToGroup')",
        "interceptor.classes": "consumer interceptors are not supported",
    },
    "producer": {
        "key.serializer": "keys are written as binary; give a string or binary 'key' column",
        "value.serializer": "values are written as binary; give a string or binary 'value' column",
        "interceptor.classes": "producer interceptors are not supported",
    },
}

# Options the source or sink sets itself; a user value would break it.
_MANAGED: dict[Role, dict[str, str]] = {
    "consumer": {
        "group.instance.id": "the source assigns partitions itself; it joins no group",
        "group.protocol": "the source assigns partitions itself; it joins no group",
    },
    "producer": {
        "transactional.id": "set the sink option 'transactionalIdPrefix' (with 'exactlyOnce')",
    },
}

# Java properties that kafkacore spells differently.
_RENAMED = {
    "max.in.flight.requests.per.connection": "max_in_flight_requests_per_connection",
    "sasl.kerberos.service.name": "sasl_kerberos_service_name",
    "ssl.key.password": "ssl_password",
    "ssl.cipher.suites": "ssl_ciphers",
}

# Python-only kafkacore options that take objects, not strings.
_OBJECT_ONLY = frozenset(
    {
        "ssl_context",
        "sasl_mechanism_factory",
        "sasl_oauth_token_provider",
        # The transport decides whether credentials calls leave its loop.
        "defer_credentials",
        "socket_options",
        "source_address",
        "bootstrap_addresses",
        "key_serializer",
        "value_serializer",
        "client",
        "acks_value",
        "compression",
        "idempotent",
        "max_in_flight",
    }
)

_JAAS_RE = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def _fields(role: Role) -> dict[str, Field[Any]]:
    fields: dict[str, Field[Any]] = dict(ClientConfig.__dataclass_fields__)
    own = ConsumerConfig if role == "consumer" else ProducerConfig
    fields.update(own.__dataclass_fields__)
    return {k: v for k, v in fields.items() if k not in _OBJECT_ONLY}


def _acks(option: str, text: str) -> int | str:
    # Java accepts all, -1, 0, 1 in any case (a case-insensitive valid-string set).
    lowered = text.strip().lower()
    if lowered in ("all", "-1"):
        return "all"
    if lowered in ("0", "1"):
        return int(lowered)
    raise KafkaOptionError(f"option {option!r}: expected all, -1, 0 or 1, got {text!r}")


def _convert(option: str, name: str, field: Field[Any], text: str) -> Any:
    """Convert Spark's string value to the field's type, read from its annotation.

    Annotations are strings here (``from __future__ import annotations``), e.g.
    ``"int"``, ``"bool | None"``, ``"int | str"``, ``"tuple[str, ...]"``.
    """
    if name == "acks":
        return _acks(option, text)
    kinds = {part.strip().split("[", 1)[0] for part in str(field.type).split("|")}
    value = text.strip()
    lowered = value.lower()
    if "None" in kinds and lowered in ("", "null", "none"):
        return None
    if "bool" in kinds:
        if lowered in ("true", "false"):
            return lowered == "true"
        raise KafkaOptionError(f"option {option!r}: expected true or false, got {text!r}")
    if "int" in kinds:
        try:
            return int(value)
        except ValueError:
            if "str" in kinds:  # e.g. acks: 0, 1 or "all"
                return value
            raise KafkaOptionError(
                f"option {option!r}: expected an integer, got {text!r}"
            ) from None
    if "tuple" in kinds:
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


def _jaas(option: str, text: str) -> dict[str, str]:
    """``sasl.jaas.config`` of the PLAIN and SCRAM login modules: username and password."""
    pairs = dict(_JAAS_RE.findall(text))
    module = text.strip().split(None, 1)[0] if text.strip() else ""
    if not module.endswith(("PlainLoginModule", "ScramLoginModule")):
        raise KafkaOptionError(
            f"option {option!r}: only the PlainLoginModule and ScramLoginModule are "
            f"understood, got {module or 'nothing'!r}"
        )
    if "username" not in pairs or "password" not in pairs:
        raise KafkaOptionError(f'option {option!r}: needs username="..." and password="..."')
    return {"sasl_plain_username": pairs["username"], "sasl_plain_password": pairs["password"]}


def kafka_options(options: Mapping[str, str], role: Role) -> dict[str, Any]:
    """Return kafkacore keyword options from the ``kafka.*`` entries of ``options``.

    ``options`` may be Spark's case-insensitive map or a plain dict; keys that
    do not start with ``kafka.`` are ignored. Raises :class:`KafkaOptionError`
    naming the first option that cannot be used.
    """
    fields = _fields(role)
    out: dict[str, Any] = {}
    stores: dict[str, dict[str, str]] = {"truststore": {}, "keystore": {}}
    for raw_key, raw_value in options.items():
        if not raw_key.lower().startswith(_PREFIX):
            continue
        option = raw_key
        prop = raw_key[len(_PREFIX) :].lower()
        value = "" if raw_value is None else str(raw_value)
        if prop in _REFUSED[role]:
            raise KafkaOptionError(f"option {option!r} is not supported: {_REFUSED[role][prop]}")
        if prop in _MANAGED[role]:
            raise KafkaOptionError(f"option {option!r} cannot be set: {_MANAGED[role][prop]}")
        if prop == "sasl.jaas.config":
            out.update(_jaas(option, value))
            continue
        if prop == "ssl.endpoint.identification.algorithm":
            out["ssl_check_hostname"] = value.strip().lower() == "https"
            continue
        store = re.fullmatch(r"ssl\.(truststore|keystore)\.(location|type)", prop)
        if store is not None:
            stores[store.group(1)][store.group(2)] = value.strip()
            continue
        name = _RENAMED.get(prop, prop.replace(".", "_").replace("-", "_"))
        field = fields.get(name)
        if field is None:
            known = sorted(n.replace("_", ".") for n in fields)
            close = difflib.get_close_matches(prop, known, n=3)
            hint = f"; did you mean {', '.join('kafka.' + c for c in close)}?" if close else ""
            raise KafkaOptionError(
                f"option {option!r}: kafkacore's {role} has no setting {prop!r}{hint}"
            )
        out[name] = _convert(option, name, field, value)
    for kind, target in (("truststore", "ssl_cafile"), ("keystore", "ssl_certfile")):
        spec = stores[kind]
        if not spec:
            continue
        if spec.get("type", "PEM").upper() != "PEM":
            raise KafkaOptionError(
                f"option 'kafka.ssl.{kind}.type': only PEM files are supported, "
                f"got {spec['type']!r}"
            )
        if "location" not in spec:
            raise KafkaOptionError(f"option 'kafka.ssl.{kind}.location' is required with its type")
        out[target] = spec["location"]
    return out

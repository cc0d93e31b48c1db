"""One table from a user's keyword options to the configs they set.

Theory of operation
-------------------
Every user-facing class (a client, a producer or a consumer, in any
transport) takes one flat set of keyword options, Java style. Which machine
an option configures is decided here, once, by one table:
:data:`OPTION_TABLE` maps each option name to the configs it sets
(:class:`Target`). The table is read off the config classes themselves, so
an option added to one of them is routed without anyone editing a list:

- a :class:`~kafkacore.client.ClientConfig` field sets the client core,
  whatever the user-facing class (a producer and a consumer each own one);
- a :class:`~kafkacore.consumer.ConsumerConfig` field sets the consumer,
  a ``PRODUCER_OPTIONS`` name the producer, an
  :class:`~kafkacore.admin.AdminConfig` field the admin client;
- a name two configs know sets **both**, as Java's single setting does:
  ``metadata_max_age_ms`` ages the client's metadata and times the
  consumer's pattern re-listing; ``retry_backoff_ms`` backs off the
  client's retries and the consumer's own.

The socket and TLS options are client fields the core carries but never
uses; :attr:`SplitOptions.transport` hands them to the transport.

kafka-python's option names are taken too (:data:`KAFKA_PYTHON_OPTIONS`):
one that means what a kafkacore option means under another name is renamed
(``receive_message_max_bytes`` is ``max_response_bytes``); one kafkacore
does not implement is accepted only with the value that asks for what
kafkacore does anyway (``enable_incremental_fetch_sessions=True``,
``selector=None``) and otherwise refused, the error naming it and why.

Errors, all at construction, all :class:`~kafkacore.errors.ConfigError`
(a ``ValueError``) prefixed with the class name: a name the class does not
know is an :class:`~kafkacore.errors.UnknownOptionError` (also a
``TypeError``, as Python's own) naming the closest known names ("did you
mean 'bootstrap_servers'?") and the pages that list them; a bad value is
the config's own message. The client config is checked before the
consumer's, the producer's or the admin's.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, fields
from functools import cache
from typing import TYPE_CHECKING, Any

from kafkacore.client.config import ClientConfig
from kafkacore.errors import ConfigError, UnknownOptionError

if TYPE_CHECKING:
    from kafkacore.admin.config import AdminConfig
    from kafkacore.consumer.config import ConsumerConfig
    from kafkacore.producer.config import ProducerConfig

__all__ = [
    "KAFKA_PYTHON_OPTIONS",
    "OPTION_TABLE",
    "Renamed",
    "Role",
    "SplitOptions",
    "Target",
    "Unsupported",
    "known_options",
    "split_options",
    "unknown_option",
]


class Target(enum.Enum):
    """A config an option can set."""

    CLIENT = "client"
    CONSUMER = "consumer"
    PRODUCER = "producer"
    ADMIN = "admin"


class Role(enum.Enum):
    """What the user-facing class is: which configs it builds."""

    CLIENT = frozenset({Target.CLIENT})
    CONSUMER = frozenset({Target.CLIENT, Target.CONSUMER})
    PRODUCER = frozenset({Target.CLIENT, Target.PRODUCER})
    ADMIN = frozenset({Target.CLIENT, Target.ADMIN})


def _init_fields(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls) if f.init)


@cache
def _names(target: Target) -> frozenset[str]:
    """The option names ``target``'s config takes.

    Each config is imported when a class that builds it is made, not
    before: a producer never loads the consumer's or the admin's machines
    (importing ``kafkacore.consumer.config`` runs the consumer package).
    """
    if target is Target.CLIENT:
        # ``bootstrap_servers`` is every class's first parameter, not a keyword option.
        return _init_fields(ClientConfig) - {"bootstrap_servers"}
    if target is Target.CONSUMER:
        from kafkacore.consumer.config import ConsumerConfig

        return _init_fields(ConsumerConfig)
    if target is Target.PRODUCER:
        from kafkacore.producer.config import PRODUCER_OPTIONS

        return PRODUCER_OPTIONS
    from kafkacore.admin.config import AdminConfig

    return _init_fields(AdminConfig)


@cache
def _table(targets: frozenset[Target]) -> Mapping[str, frozenset[Target]]:
    """Option name -> which of ``targets`` it sets, for every name one of them takes."""
    names = {target: _names(target) for target in targets}
    return {
        name: frozenset(t for t, known in names.items() if name in known)
        for name in sorted(set().union(*names.values()))
    }


if TYPE_CHECKING:
    #: Option name -> the configs it sets (see the module docstring).
    OPTION_TABLE: Mapping[str, frozenset[Target]]
else:

    def __getattr__(name: str) -> Any:
        # OPTION_TABLE (every config's options) is built on first use: it
        # imports every config, which split_options for one role does not need.
        if name == "OPTION_TABLE":
            return _table(frozenset(Target))
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*globals(), "OPTION_TABLE"})


def known_options(role: Role) -> tuple[str, ...]:
    """The option names a class of ``role`` accepts, sorted."""
    return tuple(_table(role.value))


@dataclass(frozen=True, slots=True)
class Renamed:
    """kafka-python's name for a kafkacore option with the same meaning."""

    name: str


@dataclass(frozen=True, slots=True)
class Unsupported:
    """A kafka-python option kafkacore does not implement: accepted (and
    dropped) only with a value in ``accepted``, which asks for what kafkacore
    does anyway; any other value is refused with ``why``."""

    why: str
    accepted: tuple[object, ...] = ()


#: kafka-python's option names that are not kafkacore's (see the module
#: docstring), for every class; kafka-python's consumer, producer and admin
#: client share them. Options a class handles itself (the consumer's
#: deserializers, ``consumer_timeout_ms``) are the class's, not listed here.
KAFKA_PYTHON_OPTIONS: Mapping[str, Renamed | Unsupported] = {
    "receive_message_max_bytes": Renamed("max_response_bytes"),
    "client_dns_lookup": Unsupported(
        "kafkacore always tries every address a name resolves to", ("use_all_dns_ips",)
    ),
    "enable_incremental_fetch_sessions": Unsupported(
        "kafkacore's consumer always uses incremental fetch sessions (KIP-227)", (True,)
    ),
    "bootstrap_timeout_ms": Unsupported(
        "kafkacore bounds each call instead (request_timeout_ms, default_api_timeout_ms)"
    ),
    "socket_connection_setup_timeout_max_ms": Unsupported(
        "kafkacore's connection setup timeout does not grow; set socket_connection_setup_timeout_ms"
    ),
    "metrics_enabled": Unsupported("kafkacore always keeps its (cheap) counters", (True,)),
    "metric_reporters": Unsupported("kafkacore has no metric reporters; read metrics()", ((), [])),
    "metrics_num_samples": Unsupported("kafkacore's metrics are counters, not windows", (2,)),
    "metrics_sample_window_ms": Unsupported(
        "kafkacore's metrics are counters, not windows", (30000,)
    ),
    "selector": Unsupported("kafkacore's transports choose their own I/O", (None,)),
    "net": Unsupported("kafkacore's transports choose their own I/O", (None,)),
    "kafka_client": Unsupported("kafkacore's transports choose their own I/O"),
    "proxy_url": Unsupported("kafkacore connects directly; no proxies", (None,)),
    "socks5_proxy": Unsupported("kafkacore connects directly; no proxies", (None,)),
    "sasl_kerberos_name": Unsupported(
        "GSSAPI is set with sasl_mechanism_factory (docs/gssapi.md)", (None,)
    ),
}

#: Every class's named parameters besides the options (suggested for typos too).
_PARAMETERS = ("bootstrap_servers", "ssl_server_hostname", "rng")

#: Where a class's options are documented, for error messages.
_DOCS = {
    Role.CLIENT: "docs/client.md",
    Role.CONSUMER: "docs/consumer.md and docs/client.md",
    Role.PRODUCER: "docs/producer.md and docs/client.md",
    Role.ADMIN: "docs/admin.md and docs/client.md",
}


def unknown_option(
    owner: str, role: Role, name: str, own: Collection[str] = ()
) -> UnknownOptionError:
    """The error for an option ``name`` a class of ``role`` does not know: the
    closest known names (``own``: those the class takes itself) and where all
    are documented."""
    renamed = [name for name, how in KAFKA_PYTHON_OPTIONS.items() if isinstance(how, Renamed)]
    known = [*known_options(role), *_PARAMETERS, *own, *renamed]
    import difflib  # the error path only

    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    if not close:
        # A name that contains, or is contained in, a known one ("servers").
        low = name.lower()
        close = [k for k in known if low in k or k in low][:3]
    hint = ""
    if close:
        hint = " did you mean " + " or ".join(repr(c) for c in close) + "?"
    return UnknownOptionError(
        f"{owner}: unknown option {name!r};{hint} The options are documented in "
        f"{_DOCS[role]} (kafkacore.options.known_options(Role.{role.name}) lists them)"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SplitOptions:
    """The configs one user-facing class builds from its options."""

    client: ClientConfig
    consumer: ConsumerConfig | None = None
    producer: ProducerConfig | None = None
    admin: AdminConfig | None = None

    @property
    def transport(self) -> Mapping[str, Any]:
        """Socket and TLS options, by name, for the transport to apply."""
        return self.client.transport_options()


def split_options(
    owner: str,
    role: Role,
    bootstrap_servers: str | Sequence[str] | None,
    options: Mapping[str, Any],
    *,
    own: Collection[str] = (),
) -> SplitOptions:
    """Validate ``options`` for a class of ``role`` named ``owner``; one config each.

    ``own``: the names the class took out of the options itself (named in
    the suggestions of an unknown-option error).
    """
    wanted: dict[Target, dict[str, Any]] = {target: {} for target in role.value}
    table = _table(role.value)
    for given, value in options.items():
        name = _kafkacore_name(owner, given, value, table)
        if name is None:
            continue
        targets = table.get(name)
        if not targets:
            raise unknown_option(owner, role, given, own)
        for target in targets:
            if name in wanted[target]:
                raise ConfigError(
                    f"{owner}: {name!r} given twice (once as kafka-python's name); give it once"
                )
            wanted[target][name] = value
    try:
        client = ClientConfig(bootstrap_servers=bootstrap_servers, **wanted[Target.CLIENT])
        consumer = producer = admin = None
        if Target.CONSUMER in wanted:
            from kafkacore.consumer.config import ConsumerConfig

            consumer = ConsumerConfig(**wanted[Target.CONSUMER])
        if Target.PRODUCER in wanted:
            from kafkacore.producer.config import ProducerConfig

            # The producer reads a few client settings (in-flight limit) itself.
            producer = ProducerConfig(client=wanted[Target.CLIENT], **wanted[Target.PRODUCER])
        if Target.ADMIN in wanted:
            from kafkacore.admin.config import AdminConfig

            admin = AdminConfig(**wanted[Target.ADMIN])
    except (TypeError, ValueError) as exc:
        # ConfigError already (client, consumer), or the producer's and the
        # admin's ValueError/TypeError: one kind for every class.
        raise ConfigError(f"{owner}: {exc}") from None
    return SplitOptions(client=client, consumer=consumer, producer=producer, admin=admin)


def _kafkacore_name(
    owner: str, name: str, value: Any, known: Mapping[str, frozenset[Target]]
) -> str | None:
    """kafkacore's name of option ``name`` (None: a kafka-python option kafkacore
    does not implement, given with the value that asks for what it does anyway).
    ``known``: the class's own options, which win over kafka-python's meaning."""
    compat = KAFKA_PYTHON_OPTIONS.get(name)
    if compat is None or name in known:
        return name
    if isinstance(compat, Renamed):
        return compat.name
    if any(type(value) is type(ok) and value == ok for ok in compat.accepted):
        return None
    allowed = " or ".join(repr(ok) for ok in compat.accepted)
    only = f"; only {allowed} is accepted" if allowed else ""
    raise ConfigError(
        f"{owner}: kafka-python's option {name!r} is not supported ({compat.why}){only}, "
        f"got {value!r}"
    )

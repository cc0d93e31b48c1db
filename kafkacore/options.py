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

Errors, by blame, all at construction: a name the class does not know is a
``TypeError`` naming the class and listing what it knows; a bad value is
the config's own error (``LocalProtocolError`` from the client and consumer
configs; the producer's and the admin's ``ValueError`` or ``TypeError``
prefixed with the class name). The client config is checked before the
consumer's, the producer's or the admin's.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from kafkacore.admin.config import AdminConfig
from kafkacore.client.config import ClientConfig
from kafkacore.consumer.config import ConsumerConfig
from kafkacore.producer.config import PRODUCER_OPTIONS, ProducerConfig

__all__ = [
    "OPTION_TABLE",
    "Role",
    "SplitOptions",
    "Target",
    "known_options",
    "split_options",
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


# ``bootstrap_servers`` is every class's first parameter, not a keyword option.
_NAMES = {
    Target.CLIENT: _init_fields(ClientConfig) - {"bootstrap_servers"},
    Target.CONSUMER: _init_fields(ConsumerConfig),
    Target.PRODUCER: PRODUCER_OPTIONS,
    Target.ADMIN: _init_fields(AdminConfig),
}

#: Option name -> the configs it sets (see the module docstring).
OPTION_TABLE: Mapping[str, frozenset[Target]] = {
    name: frozenset(t for t, names in _NAMES.items() if name in names)
    for name in sorted(set().union(*_NAMES.values()))
}


def known_options(role: Role) -> tuple[str, ...]:
    """The option names a class of ``role`` accepts, sorted."""
    return tuple(name for name, targets in OPTION_TABLE.items() if targets & role.value)


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
) -> SplitOptions:
    """Validate ``options`` for a class of ``role`` named ``owner``; one config each."""
    wanted: dict[Target, dict[str, Any]] = {target: {} for target in role.value}
    for name, value in options.items():
        targets = OPTION_TABLE.get(name, frozenset()) & role.value
        if not targets:
            raise TypeError(
                f"{owner}: got an unexpected keyword argument {name!r}; known options: "
                + ", ".join(known_options(role))
            )
        for target in targets:
            wanted[target][name] = value
    client = ClientConfig(bootstrap_servers=bootstrap_servers, **wanted[Target.CLIENT])
    consumer = producer = admin = None
    if Target.CONSUMER in wanted:
        consumer = ConsumerConfig(**wanted[Target.CONSUMER])
    if Target.PRODUCER in wanted:
        try:
            # The producer reads a few client settings (in-flight limit) itself.
            producer = ProducerConfig(client=wanted[Target.CLIENT], **wanted[Target.PRODUCER])
        except ValueError as exc:
            raise ValueError(f"{owner}: {exc}") from None
    if Target.ADMIN in wanted:
        try:
            admin = AdminConfig(**wanted[Target.ADMIN])
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{owner}: {exc}") from None
    return SplitOptions(client=client, consumer=consumer, producer=producer, admin=admin)

"""What every user-facing class takes from its options, in any transport.

Theory of operation
-------------------
Every class takes one flat set of keyword options. Which config each one
sets (client, consumer, producer) is the core's decision, made by one table
in :mod:`kafkacore.options`; :func:`make_parts` adds what only a transport
has: the socket options, the TLS settings (built into one ``SSLContext``
lazily, on the first TLS connection, so a PLAINTEXT client never touches
certificate files), ``ssl_server_hostname`` (verify broker certificates
against a fixed name: brokers reached through an IP or a tunnel) and the
random source the core draws reconnect jitter from.
"""

from __future__ import annotations

import enum
import math
import random
import warnings
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkacore.client import ClientConfig, Node, Target
from kafkacore.errors import ConfigError, LocalProtocolError
from kafkacore.options import Role, SplitOptions, split_options

from ._sockets import Address, SocketConfig
from ._tls import TlsConfig, build_ssl_context, tls_config_from_options

if TYPE_CHECKING:
    # Types only: a producer loads no consumer, and ssl loads with the
    # first TLS context (_tls.build_ssl_context).
    import ssl

    from kafkacore.consumer import ConsumerConfig
    from kafkacore.producer import ProducerConfig

__all__ = ["ClientState", "Parts", "Role", "bound_ms", "make_parts", "resolve_target"]


class ClientState(enum.Enum):
    """Life of a transport client: NEW -> RUNNING -> CLOSED (shared by all three)."""

    NEW = "new"
    RUNNING = "running"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True, kw_only=True)
class Parts:
    """The validated options of one user-facing class, split by who uses them."""

    options: SplitOptions
    sockets: SocketConfig
    tls: TlsConfig
    rng: random.Random
    ssl_server_hostname: str | None

    @property
    def config(self) -> ClientConfig:
        return self.options.client

    @property
    def consumer(self) -> ConsumerConfig:
        assert self.options.consumer is not None, "made for a client, not a consumer"
        return self.options.consumer

    @property
    def producer(self) -> ProducerConfig:
        assert self.options.producer is not None, "made for a client, not a producer"
        return self.options.producer

    def ssl_context_factory(self) -> Callable[[], ssl.SSLContext]:
        tls = self.tls
        return lambda: build_ssl_context(tls)


def make_parts(
    owner: str,
    bootstrap_servers: str | Sequence[str] | None,
    *,
    role: Role = Role.CLIENT,
    source_address: Address | None = None,
    ssl_server_hostname: str | None,
    rng: random.Random | None,
    options: dict[str, Any],
    own: Collection[str] = (),
) -> Parts:
    """Validate a class's options; errors name ``owner`` and the bad option
    (``own``: the option names the class took out itself, for suggestions)."""
    if source_address is not None:
        # Older call style; ClientConfig carries source_address itself now.
        options = {**options, "source_address": source_address}
    # Every transport runs token providers and Kerberos steps off its loop
    # (transports/_credentials.py), so the core may hand them over.
    options = {"defer_credentials": True, **options}
    split = split_options(owner, role, bootstrap_servers, options, own=own)
    if rng is not None and not isinstance(rng, random.Random):
        raise ConfigError(f"{owner}: rng must be a random.Random, got {type(rng).__name__}")
    try:
        sockets = SocketConfig.from_options(split.transport)
        tls = tls_config_from_options(split.transport, ssl_server_hostname=ssl_server_hostname)
    except ConfigError as exc:
        raise ConfigError(f"{owner}: {exc}") from None
    return Parts(
        options=split,
        sockets=sockets,
        tls=tls,
        # The core draws reconnect jitter from this; seeded from the OS here,
        # in the transport, because the core must never seed itself.
        rng=rng if rng is not None else random.Random(),
        ssl_server_hostname=ssl_server_hostname,
    )


def resolve_target(owner: str, node_id: int | None, target: Target | None) -> Target | None:
    """``node_id`` is shorthand for ``target=Node(node_id)``; None lets the core
    pick the request's default target from its routing kind (a group API goes
    to the group's coordinator, a controller API to the controller)."""
    if node_id is not None:
        if target is not None:
            raise LocalProtocolError(f"{owner}: give node_id or target, not both")
        if isinstance(node_id, bool) or not isinstance(node_id, int):
            raise LocalProtocolError(f"{owner}: node_id must be an int, got {node_id!r}")
        return Node(node_id)
    return target


def ignore_loop(owner: str, loop: object) -> None:
    """aiokafka's ``loop=`` argument: deprecated there since 0.7.1 and not needed
    here (a client binds to the loop that starts it); a loop given is ignored
    with a DeprecationWarning, as aiokafka warns."""
    if loop is not None:
        warnings.warn(
            f"{owner}: the loop argument is deprecated and ignored; the client binds to "
            "the event loop that runs start()",
            DeprecationWarning,
            stacklevel=3,
        )


def bound_ms(owner: str, timeout: float | None) -> int | None:
    """A call's ``timeout`` (seconds; None: the core's default) as the core's
    milliseconds, rounded up so that a bound is never shortened."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise LocalProtocolError(f"{owner}: timeout must be seconds (a number), got {timeout!r}")
    if not 0 <= timeout < 2**31 / 1000:
        raise LocalProtocolError(f"{owner}: timeout must be 0 or more seconds, got {timeout!r}")
    return math.ceil(timeout * 1000)

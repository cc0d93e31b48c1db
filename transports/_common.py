"""Configuration and small helpers shared by the three client facades.

Theory of operation
-------------------
Every transport takes the same keyword options: everything
:class:`~kafkacore.client.ClientConfig` knows (the seed names, including
the socket and TLS ones it carries for us), plus one transport-only option,
``ssl_server_hostname``, to verify broker certificates against a fixed name
(brokers reached through an IP or a tunnel). :func:`make_parts` validates them once and returns
the pieces a transport needs: the core config, the socket options and a
factory for the one ``SSLContext`` (built lazily, on the first TLS
connection, so a PLAINTEXT client never touches certificate files).
"""

from __future__ import annotations

import enum
import random
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kafkacore.client import AnyNode, ClientConfig, Node, Target
from kafkacore.errors import LocalProtocolError

from ._sockets import Address, SocketConfig
from ._tls import TlsConfig, build_ssl_context, tls_config_from_options

__all__ = ["ClientState", "Parts", "make_parts", "resolve_target"]


class ClientState(enum.Enum):
    """Life of a transport client: NEW -> RUNNING -> CLOSED (shared by all three)."""

    NEW = "new"
    RUNNING = "running"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True, kw_only=True)
class Parts:
    config: ClientConfig
    sockets: SocketConfig
    tls: TlsConfig
    rng: random.Random

    def ssl_context_factory(self) -> Callable[[], ssl.SSLContext]:
        tls = self.tls
        return lambda: build_ssl_context(tls)


def make_parts(
    owner: str,
    bootstrap_servers: str | Sequence[str] | None,
    *,
    source_address: Address | None = None,
    ssl_server_hostname: str | None,
    rng: random.Random | None,
    options: dict[str, Any],
) -> Parts:
    """Validate a facade's options; errors name ``owner`` and the bad option."""
    if source_address is not None:
        # Older call style; ClientConfig carries source_address itself now.
        options = {**options, "source_address": source_address}
    try:
        config = ClientConfig(bootstrap_servers=bootstrap_servers, **options)
    except TypeError as exc:
        known = ", ".join(sorted(ClientConfig.__dataclass_fields__))
        raise TypeError(f"{owner}: {exc}; known options: {known}") from None
    opts = config.transport_options()
    if rng is not None and not isinstance(rng, random.Random):
        raise TypeError(f"{owner}: rng must be a random.Random, got {type(rng).__name__}")
    return Parts(
        config=config,
        sockets=SocketConfig.from_options(opts),
        tls=tls_config_from_options(opts, ssl_server_hostname=ssl_server_hostname),
        # The core draws reconnect jitter from this; seeded from the OS here,
        # in the transport, because the core must never seed itself.
        rng=rng if rng is not None else random.Random(),
    )


def resolve_target(owner: str, node_id: int | None, target: Target | None) -> Target:
    """``node_id`` is shorthand for ``target=Node(node_id)``; default: any node."""
    if node_id is not None:
        if target is not None:
            raise LocalProtocolError(f"{owner}: give node_id or target, not both")
        if isinstance(node_id, bool) or not isinstance(node_id, int):
            raise LocalProtocolError(f"{owner}: node_id must be an int, got {node_id!r}")
        return Node(node_id)
    return target if target is not None else AnyNode()

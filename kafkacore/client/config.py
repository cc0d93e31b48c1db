"""Client configuration: one frozen dataclass, validated on construction.

Names and defaults follow the seed's ``KafkaClient``/``ClusterMetadata``
(which follow the Java client): durations are integer milliseconds with an
``_ms`` suffix. Socket and TLS options are carried here so that every
transport reads them from one place; the core itself only uses them to say
``tls=True`` and which ``server_hostname`` to verify.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafkacore.errors import ConfigError

if TYPE_CHECKING:
    from kafkacore.client.sasl import SaslMechanism

__all__ = [
    "DEFAULT_PORT",
    "METADATA_RECOVERY_STRATEGIES",
    "SASL_MECHANISMS",
    "SECURITY_PROTOCOLS",
    "ClientConfig",
    "parse_bootstrap_servers",
]

DEFAULT_PORT = 9092
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "GSSAPI", "OAUTHBEARER", "SCRAM-SHA-256", "SCRAM-SHA-512")
#: KIP-899/KIP-1102 ``metadata.recovery.strategy`` values ("rebootstrap" is
#: Kafka 4.x's default).
METADATA_RECOVERY_STRATEGIES = ("none", "rebootstrap")
#: Fields whose values are secrets: never in a repr, a log line or a message.
_SECRET_FIELDS = frozenset({"sasl_plain_password", "ssl_password", "sasl_oauth_token_provider"})

# IPPROTO_TCP and TCP_NODELAY as plain numbers: the core must not import socket.
# Both values are fixed by POSIX/Linux and by Windows alike (6 and 1).
_TCP_NODELAY_OPTION = (6, 1, 1)

_HOST_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")


def _parse_one(address: str) -> tuple[str, int]:
    text = address.strip()
    if not text:
        raise ConfigError("bootstrap_servers: empty address; give 'host[:port]'")
    scheme, sep, rest = text.partition("://")
    if sep:
        # 'http://host:9092', 'kafka://...', 'ssl://...': a URL, not an address.
        raise ConfigError(
            f"bootstrap_servers: {address!r} has a scheme ({scheme + sep!r}); no scheme "
            f"expected: give 'host:port', e.g. {rest.split('/')[0] or 'localhost:9092'!r} "
            "(TLS and SASL are set by security_protocol, not by the address)"
        )
    if text.startswith("["):
        # IPv6 literal: "[::1]" or "[::1]:9092".
        close = text.find("]")
        if close < 0:
            raise ConfigError(
                f"bootstrap_servers: {address!r} opens '[' without ']'; write '[::1]:9092'"
            )
        host = text[1:close]
        rest = text[close + 1 :]
        if not host or not all(c in "0123456789abcdefABCDEF:." for c in host):
            raise ConfigError(f"bootstrap_servers: {address!r} is not an IPv6 literal")
        if not rest:
            return host, DEFAULT_PORT
        if not rest.startswith(":"):
            raise ConfigError(
                f"bootstrap_servers: {address!r} has junk after ']'; write '[::1]:9092'"
            )
        port_text = rest[1:]
    else:
        if text.count(":") > 1:
            raise ConfigError(
                f"bootstrap_servers: {address!r} looks like IPv6; put it in brackets: '[::1]:9092'"
            )
        host, sep, port_text = text.partition(":")
        if not sep:
            port_text = ""
        if not _HOST_RE.match(host):
            raise ConfigError(f"bootstrap_servers: bad host in {address!r}")
        if not port_text:
            if sep:
                raise ConfigError(f"bootstrap_servers: empty port in {address!r}")
            return host, DEFAULT_PORT
    if not port_text.isdigit():
        raise ConfigError(f"bootstrap_servers: port in {address!r} is not a number")
    port = int(port_text)
    if not 0 < port < 65536:
        raise ConfigError(f"bootstrap_servers: port {port} in {address!r} is out of range")
    return host, port


def parse_bootstrap_servers(servers: str | Sequence[str] | None) -> tuple[tuple[str, int], ...]:
    """Normalise ``'host[:port]'``, a comma list, or a sequence of those.

    Default port 9092; nothing given means ``localhost:9092`` (seed 001/004).
    IPv6 literals must be bracketed: ``[::1]:9092``.
    """
    if servers is None:
        return (("localhost", DEFAULT_PORT),)
    if isinstance(servers, str):
        items: list[str] = [s for s in servers.split(",") if s.strip()]
    elif isinstance(servers, Sequence):
        items = []
        for item in servers:
            if not isinstance(item, str):
                raise ConfigError(f"bootstrap_servers: {item!r} is not a 'host[:port]' string")
            items.extend(s for s in item.split(",") if s.strip())
    else:
        raise ConfigError(
            "bootstrap_servers: expected 'host[:port]' or a list of them, "
            f"got {type(servers).__name__}"
        )
    if not items:
        return (("localhost", DEFAULT_PORT),)
    out: list[tuple[str, int]] = []
    for item in items:
        parsed = _parse_one(item)
        if parsed not in out:
            out.append(parsed)
    return tuple(out)


def _positive(name: str, value: object, *, allow_zero: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"ClientConfig.{name}: expected an int, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        want = "0 or more" if allow_zero else "more than 0"
        raise ConfigError(f"ClientConfig.{name}: {value} must be {want}")


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class ClientConfig:
    """Everything the client core and the transports need; see module docstring.

    Its ``repr`` masks the secrets (``sasl_plain_password``, ``ssl_password``,
    ``sasl_oauth_token_provider``) as ``'***'``.
    """

    bootstrap_servers: str | Sequence[str] | None = "localhost:9092"
    client_id: str = "kafkacore"
    # KIP-511: sent in ApiVersions v3+ so brokers can report client versions.
    client_software_name: str = "kafkacore"
    client_software_version: str = "0.1.0"

    reconnect_backoff_ms: int = 50
    reconnect_backoff_max_ms: int = 1000
    request_timeout_ms: int = 30000
    # Java's socket.connection.setup.timeout.ms: a TCP/TLS connect that hangs
    # this long is reported as failed by the core (the transport may not).
    socket_connection_setup_timeout_ms: int = 10000
    connections_max_idle_ms: int = 540000
    #: Retries the client core makes itself (metadata refreshes while a
    #: leader or topic is missing, coordinator lookups) back off
    #: exponentially with jitter from ``retry_backoff_ms`` to
    #: ``retry_backoff_max_ms`` (KIP-580; Java's names and defaults).
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1000
    max_in_flight_requests_per_connection: int = 5
    metadata_max_age_ms: int = 300000
    #: Metadata requests ask the broker to create missing topics (Java
    #: consumer ``allow.auto.create.topics``); the broker may still refuse.
    allow_auto_create_topics: bool = True
    #: Track every topic in the cluster instead of the ones added.
    metadata_all_topics: bool = False
    #: KIP-899/KIP-1102: "rebootstrap" forgets the known brokers and starts
    #: again from ``bootstrap_servers`` when a broker answers
    #: REBOOTSTRAP_REQUIRED, or when no known broker has given metadata for
    #: ``metadata_recovery_rebootstrap_trigger_ms``; "none" never does.
    metadata_recovery_strategy: str = "rebootstrap"
    metadata_recovery_rebootstrap_trigger_ms: int = 300000

    #: Bound of one response frame; a larger size prefix is a protocol error,
    #: never an allocation.
    max_response_bytes: int = 100 * 1024 * 1024
    #: Bound of requests waiting for a route or a ready connection.
    max_queued_requests: int = 10000

    # -- transport options (carried, not used by the core) ----------------
    receive_buffer_bytes: int | None = None
    send_buffer_bytes: int | None = None
    socket_options: tuple[tuple[int, int, int], ...] = (_TCP_NODELAY_OPTION,)
    #: Local (host, port) to bind before connecting (pykafka source_host/source_port).
    source_address: tuple[str, int] | None = None

    security_protocol: str = "PLAINTEXT"
    ssl_context: Any = None
    ssl_check_hostname: bool = True
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_password: str | None = None
    ssl_crlfile: str | None = None
    ssl_ciphers: str | None = None

    #: Informational only: versions are always negotiated (ApiVersions).
    api_version: tuple[int, ...] | None = None
    #: Bounds the ApiVersions exchange that opens every connection (never
    #: above ``request_timeout_ms``): a peer that accepts TCP but does not
    #: answer it in time is a failed connection, retried with backoff.
    api_version_auto_timeout_ms: int = 2000
    metric_group_prefix: str = ""
    #: KIP-714 client telemetry (Java ``enable.metrics.push``, on by default):
    #: a broker with a telemetry plugin receives the client's metrics at the
    #: interval it asks for (kafkacore.telemetry). A broker without one does
    #: not offer the APIs and costs nothing.
    enable_metrics_push: bool = True

    sasl_mechanism: str | None = None
    sasl_plain_username: str | None = None
    sasl_plain_password: str | None = None
    sasl_kerberos_service_name: str = "kafka"
    sasl_kerberos_domain_name: str | None = None
    #: OAUTHBEARER: a callable returning the token, or an object with a
    #: ``token()`` method (and optionally ``extensions()``), as in kafka-python.
    sasl_oauth_token_provider: Any = None
    #: Pluggable mechanism (e.g. GSSAPI from an optional package):
    #: ``factory(mechanism_name, host) -> SaslMechanism``.
    sasl_mechanism_factory: Callable[[str, str], SaslMechanism] | None = None
    #: Set by a transport that answers ``CredentialsNeeded`` events
    #: (``transports/_credentials.py``): the OAUTHBEARER token provider and
    #: the steps of blocking mechanisms (GSSAPI) then run where the transport
    #: chooses, off its event loop, instead of inside the core's step. Left
    #: False, they run inline as before. See kafkacore.client.credentials.
    defer_credentials: bool = False

    #: Normalised bootstrap addresses, computed at construction.
    bootstrap_addresses: tuple[tuple[str, int], ...] = field(init=False, default=())

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "bootstrap_addresses", parse_bootstrap_servers(self.bootstrap_servers)
        )
        if not isinstance(self.client_id, str):
            raise ConfigError(f"ClientConfig.client_id: expected str, got {self.client_id!r}")
        for name in (
            "reconnect_backoff_max_ms",
            "request_timeout_ms",
            "socket_connection_setup_timeout_ms",
            "connections_max_idle_ms",
            "max_in_flight_requests_per_connection",
            "metadata_max_age_ms",
            "max_response_bytes",
            "max_queued_requests",
            "api_version_auto_timeout_ms",
            "metadata_recovery_rebootstrap_trigger_ms",
        ):
            _positive(name, getattr(self, name))
        _positive("reconnect_backoff_ms", self.reconnect_backoff_ms, allow_zero=True)
        _positive("retry_backoff_ms", self.retry_backoff_ms, allow_zero=True)
        _positive("retry_backoff_max_ms", self.retry_backoff_max_ms, allow_zero=True)
        if self.retry_backoff_max_ms < self.retry_backoff_ms:
            raise ConfigError(
                "ClientConfig.retry_backoff_max_ms: must be >= retry_backoff_ms "
                f"({self.retry_backoff_max_ms} < {self.retry_backoff_ms})"
            )
        if self.metadata_recovery_strategy not in METADATA_RECOVERY_STRATEGIES:
            raise ConfigError(
                "ClientConfig.metadata_recovery_strategy: "
                f"{self.metadata_recovery_strategy!r} is not one of "
                f"{', '.join(METADATA_RECOVERY_STRATEGIES)}"
            )
        if self.reconnect_backoff_max_ms < self.reconnect_backoff_ms:
            raise ConfigError(
                "ClientConfig.reconnect_backoff_max_ms: must be >= reconnect_backoff_ms "
                f"({self.reconnect_backoff_max_ms} < {self.reconnect_backoff_ms})"
            )
        if self.security_protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(
                f"ClientConfig.security_protocol: {self.security_protocol!r} is not one of "
                f"{', '.join(SECURITY_PROTOCOLS)}"
            )
        if self.sasl:
            self._check_sasl()

    def _check_sasl(self) -> None:
        mech = self.sasl_mechanism
        if mech is None:
            raise ConfigError(
                f"ClientConfig: security_protocol {self.security_protocol} needs sasl_mechanism "
                f"(one of {', '.join(SASL_MECHANISMS)})"
            )
        if self.sasl_mechanism_factory is not None:
            return  # a plugged-in mechanism validates its own inputs
        if mech in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            if self.sasl_plain_username is None or self.sasl_plain_password is None:
                raise ConfigError(
                    f"ClientConfig: sasl_mechanism {mech} needs sasl_plain_username "
                    "and sasl_plain_password"
                )
        elif mech == "OAUTHBEARER":
            provider = self.sasl_oauth_token_provider
            if provider is None or not (callable(provider) or hasattr(provider, "token")):
                raise ConfigError(
                    "ClientConfig: sasl_mechanism OAUTHBEARER needs sasl_oauth_token_provider "
                    "(a callable or an object with token())"
                )
        elif mech == "GSSAPI":
            raise ConfigError(
                "ClientConfig: GSSAPI is not built in; pass sasl_mechanism_factory, e.g. "
                "kafkacore.transports.kerberos_mechanism_factory(keytab=...) (docs/gssapi.md)"
            )
        else:
            raise ConfigError(
                f"ClientConfig.sasl_mechanism: {mech!r} is not one of {', '.join(SASL_MECHANISMS)} "
                "(or pass sasl_mechanism_factory)"
            )

    def __repr__(self) -> str:
        shown = []
        for name in self.__dataclass_fields__:
            if name == "bootstrap_addresses":
                continue
            value = getattr(self, name)
            text = "'***'" if name in _SECRET_FIELDS and value is not None else repr(value)
            shown.append(f"{name}={text}")
        return f"ClientConfig({', '.join(shown)})"

    @property
    def secrets(self) -> tuple[str, ...]:
        """The secret strings this config holds (for scrubbing text that might echo them)."""
        found = []
        for name in ("sasl_plain_password", "ssl_password"):
            value = getattr(self, name)
            if isinstance(value, str) and value:
                found.append(value)
        return tuple(found)

    @property
    def tls(self) -> bool:
        """True when connections must be wrapped in TLS."""
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        """True when connections must authenticate with SASL."""
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def transport_options(self) -> Mapping[str, Any]:
        """The options a transport applies to sockets and TLS, by seed name."""
        return {
            "receive_buffer_bytes": self.receive_buffer_bytes,
            "send_buffer_bytes": self.send_buffer_bytes,
            "socket_options": self.socket_options,
            "source_address": self.source_address,
            "ssl_context": self.ssl_context,
            "ssl_check_hostname": self.ssl_check_hostname,
            "ssl_cafile": self.ssl_cafile,
            "ssl_certfile": self.ssl_certfile,
            "ssl_keyfile": self.ssl_keyfile,
            "ssl_password": self.ssl_password,
            "ssl_crlfile": self.ssl_crlfile,
            "ssl_ciphers": self.ssl_ciphers,
        }

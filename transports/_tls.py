"""One ``ssl.SSLContext`` builder shared by the three transports.

Theory of operation
-------------------
Every transport takes the same TLS settings (the names kafka-python users
know: ``ssl_context``, ``ssl_check_hostname``, ``ssl_cafile``,
``ssl_certfile``, ``ssl_keyfile``, ``ssl_password``, ``ssl_crlfile``,
``ssl_ciphers``). :class:`TlsConfig` validates them once and
:func:`build_ssl_context` turns them into one client context, so the
selector, asyncio and trio transports verify certificates identically.

A ready ``ssl_context`` wins; giving it together with any file option is a
mistake we report rather than silently ignore. Without one we start from
``ssl.create_default_context`` (certificate and hostname verification on,
TLS 1.2 or newer) and add what the settings ask for.

:func:`describe_tls_failure` turns a failed handshake into an
:class:`~kafkacore.errors.AuthenticationError` with a message that names the
address and the hostname checked: retrying a bad certificate cannot help.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkacore.errors import AuthenticationError, ConfigError, KafkaConnectionError

if TYPE_CHECKING:
    import ssl

__all__ = [
    "TlsConfig",
    "build_ssl_context",
    "describe_tls_failure",
    "tls_config_from_options",
    "tls_would_block",
]

PasswordSource = str | bytes | Callable[[], str | bytes]


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsConfig:
    """Client TLS settings; see the module docstring for precedence."""

    ssl_context: ssl.SSLContext | None = None
    ssl_check_hostname: bool = True
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_password: PasswordSource | None = None
    ssl_crlfile: str | None = None
    ssl_ciphers: str | None = None
    #: Name to verify the broker certificate against instead of the host
    #: the core asks us to dial (for brokers reached through an IP or a
    #: tunnel). ``None`` uses the name the core gives.
    ssl_server_hostname: str | None = None

    def __post_init__(self) -> None:
        if self.ssl_context is not None:
            extra = [
                name
                for name in (
                    "ssl_cafile",
                    "ssl_certfile",
                    "ssl_keyfile",
                    "ssl_password",
                    "ssl_crlfile",
                    "ssl_ciphers",
                )
                if getattr(self, name) is not None
            ]
            if extra:
                raise ConfigError(
                    f"TlsConfig: ssl_context is given, so {', '.join(extra)} would be "
                    "ignored; configure the context yourself or drop ssl_context"
                )
        if self.ssl_keyfile is not None and self.ssl_certfile is None:
            raise ConfigError("TlsConfig: ssl_keyfile needs ssl_certfile (the client certificate)")
        if self.ssl_password is not None and self.ssl_certfile is None:
            raise ConfigError("TlsConfig: ssl_password unlocks ssl_keyfile; set ssl_certfile too")


def tls_config_from_options(
    options: Mapping[str, Any], *, ssl_server_hostname: str | None = None
) -> TlsConfig:
    """Build from ``ClientConfig.transport_options()`` plus transport-only settings."""
    return TlsConfig(
        ssl_context=options.get("ssl_context"),
        ssl_check_hostname=bool(options.get("ssl_check_hostname", True)),
        ssl_cafile=options.get("ssl_cafile"),
        ssl_certfile=options.get("ssl_certfile"),
        ssl_keyfile=options.get("ssl_keyfile"),
        ssl_password=options.get("ssl_password"),
        ssl_crlfile=options.get("ssl_crlfile"),
        ssl_ciphers=options.get("ssl_ciphers"),
        ssl_server_hostname=ssl_server_hostname,
    )


def build_ssl_context(config: TlsConfig) -> ssl.SSLContext:
    """Return the client context ``config`` describes (a new one each call)."""
    if config.ssl_context is not None:
        return config.ssl_context
    # Imported here, on the first TLS connection: ssl costs some 4 MiB of
    # peak RSS that a PLAINTEXT or SASL_PLAINTEXT client never needs.
    import ssl

    # create_default_context: CERT_REQUIRED, check_hostname, TLS >= 1.2 and,
    # without a cafile, the system's trust store.
    try:
        ctx = ssl.create_default_context(cafile=config.ssl_cafile)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(
            f"TlsConfig: cannot load ssl_cafile {config.ssl_cafile!r}: {exc}"
        ) from exc
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = config.ssl_check_hostname
    if config.ssl_certfile is not None:
        try:
            ctx.load_cert_chain(
                config.ssl_certfile, config.ssl_keyfile, password=config.ssl_password
            )
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(
                f"TlsConfig: cannot load client certificate {config.ssl_certfile!r}: {exc}"
            ) from exc
    if config.ssl_crlfile is not None:
        try:
            ctx.load_verify_locations(cafile=config.ssl_crlfile)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(
                f"TlsConfig: cannot load ssl_crlfile {config.ssl_crlfile!r}: {exc}"
            ) from exc
        ctx.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF
    if config.ssl_ciphers is not None:
        try:
            ctx.set_ciphers(config.ssl_ciphers)
        except ssl.SSLError as exc:
            raise ConfigError(
                f"TlsConfig: ssl_ciphers {config.ssl_ciphers!r} selects no cipher: {exc}"
            ) from exc
    return ctx


def describe_tls_failure(
    exc: BaseException, *, host: str, port: int, server_hostname: str | None
) -> BaseException:
    """Map a handshake failure to the error the core and the user see.

    Certificate problems become :class:`AuthenticationError` (the same
    certificate will fail again); anything else is a connection error.
    """
    import ssl  # loaded already: a handshake failed

    name = server_hostname or host
    if isinstance(exc, ssl.SSLCertVerificationError):
        err: BaseException = AuthenticationError(
            f"TLS to {host}:{port}: broker certificate rejected for name {name!r}: "
            f"{getattr(exc, 'verify_message', None) or exc}; check ssl_cafile and the hostname"
        )
    elif isinstance(exc, ssl.SSLError):
        err = AuthenticationError(
            f"TLS handshake with {host}:{port} failed: {exc.reason or exc}; "
            "check the listener is SSL and the TLS settings match"
        )
    else:
        err = KafkaConnectionError(f"TLS handshake with {host}:{port} failed: {exc}")
    err.__cause__ = exc
    return err


#: TLS alerts a broker sends when it refuses the client's certificate. With
#: TLS 1.3 the client's handshake finishes before the broker has checked the
#: certificate, so the alert arrives on the first read, as a lost connection.
_CLIENT_CERTIFICATE_ALERTS = frozenset(
    {
        "SSLV3_ALERT_BAD_CERTIFICATE",
        "SSLV3_ALERT_CERTIFICATE_UNKNOWN",
        "SSLV3_ALERT_CERTIFICATE_EXPIRED",
        "SSLV3_ALERT_CERTIFICATE_REVOKED",
        "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE",
        "TLSV1_ALERT_UNKNOWN_CA",
        "TLSV1_ALERT_ACCESS_DENIED",
        "TLSV13_ALERT_CERTIFICATE_REQUIRED",
    }
)


def tls_would_block(exc: OSError) -> bool:
    """Whether ``exc`` is a TLS socket's "try again" (``SSLWantReadError``,
    ``SSLWantWriteError``) rather than a failure.

    Asked only once an ``OSError`` arrived, so plain sockets never look ssl
    up on their hot path; without ssl loaded no socket is a TLS one.
    """
    ssl_module = sys.modules.get("ssl")
    return ssl_module is not None and isinstance(
        exc, (ssl_module.SSLWantReadError, ssl_module.SSLWantWriteError)
    )


def refused_certificate(error: BaseException | None) -> AuthenticationError | None:
    """An AuthenticationError when ``error`` (or its cause) is the broker's
    TLS alert refusing our certificate; None for any other loss."""
    ssl_module = sys.modules.get("ssl")
    if ssl_module is None:
        return None  # no TLS context was ever built: no error can be a TLS alert
    seen = 0
    while error is not None and seen < 8:
        if isinstance(error, ssl_module.SSLError) and error.reason in _CLIENT_CERTIFICATE_ALERTS:
            refusal = AuthenticationError(
                f"the broker refused this client's TLS certificate ({error.reason}); "
                "check ssl_certfile and ssl_keyfile, and that the broker trusts their CA"
            )
            refusal.__cause__ = error
            return refusal
        error = error.__cause__ or error.__context__
        seen += 1
    return None

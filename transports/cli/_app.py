"""The root command, its shared state and the exit codes scripts rely on.

Every command reaches the cluster through :class:`App`, which builds the
public blocking clients (``KafkaAdminClient``, ``KafkaProducer``,
``KafkaConsumer`` from ``kafkacore``) from the resolved connection options.
Errors are raised as :class:`CliError` with an :class:`Exit` code, or escape
as kafkacore's own exceptions and are classified by :func:`classify`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import click

from kafkacore import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafkacore.errors import (
    AuthenticationError,
    BrokerError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    LocalProtocolError,
)

from ._options import Connection, resolve_connection

__all__ = ["App", "CliError", "Exit", "ReaderGone", "check_items", "classify", "cli", "pass_app"]


class Exit(enum.IntEnum):
    """The exit status of ``kafkacore`` (docs/cli.md lists them)."""

    OK = 0
    #: The broker refused or failed the operation (an invalid partition count, a policy...).
    FAILED = 1
    #: The command line itself is wrong: a flag, an offset spec, a config name.
    USAGE = 2
    #: A topic, partition or group that does not exist.
    NOT_FOUND = 3
    #: No broker answered, or the operation ran out of time.
    UNREACHABLE = 4
    #: Authentication failed, or the principal may not do this.
    DENIED = 5
    #: Interrupted (Ctrl-C).
    INTERRUPTED = 130


class CliError(click.ClickException):
    """An error the command line explains itself; ``code`` is its exit status."""

    def __init__(self, message: str, code: Exit = Exit.FAILED) -> None:
        super().__init__(message)
        self.exit_code = int(code)  # type: ignore[misc]  # click's per-class default

    def show(self, file: Any = None) -> None:
        click.echo(f"kafkacore: error: {self.format_message()}", err=True)


class ReaderGone(Exception):
    """stdout's reader went away (``kafkacore consume ... | head``): stop, status 0."""


_NOT_FOUND = frozenset(
    {
        "UNKNOWN_TOPIC_OR_PARTITION",
        "GROUP_ID_NOT_FOUND",
        "UNKNOWN_TOPIC_ID",
        "DELEGATION_TOKEN_NOT_FOUND",
    }
)
#: Refusals that are about who asks, beside the *_AUTHORIZATION_FAILED codes:
#: a token someone else owns, a token asked for over a login that cannot have one.
_DENIED = frozenset({"DELEGATION_TOKEN_OWNER_MISMATCH", "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED"})


def classify(exc: BaseException) -> Exit:
    """The exit status for one of kafkacore's exceptions."""
    if isinstance(exc, CliError):
        return Exit(exc.exit_code)
    if isinstance(exc, BrokerError):
        if exc.name in _NOT_FOUND:
            return Exit.NOT_FOUND
        if (
            exc.name in _DENIED
            or exc.name.endswith("_AUTHORIZATION_FAILED")
            or exc.name.startswith("SASL_")
        ):
            return Exit.DENIED
        return Exit.FAILED
    if isinstance(exc, AuthenticationError):
        return Exit.DENIED
    if isinstance(exc, KafkaConnectionError | KafkaTimeoutError):
        return Exit.UNREACHABLE
    if isinstance(exc, ValueError | TypeError | LocalProtocolError):
        return Exit.USAGE
    return Exit.FAILED


def describe(exc: BaseException) -> str:
    """One line naming the error: its class (or broker code) and message."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, BrokerError | KafkaError):
        return text if isinstance(exc, BrokerError) else f"{type(exc).__name__}: {text}"
    return text


def check_items(results: Mapping[Any, Any], what: str, name: Callable[[Any], str] = str) -> None:
    """Raise a CliError naming every failed item of an ``ItemResults`` (worst exit first)."""
    failed = [(item, r.error) for item, r in results.items() if not r.ok]
    if not failed:
        return
    lines = [f"{what} {name(item)}: {describe(err)}".lstrip() for item, err in failed]
    code = max((classify(err) for _, err in failed), key=lambda c: (c != Exit.FAILED, c))
    raise CliError("\n".join(lines), code)


@dataclass
class App:
    """What every command shares: the connection and the admin call timeout."""

    bootstrap_server: str | None
    command_config: str | None
    properties: tuple[str, ...]
    timeout: float
    _connection: Connection | None = field(default=None, repr=False)

    @property
    def connection(self) -> Connection:
        if self._connection is None:
            self._connection = resolve_connection(
                bootstrap_server=self.bootstrap_server,
                command_config=self.command_config,
                properties=self.properties,
            )
        return self._connection

    @contextmanager
    def admin(self, *, helper: bool = False) -> Iterator[KafkaAdminClient]:
        """The admin client; ``helper``: it only looks things up for a producing or
        consuming command, so properties of that command's client are not warned about."""
        conn = self.connection
        options = conn.options("admin", warn=not helper)
        options.setdefault("client_id", "kafkacore-cli")
        options.setdefault("default_api_timeout_ms", int(self.timeout * 1000))
        with _built("admin client", KafkaAdminClient, conn.bootstrap_servers, options) as admin:
            yield admin

    @contextmanager
    def producer(self, **overrides: Any) -> Iterator[KafkaProducer]:
        conn = self.connection
        options = {"client_id": "kafkacore-cli", **conn.options("producer"), **overrides}
        with _built("producer", KafkaProducer, conn.bootstrap_servers, options) as producer:
            yield producer

    def consumer(self, **overrides: Any) -> KafkaConsumer:
        conn = self.connection
        options = {"client_id": "kafkacore-cli", **conn.options("consumer"), **overrides}
        client: KafkaConsumer = _construct(
            "consumer", KafkaConsumer, conn.bootstrap_servers, options
        )
        return client


def _construct(what: str, cls: Any, servers: str, options: dict[str, Any]) -> Any:
    try:
        return cls(bootstrap_servers=servers, **options)
    except (TypeError, ValueError, LocalProtocolError) as exc:
        # A bad option value from -X, the environment or the properties file.
        raise CliError(f"cannot configure the {what}: {exc}", Exit.USAGE) from exc


@contextmanager
def _built(what: str, cls: Any, servers: str, options: dict[str, Any]) -> Iterator[Any]:
    client = _construct(what, cls, servers, options)
    try:
        yield client
    finally:
        client.close()


pass_app = click.make_pass_decorator(App)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "-b",
    "--bootstrap-server",
    metavar="HOST:PORT[,...]",
    help="Brokers to bootstrap from [env KAFKACORE_BOOTSTRAP_SERVERS; default localhost:9092].",
)
@click.option(
    "--command-config",
    metavar="FILE",
    help="Kafka client properties file (bootstrap.servers, security.protocol, sasl.mechanism, "
    "sasl.jaas.config, ssl.truststore.location...) [env KAFKACORE_COMMAND_CONFIG].",
)
@click.option(
    "-X",
    "--property",
    "properties",
    multiple=True,
    metavar="NAME=VALUE",
    help="One Kafka client property, e.g. -X security.protocol=SASL_PLAINTEXT (repeatable).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=30.0,
    show_default=True,
    help="Seconds each admin call may take.",
)
@click.version_option(package_name="kafkacore", prog_name="kafkacore")
@click.pass_context
def cli(
    ctx: click.Context,
    bootstrap_server: str | None,
    command_config: str | None,
    properties: tuple[str, ...],
    timeout: float,
) -> None:
    """kafkacore: produce, consume and administer Apache Kafka from the shell.

    Exit status: 0 ok, 1 the operation failed, 2 usage error, 3 topic, partition
    or group not found, 4 no broker reachable or timed out, 5 authentication or
    authorization refused, 130 interrupted.
    """
    ctx.obj = App(bootstrap_server, command_config, properties, timeout)

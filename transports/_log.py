"""Standard ``logging`` for kafkacore, driven by the cores' trace hooks and events.

Theory of operation
-------------------
The sans-IO core never logs (it does no I/O); it calls trace hooks at
notable moments (:meth:`kafkacore.client.KafkaClientCore.add_trace`). Here
the transports turn those calls into log records:

* :class:`ClientLog` is a trace hook that writes one line per connection
  state change, retry (reconnect backoff, metadata and coordinator retries,
  rebootstrap) and error, on the logger ``kafkacore.client``. Every
  transport's :class:`~kafkacore.transports._bridge.Bridge` attaches one to the
  client core it drives (the core itself, or the ``client`` of a producer
  or consumer core) with :func:`attach_client_log`.
* :func:`log_event` / :func:`logged` write one line per event of any core
  (producer, consumer, group...) on ``kafkacore.<layer>``: WARNING when the
  event carries an ``error``, DEBUG otherwise. A transport wraps its event
  sink with ``logged(sink, "producer")``.

Loggers: ``kafkacore`` (a :class:`logging.NullHandler`: quiet until the
application configures logging; never ``basicConfig``), ``kafkacore.client``,
and ``kafkacore.<layer>`` for the others. Levels: DEBUG for routine state
changes and requests, INFO for READY connections and scheduled retries,
WARNING for failed connections, failed refreshes, topic errors,
rebootstraps and rounds in which every bootstrap server failed (the client
goes on trying: the callers' own timeouts decide, issue 26), ERROR for
authentication failures.

Secrets never reach a record: every line goes through a :class:`Redactor`
holding the config's secrets (``ClientConfig.secrets``: SASL and key
passwords), which replaces them with ``***``; the core's messages do not
contain them in the first place, and ``ClientConfig``'s repr masks them.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping

from kafkacore.client import KafkaClientCore
from kafkacore.errors import NoCommonVersionError, RequestCancelled
from kafkacore.protocol.enums import CoordinatorType

__all__ = [
    "ROOT_LOGGER",
    "ClientLog",
    "Redactor",
    "attach_client_log",
    "describe_error",
    "get_logger",
    "log_event",
    "logged",
]

ROOT_LOGGER = "kafkacore"
logging.getLogger(ROOT_LOGGER).addHandler(logging.NullHandler())

#: Trace names that are errors or retries, and their level.
_LEVELS: Mapping[str, int] = {
    "reconnect_backoff": logging.INFO,
    "metadata_failed": logging.WARNING,
    "coordinator_retry": logging.INFO,
    "topic_error": logging.WARNING,
    "rebootstrap": logging.WARNING,
    "bootstrap_failed": logging.WARNING,
    "authentication_failed": logging.ERROR,
}


def get_logger(layer: str) -> logging.Logger:
    """The logger of one layer: ``kafkacore.<layer>`` (``client``, ``producer``...)."""
    if not layer or not layer.replace("_", "").replace(".", "").isalnum():
        raise ValueError(f"get_logger: {layer!r} is not a layer name like 'producer'")
    return logging.getLogger(f"{ROOT_LOGGER}.{layer}")


class Redactor:
    """Replaces every secret string with ``***`` in a text."""

    __slots__ = ("_secrets",)

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # Longest first, so a secret containing another is masked whole.
        self._secrets = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, "***")
        return text


def describe_error(error: object) -> str:
    """``Type: message``, followed by the chain of causes that add something."""
    if not isinstance(error, BaseException):
        return str(error)
    parts = [f"{type(error).__name__}: {error}"]
    seen = {id(error)}
    cause = error.__cause__
    while cause is not None and id(cause) not in seen and len(parts) < 4:
        seen.add(id(cause))
        text = str(cause)
        if text and not any(text in p for p in parts):
            parts.append(f"{type(cause).__name__}: {text}")
        cause = cause.__cause__
    return " <- ".join(parts)


class ClientLog:
    """A trace hook of :class:`~kafkacore.client.KafkaClientCore` that logs.

    One line per connection state change, retry and error (see the module
    docstring); ``send``/``complete`` traces only at DEBUG, and only when
    DEBUG is enabled (they are per request).
    """

    __slots__ = ("_logger", "_prefix", "_redact")

    def __init__(
        self,
        *,
        client_id: str,
        secrets: Iterable[str] = (),
        logger: logging.Logger | None = None,
    ) -> None:
        self._logger = logger if logger is not None else get_logger("client")
        self._prefix = f"[{client_id}] "
        self._redact = Redactor(secrets)

    def __call__(self, name: str, fields: Mapping[str, object]) -> None:
        logger = self._logger
        level = self._level(name, fields)
        if not logger.isEnabledFor(level):
            return
        try:
            text = self._format(name, fields)
        except Exception:  # a log line must never break the core's step
            text = f"{name} " + " ".join(f"{k}={v!r}" for k, v in fields.items())
        logger.log(level, "%s", self._redact(self._prefix + text))

    @staticmethod
    def _level(name: str, fields: Mapping[str, object]) -> int:
        if isinstance(fields.get("error"), RequestCancelled):
            # Our own close or cancel, not a fault: a normal shutdown with a
            # refresh in flight must not log a warning.
            return logging.DEBUG
        if name == "connection_state":
            if fields.get("error") is not None:
                return logging.WARNING
            return logging.INFO if fields.get("state") == "ready" else logging.DEBUG
        if name == "telemetry":
            # Stopped by a broker's error: INFO. A broker without a telemetry
            # plugin (the common case) stops it too, quietly.
            stopped = fields.get("state") == "disabled" and fields.get("error") is not None
            offered = not isinstance(fields.get("error"), NoCommonVersionError)
            return logging.INFO if stopped and offered else logging.DEBUG
        return _LEVELS.get(name, logging.DEBUG)

    @staticmethod
    def _format(name: str, f: Mapping[str, object]) -> str:
        error = f.get("error")
        why = "" if error is None else f": {describe_error(error)}"
        if name == "connect":
            return f"connecting to {f['peer']} (lane {f['lane']}, connection {f['conn_id']})"
        if name == "connection_state":
            state = f["state"]
            where = f"{f['peer']} (lane {f['lane']}, connection {f['conn_id']})"
            if state == "closed":
                return f"connection to {where} closed{why}"
            return f"connection to {where} is {state}"
        if name == "reconnect_backoff":
            return (
                f"{f['peer']} failed {f['failures']} time(s) in a row; next connection "
                f"in {_ms(f['delay_ms'])}{why}"
            )
        if name == "metadata_request":
            topics = f.get("topics")
            which = "all topics" if topics is None else f"topics {topics}"
            return f"metadata refresh for {which}"
        if name == "metadata_updated":
            line = f"metadata from {f['source']}: {f['brokers']} broker(s), {f['topics']} topic(s)"
            if f.get("incomplete"):
                line += (
                    f"; a leader or topic is missing (asked again after {_ms(f['retry_in_ms'])})"
                )
            return line
        if name == "metadata_failed":
            return (
                f"metadata refresh failed ({f['attempts']} in a row); retrying no sooner "
                f"than {_ms(f['retry_in_ms'])}{why}"
            )
        if name == "topic_error":
            return f"topic {f['topic']!r} cannot be used{why}"
        if name == "coordinator_retry":
            kind = "group" if f["key_type"] == CoordinatorType.GROUP else "transactional id"
            return (
                f"no coordinator for {kind} {f['key']!r} ({f['misses']} lookup(s)); "
                f"looking again in {_ms(f['delay_ms'])}{why}"
            )
        if name == "rebootstrap":
            return f"rebootstrapping from bootstrap_servers: {f['reason']}"
        if name == "bootstrap_failed":
            return f"bootstrap failed, still trying{why}"
        if name == "authentication_failed":
            return f"authentication with {f['peer']} failed; the client stops retrying{why}"
        if name == "send":
            return (
                f"request #{f['id']} (API {f['api_key']} v{f['version']}) to node "
                f"{f['node_id']} lane {f['lane']}"
            )
        if name == "telemetry":
            return f"client telemetry (KIP-714): {f['old']} -> {f['state']} ({f['why']}){why}"
        if name == "complete":
            return f"request #{f['id']} (API {f['api_key']}) done{why}"
        return f"{name} " + " ".join(f"{k}={v!r}" for k, v in f.items())


def _ms(value: object) -> str:
    return f"{value:.0f} ms" if isinstance(value, int | float) else "?"


def attach_client_log(core: object) -> ClientLog | None:
    """Attach a :class:`ClientLog` to the client core ``core`` is, or wraps.

    ``core`` is a :class:`~kafkacore.client.KafkaClientCore`, or a core with
    one as its ``client`` attribute (producer, consumer). Idempotent; None
    when there is no client core to attach to.
    """
    client = core if isinstance(core, KafkaClientCore) else getattr(core, "client", None)
    if not isinstance(client, KafkaClientCore):
        return None
    for hook in client.trace_hooks:
        if isinstance(hook, ClientLog):
            return hook
    log = ClientLog(client_id=client.config.client_id, secrets=client.config.secrets)
    client.add_trace(log)
    return log


def log_event(
    logger: logging.Logger,
    event: object,
    *,
    redact: Callable[[str], str] | None = None,
    level: int | None = None,
) -> None:
    """One line for a core event: WARNING if it has a non-None ``error``, else DEBUG.

    ``level`` overrides that choice; ``redact`` scrubs the line (pass a
    :class:`Redactor` built from ``ClientConfig.secrets``).
    """
    error = getattr(event, "error", None)
    chosen = level if level is not None else (logging.WARNING if error else logging.DEBUG)
    if not logger.isEnabledFor(chosen):
        return
    name = type(event).__name__
    if dataclasses.is_dataclass(event) and not isinstance(event, type):
        shown = [
            f"{f.name}={_short(getattr(event, f.name))}"
            for f in dataclasses.fields(event)
            if f.name != "error"
        ]
        text = f"{name}({', '.join(shown)})"
    else:
        text = name
    if error:
        text += f": {describe_error(error)}"
    logger.log(chosen, "%s", redact(text) if redact is not None else text)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def logged(
    sink: Callable[[object], None],
    layer: str,
    *,
    secrets: Iterable[str] = (),
) -> Callable[[object], None]:
    """``sink`` that also logs every event on ``kafkacore.<layer>`` (see :func:`log_event`)."""
    logger = get_logger(layer)
    redact = Redactor(secrets)

    def on_event(event: object) -> None:
        log_event(logger, event, redact=redact)
        sink(event)

    return on_event

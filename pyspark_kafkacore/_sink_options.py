"""The options of a ``format("kafkacore")`` write, checked on the driver.

Theory of operation
-------------------
Spark hands the sink a case-insensitive string map. :func:`parse_sink_options`
turns it into a frozen :class:`SinkOptions` before any data moves, so every
mistake is an error on the driver that names the option: a missing
``kafka.bootstrap.servers``, a ``kafka.*`` key kafkacore does not know
(through :func:`~pyspark_kafkacore._kafka_params.kafka_options`), a producer
setting kafkacore rejects (the producer configuration is built once here to
find out), or an exactly-once option that does not fit.

Options beyond the JVM connector (which has no exactly-once sink):

``exactlyOnce``
    ``true``: every task writes inside one Kafka transaction that the driver
    commits (see :mod:`pyspark_kafkacore._txn`). Default ``false``: at least
    once, like the connector.
``transactionalIdPrefix``
    Start of the transactional ids (``<prefix>-<write id>-<task partition>``);
    default ``spark-kafkacore``. Set it where ACLs grant transactional ids by
    prefix.
``markerTopic``
    Streams with ``exactlyOnce``: the topic whose partition 0 keys the
    per-task batch markers (consumer-group offsets). Default: the ``topic``
    option; required when the topic comes from a column.

SinkOptions are pickled to the executors with the writer, so they hold only
plain values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkacore.client import ClientConfig
from kafkacore.producer.config import split_options
from pyspark_kafkacore._kafka_params import KafkaOptionError, kafka_options

__all__ = [
    "DEFAULT_TRANSACTIONAL_ID_PREFIX",
    "SinkOptionError",
    "SinkOptions",
    "parse_sink_options",
]

DEFAULT_TRANSACTIONAL_ID_PREFIX = "spark-kafkacore"

_CLIENT_FIELDS = frozenset(ClientConfig.__dataclass_fields__)


class SinkOptionError(ValueError):
    """A write option that cannot be used; the message names it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SinkOptions:
    """What a write needs, parsed from Spark's options (see the module docstring)."""

    topic: str | None
    exactly_once: bool
    transactional_id_prefix: str
    marker_topic: str | None
    # kafkacore producer keyword options (bootstrap_servers included).
    producer: dict[str, Any] = field(default_factory=dict)

    @property
    def client(self) -> dict[str, Any]:
        """The connection-level subset of :attr:`producer` (for a client or a consumer)."""
        return {k: v for k, v in self.producer.items() if k in _CLIENT_FIELDS}

    @property
    def transaction_timeout_ms(self) -> int:
        return int(self.producer.get("transaction_timeout_ms", 60000))

    @property
    def retry_backoff_ms(self) -> int:
        return int(self.producer.get("retry_backoff_ms", 100))


def _flag(options: Mapping[str, str], name: str) -> bool:
    raw = options.get(name)
    if raw is None:
        return False
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise SinkOptionError(f"option {name!r}: expected true or false, got {raw!r}")
    return text == "true"


def _text(options: Mapping[str, str], name: str) -> str | None:
    raw = options.get(name)
    if raw is None:
        return None
    text = str(raw).strip()
    if not text:
        raise SinkOptionError(f"option {name!r} is empty; give a value or leave it out")
    return text


def _producer_options(options: Mapping[str, str]) -> dict[str, Any]:
    try:
        return kafka_options(options, "producer")
    except KafkaOptionError as exc:
        raise SinkOptionError(str(exc)) from None


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Check Spark's write options; raise :class:`SinkOptionError` naming the first bad one."""
    if not options.get("kafka.bootstrap.servers"):
        raise SinkOptionError(
            "option 'kafka.bootstrap.servers' is required (the brokers to write to, "
            "host:port[,host:port...])"
        )
    topic = _text(options, "topic")
    exactly_once = _flag(options, "exactlyOnce")
    prefix = _text(options, "transactionalIdPrefix")
    marker = _text(options, "markerTopic")
    if not exactly_once:
        for name, given in (("transactionalIdPrefix", prefix), ("markerTopic", marker)):
            if given is not None:
                raise SinkOptionError(
                    f"option {name!r} only applies with exactlyOnce=true; set that too or drop it"
                )
    producer = _producer_options(options)
    if exactly_once:
        # A transactional producer needs idempotence, which needs acks=all.
        if producer.get("enable_idempotence") is False:
            raise SinkOptionError(
                "option 'kafka.enable.idempotence'=false cannot be used with exactlyOnce=true "
                "(transactions need the idempotent producer)"
            )
        if producer.get("acks", "all") not in ("all", -1):
            raise SinkOptionError(
                f"option 'kafka.acks'={producer['acks']!r} cannot be used with exactlyOnce=true "
                "(transactions need acks=all)"
            )
    check = dict(producer)
    if exactly_once:
        check["transactional_id"] = "check"
    try:
        config = split_options("format('kafkacore')", check)
        ClientConfig(**config.client)
    except (TypeError, ValueError) as exc:
        raise SinkOptionError(f"a kafka.* option has a value kafkacore refuses: {exc}") from None
    return SinkOptions(
        topic=topic,
        exactly_once=exactly_once,
        transactional_id_prefix=prefix or DEFAULT_TRANSACTIONAL_ID_PREFIX,
        marker_topic=marker if marker is not None else topic,
        producer=producer,
    )

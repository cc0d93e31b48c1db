"""Errors the producer raises or fails deliveries with (beside kafkacore.errors)."""

from __future__ import annotations

from kafkacore.errors import ConfigError, KafkaError, KafkaTimeoutError, LocalProtocolError
from kafkacore.protocol.error_codes import MessageTooLargeError

__all__ = [
    "BufferExhaustedError",
    "ProducerClosedError",
    "ProducerConfigError",
    "ProducerFencedError",
    "RecordTooLargeError",
    "TransactionAbortedError",
    "TransactionStateError",
]


class ProducerConfigError(ConfigError):
    """A producer option is wrong: a :class:`~kafkacore.errors.ConfigError`
    (a ValueError, as every config mistake)."""


class RecordTooLargeError(LocalProtocolError, MessageTooLargeError):
    """A record is larger than ``max_request_size`` or ``buffer_memory``.

    Also the broker's MESSAGE_TOO_LARGE class (code 10), as Java's
    ``RecordTooLargeException`` is both, so ``except MessageSizeTooLargeError``
    (kafka-python's and aiokafka's name) catches the producer's own refusal."""


class BufferExhaustedError(KafkaTimeoutError):
    """``buffer_memory`` stayed full for ``max_block_ms``."""


class ProducerClosedError(KafkaError):
    """The producer was closed before the record was delivered."""


class ProducerFencedError(KafkaError):
    """A newer producer with the same transactional.id took over (PRODUCER_FENCED /
    INVALID_PRODUCER_EPOCH). Fatal: close this producer."""


class TransactionStateError(LocalProtocolError):
    """A transaction call in the wrong state (e.g. commit before begin)."""


class TransactionAbortedError(KafkaError):
    """The record's transaction was aborted before the record was sent."""

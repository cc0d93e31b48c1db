"""The sans-IO producer: accumulator, sender, idempotence and transactions.

Entry point: :class:`ProducerCore` (implements
:class:`~kafkacore.client.driver.Driven` plus ``pull_events``), driven by the
transports' producers. See ``docs/producer.md``.
"""

from kafkacore.operation import Operation, OperationCompleted
from kafkacore.producer.accumulator import BufferFull
from kafkacore.producer.config import PRODUCER_OPTIONS, ProducerConfig
from kafkacore.producer.core import ProducerCore
from kafkacore.producer.errors import (
    BufferExhaustedError,
    ProducerClosedError,
    ProducerFencedError,
    RecordTooLargeError,
    TransactionAbortedError,
    TransactionStateError,
)
from kafkacore.producer.events import (
    BatchCompleted,
    BufferFreed,
    ProducerEvent,
)
from kafkacore.producer.handles import RecordMetadata
from kafkacore.producer.idempotence import IdState
from kafkacore.producer.serde import PreparedRecord, prepare_record
from kafkacore.producer.transaction import TxnState

__all__ = [
    "PRODUCER_OPTIONS",
    "BatchCompleted",
    "BufferExhaustedError",
    "BufferFreed",
    "BufferFull",
    "IdState",
    "Operation",
    "OperationCompleted",
    "PreparedRecord",
    "ProducerClosedError",
    "ProducerConfig",
    "ProducerCore",
    "ProducerEvent",
    "ProducerFencedError",
    "RecordMetadata",
    "RecordTooLargeError",
    "TransactionAbortedError",
    "TransactionStateError",
    "TxnState",
    "prepare_record",
]

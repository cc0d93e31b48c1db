"""kafkacore: a sans-IO Apache Kafka client core.

Nothing here opens a socket, reads a clock, starts a thread or draws a random
number: bytes, time (``now=``) and randomness (an injected ``random.Random``)
go in; intents (open, write, close) and events come out. The transports
(``kafkacore.transports``: selector, asyncio, trio) drive these machines with
real sockets; ``kafkacore.testing`` starts a local Kafka for tests.

The blocking clients most users want are importable from here:
``from kafkacore import KafkaProducer, KafkaConsumer, KafkaAdminClient``.
They live in :mod:`kafkacore.transports.selector` and are imported lazily,
on first use of the name, so ``import kafkacore`` alone still imports no
socket, thread or event-loop module (a gate test checks it): the sans-IO
core never depends on a transport.

The machines, from the bottom up:

- :class:`KafkaClientCore`: connections (ApiVersions, SASL, correlation,
  in-flight limits, deadlines, backoff), cluster metadata and routing;
- :class:`ProducerCore`: batching, partitioning, idempotence, transactions;
- :class:`ConsumerCore`: fetch sessions, offsets, group membership.

Subpackages: :mod:`kafkacore.protocol` (generated codec),
:mod:`kafkacore.records` (record batches and compression),
:mod:`kafkacore.assignors`, :mod:`kafkacore.partitioner`,
:mod:`kafkacore.group`, :mod:`kafkacore.errors`.
"""

from typing import TYPE_CHECKING, Any

from kafkacore.client import (
    AnyNode,
    ClientConfig,
    ClusterMetadata,
    Controller,
    GroupCoordinator,
    KafkaClientCore,
    Node,
    PartitionLeader,
    TopicPartition,
    TransactionCoordinator,
)
from kafkacore.consumer import (
    ConsumerConfig,
    ConsumerCore,
    ConsumerRecord,
    OffsetAndMetadata,
    PartitionBatch,
)
from kafkacore.errors import (
    AuthenticationError,
    BrokerError,
    ConfigError,
    DecodeError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    LocalProtocolError,
    NoBrokersAvailable,
    NoCommonVersionError,
    RemoteProtocolError,
    RequestCancelled,
    UnknownOptionError,
)
from kafkacore.producer import ProducerConfig, ProducerCore, RecordMetadata

if TYPE_CHECKING:
    from kafkacore.transports.selector import (
        KafkaAdminClient,
        KafkaClient,
        KafkaConsumer,
        KafkaProducer,
    )

__version__ = "0.1.0"

__all__ = [
    "AnyNode",
    "AuthenticationError",
    "BrokerError",
    "ClientConfig",
    "ClusterMetadata",
    "ConfigError",
    "ConsumerConfig",
    "ConsumerCore",
    "ConsumerRecord",
    "Controller",
    "DecodeError",
    "GroupCoordinator",
    "KafkaAdminClient",
    "KafkaClient",
    "KafkaClientCore",
    "KafkaConnectionError",
    "KafkaConsumer",
    "KafkaError",
    "KafkaProducer",
    "KafkaTimeoutError",
    "LocalProtocolError",
    "NoBrokersAvailable",
    "NoCommonVersionError",
    "Node",
    "OffsetAndMetadata",
    "PartitionBatch",
    "PartitionLeader",
    "ProducerConfig",
    "ProducerCore",
    "RecordMetadata",
    "RemoteProtocolError",
    "RequestCancelled",
    "TopicPartition",
    "TransactionCoordinator",
    "UnknownOptionError",
    "__version__",
]

# The blocking clients, resolved on first access (PEP 562) so that importing
# the core never imports the selector transport (sockets, threads).
_BLOCKING_CLIENTS = frozenset({"KafkaAdminClient", "KafkaClient", "KafkaConsumer", "KafkaProducer"})


def __getattr__(name: str) -> Any:
    if name in _BLOCKING_CLIENTS:
        import importlib

        return getattr(importlib.import_module("kafkacore.transports.selector"), name)
    raise AttributeError(f"module 'kafkacore' has no attribute {name!r}")

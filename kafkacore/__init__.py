"""kafkacore: a sans-IO Apache Kafka client core.

Nothing here opens a socket, reads a clock, starts a thread or draws a random
number: bytes, time (``now=``) and randomness (an injected ``random.Random``)
go in; intents (open, write, close) and events come out. The transports in
the separate ``transports`` package drive these machines with real sockets.

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
    DecodeError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    LocalProtocolError,
    NoBrokersAvailable,
    NoCommonVersionError,
    RemoteProtocolError,
    RequestCancelled,
)
from kafkacore.producer import ProducerConfig, ProducerCore, RecordMetadata

__version__ = "0.1.0"

__all__ = [
    "AnyNode",
    "AuthenticationError",
    "BrokerError",
    "ClientConfig",
    "ClusterMetadata",
    "ConsumerConfig",
    "ConsumerCore",
    "ConsumerRecord",
    "Controller",
    "DecodeError",
    "GroupCoordinator",
    "KafkaClientCore",
    "KafkaConnectionError",
    "KafkaError",
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
    "__version__",
]

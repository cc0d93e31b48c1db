"""kafkacore: a sans-IO Apache Kafka client core.

Nothing here opens a socket, reads a clock, starts a thread or draws a random
number: bytes, time (``now=``) and randomness (an injected ``random.Random``)
go in; intents (open, write, close) and events come out. The transports
(``kafkacore.transports``: selector, asyncio, trio) drive these machines with
real sockets; ``kafkacore.testing`` starts a local Kafka for tests.

The blocking clients most users want are importable from here:
``from kafkacore import KafkaProducer, KafkaConsumer, KafkaAdminClient``.
They live in :mod:`kafkacore.transports.selector`. Every name here but the
errors is imported lazily, on first use of the name, so ``import kafkacore``
alone imports no socket, thread or event-loop module (a gate test checks
it): the sans-IO core never depends on a transport; nor does it load the
client, producer or consumer machines a program does not use
(tests/packaging/test_lazy_imports.py pins it).

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

if TYPE_CHECKING:
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
    from kafkacore.producer import ProducerConfig, ProducerCore, RecordMetadata
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

# Everything but the errors is resolved on first access (PEP 562): a
# program that only produces never loads the consumer's machines (nor the
# admin's, the share consumer's), and importing the core never imports the
# selector transport (sockets, threads). Each name says where it lives: a
# core subpackage, or (for the blocking clients) the selector transport.
_SELECTOR = "transports.selector"
_LAZY: dict[str, str] = {
    **dict.fromkeys(
        (
            "AnyNode",
            "ClientConfig",
            "ClusterMetadata",
            "Controller",
            "GroupCoordinator",
            "KafkaClientCore",
            "Node",
            "PartitionLeader",
            "TopicPartition",
            "TransactionCoordinator",
        ),
        "client",
    ),
    **dict.fromkeys(
        (
            "ConsumerConfig",
            "ConsumerCore",
            "ConsumerRecord",
            "OffsetAndMetadata",
            "PartitionBatch",
        ),
        "consumer",
    ),
    **dict.fromkeys(("ProducerConfig", "ProducerCore", "RecordMetadata"), "producer"),
    **dict.fromkeys(
        ("KafkaAdminClient", "KafkaClient", "KafkaConsumer", "KafkaProducer"), _SELECTOR
    ),
}

if not TYPE_CHECKING:  # type checkers read the imports at the top

    def __getattr__(name: str) -> Any:
        where = _LAZY.get(name)
        if where is None:
            raise AttributeError(f"module 'kafkacore' has no attribute {name!r}")
        import importlib

        if where == _SELECTOR:
            # Named in full, by string: the core never imports a transport
            # (tests/test_gates.py); only these four names reach it.
            module = importlib.import_module("kafkacore.transports.selector")
        else:
            module = importlib.import_module(f"kafkacore.{where}")
        value = getattr(module, name)
        globals()[name] = value  # later lookups skip this hook
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_LAZY})

"""The sans-IO Kafka client core: connections, SASL, metadata, routing.

Entry point: :class:`KafkaClientCore` (implements
:class:`~kafkacore.client.driver.Driven`). See ``docs/client.md``.
"""

from kafkacore.client.config import ClientConfig
from kafkacore.client.connection import ConnectionState
from kafkacore.client.core import DEFAULT_LANE, KafkaClientCore, TraceHook
from kafkacore.client.events import (
    AuthenticationFailed,
    BootstrapFailed,
    ClientEvent,
    ConnectionStateChanged,
    CredentialsNeeded,
    Event,
    MetadataUpdated,
    MetadataUpdateFailed,
    RequestCompleted,
)
from kafkacore.client.handles import MetadataWaiter, RequestHandle
from kafkacore.client.metadata import (
    BrokerMetadata,
    ClusterMetadata,
    PartitionMetadata,
    TopicPartition,
)
from kafkacore.client.metrics import ClientMetrics, LatencySummary
from kafkacore.client.routing import (
    AnyNode,
    Controller,
    GroupCoordinator,
    Node,
    PartitionLeader,
    Target,
    TransactionCoordinator,
)
from kafkacore.client.sasl import SaslMechanism

__all__ = [
    "DEFAULT_LANE",
    "AnyNode",
    "AuthenticationFailed",
    "BootstrapFailed",
    "BrokerMetadata",
    "ClientConfig",
    "ClientEvent",
    "ClientMetrics",
    "ClusterMetadata",
    "ConnectionState",
    "ConnectionStateChanged",
    "Controller",
    "CredentialsNeeded",
    "Event",
    "GroupCoordinator",
    "KafkaClientCore",
    "LatencySummary",
    "MetadataUpdateFailed",
    "MetadataUpdated",
    "MetadataWaiter",
    "Node",
    "PartitionLeader",
    "PartitionMetadata",
    "RequestCompleted",
    "RequestHandle",
    "SaslMechanism",
    "Target",
    "TopicPartition",
    "TraceHook",
    "TransactionCoordinator",
]

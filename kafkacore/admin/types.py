"""Arguments and results of the topic, cluster, config and offset commands.

Arguments check themselves when built (``TypeError``/``ValueError`` naming
the field); results are small frozen dataclasses. Enum values are Kafka's
own (kafka-clients ``ConfigResource.Type``, ``ConfigEntry.ConfigSource``,
``ConfigDef.Type``, ``AlterConfigOp.OpType``), since they travel on the wire.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from kafkacore.admin._checks import check_int, check_mapping, check_name, check_str
from kafkacore.admin.acl import AclOperation
from kafkacore.client.metadata import TopicPartition

__all__ = [
    "AbortTransactionSpec",
    "AlterConfigOp",
    "AlterConfigOpType",
    "BrokerNode",
    "ClusterDescription",
    "ConfigEntry",
    "ConfigResource",
    "ConfigResourceType",
    "ConfigSource",
    "ConfigSynonym",
    "ConfigType",
    "CreatedTopic",
    "DeletedRecords",
    "ElectionType",
    "ListedOffset",
    "LogDirDescription",
    "NewPartitions",
    "NewTopic",
    "OffsetSpec",
    "PartitionReassignment",
    "ProducerState",
    "ReplicaInfo",
    "TopicDescription",
    "TopicListing",
    "TopicPartitionInfo",
    "TransactionDescription",
    "TransactionListing",
    "TransactionListings",
    "TransactionState",
]


# ------------------------------------------------------------------ topics
@dataclass(frozen=True, slots=True)
class NewTopic:
    """A topic to create. -1 partitions or replication factor: the broker's default
    (CreateTopics v4+); ``replica_assignments`` maps each partition to its brokers
    and then replaces both counts."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    replica_assignments: Mapping[int, Sequence[int]] | None = field(default=None, hash=False)
    configs: Mapping[str, str] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        check_name("NewTopic.name", self.name)
        if check_int("NewTopic.num_partitions", self.num_partitions, minimum=-1) == 0:
            raise ValueError("NewTopic.num_partitions: 0 partitions; give 1 or more, or -1")
        if check_int("NewTopic.replication_factor", self.replication_factor, minimum=-1) == 0:
            raise ValueError("NewTopic.replication_factor: 0 replicas; give 1 or more, or -1")
        if self.replica_assignments is not None:
            self._check_assignments(self.replica_assignments)
        if self.configs is not None:
            for key, value in check_mapping("NewTopic.configs", self.configs).items():
                check_str("NewTopic.configs key", key)
                check_str(f"NewTopic.configs[{key!r}]", value, empty=True)

    def _check_assignments(self, assignments: object) -> None:
        mapping = check_mapping("NewTopic.replica_assignments", assignments)
        if not mapping:
            raise ValueError("NewTopic.replica_assignments: empty; leave it None instead")
        if self.num_partitions != -1 or self.replication_factor != -1:
            raise ValueError(
                "NewTopic: give replica_assignments or the partition and replica counts, "
                "not both (the assignment decides both)"
            )
        for partition, brokers in mapping.items():
            check_int("NewTopic.replica_assignments partition", partition, minimum=0)
            _check_brokers(f"NewTopic.replica_assignments[{partition}]", brokers)


def _check_brokers(what: str, brokers: object) -> None:
    if isinstance(brokers, str | bytes) or not isinstance(brokers, Sequence) or not brokers:
        raise TypeError(f"{what}: expected a non-empty sequence of broker ids, got {brokers!r}")
    for broker in brokers:
        check_int(f"{what} broker id", broker, minimum=0)
    if len(set(brokers)) != len(brokers):
        raise ValueError(f"{what}: a broker is listed twice in {list(brokers)}")


@dataclass(frozen=True, slots=True)
class NewPartitions:
    """Grow a topic to ``total_count`` partitions; ``new_assignments`` lists the
    brokers of each new partition (None: the broker decides)."""

    total_count: int
    new_assignments: Sequence[Sequence[int]] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        check_int("NewPartitions.total_count", self.total_count, minimum=1)
        if self.new_assignments is not None:
            if isinstance(self.new_assignments, str | bytes) or not isinstance(
                self.new_assignments, Sequence
            ):
                raise TypeError(
                    "NewPartitions.new_assignments: expected a sequence of broker-id lists, "
                    f"got {self.new_assignments!r}"
                )
            for i, brokers in enumerate(self.new_assignments):
                _check_brokers(f"NewPartitions.new_assignments[{i}]", brokers)


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatedTopic:
    """What the broker made (CreateTopics v5+ fills the counts and configs; v7+ the id)."""

    name: str
    topic_id: uuid.UUID | None
    num_partitions: int | None
    replication_factor: int | None
    configs: Mapping[str, ConfigEntry] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicListing:
    name: str
    topic_id: uuid.UUID | None
    is_internal: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitionInfo:
    """One partition: leader (None when there is none), replicas and ISR by broker id."""

    partition: int
    leader: int | None
    leader_epoch: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    #: KIP-966's eligible leader replicas and last known ELR: only
    #: ``describe_topic_partitions`` reports them (None otherwise).
    eligible_leader_replicas: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicDescription:
    name: str
    topic_id: uuid.UUID | None
    is_internal: bool
    partitions: tuple[TopicPartitionInfo, ...]
    #: None unless asked for (``include_authorized_operations``).
    authorized_operations: frozenset[AclOperation] | None = None


# ------------------------------------------------------------------ cluster
@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerNode:
    node_id: int
    host: str
    port: int
    rack: str | None = None
    #: DescribeCluster v2+ with ``include_fenced_brokers`` (KIP-1073).
    is_fenced: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterDescription:
    cluster_id: str | None
    controller_id: int | None
    brokers: tuple[BrokerNode, ...]
    authorized_operations: frozenset[AclOperation] | None = None


# ------------------------------------------------------------------ configs
class ConfigResourceType(enum.IntEnum):
    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class ConfigSource(enum.IntEnum):
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8

    @classmethod
    def of(cls, value: int) -> ConfigSource:
        return cls(value) if value in cls._value2member_map_ else cls.UNKNOWN


class ConfigType(enum.IntEnum):
    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9

    @classmethod
    def of(cls, value: int) -> ConfigType:
        return cls(value) if value in cls._value2member_map_ else cls.UNKNOWN


@dataclass(frozen=True, slots=True)
class ConfigResource:
    """A topic, a broker (``name``: its id, or "" for the cluster-wide default),
    a broker's loggers, a client-metrics subscription or a group."""

    type: ConfigResourceType
    name: str

    #: Types whose named resource lives on one broker: requests go to that broker.
    PER_BROKER: ClassVar[frozenset[ConfigResourceType]] = frozenset(
        {ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER}
    )

    def __post_init__(self) -> None:
        if not isinstance(self.type, ConfigResourceType) or self.type is ConfigResourceType.UNKNOWN:
            raise TypeError(
                f"ConfigResource.type: expected a ConfigResourceType, got {self.type!r}"
            )
        check_str("ConfigResource.name", self.name, empty=self.type in self.PER_BROKER)
        if self.type in self.PER_BROKER and self.name and not self.name.isdigit():
            raise ValueError(
                f"ConfigResource.name: {self.type.name} resources are named by broker id "
                f"(or '' for the cluster default), got {self.name!r}"
            )

    @property
    def broker_id(self) -> int | None:
        """The broker that must answer for this resource, or None (any broker)."""
        return int(self.name) if self.type in self.PER_BROKER and self.name else None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource = ConfigSource.UNKNOWN
    is_read_only: bool = False
    is_sensitive: bool = False
    synonyms: tuple[ConfigSynonym, ...] = ()
    type: ConfigType = ConfigType.UNKNOWN
    documentation: str | None = None

    @property
    def is_default(self) -> bool:
        return self.source is ConfigSource.DEFAULT_CONFIG


class AlterConfigOpType(enum.IntEnum):
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True, slots=True)
class AlterConfigOp:
    """One incremental change: set a value, delete it (back to the default), or
    append to / subtract from a list value (KIP-339)."""

    name: str
    value: str | None = None
    op: AlterConfigOpType = AlterConfigOpType.SET

    def __post_init__(self) -> None:
        check_str("AlterConfigOp.name", self.name)
        if not isinstance(self.op, AlterConfigOpType):
            raise TypeError(f"AlterConfigOp.op: expected an AlterConfigOpType, got {self.op!r}")
        if self.op is AlterConfigOpType.DELETE:
            if self.value is not None:
                raise ValueError(f"AlterConfigOp({self.name!r}): DELETE takes no value")
        else:
            check_str(f"AlterConfigOp({self.name!r}).value", self.value, empty=True)


# ------------------------------------------------------------------ offsets
@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """Which offset ``list_offsets`` looks up: build with the class methods."""

    #: A timestamp (ms, >= 0) or one of ListOffsets' sentinels below.
    timestamp: int

    LATEST: ClassVar[int] = -1
    EARLIEST: ClassVar[int] = -2
    MAX_TIMESTAMP: ClassVar[int] = -3  # KIP-734, ListOffsets v7+
    EARLIEST_LOCAL: ClassVar[int] = -4  # KIP-405, v8+
    LATEST_TIERED: ClassVar[int] = -5  # KIP-1005, v9+

    def __post_init__(self) -> None:
        check_int("OffsetSpec.timestamp", self.timestamp, minimum=self.LATEST_TIERED)

    @classmethod
    def earliest(cls) -> OffsetSpec:
        return cls(cls.EARLIEST)

    @classmethod
    def latest(cls) -> OffsetSpec:
        return cls(cls.LATEST)

    @classmethod
    def max_timestamp(cls) -> OffsetSpec:
        """The offset of the record with the largest timestamp."""
        return cls(cls.MAX_TIMESTAMP)

    @classmethod
    def earliest_local(cls) -> OffsetSpec:
        return cls(cls.EARLIEST_LOCAL)

    @classmethod
    def latest_tiered(cls) -> OffsetSpec:
        return cls(cls.LATEST_TIERED)

    @classmethod
    def for_timestamp(cls, timestamp_ms: int) -> OffsetSpec:
        """The first offset whose record timestamp is >= ``timestamp_ms``."""
        check_int("OffsetSpec.for_timestamp: timestamp_ms", timestamp_ms, minimum=0)
        return cls(timestamp_ms)

    @property
    def min_version(self) -> int:
        """The lowest ListOffsets version that can carry this spec."""
        return {self.MAX_TIMESTAMP: 7, self.EARLIEST_LOCAL: 8, self.LATEST_TIERED: 9}.get(
            self.timestamp, 1
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ListedOffset:
    """An offset ``list_offsets`` found; ``timestamp`` is None where the broker has none."""

    offset: int | None
    timestamp: int | None
    leader_epoch: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class DeletedRecords:
    """The partition's log start offset after DeleteRecords."""

    low_watermark: int


# ------------------------------------------------------------------ replicas
class ElectionType(enum.IntEnum):
    """Which leader ``elect_leaders`` elects (KIP-460)."""

    PREFERRED = 0
    UNCLEAN = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaInfo:
    """One partition replica in a log directory."""

    size: int
    #: How far the replica is behind (a future replica being moved in), in bytes.
    offset_lag: int
    is_future: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class LogDirDescription:
    """A broker's log directory: its replicas and, from DescribeLogDirs v4, its space."""

    path: str
    error: BaseException | None
    replicas: Mapping[TopicPartition, ReplicaInfo]
    total_bytes: int | None = None
    usable_bytes: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionReassignment:
    """A reassignment in progress: the replicas now, and those being added and removed."""

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]


# ------------------------------------------------------------- transactions
class TransactionState(enum.Enum):
    """A transaction's state as its coordinator spells it (KIP-664)."""

    UNKNOWN = "Unknown"
    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"

    @classmethod
    def parse(cls, value: object) -> TransactionState:
        """A member, or its name or wire value in any case; unknown strings are UNKNOWN."""
        if isinstance(value, cls):
            return value
        if not isinstance(value, str):
            raise TypeError(f"transaction state: expected a TransactionState or str, got {value!r}")
        return _TXN_STATES.get(value.lower().replace("_", ""), cls.UNKNOWN)


_TXN_STATES = {m.value.lower(): m for m in TransactionState}


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerState:
    """A producer writing to a partition, as its leader sees it (DescribeProducers)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int | None
    coordinator_epoch: int | None
    #: Where its open transaction started, None without one.
    current_transaction_start_offset: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: TransactionState
    #: The broker that listed it (its transaction coordinator).
    coordinator: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionListings:
    """Transactions listed by every broker; ``errors`` names the brokers that failed."""

    transactions: tuple[TransactionListing, ...]
    errors: Mapping[int, BaseException] = field(default_factory=dict)

    def all(self) -> tuple[TransactionListing, ...]:
        """The transactions; raises the first broker's error when any broker failed."""
        for error in self.errors.values():
            raise error
        return self.transactions


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionDescription:
    coordinator: int | None
    state: TransactionState
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int | None
    partitions: frozenset[TopicPartition]


@dataclass(frozen=True, slots=True, kw_only=True)
class AbortTransactionSpec:
    """A hanging transaction to abort on one partition (KIP-664): the producer's
    id and epoch and its coordinator's epoch, as ``describe_producers`` shows them
    (a coordinator epoch it shows as None, before any marker: 0, as Kafka's
    ``kafka-transactions.sh`` does)."""

    partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int

    def __post_init__(self) -> None:
        if not isinstance(self.partition, tuple) or len(self.partition) != 2:
            raise TypeError(
                f"AbortTransactionSpec.partition: expected a TopicPartition, got {self.partition!r}"
            )
        check_int("AbortTransactionSpec.producer_id", self.producer_id, minimum=0)
        check_int("AbortTransactionSpec.producer_epoch", self.producer_epoch, minimum=0)
        check_int("AbortTransactionSpec.coordinator_epoch", self.coordinator_epoch, minimum=0)

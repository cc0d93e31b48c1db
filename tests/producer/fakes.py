"""Stand-ins for the client core in unit tests of the producer's small machines.

They record what a machine asks of the client and answer from fields the
test sets; no bytes, no broker. Tests that need the protocol use the
scripted log (:mod:`tests.producer.scripted`) instead.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, cast

from kafkacore.client import ClientConfig, KafkaClientCore, RequestHandle, TopicPartition
from kafkacore.errors import NoBrokersAvailable
from kafkacore.producer import BatchCompleted, ProducerConfig
from kafkacore.producer.accumulator import RecordAccumulator
from kafkacore.producer.batch import ProducerBatch
from kafkacore.producer.causes import FailureLog
from kafkacore.producer.coordinator import CoordinatorRequests
from kafkacore.producer.idempotence import IdState, ProducerIdentity
from kafkacore.producer.ledger import DeliveryLedger
from kafkacore.producer.producer_id import ProducerIds
from kafkacore.producer.sender import Sender
from kafkacore.producer.transaction import TransactionManager
from kafkacore.producer.waiting import MetadataAsks
from kafkacore.protocol import messages as m
from kafkacore.protocol.messages.produce_response import (
    PartitionProduceResponse,
    TopicProduceResponse,
)
from kafkacore.timers import Deadlines


class StubCluster:
    def __init__(self) -> None:
        self.partitions: dict[str, set[int]] = {}
        self.errors: dict[str, int] = {}
        self.failures: dict[str, Exception] = {}
        self.leaders: dict[TopicPartition, int] = {}
        #: The broker whose answer gave ``errors`` (ClusterMetadata.topic_errors_from).
        self.topic_errors_from: int | None = 0

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return self.partitions.get(topic)

    def topic_error(self, topic: str) -> int | None:
        return self.errors.get(topic)

    def topic_failure(self, topic: str) -> Exception | None:
        return self.failures.get(topic)

    def leader_for_partition(self, tp: TopicPartition) -> int | None:
        return self.leaders.get(tp)


class StubClient:
    """The client calls the producer's machines make, recorded."""

    def __init__(self, **config: Any) -> None:
        self.config = ClientConfig(**config)
        self.cluster = StubCluster()
        self.topics: set[str] = set()
        self.asked: list[float] = []
        self.cancelled: list[RequestHandle[Any]] = []
        self.unavailable: BaseException | None = None
        self.unreachable: NoBrokersAvailable | None = None
        self.features: dict[str, int] | None = None
        self.versions: dict[int, tuple[int, int]] | None = None

    @property
    def core(self) -> KafkaClientCore:
        return cast(KafkaClientCore, self)

    def add_topic(self, topic: str, *, now: float) -> None:
        self.topics.add(topic)

    def request_metadata_update(self, *, now: float) -> None:
        self.asked.append(now)

    def unavailable_cause(self) -> BaseException | None:
        return self.unavailable

    def unreachable_from_the_start(self) -> NoBrokersAvailable | None:
        return self.unreachable

    def describe_node(self, node: int) -> str:
        return f"broker {node}"

    def cancel(self, handle: RequestHandle[Any], *, now: float) -> bool:
        self.cancelled.append(handle)
        return True

    def finalized_features(self) -> dict[str, int] | None:
        return self.features

    def get_api_versions(self) -> dict[int, tuple[int, int]] | None:
        return self.versions


class RecordingSend:
    """``StackedMachine._request``'s shape: records each request and its callback."""

    def __init__(self) -> None:
        self.sent: list[tuple[Any, Any, dict[str, Any]]] = []
        self.handles: list[RequestHandle[Any]] = []

    def __call__(self, request: Any, on_done: Any, **kw: Any) -> RequestHandle[Any]:
        handle: RequestHandle[Any] = RequestHandle(
            id=len(self.sent) + 1, request=request, api_key=0, target=kw["target"], lane="x"
        )
        self.sent.append((request, on_done, kw))
        self.handles.append(handle)
        return handle

    @property
    def requests(self) -> list[Any]:
        return [request for request, _, _ in self.sent]

    def answer(
        self,
        response: Any = None,
        error: BaseException | None = None,
        *,
        now: float = 0.0,
        index: int = -1,
    ) -> None:
        """Complete a sent request (the last by default) as the client would."""
        _, on_done, _ = self.sent[index]
        on_done(error if error is not None else response, now)


T0, T1, T2 = (TopicPartition("t", p) for p in range(3))


class SenderRig:
    """A Sender with every collaborator real but the client (a StubClient)."""

    def __init__(self, *, transactional: bool = False, in_flight: int = 5, **options: Any) -> None:
        if transactional:
            options["transactional_id"] = "tx"
        options.setdefault("linger_ms", 5)
        self.cfg = ProducerConfig(**options)
        self.client = StubClient(max_in_flight_requests_per_connection=in_flight)
        self.identity = ProducerIdentity()
        self.txn = TransactionManager("tx") if transactional else None
        self.acc = RecordAccumulator(self.cfg, self.identity if self.cfg.idempotent else None)
        self.events: list[object] = []
        self.ledger = DeliveryLedger(self.acc, self.events.append, self.failed)
        self.send = RecordingSend()
        self.failures = failures = FailureLog()
        deadlines: Deadlines[Hashable] = Deadlines()
        coordinator = CoordinatorRequests(self.send, deadlines, lambda n: 1.0, transactional=False)
        self.ids = ProducerIds(
            self.cfg, self.identity, self.acc, self.ledger, coordinator, failures, lambda n: 1.0
        )
        self.asks = MetadataAsks(self.client.core, lambda n: 0.5)
        self.sender = Sender(
            self.cfg,
            self.client.core,
            self.acc,
            self.identity,
            self.txn,
            self.ledger,
            self.ids,
            self.asks,
            lambda n: 0.1 * 2 ** (n - 1),
            self.send,
        )
        for tp in (T0, T1, T2):
            self.client.cluster.leaders[tp] = tp.partition % 2  # t-0, t-2 on 0; t-1 on 1

    def failed(self, batch: ProducerBatch, error: BaseException) -> None:
        self.sender.batch_failed(batch, error)

    def id_state(self) -> IdState:
        return self.identity.state

    def ready(self, pid: int = 77, epoch: int = 0) -> None:
        self.identity.fire("request")
        self.identity.assign(pid, epoch)

    def append(self, tp: TopicPartition, n: int = 1, token: object = "r") -> ProducerBatch:
        batch = None
        for _ in range(n):
            batch = self.acc.append(tp, b"value", b"k", None, 1, token, 30, 0.0)
        assert batch is not None
        return batch

    def answer(
        self, parts: dict[TopicPartition, int], *, index: int = -1, now: float = 0.0, **kw: Any
    ) -> None:
        topics: dict[str, list[PartitionProduceResponse]] = {}
        for tp, code in parts.items():
            topics.setdefault(tp.topic, []).append(
                PartitionProduceResponse(index=tp.partition, error_code=code, base_offset=100, **kw)
            )
        response = m.ProduceResponse(
            responses=[
                TopicProduceResponse(name=t, partition_responses=p) for t, p in topics.items()
            ]
        )
        self.send.answer(response, now=now, index=index)

    @property
    def reports(self) -> list[BatchCompleted]:
        return [e for e in self.events if isinstance(e, BatchCompleted)]

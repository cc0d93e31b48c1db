"""Stand-ins for the client core in unit tests of the producer's small machines.

They record what a machine asks of the client and answer from fields the
test sets; no bytes, no broker. Tests that need the protocol use the
scripted log (:mod:`tests.producer.scripted`) instead.
"""

from __future__ import annotations

from typing import Any, cast

from kafkacore.client import ClientConfig, KafkaClientCore, RequestHandle, TopicPartition
from kafkacore.errors import NoBrokersAvailable


class StubCluster:
    def __init__(self) -> None:
        self.partitions: dict[str, set[int]] = {}
        self.errors: dict[str, int] = {}
        self.failures: dict[str, Exception] = {}
        self.leaders: dict[TopicPartition, int] = {}

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
        on_done(response, error, now)

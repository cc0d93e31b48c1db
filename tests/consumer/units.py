"""Helpers for the unit tests of the consumer's small machines: a real
ClusterMetadata fed a Metadata answer, a metadata client that records what
it was asked, and a sender that records requests for the test to answer.

No broker and no pump: each machine gets exactly the collaborators it
names, and the test plays the broker by calling ``on_done`` itself.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from kafkacore.client.metadata import ClusterMetadata, TopicPartition
from kafkacore.consumer.causes import CauseTracker
from kafkacore.consumer.operations import OperationTable
from kafkacore.consumer.poll_errors import PollErrors
from kafkacore.consumer.positions import SubscriptionState
from kafkacore.consumer.topics import TopicView
from kafkacore.errors import NoBrokersAvailable
from kafkacore.protocol import messages as m
from kafkacore.protocol.messages.metadata_response import (
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kafkacore.timers import Deadlines

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
U0 = TopicPartition("u", 0)
TOPIC_IDS = {"t": uuid.UUID(int=1), "u": uuid.UUID(int=2)}


def metadata(
    topics: dict[str, int] | None = None,
    *,
    brokers: tuple[int, ...] = (0, 1),
    leaders: dict[TopicPartition, int] | None = None,
    epochs: dict[TopicPartition, int] | None = None,
    errors: dict[str, int] | None = None,
) -> Any:
    """A Metadata answer: ``topics`` name -> partition count, leaders on broker 0."""
    topics = {"t": 2} if topics is None else topics
    leaders = leaders or {}
    epochs = epochs or {}
    out = [
        MetadataResponseTopic(
            name=name,
            topic_id=TOPIC_IDS.get(name, uuid.UUID(int=0)),
            partitions=[
                MetadataResponsePartition(
                    partition_index=p,
                    leader_id=leaders.get(TopicPartition(name, p), brokers[0]),
                    leader_epoch=epochs.get(TopicPartition(name, p), 0),
                    replica_nodes=list(brokers),
                    isr_nodes=list(brokers),
                )
                for p in range(count)
            ],
        )
        for name, count in topics.items()
    ]
    out.extend(
        MetadataResponseTopic(error_code=code, name=name) for name, code in (errors or {}).items()
    )
    return m.MetadataResponse(
        brokers=[MetadataResponseBroker(node_id=n, host="h", port=9092 + n) for n in brokers],
        cluster_id="c",
        controller_id=brokers[0],
        topics=out,
    )


class FakeClient:
    """The parts of the client core the consumer's machines call, recorded."""

    def __init__(self, answer: Any = None) -> None:
        self.cluster = ClusterMetadata(bootstrap_servers="h:9092")
        self._topics: frozenset[str] = frozenset()
        self.refreshes = 0
        self.unreachable: NoBrokersAvailable | None = None
        if answer is not None:
            self.update(answer)

    def update(self, answer: Any, now: float = 0.0) -> None:
        self.cluster.update_metadata(answer, now=now)

    @property
    def topics(self) -> frozenset[str]:
        return self._topics

    def set_topics(self, topics: Any, *, now: float) -> None:
        self._topics = frozenset(topics)

    def request_metadata_update(self, *, now: float) -> None:
        self.refreshes += 1

    def unreachable_from_the_start(self) -> NoBrokersAvailable | None:
        return self.unreachable


@dataclass
class Sent:
    request: Any
    on_done: Callable[[Any, float], None]
    target: Any
    lane: str
    timeout_ms: int | None
    build: Callable[[int], Any] | None

    def answer(self, response: Any, now: float = 0.0) -> None:
        self.on_done(response, now)

    def fail(self, error: BaseException, now: float = 0.0) -> None:
        self.on_done(error, now)


@dataclass
class RecordingSend:
    """A ``Send`` that keeps every request; the test answers them."""

    sent: list[Sent] = field(default_factory=list)

    def __call__(
        self,
        request: Any,
        on_done: Callable[[Any, float], None],
        *,
        now: float,
        target: Any,
        lane: str = "default",
        timeout_ms: int | None = None,
        max_version: int | None = None,
        build: Callable[[int], Any] | None = None,
    ) -> None:
        self.sent.append(Sent(request, on_done, target, lane, timeout_ms, build))

    def of(self, kind: type) -> list[Sent]:
        return [s for s in self.sent if isinstance(s.request, kind)]

    def pop(self) -> Sent:
        return self.sent.pop(0)


@dataclass
class World:
    """One consumer's shared state, as the facade wires it."""

    client: FakeClient
    deadlines: Deadlines[Hashable]
    errors: PollErrors
    events: list[object]
    dropped: list[TopicPartition]
    subs: SubscriptionState
    topics: TopicView
    causes: CauseTracker
    ops: OperationTable
    send: RecordingSend

    def run_due(self, now: float) -> None:
        """Run the callbacks of :class:`OperationTable` that are due (as the step does)."""
        from kafkacore.consumer.operations import Later

        for key in self.deadlines.pop_due(now):
            if isinstance(key, Later):
                self.ops.on_deadline(key, now)


def world(
    *,
    answer: Any = None,
    auto_offset_reset: str = "earliest",
    with_group: bool = True,
    retry_backoff_ms: int = 100,
    api_timeout_ms: int = 1000,
) -> World:
    client = FakeClient(metadata() if answer is None else answer)
    deadlines: Deadlines[Hashable] = Deadlines()
    errors = PollErrors()
    events: list[object] = []
    dropped: list[TopicPartition] = []
    subs = SubscriptionState(
        auto_offset_reset=auto_offset_reset,
        with_group=with_group,
        retry_backoff_ms=retry_backoff_ms,
        deadlines=deadlines,
        errors=errors,
        emit=events.append,
        invalidate=dropped.append,
    )
    causes = CauseTracker(client, now=0.0, api_timeout_ms=api_timeout_ms)
    ops = OperationTable(
        client=client,
        causes=causes,
        deadlines=deadlines,
        emit=events.append,
        retry_backoff_ms=retry_backoff_ms,
        api_timeout_ms=api_timeout_ms,
    )
    return World(
        client=client,
        deadlines=deadlines,
        errors=errors,
        events=events,
        dropped=dropped,
        subs=subs,
        topics=TopicView(client),
        causes=causes,
        ops=ops,
        send=RecordingSend(),
    )

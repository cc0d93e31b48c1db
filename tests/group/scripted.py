"""A scripted Requester for the membership machines' unit tests: requests
are kept in order and the test answers each one itself (a response, an
error, or nothing), so every branch of a member can be reached on purpose.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkacore.client.metadata import TopicPartition
from kafkacore.protocol import messages as m
from kafkacore.protocol.consumer_protocol import encode_assignment, encode_subscription
from kafkacore.protocol.messages.consumer_protocol_assignment import (
    ConsumerProtocolAssignment,
)
from kafkacore.protocol.messages.consumer_protocol_assignment import (
    TopicPartition as AssignmentTP,
)
from kafkacore.protocol.messages.consumer_protocol_subscription import (
    ConsumerProtocolSubscription,
)
from kafkacore.protocol.messages.join_group_response import JoinGroupResponseMember

#: The seam's callback: called with (answer, now), the answer a response or an error.
OnDone = Callable[[Any, float], None]


@dataclass
class Asked:
    request: Any
    on_done: OnDone
    timeout_ms: int | None
    build: Callable[[int], Any] | None

    def answer(self, response: Any, now: float = 0.0) -> None:
        self.on_done(response, now)

    def fail(self, error: BaseException, now: float = 0.0) -> None:
        self.on_done(error, now)


@dataclass
class Script:
    """A Requester that keeps requests for the test to answer."""

    asked: list[Asked] = field(default_factory=list)
    #: The coordinator's broker id: ``answered_by`` while an answer is handled,
    #: as a StackedMachine sets it (the member's errors carry it).
    coordinator: int = 7
    answered_by: int | None = None

    def request(
        self,
        request: Any,
        on_done: OnDone,
        *,
        target: Any,
        now: float,
        lane: str = "default",
        timeout_ms: int | None = None,
        max_version: int | None = None,
        build: Callable[[int], Any] | None = None,
    ) -> None:
        def answered(answer: Any, now: float) -> None:
            self.answered_by = self.coordinator
            try:
                on_done(answer, now)
            finally:
                self.answered_by = None

        self.asked.append(Asked(request, answered, timeout_ms, build))

    def take(self, kind: type) -> Asked:
        """The oldest request of ``kind`` (it must be there)."""
        for i, item in enumerate(self.asked):
            if isinstance(item.request, kind):
                return self.asked.pop(i)
        raise AssertionError(f"no {kind.__name__} was sent; sent: {self.kinds()}")

    def kinds(self) -> list[str]:
        return [type(a.request).__name__ for a in self.asked]

    def has(self, kind: type) -> bool:
        return any(isinstance(a.request, kind) for a in self.asked)


def assignment(*tps: TopicPartition) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return encode_assignment(
        ConsumerProtocolAssignment(
            assigned_partitions=[
                AssignmentTP(topic=t, partitions=sorted(ps)) for t, ps in sorted(by_topic.items())
            ]
        )
    )


def joined(
    member_id: str = "m1",
    *,
    generation: int = 1,
    leader: str = "leader",
    protocol: str = "range",
    members: dict[str, list[str]] | None = None,
) -> Any:
    """A successful JoinGroup answer; ``members`` (id -> topics) for a leader."""
    return m.JoinGroupResponse(
        error_code=0,
        generation_id=generation,
        protocol_name=protocol,
        leader=leader,
        member_id=member_id,
        members=[
            JoinGroupResponseMember(
                member_id=mid,
                metadata=encode_subscription(ConsumerProtocolSubscription(topics=topics)),
            )
            for mid, topics in (members or {}).items()
        ],
    )


def synced(*tps: TopicPartition, code: int = 0) -> Any:
    return m.SyncGroupResponse(error_code=code, assignment=assignment(*tps) if tps else b"")

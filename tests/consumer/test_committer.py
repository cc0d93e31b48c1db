"""Committer alone: the explicit, automatic and before-revoke paths, the
request a commit makes, and every kind of answer (retried, blanked, fenced,
failed)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest

from kafkacore.client.routing import GroupCoordinator
from kafkacore.consumer.committer import AUTO_COMMIT, Committer
from kafkacore.consumer.config import ConsumerConfig
from kafkacore.consumer.events import (
    CommitFailedError,
    OffsetAndMetadata,
    RebalanceInProgressCommitError,
)
from kafkacore.errors import KafkaConnectionError, KafkaTimeoutError, LocalProtocolError
from kafkacore.operation import OperationCompleted
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.error_codes import GroupAuthorizationFailedError
from kafkacore.protocol.messages.offset_commit_response import (
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from tests.consumer.units import T0, T1, World, metadata, world


@dataclass
class FakeMember:
    """What the committer asks of a group member."""

    stable: bool = True
    refusal: str | None = None
    holds: bool = True
    identity: tuple[int, str, str | None] = (4, "m-1", None)
    fenced: list[tuple[int, str, int]] = field(default_factory=list)

    def commit_identity(self) -> tuple[int, str, str | None]:
        return self.identity

    def commit_refusal(self) -> str | None:
        return self.refusal

    def on_commit_fenced(self, *, generation: int, member_id: str, code: int, now: float) -> bool:
        self.fenced.append((generation, member_id, code))
        return self.holds


def setup(
    member: FakeMember | None = None, *, answer: Any = None, **cfg: Any
) -> tuple[World, Committer]:
    cfg.setdefault("group_id", "g")
    cfg.setdefault("default_api_timeout_ms", 1000)
    config = ConsumerConfig(**cfg)
    w = world(answer=answer, retry_backoff_ms=config.retry_backoff_ms, api_timeout_ms=1000)
    committer = Committer(
        config,
        subs=w.subs,
        topics=w.topics,
        ops=w.ops,
        send=w.send,
        deadlines=w.deadlines,
        member=lambda: member,  # type: ignore[arg-type,return-value]
    )
    return w, committer


def answer(req: Any, codes: dict[Any, int] | None = None, *, by_id: bool = False) -> Any:
    codes = codes or {}
    return m.OffsetCommitResponse(
        topics=[
            OffsetCommitResponseTopic(
                name="" if by_id else t.name,
                topic_id=t.topic_id,
                partitions=[
                    OffsetCommitResponsePartition(
                        partition_index=p.partition_index,
                        error_code=codes.get((t.name, p.partition_index), 0),
                    )
                    for p in t.partitions
                ],
            )
            for t in req.topics
        ]
    )


def consumed(w: World, **positions: int) -> None:
    tps = {"t0": T0, "t1": T1}
    w.subs.assign(frozenset(tps[k] for k in positions))
    for name, offset in positions.items():
        w.subs.committed_found(tps[name], None, None)
        w.subs.reset_done(tps[name], offset, 2, 0)


def test_commit_needs_a_group_and_valid_offsets() -> None:
    _, alone = setup(group_id=None)
    with pytest.raises(LocalProtocolError, match="needs a group_id"):
        alone.commit({T0: 1}, 0.0, None)
    _, committer = setup()
    with pytest.raises(LocalProtocolError, match="offset -1 for"):
        committer.commit({T0: -1}, 0.0, None)
    with pytest.raises(LocalProtocolError, match="timeout_ms -5"):
        committer.commit({T0: 1}, 0.0, -5)


def test_an_explicit_commit_carries_the_identity_and_completes_with_the_map() -> None:
    member = FakeMember(identity=(7, "m-7", "static-1"))
    w, committer = setup(member)
    consumed(w, t0=3)
    handle = committer.commit({T0: OffsetAndMetadata(5, "meta", 2), T1: 9}, 0.0, None)
    sent = w.send.pop()
    req = sent.request
    assert sent.target == GroupCoordinator("g") and sent.lane == "group"
    assert (req.group_id, req.generation_id_or_member_epoch) == ("g", 7)
    assert (req.member_id, req.group_instance_id) == ("m-7", "static-1")
    assert req.topics[0].topic_id == uuid.UUID(int=1)
    parts = {p.partition_index: p for p in req.topics[0].partitions}
    assert (parts[0].committed_offset, parts[0].committed_leader_epoch) == (5, 2)
    assert (parts[0].committed_metadata, parts[1].committed_leader_epoch) == ("meta", -1)
    sent.answer(answer(req))
    assert handle.result() == {T0: OffsetAndMetadata(5, "meta", 2), T1: OffsetAndMetadata(9)}
    assert w.subs.parts[T0].committed_position == 5
    assert w.events == [OperationCompleted(handle=handle)]


def test_without_offsets_it_commits_what_was_handed_out() -> None:
    w, committer = setup()
    consumed(w, t0=3)
    committer.commit(None, 0.0, None)
    parts = w.send.pop().request.topics[0].partitions
    assert [(p.partition_index, p.committed_offset) for p in parts] == [(0, 3)]
    w2, committer2 = setup()
    handle = committer2.commit(None, 0.0, None)  # nothing handed out: nothing to send
    assert handle.result() == {} and not w2.send.sent


def test_without_an_identity_it_commits_as_a_simple_consumer() -> None:
    w, committer = setup(group_instance_id="static")
    committer.commit({T0: 1}, 0.0, None)
    req = w.send.pop().request
    assert (req.generation_id_or_member_epoch, req.member_id) == (-1, "")
    assert req.group_instance_id == "static"
    assert committer.identity() == (-1, "", "static")


def test_a_topic_metadata_does_not_know_waits_for_it() -> None:
    w, committer = setup(answer=metadata({"u": 1}))
    handle = committer.commit({T0: 1}, 0.0, None)
    assert not w.send.sent and w.client.topics == frozenset({"t"})
    w.client.update(metadata({"t": 2}))
    w.run_due(0.1)
    assert w.send.sent and not handle.done


def test_a_topic_that_never_appears_fails_at_the_deadline() -> None:
    w, committer = setup(answer=metadata({"u": 1}))
    handle = committer.commit({T0: 1}, 0.0, 250)
    for t in (0.1, 0.2):
        w.run_due(t)
    assert isinstance(handle.error, KafkaTimeoutError) and "no metadata for ['t']" in str(
        handle.error
    )


def test_a_rebalancing_member_refuses_locally() -> None:
    w, committer = setup(FakeMember(refusal="group 'g' is rebalancing"))
    handle = committer.commit({T0: 1}, 0.0, None)
    assert isinstance(handle.error, RebalanceInProgressCommitError)
    assert "is rebalancing" in str(handle.error) and not w.send.sent


def test_a_moved_coordinator_is_retried_after_the_backoff() -> None:
    w, committer = setup(retry_backoff_ms=100)
    handle = committer.commit({T0: 1}, 0.0, None)
    first = w.send.pop()
    first.answer(answer(first.request, {("t", 0): ErrorCode.NOT_COORDINATOR}))
    assert not w.send.sent and not handle.done
    w.run_due(0.05)
    assert not w.send.sent
    w.run_due(0.1)
    again = w.send.pop()
    again.answer(answer(again.request))
    assert handle.result() == {T0: OffsetAndMetadata(1)}


def test_a_failed_request_is_retried_until_the_deadline() -> None:
    w, committer = setup(retry_backoff_ms=400)
    handle = committer.commit({T0: 1}, 0.0, 1000)
    w.send.pop().fail(KafkaConnectionError("refused"), 0.0)
    w.run_due(0.4)
    w.send.pop().fail(KafkaConnectionError("refused"), 0.4)
    w.run_due(0.8)
    w.send.pop().fail(KafkaConnectionError("refused"), 0.8)  # next try would be past 1.0
    assert isinstance(handle.error, KafkaConnectionError)


def test_retriable_answers_until_the_deadline_fail_as_a_timeout() -> None:
    w, committer = setup(retry_backoff_ms=600)
    handle = committer.commit({T0: 1}, 0.0, 1000)
    sent = w.send.pop()
    sent.answer(answer(sent.request, {("t", 0): ErrorCode.REQUEST_TIMED_OUT}), 0.5)
    assert isinstance(handle.error, KafkaTimeoutError)
    assert "kept failing with retriable errors" in str(handle.error)


def test_metadata_too_large_is_retried_at_once_with_blank_metadata() -> None:
    w, committer = setup()
    handle = committer.commit({T0: OffsetAndMetadata(3, "m" * 10, 1)}, 0.0, None)
    sent = w.send.pop()
    sent.answer(answer(sent.request, {("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE}), 0.5)
    w.run_due(0.5)  # immediate: due at the time of the answer
    again = w.send.pop()
    assert again.request.topics[0].partitions[0].committed_metadata == ""
    again.answer(answer(again.request), 0.5)
    assert handle.result() == {T0: OffsetAndMetadata(3, "", 1)}


def test_a_fenced_commit_about_the_held_membership_fails_and_rejoins() -> None:
    member = FakeMember(holds=True)
    w, committer = setup(member)
    handle = committer.commit({T0: 1, T1: 2}, 0.0, None)
    sent = w.send.pop()
    codes = {("t", 0): ErrorCode.ILLEGAL_GENERATION, ("t", 1): ErrorCode.UNKNOWN_MEMBER_ID}
    sent.answer(answer(sent.request, codes))
    assert type(handle.error) is CommitFailedError and "was fenced" in str(handle.error)
    assert member.fenced == [(4, "m-1", ErrorCode.ILLEGAL_GENERATION)]  # the first decides


def test_a_fenced_commit_about_a_left_generation_is_a_rebalance_error() -> None:
    w, committer = setup(FakeMember(holds=False))
    handle = committer.commit({T0: 1}, 0.0, None)
    sent = w.send.pop()
    sent.answer(answer(sent.request, {("t", 0): ErrorCode.ILLEGAL_GENERATION}))
    assert isinstance(handle.error, RebalanceInProgressCommitError)
    assert "sent for generation 4, which this member has since left" in str(handle.error)


def test_a_commit_answered_rebalance_in_progress_tells_the_member() -> None:
    member = FakeMember(holds=True)
    w, committer = setup(member)
    handle = committer.commit({T0: 1}, 0.0, None)
    sent = w.send.pop()
    sent.answer(answer(sent.request, {("t", 0): ErrorCode.REBALANCE_IN_PROGRESS}))
    assert isinstance(handle.error, RebalanceInProgressCommitError)
    assert member.fenced == [(4, "m-1", ErrorCode.REBALANCE_IN_PROGRESS)]  # it rejoins at once


@pytest.mark.parametrize(
    ("code", "kind", "text"),
    [
        (ErrorCode.REBALANCE_IN_PROGRESS, RebalanceInProgressCommitError, "is rebalancing"),
        (ErrorCode.FENCED_INSTANCE_ID, CommitFailedError, "was fenced"),
        (ErrorCode.ILLEGAL_GENERATION, CommitFailedError, "was fenced"),
    ],
)
def test_fenced_answers_without_a_member_to_ask(code: int, kind: type, text: str) -> None:
    w, committer = setup(None)
    handle = committer.commit({T0: 1}, 0.0, None)
    sent = w.send.pop()
    sent.answer(answer(sent.request, {("t", 0): code}))
    assert type(handle.error) is kind and text in str(handle.error)


def test_other_errors_fail_the_commit_as_they_are() -> None:
    w, committer = setup()
    handle = committer.commit({T0: 1}, 0.0, None)
    sent = w.send.pop()
    sent.answer(answer(sent.request, {("t", 0): ErrorCode.GROUP_AUTHORIZATION_FAILED}))
    assert isinstance(handle.error, GroupAuthorizationFailedError)


def test_answers_name_topics_by_id_and_late_answers_are_ignored() -> None:
    w, committer = setup()
    handle = committer.commit({T0: 1}, 0.0, None)
    sent = w.send.pop()
    sent.answer(answer(sent.request, by_id=True))
    assert handle.result() == {T0: OffsetAndMetadata(1)}
    sent.answer(answer(sent.request, {("t", 0): ErrorCode.GROUP_AUTHORIZATION_FAILED}))
    assert handle.error is None  # done already: a duplicate answer changes nothing
    extra = answer(sent.request)
    extra.topics[0].partitions.append(
        OffsetCommitResponsePartition(partition_index=5, error_code=ErrorCode.NOT_COORDINATOR)
    )
    handle2 = committer.commit({T0: 2}, 0.0, None)
    w.send.pop().answer(extra)  # a partition we did not send is no reason to retry
    assert handle2.result() == {T0: OffsetAndMetadata(2)}


def test_commit_then_runs_on_either_outcome_and_skips_what_is_current() -> None:
    w, committer = setup()
    consumed(w, t0=3)
    ran: list[float] = []
    committer.commit_then(0.0, ran.append)
    assert ran == [] and len(w.send.sent) == 1
    w.send.pop().fail(KafkaConnectionError("x"), 0.0)
    for t in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
        w.run_due(t)
        if w.send.sent:
            sent = w.send.pop()
            sent.answer(answer(sent.request), t)
    assert ran and w.subs.parts[T0].committed_position == 3
    assert not any(isinstance(e, OperationCompleted) for e in w.events), "internal ops emitted"
    committer.commit_then(1.0, ran.append)  # nothing changed since: no request
    assert ran[-1] == 1.0 and not w.send.sent


def test_commit_then_without_auto_commit_or_group_goes_on_at_once() -> None:
    for cfg in ({"enable_auto_commit": False}, {"group_id": None}):
        w, committer = setup(**cfg)
        consumed(w, t0=3)
        ran: list[float] = []
        committer.commit_then(2.0, ran.append)
        assert ran == [2.0] and not w.send.sent


def test_auto_commit_every_interval_and_not_while_rebalancing() -> None:
    member = FakeMember(stable=False)
    w, committer = setup(member, auto_commit_interval_ms=1000, retry_backoff_ms=100)
    consumed(w, t0=3)
    committer.arm_auto_commit(0.0)
    assert w.deadlines.get(AUTO_COMMIT) == 1.0
    committer.maybe_auto_commit(0.5)  # not due
    assert not w.send.sent
    committer.maybe_auto_commit(1.0)  # due, but the group rebalances
    assert not w.send.sent and w.deadlines.get(AUTO_COMMIT) == pytest.approx(1.1)
    member.stable = True
    committer.maybe_auto_commit(1.1)
    assert len(w.send.sent) == 1 and w.deadlines.get(AUTO_COMMIT) == pytest.approx(2.1)
    committer.on_auto_commit_due(2.1)  # the first is still out: look again soon
    assert len(w.send.sent) == 1 and w.deadlines.get(AUTO_COMMIT) == pytest.approx(2.2)
    sent = w.send.pop()
    sent.answer(answer(sent.request), 2.15)
    w.subs.advance(T0, 4, 2)
    committer.on_auto_commit_due(2.2)
    assert len(w.send.sent) == 1


def test_auto_commit_is_not_armed_without_a_group_or_when_disabled() -> None:
    for cfg in ({"enable_auto_commit": False}, {"group_id": None}):
        w, committer = setup(**cfg)
        committer.arm_auto_commit(0.0)
        assert AUTO_COMMIT not in w.deadlines
        committer.maybe_auto_commit(100.0)
        assert not w.send.sent

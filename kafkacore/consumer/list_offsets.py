"""ListOffsets: the user's offset lookups and the resets of positions.

Theory of operation
-------------------
ListOffsets goes to each partition's leader (one request per leader), with
the leader epoch metadata knows (the broker fences a stale one) and the
consumer's isolation level (the end is the LSO with read_committed).
:class:`OffsetLookups` uses it for:

- the user's ``offsets_for_times``, ``beginning_offsets`` and
  ``end_offsets`` (:meth:`OffsetLookups.lookup`): an operation answered in
  rounds; partitions without a leader or with an error answer go into the
  next round after ``retry_backoff_ms`` (and a metadata refresh) until the
  deadline;
- resets (:meth:`OffsetLookups.reset`): partitions in AWAIT_RESET move to
  the earliest or latest offset; one that fails waits its backoff and is
  tried again by the next step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkacore.client.core import DEFAULT_LANE
from kafkacore.client.metadata import TopicPartition
from kafkacore.client.routing import Node
from kafkacore.client.stack import Answer, Send
from kafkacore.consumer.events import OffsetAndTimestamp
from kafkacore.consumer.operations import OperationTable
from kafkacore.consumer.positions import FetchState, SubscriptionState
from kafkacore.consumer.topics import TopicView
from kafkacore.errors import KafkaTimeoutError
from kafkacore.operation import Operation
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic

__all__ = ["Answers", "OffsetLookups"]

#: ``{tp: (offset, timestamp, leader epoch)}``; None: no such offset (a time past the end).
Answers = dict[TopicPartition, tuple[int, int, int] | None]
#: ``{tp: timestamp asked}`` for what failed.
Failed = dict[TopicPartition, int]
Done = Callable[[Answers, Failed, float], None]


@dataclass(slots=True)
class _Lookup:
    """One user lookup: what is answered so far and what the round waits for."""

    kind: str
    handle: Operation[Any]
    deadline: float
    keep_ts: bool
    result: dict[TopicPartition, Any] = field(default_factory=dict)
    outstanding: int = 0
    again: Failed = field(default_factory=dict)

    def take(self, answers: Answers) -> None:
        for tp, ans in answers.items():
            if ans is None:
                self.result[tp] = None
            elif self.keep_ts:
                self.result[tp] = OffsetAndTimestamp(
                    ans[0], ans[1], ans[2] if ans[2] >= 0 else None
                )
            else:
                self.result[tp] = ans[0]


class OffsetLookups:
    """ListOffsets for lookups and resets; see the module docstring."""

    def __init__(
        self,
        *,
        read_committed: bool,
        subs: SubscriptionState,
        topics: TopicView,
        ops: OperationTable,
        send: Send,
    ) -> None:
        self._isolation = 1 if read_committed else 0
        self._subs = subs
        self._topics = topics
        self._ops = ops
        self._send = send

    # -------------------------------------------------------------- lookups
    def lookup(
        self,
        kind: str,
        query: dict[TopicPartition, int],
        now: float,
        timeout_ms: int | None,
        *,
        keep_ts: bool = False,
    ) -> Operation[Any]:
        """``{tp: timestamp}`` answered as ``{tp: offset}`` (``keep_ts``: an
        :class:`~kafkacore.consumer.events.OffsetAndTimestamp`)."""
        deadline = now + self._ops.timeout(kind, timeout_ms)
        job = _Lookup(kind, self._ops.new(kind, now), deadline, keep_ts)
        self._topics.track({tp.topic for tp in query}, now)
        self._round(job, query, now)
        return job.handle

    def _round(self, job: _Lookup, remaining: dict[TopicPartition, int], now: float) -> None:
        job.again = {}
        groups = self._topics.by_leader(remaining)
        leaderless = groups.pop(None, None)
        if leaderless:
            job.again.update(leaderless)
            self._topics.refresh(now)
        if not groups:
            job.outstanding = 1
            self._part_done(job, {}, {}, now)
            return
        job.outstanding = len(groups)
        for node, query in groups.items():
            assert node is not None

            def done(answers: Answers, failed: Failed, t: float) -> None:
                self._part_done(job, answers, failed, t)

            self.list_offsets(node, query, done, now)

    def _part_done(self, job: _Lookup, answers: Answers, failed: Failed, now: float) -> None:
        job.take(answers)
        job.again.update(failed)
        job.outstanding -= 1
        if job.outstanding or job.handle.done:
            return
        if not job.again:
            self._ops.complete(job.handle, dict(job.result), None, now)
            return
        again = dict(job.again)
        error = KafkaTimeoutError(
            f"{job.kind}: no leader answered for {sorted(again)}"
            + self._topics.problems({tp.topic for tp in again})
        )
        self._ops.retry(job.handle, job.deadline, now, error, lambda t: self._round(job, again, t))

    # --------------------------------------------------------------- resets
    def reset(self, resets: dict[TopicPartition, int], now: float) -> None:
        """Move AWAIT_RESET partitions to their reset target."""
        groups = self._topics.by_leader(resets)
        leaderless = groups.pop(None, None)
        if leaderless:
            self._topics.track({tp.topic for tp in leaderless}, now)
            self._topics.refresh(now)
            for tp in leaderless:
                self._subs.backoff(tp, self._subs.parts[tp], now)
        for node, query in groups.items():
            assert node is not None
            self._subs.begin_lookup(query)

            def done(answers: Answers, failed: Failed, t: float, query: Failed = query) -> None:
                self._reset_done(query, answers, failed, t)

            self.list_offsets(node, query, done, now)

    def _reset_done(self, query: Failed, answers: Answers, failed: Failed, now: float) -> None:
        for tp, ts in query.items():
            st = self._subs.parts.get(tp)
            if st is None or st.state is not FetchState.AWAIT_RESET or st.reset_to != ts:
                continue  # revoked or moved meanwhile
            ans = answers.get(tp)
            if tp in failed or ans is None:
                self._subs.backoff(tp, st, now)
            else:
                self._subs.reset_done(tp, ans[0], ans[2], self._topics.leader_epoch(tp))

    # ----------------------------------------------------------- the request
    def list_offsets(
        self, node: int, query: dict[TopicPartition, int], done: Done, now: float
    ) -> None:
        """One ListOffsets to ``node``; ``done(answers, failed, now)`` either way."""
        topics: dict[str, list[ListOffsetsPartition]] = {}
        for tp, ts in sorted(query.items()):
            epoch = self._topics.leader_epoch(tp)
            topics.setdefault(tp.topic, []).append(
                ListOffsetsPartition(
                    partition_index=tp.partition,
                    current_leader_epoch=-1 if epoch is None else epoch,
                    timestamp=ts,
                )
            )
        request = m.ListOffsetsRequest(
            replica_id=-1,
            isolation_level=self._isolation,
            topics=[ListOffsetsTopic(name=t, partitions=ps) for t, ps in topics.items()],
        )

        def on_done(answer: Answer[m.ListOffsetsResponse], t: float) -> None:
            answers, failed = self._answers(query, answer)
            if failed and not isinstance(answer, BaseException):
                self._topics.refresh(t)
            done(answers, failed, t)

        self._send(request, on_done, now=now, target=Node(node), lane=DEFAULT_LANE)

    @staticmethod
    def _answers(
        query: dict[TopicPartition, int], resp: Answer[m.ListOffsetsResponse]
    ) -> tuple[Answers, Failed]:
        if isinstance(resp, BaseException):
            return {}, dict(query)
        answers: Answers = {}
        failed: Failed = {}
        for topic in resp.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.name, p.partition_index)
                if tp not in query:
                    continue
                if p.error_code == ErrorCode.NONE:
                    answers[tp] = None if p.offset < 0 else (p.offset, p.timestamp, p.leader_epoch)
                else:
                    failed[tp] = query[tp]
        failed.update(
            {tp: ts for tp, ts in query.items() if tp not in answers and tp not in failed}
        )
        return answers, failed

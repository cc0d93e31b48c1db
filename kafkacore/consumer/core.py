"""The consumer machine: a small facade over the consumer's parts.

Theory of operation
-------------------
:class:`ConsumerCore` is stacked on a :class:`~kafkacore.client.KafkaClientCore`
through :class:`~kafkacore.client.stack.StackedMachine` (``docs/stacking.md``),
so every transport drives it with the unchanged driver contract. A fact
goes to the client core first, then one step runs: the client's events are
drained (answers to the consumer's requests go to the part that sent them,
others pass to the transport), then :meth:`ConsumerCore._work` lets each
part start what is due. Time arrives as ``now`` and is passed down; every
timer is a key in :attr:`deadlines`.

The parts, each a small machine in its own module:

- :mod:`~kafkacore.consumer.positions`: the subscription and each
  partition's state (:class:`FetchState`, with a transition table), pause,
  seek, the reset policy, records lent to an iterator;
- :mod:`~kafkacore.consumer.fetcher` and :mod:`~kafkacore.consumer.buffer`:
  one Fetch per leader with KIP-227 sessions, into a buffer bounded by
  ``fetch_buffer_bytes`` that poll drains;
- :mod:`~kafkacore.consumer.offset_fetch`,
  :mod:`~kafkacore.consumer.list_offsets`,
  :mod:`~kafkacore.consumer.validation`: committed offsets (OffsetFetch,
  built for the negotiated version), lookups and resets (ListOffsets),
  KIP-320 validation (OffsetForLeaderEpoch);
- :mod:`~kafkacore.consumer.committer`: explicit commits, auto-commit, the
  commits before a revocation, leaving or closing, fenced commits;
- :mod:`~kafkacore.consumer.membership`: the group member and what its
  events do to the assignment; :mod:`~kafkacore.consumer.topics`: topic
  facts and the listing for pattern subscriptions;
- :mod:`~kafkacore.consumer.operations`, :mod:`~kafkacore.consumer.causes`,
  :mod:`~kafkacore.consumer.poll_errors`: pending operations and retries,
  why the consumer is stuck (issue 10, fault 8), what the next poll raises.

Commands that complete later (commit, committed, offset lookups, close)
return an :class:`~kafkacore.operation.Operation`, completed with an
:class:`~kafkacore.operation.OperationCompleted` event. Recoverable broker
answers (leader moved, coordinator moved, rebalance in progress) are
retries inside the core; what the user must act on is raised by the next
poll.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkacore.client.config import ClientConfig
from kafkacore.client.core import DEFAULT_LANE, KafkaClientCore
from kafkacore.client.events import MetadataUpdated
from kafkacore.client.handles import RequestHandle
from kafkacore.client.metadata import TopicPartition
from kafkacore.client.routing import Target
from kafkacore.client.stack import OnAnswer, R, StackedMachine
from kafkacore.consumer.buffer import FetchBuffer, named_partitions
from kafkacore.consumer.causes import CauseTracker
from kafkacore.consumer.committer import AUTO_COMMIT, Committer
from kafkacore.consumer.config import ConsumerConfig
from kafkacore.consumer.core_offsets import OffsetCommands
from kafkacore.consumer.events import (
    CONSUMER_EVENTS,
    BrokersUnreachable,
    ConsumerClosedError,
    ConsumerEvent,
    ConsumerRecord,
    NoOffsetForPartitionError,
    PartitionBatch,
    PositionsKnown,
)
from kafkacore.consumer.fetcher import FETCH_LANE, Fetcher
from kafkacore.consumer.group_metadata import ConsumerGroupMetadata
from kafkacore.consumer.list_offsets import OffsetLookups
from kafkacore.consumer.membership import Member, Membership
from kafkacore.consumer.offset_fetch import CommittedOffsets
from kafkacore.consumer.operations import Later, OperationTable
from kafkacore.consumer.poll_errors import PollErrors
from kafkacore.consumer.positions import (
    EARLIEST,
    LATEST,
    FetchState,
    PartitionState,
    SubscriptionMode,
    SubscriptionState,
    no_position_error,
)
from kafkacore.consumer.self_assign import SelfAssignment
from kafkacore.consumer.topics import LISTING, PatternListing, TopicView, compile_pattern
from kafkacore.consumer.validation import PositionValidator
from kafkacore.errors import (
    AuthenticationError,
    InvalidArgumentError,
    KafkaTimeoutError,
    LocalProtocolError,
    WrongArgumentsError,
)
from kafkacore.group.kip848 import Kip848Member
from kafkacore.operation import Operation
from kafkacore.protocol._base import Request

__all__ = ["FETCH_LANE", "ConsumerCore", "FetchState", "PartitionState"]


@dataclass(frozen=True, slots=True)
class _PollMark:
    """What a poll compares after taking records, to know whether to step."""

    released: int
    full: bool
    sent: int
    member_state: object


class ConsumerCore(OffsetCommands, StackedMachine[ConsumerEvent]):
    """Sans-IO consumer; see the module docstring."""

    EVENT_TYPES = CONSUMER_EVENTS

    def __init__(
        self,
        client_config: ClientConfig | None = None,
        config: ConsumerConfig | None = None,
        *,
        now: float,
        rng: random.Random,
    ) -> None:
        cfg = self.config = config if config is not None else ConsumerConfig()
        # The client's first step (and bootstrap Metadata request) waits for
        # our first step, so a subscription made right after construction is
        # in that request; otherwise its topics wait for the answer and then
        # the metadata backoff (retry_backoff_ms) before the group can be
        # joined (issue 12: 90 of a new consumer's 150 ms to its first record).
        super().__init__(KafkaClientCore(client_config, now=now, rng=rng, stacked=True))
        self._closed = False
        self._sent = 0  # requests sent so far: a step that sent one looks again
        self._errors = PollErrors()
        self._causes = CauseTracker(self.client, now=now, api_timeout_ms=cfg.default_api_timeout_ms)
        self._ops = OperationTable(
            client=self.client,
            causes=self._causes,
            deadlines=self.deadlines,
            emit=self._emit,
            retry_backoff_ms=cfg.retry_backoff_ms,
            api_timeout_ms=cfg.default_api_timeout_ms,
        )
        self._buffer = FetchBuffer(cfg.fetch_buffer_bytes)
        self._subs = SubscriptionState(
            auto_offset_reset=cfg.auto_offset_reset,
            with_group=cfg.group_id is not None,
            retry_backoff_ms=cfg.retry_backoff_ms,
            deadlines=self.deadlines,
            errors=self._errors,
            emit=self._emit,
            invalidate=self._buffer.drop,
        )
        self._topics = TopicView(self.client)
        self._build_machines(cfg, rng)
        # No step here: the client's first step is due at once (next_deadline),
        # and the first command (subscribe, assign) runs it with its topics.

    def _build_machines(self, cfg: ConsumerConfig, rng: random.Random) -> None:
        """The parts that send requests, over the state built in __init__."""
        subs, topics, ops, send = self._subs, self._topics, self._ops, self._send
        self._committer = Committer(
            cfg,
            subs=subs,
            topics=topics,
            ops=ops,
            send=send,
            deadlines=self.deadlines,
            member=self._member,
            answered_by=self._answered_by,
        )
        self._membership = Membership(
            cfg,
            requester=self,
            rng=rng,
            subs=subs,
            topics=topics,
            committer=self._committer,
            ops=ops,
            errors=self._errors,
            emit=self._emit,
        )
        self._offsets = CommittedOffsets(
            cfg,
            subs=subs,
            topics=topics,
            ops=ops,
            send=send,
            member=self._member,
            answered_by=self._answered_by,
        )
        self._lookups = OffsetLookups(
            read_committed=cfg.read_committed, subs=subs, topics=topics, ops=ops, send=send
        )
        self._validator = PositionValidator(subs=subs, topics=topics, send=send)
        self._fetcher = Fetcher(
            cfg,
            subs=subs,
            buffer=self._buffer,
            topics=topics,
            send=send,
            deadlines=self.deadlines,
            errors=self._errors,
            emit=self._emit,
            request_timeout_ms=self.client.config.request_timeout_ms,
        )
        self._listing = PatternListing(
            topics,
            send=send,
            deadlines=self.deadlines,
            exclude_internal=cfg.exclude_internal_topics,
            metadata_max_age_ms=cfg.metadata_max_age_ms,
            retry_backoff_ms=cfg.retry_backoff_ms,
            on_matched=lambda found, now: self._self_assign.pattern_matched(found, now),
        )
        self._self_assign = SelfAssignment(
            subs=subs, topics=topics, listing=self._listing, group=self._membership.pattern_matched
        )

    def _answered_by(self) -> int | None:
        return self.answered_by

    def _send(
        self,
        request: Request[R],
        on_done: OnAnswer[R],
        *,
        now: float,
        target: Target | None = None,
        lane: str = DEFAULT_LANE,
        timeout_ms: int | None = None,
        max_version: int | None = None,
        build: Callable[[int], Request[R]] | None = None,
    ) -> RequestHandle[R]:
        """Every request of the consumer's parts (a :class:`~kafkacore.client.stack.Send`);
        each answer is noted for the causes (:meth:`_on_answer`) before ``on_done`` runs."""
        handle = self._request(
            request,
            on_done,
            now=now,
            target=target,
            lane=lane,
            timeout_ms=timeout_ms,
            max_version=max_version,
            build=build,
        )
        self._sent += 1
        return handle

    #: What a group member sends with (the Requester protocol): every part's Send.
    request = _send

    def _on_answer(self, error: BaseException | None, now: float) -> None:
        refused = self._causes.answered(error, now)
        if refused is not None:
            self._refused(refused, now)

    # ============================================================== queries
    @property
    def member(self) -> Member | None:
        return self._membership.member

    def _member(self) -> Member | None:
        return self._membership.member

    @property
    def await_revocation_ack(self) -> bool:
        """Set by a transport whose user registered a rebalance listener:
        revocations then wait for revocation_done() (see PartitionsRevoking)."""
        return self._membership.await_revocation_ack

    @await_revocation_ack.setter
    def await_revocation_ack(self, value: bool) -> None:
        self._membership.await_revocation_ack = value

    def assignment(self) -> frozenset[TopicPartition]:
        return self._subs.assignment()

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This consumer's group identity now, for a transactional producer's
        ``send_offsets_to_transaction`` (KIP-447 fencing of zombies)."""
        group_id = self.config.group_id
        if group_id is None:
            raise LocalProtocolError(
                "group_metadata: this consumer has no group_id; only a group member "
                "has an identity to fence offsets with"
            )
        state = self._membership.state_name()
        return ConsumerGroupMetadata(group_id, *self._committer.identity(), state=state)

    def subscription(self) -> frozenset[str]:
        return self._subs.topics

    def paused(self) -> frozenset[TopicPartition]:
        return self._subs.paused()

    def partition_state(self, tp: TopicPartition) -> PartitionState:
        return self._subs.require(tp, "partition_state")

    def position(self, tp: TopicPartition) -> int | None:
        """The offset of the next record to hand out, None until it is known."""
        return self._subs.position(tp)

    def positions_known(self, tps: Iterable[TopicPartition]) -> bool:
        return all(self.position(tp) is not None for tp in tps)

    def lag(self, tp: TopicPartition) -> int | None:
        """Records between the position and the end (the LSO with read_committed)."""
        return self._subs.lag(tp, read_committed=self.config.read_committed)

    def stall_cause(self) -> BaseException | None:
        """The last failure, when no broker has answered since (None otherwise)."""
        return self._causes.stall_cause()

    def hopeless_cause(self) -> BaseException | None:
        """A failure no waiting will fix (``position`` waits): refused credentials;
        not a cluster unreached yet, which may come up within the bound (issue 26)."""
        cause = self.stall_cause()
        return cause if isinstance(cause, AuthenticationError) else None

    def missing_topics(self) -> frozenset[str]:
        """Followed topics that metadata says do not exist (see TopicsNotFound)."""
        return self._causes.missing_topics

    def take_error(self) -> BaseException | None:
        return self._errors.take()  # what the next poll would raise (an async start)

    def has_buffered(self) -> bool:
        return bool(self._buffer) or self._errors.pending is not None

    @property
    def buffered_bytes(self) -> int:
        return self._buffer.nbytes

    # ============================================================== commands
    def assign(self, partitions: Iterable[TopicPartition], *, now: float) -> None:
        """Consume exactly ``partitions`` (no group membership; commits still allowed)."""
        self._check_open("assign")
        tps = frozenset(TopicPartition(*tp) for tp in partitions)
        if self._subs.mode is SubscriptionMode.SUBSCRIBED:
            raise LocalProtocolError("assign: the consumer is subscribed; call unsubscribe() first")
        self._subs.assign(tps)
        self._topics.track({tp.topic for tp in tps}, now)
        self._committer.arm_auto_commit(now)
        self._step(now)

    def subscribe(
        self, topics: Iterable[str] | None = None, *, pattern: str | None = None, now: float
    ) -> None:
        """Join the group for ``topics`` or for every topic matching ``pattern``."""
        self._check_open("subscribe")
        if self._subs.mode is SubscriptionMode.ASSIGNED:
            raise LocalProtocolError("subscribe: partitions were assigned; unsubscribe() first")
        if (topics is None) == (pattern is None) or (topics is not None and not topics):
            raise WrongArgumentsError("subscribe: give topics (at least one) or pattern, not both")
        if isinstance(topics, str):
            raise WrongArgumentsError("subscribe: topics must be a list of names, not one str")
        compiled = None if pattern is None else compile_pattern(pattern)
        if self.config.group_id is None:
            # kafka-python's and aiokafka's group-less subscription (self_assign.py).
            names = None if topics is None else frozenset(topics)
            self._self_assign.subscribe(names, compiled, now)
            self._step(now)
            return
        self._subs.mode = SubscriptionMode.SUBSCRIBED
        member = self._membership.ensure(now)
        if compiled is not None:
            self._subs.topics = frozenset()
            if isinstance(member, Kip848Member):
                member.subscribe(frozenset(), now=now, pattern=pattern)
            self._listing.follow(compiled, now)  # list the cluster's topics now
        else:
            assert topics is not None
            self._listing.follow(None, now)
            self._subs.topics = frozenset(topics)
            self._topics.track(self._subs.topics, now)
            member.subscribe(self._subs.topics, now=now)
        member.poll(now=now)
        self._step(now)

    def unsubscribe(self, *, now: float) -> None:
        """Leave the group (committing first with auto-commit) or drop the assignment."""
        if self._membership.member is not None:
            # Commit while the member still fences the commit, then leave.
            def leave(t: float) -> None:
                self._membership.leave(t)
                self._membership.drain(t)

            self._committer.commit_then(now, leave)
        self._self_assign.stop()
        self._subs.clear()
        self._listing.follow(None, now)
        self._step(now)

    def pause(self, partitions: Iterable[TopicPartition], *, now: float) -> None:
        for tp in partitions:
            self._subs.pause(TopicPartition(*tp))
        self._step(now)

    def resume(self, partitions: Iterable[TopicPartition], *, now: float) -> None:
        for tp in partitions:
            self._subs.resume(TopicPartition(*tp))
        self._step(now)

    def seek(self, tp: TopicPartition, offset: int, *, now: float) -> None:
        tp = TopicPartition(*tp)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidArgumentError(f"seek: offset {offset!r} for {tp} must be an int >= 0")
        self._subs.seek(tp, offset)
        self._step(now)

    def seek_to_beginning(self, partitions: Iterable[TopicPartition], *, now: float) -> None:
        self._seek_to(partitions, EARLIEST, now, "seek_to_beginning")

    def seek_to_end(self, partitions: Iterable[TopicPartition], *, now: float) -> None:
        self._seek_to(partitions, LATEST, now, "seek_to_end")

    def _seek_to(
        self, partitions: Iterable[TopicPartition], where: int, now: float, what: str
    ) -> None:
        for tp in [TopicPartition(*tp) for tp in partitions] or list(self._subs.parts):
            self._subs.seek_to(tp, where, what)
        self._step(now)

    # ------------------------------------------------------------------ poll
    def poll_records(
        self,
        max_records: int | None = None,
        *,
        now: float,
        lend: bool = False,
        only: frozenset[TopicPartition] | None = None,
    ) -> list[ConsumerRecord]:
        """Hand out up to ``max_records`` buffered records (never blocks).

        Raises what the user must act on (NoOffsetForPartitionError,
        LogTruncationError, GroupFatalError, a fetch error) once.

        With ``lend`` the records go to an iterator that hands them over one
        by one: they count as consumed only as :meth:`note_consumed` reports
        (see :mod:`kafkacore.consumer.positions`). Lending again means every
        record lent before has been handed over.

        With ``only`` (aiokafka's ``getmany(tp1, tp2)``) the records come from
        those partitions alone; what was fetched for the others stays buffered,
        in order, positions untouched (:mod:`kafkacore.consumer.buffer`). A
        named partition that is not assigned is a ValueError once the group
        (if any) is stable; while it rebalances, the poll waits for the
        assignment as aiokafka's does (it hands out what it can meanwhile).
        """
        only = self._readable(only, "poll_records")  # before anything changes
        mark = self._before_poll("poll_records", now, only)
        if lend:
            self._subs.all_handed_over()
        limit = self.config.max_poll_records if max_records is None else max_records
        out = self._buffer.take_records(self._subs, limit, lend=lend, only=only)
        self._step_after_poll(mark, bool(out), now)
        return out

    def poll_batches(
        self,
        max_records: int | None = None,
        *,
        now: float,
        only: frozenset[TopicPartition] | None = None,
    ) -> list[PartitionBatch]:
        """Like :meth:`poll_records`, as per-partition columnar batches (the bulk path)."""
        only = self._readable(only, "poll_batches")  # before anything changes
        mark = self._before_poll("poll_batches", now)
        limit = self.config.max_poll_records if max_records is None else max_records
        out = self._buffer.take_batches(self._subs, limit, only=only)
        self._step_after_poll(mark, bool(out), now)
        return out

    def poll_timed_out(self, what: str, waited_s: float, *, now: float) -> None:
        """A poll (``what``) that waited ``waited_s`` > 0 for records ends empty:
        raise NoBrokersAvailable if no broker was ever reached (its timeout was
        the caller's bound, issue 26); else nothing."""
        self._check_open(what)
        following = self._subs.mode is not SubscriptionMode.NONE
        error = self._causes.poll_ended(what, waited_s, now) if following else None
        if error is not None:
            self._emit(BrokersUnreachable(error=error))
            raise error

    def _readable(
        self, only: frozenset[TopicPartition] | None, what: str
    ) -> frozenset[TopicPartition] | None:
        """``only`` checked against the assignment (see :meth:`poll_records`)."""
        if only is None:
            return None
        self._check_open(what)
        member = self._membership.member
        settling = self._subs.mode is SubscriptionMode.SUBSCRIBED and (
            member is None or member.state.value != "stable"
        )
        return named_partitions(only, self._subs.parts.keys(), settling=settling)

    def note_consumed(
        self,
        progress: Mapping[TopicPartition, tuple[int, int | None]],
        *,
        now: float,
        everything: bool = False,
    ) -> None:
        """The user was handed lent records up to ``progress``: ``{tp: (next
        offset, leader epoch of the last record handed)}``; commits now cover
        them. ``everything``: every lent record has been handed over."""
        if everything:
            self._subs.all_handed_over()
        else:
            self._subs.note_consumed(progress)
        self._step(now)

    def return_lent(self, *, now: float) -> None:
        """Lent records the user was not handed are given back: positions move
        back to the first of them, to be fetched and handed out again."""
        self._subs.return_lent()
        self._step(now)

    def _step_after_poll(self, mark: _PollMark, handed_out: bool, now: float) -> None:
        """Step after a poll only when it changed something a step acts on
        (issue 12): a poll served from the buffer is then a take and nothing
        else. A step is due when a partition left the buffer (fetch it
        again), the buffer's bound was crossed, the poll queued a request
        (auto-commit) or a client command, the member changed state (a
        rejoin after the poll interval), a timer is due, or nothing was
        buffered (the step sends what fetches it can)."""
        buffer = self._buffer
        member = self._membership.member
        if (
            not handed_out
            or buffer.released != mark.released
            or buffer.full != mark.full
            or self._sent != mark.sent
            or self.client.step_due
            or (member is not None and member.state is not mark.member_state)
        ):
            self._step(now)
            return
        due = self.next_deadline()
        if due is not None and due <= now:
            self._step(now)

    def _before_poll(
        self, what: str, now: float, only: frozenset[TopicPartition] | None = None
    ) -> _PollMark:
        self._check_open(what)
        buffer = self._buffer
        member = self._membership.member
        mark = _PollMark(
            released=buffer.released,
            full=buffer.full,
            sent=self._sent,
            member_state=None if member is None else member.state,
        )
        if member is not None:
            member.poll(now=now)
        # Seed 003: with auto-commit, commit what was consumed before fetching more.
        self._committer.maybe_auto_commit(now)
        self._report_unreachable(now)
        stuck = self._subs.awaiting_seek()
        if isinstance(self._errors.pending, NoOffsetForPartitionError) and not stuck:
            # The user positioned the partition (seek) after the error was
            # noted and before this poll, as Java's assign-seek-poll allows.
            self._errors.clear()
        # Every poll raises until the user seeks, as Java's does (raised once,
        # the next poll would wait for records that cannot come).
        named = stuck if only is None else [tp for tp in stuck if tp in only]
        error = self._errors.take() or no_position_error(named, self._subs.parts)
        if error is not None:
            self._step(now)
            raise error
        return mark

    def revocation_done(self, token: int, *, now: float) -> None:
        """The user's listener has handled :class:`PartitionsRevoking` ``token``."""
        self._membership.revocation_done(token, now)
        self._step(now)

    # ----------------------------------------------------------------- close
    def close(self, *, now: float, autocommit: bool = True) -> Operation[Any]:
        """Commit (with auto-commit), leave the group; bounded by default_api_timeout_ms.

        The handle completes when done; then shut the client down
        (:meth:`shutdown`).
        """
        handle = self._ops.new("close", now)
        if self._closed:
            self._ops.complete(handle, None, None, now)
            return handle

        def finished(t: float) -> None:
            self._ops.complete(handle, None, None, t)

        def leave(t: float) -> None:
            self._membership.leave(t, done=finished)

        def too_late(t: float) -> None:
            error = KafkaTimeoutError("close: the group did not answer in time; closed anyway")
            self._ops.complete(handle, None, error, t)

        self._ops.later(now + self.config.default_api_timeout_ms / 1000, too_late)
        if autocommit:
            self._committer.commit_then(now, leave)
        else:
            leave(now)
        self._step(now)
        return handle

    def shutdown(self, *, now: float) -> None:
        """Drop everything at once (after :meth:`close`, or instead of it)."""
        self._closed = self._membership.closed = True
        self.client.shutdown(now=now)
        self._ops.clear_timers()
        self.deadlines.pop_due(float("inf"))  # every timer of the consumer's parts
        self._step(now)

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise ConsumerClosedError(
                f"ConsumerCore.{what}: the consumer is closed; make a new one"
            )

    # ================================================================ the step
    def _on_client_event(self, event: object, now: float) -> None:
        refused = self._causes.observe(event, now)
        if refused is not None:
            self._refused(refused, now)
        if isinstance(event, MetadataUpdated):
            self._on_metadata(now)
        self._emit(event)

    def _refused(self, error: AuthenticationError, now: float) -> None:
        """Refused credentials are not retried: what waits fails, poll raises it."""
        if not self._closed:
            self._errors.note(error)
            self._ops.fail_pending(error, now)

    def _on_deadline(self, key: Hashable, now: float) -> None:
        if self._closed:
            return
        if isinstance(key, Later):
            self._ops.on_deadline(key, now)
        elif key == AUTO_COMMIT:
            self._committer.on_auto_commit_due(now)
        elif key == LISTING:
            self._listing.on_due(now)
        # PartitionRetry and NodeBackoff only wake the step that retries.

    def _sub_deadlines(self) -> Iterable[float | None]:
        if self._closed:
            return ()
        following = self._subs.mode is not SubscriptionMode.NONE
        return (self._membership.next_deadline(), self._causes.unreachable_deadline(following))

    def _work(self, now: float) -> bool:
        sent = self._sent
        moved = self._membership.drain(now)
        if self._closed:
            return moved
        # Timers due now run in any step, not only in handle_timeout: a
        # retry due at once must not wait for the transport to go idle.
        for key in self.deadlines.pop_due(now):
            self._on_deadline(key, now)
        self._membership.run_due(now)
        moved = self._membership.drain(now) or moved
        self._report_unreachable(now)
        self._listing.maybe_list(now)
        if self._subs.mode is not SubscriptionMode.NONE and self._subs.parts:
            due = self._subs.due(now)
            if due.initialize and not self._offsets.busy:
                self._offsets.initialize(due.initialize, now)
            if due.reset:
                self._lookups.reset(due.reset, now)
            if due.validate:
                self._validator.validate(due.validate, now)
            self._fetcher.send_fetches(now)
        known = self._subs.take_newly_known()
        if known:
            self._emit(PositionsKnown(partitions=known))
        return moved or self._sent != sent

    def _report_unreachable(self, now: float) -> None:
        following = self._subs.mode is not SubscriptionMode.NONE
        error = self._causes.check_unreachable(now, following)
        if error is not None:
            self._errors.note(error)
            self._emit(BrokersUnreachable(error=error))

    def _on_metadata(self, now: float) -> None:
        found, refused = self._causes.check_topics(self._subs.wanted_topics())
        if found is not None:
            self._emit(found)
        if refused is not None:
            self._errors.note(refused)
        member = self._membership.member
        if member is not None:
            member.on_metadata(now=now)
        self._self_assign.on_metadata(now)
        # Ask again while a tracked topic is unknown (a refresh in flight answered
        # without it) or a followed one has no partitions (not created yet): the
        # client's retry backoff spaces them, as Java's; the group then rebalances.
        if self._topics.unknown_tracked() or self._topics.undescribed(self._subs.wanted_topics()):
            self._topics.refresh(now)
        for tp in list(self._subs.parts):
            epoch = self._topics.leader_epoch(tp)
            if epoch is not None and epoch >= 0:
                self._subs.leader_epoch_seen(tp, epoch)

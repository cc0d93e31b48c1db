"""The consumer machine: fetching, positions, offsets, commits and group membership.

Theory of operation
-------------------
:class:`ConsumerCore` is stacked on a :class:`~kafkacore.client.KafkaClientCore`
and implements the same :class:`~kafkacore.client.driver.Driven` contract,
so every transport drives it with the unchanged Bridge. Facts go to the
client core first; then one *step* runs:

1. the client's ``RequestCompleted`` events for the consumer's own requests
   are routed to their callbacks (other client events pass through to the
   user layer); the group member's events change the assignment;
2. work that is due is started: committed offsets for new partitions
   (OffsetFetch), offset resets (ListOffsets), position validation after a
   leader change (OffsetForLeaderEpoch, KIP-320), one Fetch per leader not
   already fetching (KIP-227 sessions), auto-commit, pattern re-listing.

Each partition has one state (:class:`FetchState`)::

    INITIALIZING --committed offset--> FETCHING
    INITIALIZING --none committed--> AWAIT_RESET --ListOffsets--> FETCHING
    FETCHING --leader epoch rose--> AWAIT_VALIDATION --OffsetForLeaderEpoch--> FETCHING
    FETCHING --OFFSET_OUT_OF_RANGE--> AWAIT_RESET
    any --seek()--> FETCHING; --seek_to_beginning/end()--> AWAIT_RESET

plus a ``paused`` flag. Fetched data waits in a bounded buffer
(``fetch_buffer_bytes``; a partition with unread data is not fetched
again) until ``poll_records``/``poll_batches`` hands it out; positions move
only as records are handed out.

A transport's record-by-record iterator takes a batch with
``poll_records(lend=True)`` but hands it to the user one record at a time:
the batch is *lent*. Each lent partition remembers where it stood before
(``lent_from``); commits (automatic, on revocation, on close, or
``commit()`` without offsets), ``position`` and ``lag`` use that until the
transport reports how far the user got (:meth:`ConsumerCore.note_consumed`),
or gives the rest back (:meth:`ConsumerCore.return_lent`, which moves the
position back so the records are fetched again). So a commit never covers
a record the user was not handed (issue 10, fault 7; kafka-python's
iterator and Java's ``poll`` count a record consumed once it is handed over).

Recoverable broker answers (leader moved,
coordinator moved, rebalance in progress) are retries inside the core;
what the user must act on (no offset with ``auto_offset_reset="none"``,
truncation, a fatal group error) is raised by the next poll.

Commands that complete later (commit, committed, offset lookups, close)
return an :class:`~kafkacore.operation.Operation`, completed
with an :class:`~kafkacore.consumer.events.OperationCompleted` event.

Causes (issue 10, fault 8): the core watches the client's events for the
last failure (a connect refused, ``NoBrokersAvailable`` after every
bootstrap address failed, a failed metadata refresh, an
``AuthenticationError``) and for the last contact (a connection ready, a
response, fresh metadata). An operation that runs out of time fails with
a ``KafkaTimeoutError`` that names that failure and carries it as
``__cause__``. An authentication failure is not retried: pending operations
fail with it at once and the next poll raises it (Java's ``poll`` does).
With partitions to follow and no contact at all for
``default_api_timeout_ms``, the next poll raises ``NoBrokersAvailable``
(and :class:`~kafkacore.consumer.events.BrokersUnreachable` is emitted),
again after each further period; followed topics that metadata says do
not exist are reported by :class:`~kafkacore.consumer.events.TopicsNotFound`
(the consumer waits for them, as Java's does), topics the principal may not
read raise ``TopicAuthorizationFailedError`` from poll.
"""

from __future__ import annotations

import enum
import random
import re
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkacore.client.config import ClientConfig
from kafkacore.client.connection import ConnectionState
from kafkacore.client.core import DEFAULT_LANE, KafkaClientCore
from kafkacore.client.driver import Action, ConnId
from kafkacore.client.events import (
    BootstrapFailed,
    ConnectionStateChanged,
    MetadataUpdated,
    MetadataUpdateFailed,
    RequestCompleted,
)
from kafkacore.client.metadata import TopicPartition
from kafkacore.client.routing import AnyNode, GroupCoordinator, Node, Target
from kafkacore.consumer.completed import CompletedFetch
from kafkacore.consumer.config import ConsumerConfig
from kafkacore.consumer.events import (
    BrokersUnreachable,
    CommitFailedError,
    ConsumerRecord,
    LogTruncationError,
    NoOffsetForPartitionError,
    OffsetAndMetadata,
    PartitionBatch,
    PartitionsRevoking,
    RebalanceInProgressCommitError,
    RecordsAvailable,
    TopicsNotFound,
    TruncationDetected,
)
from kafkacore.consumer.fetch_session import SESSION_ERRORS, FetchSession, PartitionFetch
from kafkacore.consumer.group_metadata import ConsumerGroupMetadata
from kafkacore.errors import (
    AuthenticationError,
    KafkaTimeoutError,
    LocalProtocolError,
    NoBrokersAvailable,
    RequestCancelled,
)
from kafkacore.group.base import (
    GROUP_LANE,
    GroupFailed,
    OnDone,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from kafkacore.group.classic import ClassicMember
from kafkacore.group.kip848 import Kip848Member
from kafkacore.operation import Operation, OperationCompleted
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import COORDINATOR_MOVED, LEADER_MOVED, ApiKey, ErrorCode
from kafkacore.protocol.error_codes import TopicAuthorizationFailedError, error_for_code
from kafkacore.protocol.messages.fetch_request import FetchPartition, FetchTopic, ForgottenTopic
from kafkacore.protocol.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic
from kafkacore.protocol.messages.offset_commit_request import (
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kafkacore.protocol.messages.offset_fetch_request import (
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from kafkacore.protocol.messages.offset_for_leader_epoch_request import (
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)

__all__ = ["FETCH_LANE", "ConsumerCore", "FetchState", "PartitionState"]

#: Fetches get their own connection: a broker answers one connection's
#: requests in order, and a long-polling Fetch must not hold up ListOffsets.
FETCH_LANE = "fetch"

_EARLIEST = -2
_LATEST = -1
_RETRY_COMMIT = COORDINATOR_MOVED | {ErrorCode.REQUEST_TIMED_OUT, ErrorCode.INVALID_RECORD}
_FENCED_COMMIT = frozenset(
    {
        ErrorCode.ILLEGAL_GENERATION,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.REBALANCE_IN_PROGRESS,
        ErrorCode.FENCED_INSTANCE_ID,
        ErrorCode.FENCED_MEMBER_EPOCH,
        ErrorCode.STALE_MEMBER_EPOCH,
    }
)
# Fenced answers that may mean the member's own membership is gone.
_MEMBERSHIP_FENCED = frozenset(
    {ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH}
)


class FetchState(enum.Enum):
    INITIALIZING = "initializing"
    AWAIT_RESET = "await_reset"
    AWAIT_VALIDATION = "await_validation"
    FETCHING = "fetching"


@dataclass(slots=True)
class PartitionState:
    """Where one assigned partition stands; see the module docstring."""

    state: FetchState
    position: int | None = None
    #: Leader epoch of the last record consumed (KIP-320), None when unknown.
    position_epoch: int | None = None
    #: Leader epoch from metadata that the position was last checked against.
    leader_epoch: int | None = None
    paused: bool = False
    reset_to: int | None = None  # _EARLIEST / _LATEST when AWAIT_RESET
    busy: bool = False  # an OffsetFetch / ListOffsets / validation is in flight
    retry_at: float = 0.0
    buffered: bool = False
    high_watermark: int | None = None
    last_stable_offset: int | None = None
    log_start_offset: int | None = None
    committed_position: int | None = None  # what auto-commit last committed
    #: (position, epoch) before records lent to an iterator that the user has
    #: not been handed yet; commits and queries use it. None: nothing lent.
    lent_from: tuple[int, int | None] | None = None

    @property
    def consumed(self) -> tuple[int | None, int | None]:
        """(offset, epoch) of the next record the user has not been handed."""
        if self.lent_from is not None:
            return self.lent_from
        return self.position, self.position_epoch


class _Mode(enum.Enum):
    NONE = "none"
    ASSIGNED = "assigned"
    SUBSCRIBED = "subscribed"


class ConsumerCore:
    """Sans-IO consumer; see the module docstring."""

    def __init__(
        self,
        client_config: ClientConfig | None = None,
        config: ConsumerConfig | None = None,
        *,
        now: float,
        rng: random.Random,
    ) -> None:
        self.config = config if config is not None else ConsumerConfig()
        self.client = KafkaClientCore(client_config, now=now, rng=rng)
        self._rng = rng
        self._handlers: dict[int, OnDone] = {}
        self._events: list[object] = []
        self._parts: dict[TopicPartition, PartitionState] = {}
        self._mode = _Mode.NONE
        self._topics: frozenset[str] = frozenset()
        self._pattern: re.Pattern[str] | None = None
        self._member: ClassicMember | Kip848Member | None = None
        self._buffer: deque[CompletedFetch] = deque()
        self._buffered_bytes = 0
        self._sessions: dict[int, FetchSession] = {}
        self._fetching: set[int] = set()
        self._node_retry: dict[int, float] = {}
        self._timers: list[tuple[float, int, Callable[[float], None]]] = []
        self._timer_seq = 0
        self._next_op = 1
        self._error: BaseException | None = None
        self._next_autocommit: float | None = None
        self._autocommit_busy = False
        self._offset_fetch_busy = False
        self._all_topics: dict[str, tuple[uuid.UUID, int, bool]] = {}
        self._listing = False
        self._next_listing: float | None = None
        self._waiting_commits: list[tuple[Operation[Any], Callable[[float], None]]] = []
        self._revoking: dict[int, Callable[[float], None]] = {}
        self._next_token = 1
        #: Set by a transport whose user registered a rebalance listener:
        #: revocations then wait for revocation_done() (see PartitionsRevoking).
        self.await_revocation_ack = False
        self._closed = False
        self._now = now
        # Causes (see the module docstring): the last failure, the last contact.
        self._cause: BaseException | None = None
        self._cause_at = float("-inf")
        self._contact_at = now
        self._unreachable_reported_at = float("-inf")
        self._missing_topics: frozenset[str] = frozenset()
        self._denied_topics: frozenset[str] = frozenset()
        self._ops: dict[int, tuple[Operation[Any], float]] = {}  # pending: (handle, started)
        self._step(now)

    # ================================================================ Driven
    def connection_made(self, conn_id: ConnId, *, now: float) -> None:
        self.client.connection_made(conn_id, now=now)
        self._step(now)

    def connection_failed(self, conn_id: ConnId, error: BaseException, *, now: float) -> None:
        self.client.connection_failed(conn_id, error, now=now)
        self._step(now)

    def data_received(
        self, conn_id: ConnId, data: bytes | bytearray | memoryview, *, now: float
    ) -> None:
        self.client.data_received(conn_id, data, now=now)
        self._step(now)

    def connection_lost(self, conn_id: ConnId, error: BaseException | None, *, now: float) -> None:
        self.client.connection_lost(conn_id, error, now=now)
        self._step(now)

    def handle_timeout(self, *, now: float) -> None:
        self.client.handle_timeout(now=now)
        self._run_timers(now)
        if self._member is not None:
            self._member.handle_timeout(now=now)
        if not self._closed:
            self._maybe_autocommit(now)
            self._check_unreachable(now)
        self._step(now)

    def next_deadline(self) -> float | None:
        times = [self.client.next_deadline()]
        if self._timers:
            times.append(min(t[0] for t in self._timers))
        if self._member is not None:
            times.append(self._member.next_deadline())
        times.append(self._next_autocommit)
        times.append(self._next_listing)
        times.append(self._unreachable_deadline())
        times.extend(t for t in self._node_retry.values() if t > self._now)
        times.extend(p.retry_at for p in self._parts.values() if p.retry_at > self._now)
        found = [t for t in times if t is not None]
        return min(found) if found else None

    def pull_actions(self) -> list[Action]:
        return self.client.pull_actions()

    def pull_events(self) -> list[object]:
        out, self._events = self._events, []
        return out

    # ============================================================= Requester
    def request(
        self,
        request: Any,
        *,
        target: Target,
        now: float,
        on_done: OnDone,
        lane: str = GROUP_LANE,
        timeout_ms: int | None = None,
        build: Callable[[int], Any] | None = None,
    ) -> None:
        """Send for an inner machine; ``on_done`` gets the response or error."""
        handle = self.client.send(
            request, now=now, target=target, lane=lane, timeout_ms=timeout_ms, build=build
        )
        self._handlers[handle.id] = on_done

    def negotiated_version(self, api_key: int) -> int | None:
        try:
            return self.client.api_version(api_key)
        except LocalProtocolError:
            return None

    # ============================================================== queries
    @property
    def member(self) -> ClassicMember | Kip848Member | None:
        return self._member

    def assignment(self) -> frozenset[TopicPartition]:
        return frozenset(self._parts)

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This consumer's group identity now, for a transactional producer's
        ``send_offsets_to_transaction`` (KIP-447 fencing of zombies)."""
        group_id = self.config.group_id
        if group_id is None:
            raise LocalProtocolError(
                "group_metadata: this consumer has no group_id; only a group member "
                "has an identity to fence offsets with"
            )
        return ConsumerGroupMetadata(group_id, *self._commit_identity())

    def _commit_identity(self) -> tuple[int, str, str | None]:
        """(generation or member epoch, member id, instance id) that fence a commit."""
        member = self._member
        if member is not None:
            return member.commit_identity()
        return -1, "", self.config.group_instance_id

    def subscription(self) -> frozenset[str]:
        return self._topics

    def paused(self) -> frozenset[TopicPartition]:
        return frozenset(tp for tp, p in self._parts.items() if p.paused)

    def partition_state(self, tp: TopicPartition) -> PartitionState:
        return self._state(tp, "partition_state")

    def position(self, tp: TopicPartition) -> int | None:
        """The offset of the next record to hand out, None until it is known."""
        st = self._state(tp, "position")
        return st.consumed[0] if st.state is FetchState.FETCHING else None

    def positions_known(self, tps: Iterable[TopicPartition]) -> bool:
        return all(self.position(tp) is not None for tp in tps)

    def lag(self, tp: TopicPartition) -> int | None:
        """Records between the position and the end (the LSO with read_committed)."""
        st = self._state(tp, "lag")
        end = st.last_stable_offset if self.config.read_committed else st.high_watermark
        position = st.consumed[0]
        if end is None or end < 0 or position is None:
            return None
        return max(end - position, 0)

    def stall_cause(self) -> BaseException | None:
        """The last failure, when no broker has answered since (None otherwise)."""
        if self._cause is None or self._cause_at < self._contact_at:
            return None
        return self._cause

    def hopeless_cause(self) -> BaseException | None:
        """A failure no waiting will fix, for callers that wait (``position``):
        refused credentials, or a cluster this consumer never reached."""
        cause = self.stall_cause()
        if isinstance(cause, AuthenticationError):
            return cause
        return self.client.unreachable_from_the_start()

    def missing_topics(self) -> frozenset[str]:
        """Followed topics that metadata says do not exist (see TopicsNotFound)."""
        return self._missing_topics

    def has_buffered(self) -> bool:
        return bool(self._buffer) or self._error is not None

    @property
    def buffered_bytes(self) -> int:
        return self._buffered_bytes

    # ============================================================== commands
    def assign(self, partitions: Iterable[TopicPartition], *, now: float) -> None:
        """Consume exactly ``partitions`` (no group membership; commits still allowed)."""
        self._check_open("assign")
        tps = frozenset(TopicPartition(*tp) for tp in partitions)
        if self._mode is _Mode.SUBSCRIBED:
            raise LocalProtocolError("assign: the consumer is subscribed; call unsubscribe() first")
        self._mode = _Mode.ASSIGNED if tps else _Mode.NONE
        for tp in list(self._parts):
            if tp not in tps:
                self._remove(tp)
        for tp in tps:
            if tp not in self._parts:
                self._add(tp)
        self._track_topics({tp.topic for tp in tps}, now)
        if self.config.group_id is not None and self.config.enable_auto_commit:
            self._next_autocommit = now + self.config.auto_commit_interval_ms / 1000
        self._step(now)

    def subscribe(
        self, topics: Iterable[str] | None = None, *, pattern: str | None = None, now: float
    ) -> None:
        """Join the group for ``topics`` or for every topic matching ``pattern``."""
        self._check_open("subscribe")
        if self.config.group_id is None:
            raise LocalProtocolError("subscribe: needs a group_id; set it or use assign()")
        if self._mode is _Mode.ASSIGNED:
            raise LocalProtocolError("subscribe: partitions were assigned; unsubscribe() first")
        if (topics is None) == (pattern is None):
            raise LocalProtocolError("subscribe: give topics or pattern, exactly one")
        if isinstance(topics, str):
            raise LocalProtocolError("subscribe: topics must be a list of names, not one str")
        self._mode = _Mode.SUBSCRIBED
        member = self._ensure_member(now)
        if pattern is not None:
            try:
                self._pattern = re.compile(pattern)
            except re.error as exc:
                raise LocalProtocolError(
                    f"subscribe: pattern {pattern!r} is invalid: {exc}"
                ) from None
            self._topics = frozenset()
            if isinstance(member, Kip848Member):
                member.subscribe(frozenset(), now=now, pattern=pattern)
            self._next_listing = now  # list the cluster's topics now
        else:
            assert topics is not None
            self._pattern = None
            self._topics = frozenset(topics)
            self._track_topics(set(self._topics), now)
            member.subscribe(self._topics, now=now)
        member.poll(now=now)
        self._step(now)

    def unsubscribe(self, *, now: float) -> None:
        """Leave the group (committing first with auto-commit) or drop the assignment."""
        member = self._member
        if member is not None:
            # Commit while the member still fences the commit, then leave.
            def leave(t: float) -> None:
                member.leave(now=t)
                for event in member.pull_events():
                    self._on_member_event(event, t)

            self._commit_then(now, leave)
        for tp in list(self._parts):
            self._remove(tp)
        self._mode = _Mode.NONE
        self._topics = frozenset()
        self._pattern = None
        self._next_listing = None
        self._step(now)

    def pause(self, partitions: Iterable[TopicPartition], *, now: float) -> None:
        for tp in partitions:
            st = self._state(TopicPartition(*tp), "pause")
            st.paused = True
            self._drop_buffered(TopicPartition(*tp))
        self._step(now)

    def resume(self, partitions: Iterable[TopicPartition], *, now: float) -> None:
        for tp in partitions:
            self._state(TopicPartition(*tp), "resume").paused = False
        self._step(now)

    def seek(self, tp: TopicPartition, offset: int, *, now: float) -> None:
        tp = TopicPartition(*tp)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise LocalProtocolError(f"seek: offset {offset!r} for {tp} must be an int >= 0")
        st = self._state(tp, "seek")
        self._drop_buffered(tp)
        st.state = FetchState.FETCHING
        st.position = offset
        st.position_epoch = None
        st.lent_from = None
        st.busy = False
        self._step(now)

    def seek_to_beginning(self, partitions: Iterable[TopicPartition], *, now: float) -> None:
        self._seek_to(partitions, _EARLIEST, now, "seek_to_beginning")

    def seek_to_end(self, partitions: Iterable[TopicPartition], *, now: float) -> None:
        self._seek_to(partitions, _LATEST, now, "seek_to_end")

    def _seek_to(
        self, partitions: Iterable[TopicPartition], where: int, now: float, what: str
    ) -> None:
        tps = [TopicPartition(*tp) for tp in partitions] or list(self._parts)
        for tp in tps:
            st = self._state(tp, what)
            self._drop_buffered(tp)
            st.state = FetchState.AWAIT_RESET
            st.reset_to = where
            st.lent_from = None
            st.busy = False
            st.retry_at = 0.0
        self._step(now)

    # ------------------------------------------------------------------ poll
    def poll_records(
        self, max_records: int | None = None, *, now: float, lend: bool = False
    ) -> list[ConsumerRecord]:
        """Hand out up to ``max_records`` buffered records (never blocks).

        Raises what the user must act on (NoOffsetForPartitionError,
        LogTruncationError, GroupFatalError, a fetch error) once.

        With ``lend`` the records go to an iterator that hands them over one
        by one: they count as consumed only as :meth:`note_consumed` reports
        (see the module docstring). Lending again means every record lent
        before has been handed over.
        """
        self._before_poll("poll_records", now)
        if lend:
            for part in self._parts.values():
                part.lent_from = None
        limit = self.config.max_poll_records if max_records is None else max_records
        out: list[ConsumerRecord] = []
        while self._buffer and len(out) < limit:
            cf = self._buffer[0]
            st = self._parts.get(cf.tp)
            if st is None or st.paused or st.position != cf.next_offset:
                self._pop_buffered()
                continue
            if lend and st.lent_from is None:
                assert st.position is not None
                st.lent_from = (st.position, st.position_epoch)
            got = cf.take(limit - len(out))
            self._after_take(cf, st)
            out.extend(got)
        self._step(now)
        return out

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
            for part in self._parts.values():
                part.lent_from = None
            progress = {}
        for tp, (offset, epoch) in progress.items():
            st = self._parts.get(TopicPartition(*tp))
            if st is None or st.lent_from is None or st.position is None:
                continue  # revoked, or the position jumped since (seek, reset)
            if offset >= st.position:
                st.lent_from = None
            elif offset > st.lent_from[0]:
                st.lent_from = (offset, epoch)
        self._step(now)

    def return_lent(self, *, now: float) -> None:
        """Lent records the user was not handed are given back: positions move
        back to the first of them, to be fetched and handed out again."""
        for tp, st in self._parts.items():
            if st.lent_from is None:
                continue
            self._drop_buffered(tp)
            st.position, st.position_epoch = st.lent_from
            st.lent_from = None
        self._step(now)

    def poll_batches(self, max_records: int | None = None, *, now: float) -> list[PartitionBatch]:
        """Like :meth:`poll_records`, as per-partition columnar batches (the bulk path)."""
        self._before_poll("poll_batches", now)
        limit = self.config.max_poll_records if max_records is None else max_records
        out: list[PartitionBatch] = []
        count = 0
        while self._buffer and count < limit:
            cf = self._buffer[0]
            st = self._parts.get(cf.tp)
            if st is None or st.paused or st.position != cf.next_offset:
                self._pop_buffered()
                continue
            batch = cf.take_batch(limit - count)
            self._after_take(cf, st)
            if batch is not None:
                out.append(batch)
                count += len(batch)
        self._step(now)
        return out

    def _before_poll(self, what: str, now: float) -> None:
        self._check_open(what)
        self._now = now
        if self._member is not None:
            self._member.poll(now=now)
        # Seed 003: with auto-commit, commit what was consumed before fetching more.
        self._maybe_autocommit(now)
        self._check_unreachable(now)
        if isinstance(self._error, NoOffsetForPartitionError) and not any(
            st.state is FetchState.AWAIT_RESET and st.reset_to is None
            for st in self._parts.values()
        ):
            # The user positioned the partition (seek) after the error was
            # noted and before this poll, as Java's assign-seek-poll allows.
            self._error = None
        if self._error is not None:
            error, self._error = self._error, None
            self._step(now)
            raise error

    def _after_take(self, cf: CompletedFetch, st: PartitionState) -> None:
        st.position = cf.next_offset
        if cf.last_epoch is not None:
            st.position_epoch = cf.last_epoch
        if cf.exhausted:
            st.position = cf.next_offset
            self._pop_buffered()

    def _pop_buffered(self) -> None:
        cf = self._buffer.popleft()
        self._buffered_bytes -= cf.nbytes
        st = self._parts.get(cf.tp)
        if st is not None:
            st.buffered = False

    def _drop_buffered(self, tp: TopicPartition) -> None:
        keep: deque[CompletedFetch] = deque()
        for cf in self._buffer:
            if cf.tp == tp:
                self._buffered_bytes -= cf.nbytes
            else:
                keep.append(cf)
        self._buffer = keep
        st = self._parts.get(tp)
        if st is not None:
            st.buffered = False

    # --------------------------------------------------------------- commits
    def commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        *,
        now: float,
        timeout_ms: int | None = None,
    ) -> Operation[Any]:
        """Commit ``offsets`` (default: every position consumed so far).

        The handle completes with the committed map, or with
        CommitFailedError when a rebalance fenced the commit.
        """
        self._check_open("commit")
        if self.config.group_id is None:
            raise LocalProtocolError("commit: needs a group_id; set it in the consumer config")
        deadline = now + self._timeout("commit", timeout_ms)
        handle = self._new_op("commit", now)
        if offsets is None:
            todo = self._current_offsets()
        else:
            todo = {}
            for tp, value in offsets.items():
                oam = value if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(value)
                if oam.offset < 0:
                    raise LocalProtocolError(f"commit: offset {oam.offset} for {tp} must be >= 0")
                todo[TopicPartition(*tp)] = oam
        self._send_commit(todo, handle, deadline, now)
        self._step(now)
        return handle

    def _current_offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """What the user was handed: lent records not handed yet are left out."""
        out: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, st in self._parts.items():
            offset, epoch = st.consumed
            if st.state is FetchState.FETCHING and offset is not None:
                out[tp] = OffsetAndMetadata(offset, "", epoch)
        return out

    def _send_commit(
        self,
        todo: dict[TopicPartition, OffsetAndMetadata],
        handle: Operation[Any],
        deadline: float,
        now: float,
    ) -> None:
        if not todo:
            self._complete(handle, {}, None)
            return
        group_id = self.config.group_id
        assert group_id is not None
        if not self._ids_ready({tp.topic for tp in todo}, now):
            self._retry_op(
                handle,
                deadline,
                now,
                KafkaTimeoutError(f"commit: no metadata for {sorted({tp.topic for tp in todo})}"),
                lambda t: self._send_commit(todo, handle, deadline, t),
            )
            return
        member = self._member
        refusal = member.commit_refusal() if member is not None else None
        if refusal is not None:
            # Java refuses locally too: sent now, the commit would carry a
            # generation about to be replaced and come back ILLEGAL_GENERATION.
            self._complete(
                handle,
                None,
                RebalanceInProgressCommitError(
                    f"commit not sent: {refusal}; poll() to finish the rebalance, "
                    "then commit what you then own"
                ),
            )
            return
        generation, member_id, instance_id = self._commit_identity()
        topics: dict[str, list[OffsetCommitRequestPartition]] = {}
        for tp, oam in sorted(todo.items()):
            topics.setdefault(tp.topic, []).append(
                OffsetCommitRequestPartition(
                    partition_index=tp.partition,
                    committed_offset=oam.offset,
                    committed_leader_epoch=-1 if oam.leader_epoch is None else oam.leader_epoch,
                    committed_metadata=oam.metadata,
                )
            )
        request = m.OffsetCommitRequest(
            group_id=group_id,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            group_instance_id=instance_id,
            topics=[
                OffsetCommitRequestTopic(
                    name=t, topic_id=self._topic_id(t) or uuid.UUID(int=0), partitions=ps
                )
                for t, ps in topics.items()
            ],
        )

        def done(resp: Any, err: BaseException | None, t: float) -> None:
            self._on_commit(todo, handle, deadline, resp, err, t, (generation, member_id))

        self.request(request, target=GroupCoordinator(group_id), now=now, on_done=done)

    def _on_commit(
        self,
        todo: dict[TopicPartition, OffsetAndMetadata],
        handle: Operation[Any],
        deadline: float,
        resp: Any,
        err: BaseException | None,
        now: float,
        sent_as: tuple[int, str],
    ) -> None:
        if handle.done:
            return
        if err is not None:
            self._retry_op(
                handle, deadline, now, err, lambda t: self._send_commit(todo, handle, deadline, t)
            )
            return
        retry: dict[TopicPartition, OffsetAndMetadata] = {}
        fatal: BaseException | None = None
        for topic in resp.topics:
            name = topic.name or self._topic_name(topic.topic_id) or ""
            for p in topic.partitions:
                tp = TopicPartition(name, p.partition_index)
                code = p.error_code
                oam = todo.get(tp)
                if code == ErrorCode.NONE or oam is None:
                    continue
                if code == ErrorCode.OFFSET_METADATA_TOO_LARGE:
                    # Seed 003: retry with blank metadata rather than losing the offset.
                    retry[tp] = OffsetAndMetadata(oam.offset, "", oam.leader_epoch)
                elif code in _RETRY_COMMIT:
                    retry[tp] = oam
                elif code in _FENCED_COMMIT:
                    fatal = self._fenced(code, sent_as, now) if fatal is None else fatal
                else:
                    fatal = error_for_code(code, f"committing {tp}")
        if fatal is not None:
            self._complete(handle, None, fatal)
            return
        if retry:
            self._retry_op(
                handle,
                deadline,
                now,
                KafkaTimeoutError("commit kept failing with retriable errors"),
                lambda t: self._send_commit(retry, handle, deadline, t),
                immediate=all(todo[tp].metadata and not retry[tp].metadata for tp in retry),
            )
            return
        for tp, oam in todo.items():
            st = self._parts.get(tp)
            if st is not None:
                st.committed_position = oam.offset
        self._complete(handle, dict(todo), None)

    def _fenced(self, code: int, sent_as: tuple[int, str], now: float) -> CommitFailedError:
        """The error for a fenced commit; the member rejoins only if the answer
        is about the membership it still holds (see ClassicMember.on_commit_fenced)."""
        member = self._member
        stale = False
        if code in _MEMBERSHIP_FENCED and member is not None:
            generation, member_id = sent_as
            stale = not member.on_commit_fenced(
                generation=generation, member_id=member_id, code=code, now=now
            )
        group = self.config.group_id
        if code == ErrorCode.REBALANCE_IN_PROGRESS or stale:
            why = (
                "the group is rebalancing"
                if code == ErrorCode.REBALANCE_IN_PROGRESS
                else f"sent for generation {sent_as[0]}, which this member has since left"
            )
            return RebalanceInProgressCommitError(
                f"commit for group {group!r} was not made ({error_for_code(code)}: {why}); "
                "poll() to finish the rebalance, then commit what you then own"
            )
        return CommitFailedError(
            f"commit for group {group!r} was fenced ({error_for_code(code)}): the group "
            "rebalanced; the partitions may now belong to another member, poll again and "
            "commit what you then own"
        )

    def committed(
        self,
        partitions: Iterable[TopicPartition],
        *,
        now: float,
        timeout_ms: int | None = None,
    ) -> Operation[Any]:
        """The group's committed offsets: handle value ``{tp: OffsetAndMetadata | None}``."""
        self._check_open("committed")
        if self.config.group_id is None:
            raise LocalProtocolError("committed: needs a group_id; set it in the consumer config")
        tps = sorted({TopicPartition(*tp) for tp in partitions})
        deadline = now + self._timeout("committed", timeout_ms)
        handle = self._new_op("committed", now)

        def finish(
            result: dict[TopicPartition, OffsetAndMetadata | None] | None,
            err: BaseException | None,
            t: float,
        ) -> None:
            self._complete(handle, result, err)

        self._offset_fetch(tps, deadline, finish, now, handle)
        self._step(now)
        return handle

    def _offset_fetch(
        self,
        tps: list[TopicPartition],
        deadline: float,
        finish: Callable[
            [dict[TopicPartition, OffsetAndMetadata | None] | None, BaseException | None, float],
            None,
        ],
        now: float,
        handle: Operation[Any] | None = None,
    ) -> None:
        group_id = self.config.group_id
        assert group_id is not None
        by_topic: dict[str, list[int]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(tp.partition)

        def retry(t: float) -> None:
            if handle is None or not handle.done:
                self._offset_fetch(tps, deadline, finish, t, handle)

        if not self._ids_ready(by_topic, now):
            self._retry_or_fail(
                deadline,
                now,
                KafkaTimeoutError(f"committed: no metadata for {sorted(by_topic)}"),
                retry,
                lambda e: finish(None, e, now),
            )
            return
        version = self.negotiated_version(ApiKey.OFFSET_FETCH)
        member_id: str | None = None
        epoch = -1
        if isinstance(self._member, Kip848Member) and self._member.member_epoch > 0:
            member_id, epoch = self._member.member_id, self._member.member_epoch
        if version is not None and version < 8:
            request = m.OffsetFetchRequest(
                group_id=group_id,
                topics=[
                    OffsetFetchRequestTopic(name=t, partition_indexes=ps)
                    for t, ps in by_topic.items()
                ],
                require_stable=version >= 7,
            )
        else:
            request = m.OffsetFetchRequest(
                groups=[
                    OffsetFetchRequestGroup(
                        group_id=group_id,
                        member_id=member_id,
                        member_epoch=epoch,
                        topics=[
                            OffsetFetchRequestTopics(
                                name=t,
                                topic_id=self._topic_id(t) or uuid.UUID(int=0),
                                partition_indexes=ps,
                            )
                            for t, ps in by_topic.items()
                        ],
                    )
                ],
                # KIP-447: wait for pending transactional offsets rather than read stale ones.
                require_stable=True,
            )

        def done(resp: Any, err: BaseException | None, t: float) -> None:
            if err is not None:
                self._retry_or_fail(deadline, t, err, retry, lambda e: finish(None, e, t))
                return
            groups = resp.groups if resp.groups else [resp]
            result: dict[TopicPartition, OffsetAndMetadata | None] = {tp: None for tp in tps}
            code = groups[0].error_code if groups else ErrorCode.NONE
            if code in COORDINATOR_MOVED or code == ErrorCode.UNSTABLE_OFFSET_COMMIT:
                self._retry_or_fail(
                    deadline, t, error_for_code(code) or err, retry, lambda e: finish(None, e, t)
                )
                return
            if code:
                finish(None, error_for_code(code, f"OffsetFetch for group {group_id!r}"), t)
                return
            for topic in groups[0].topics:
                name = topic.name or self._topic_name(topic.topic_id) or ""
                for p in topic.partitions:
                    tp = TopicPartition(name, p.partition_index)
                    if p.error_code == ErrorCode.UNSTABLE_OFFSET_COMMIT:
                        self._retry_or_fail(
                            deadline,
                            t,
                            error_for_code(p.error_code),
                            retry,
                            lambda e: finish(None, e, t),
                        )
                        return
                    if p.error_code:
                        finish(None, error_for_code(p.error_code, f"OffsetFetch for {tp}"), t)
                        return
                    if p.committed_offset >= 0:
                        epoch_ = p.committed_leader_epoch
                        result[tp] = OffsetAndMetadata(
                            p.committed_offset, p.metadata or "", epoch_ if epoch_ >= 0 else None
                        )
            finish(result, None, t)

        self.request(request, target=GroupCoordinator(group_id), now=now, on_done=done)

    # --------------------------------------------------------- offset lookups
    def offsets_for_times(
        self,
        timestamps: Mapping[TopicPartition, int],
        *,
        now: float,
        timeout_ms: int | None = None,
    ) -> Operation[Any]:
        """Earliest offset whose timestamp is >= the given one: ``{tp: (offset, ts) | None}``."""
        query = {TopicPartition(*tp): ts for tp, ts in timestamps.items()}
        for tp, ts in query.items():
            if ts < 0:
                raise LocalProtocolError(f"offsets_for_times: timestamp {ts} for {tp} must be >= 0")
        return self._lookup("offsets_for_times", query, now, timeout_ms, keep_ts=True)

    def end_offsets(
        self,
        partitions: Iterable[TopicPartition],
        *,
        now: float,
        timeout_ms: int | None = None,
    ) -> Operation[Any]:
        """The end (high watermark, or LSO with read_committed): ``{tp: offset}``."""
        query = {TopicPartition(*tp): _LATEST for tp in partitions}
        return self._lookup("end_offsets", query, now, timeout_ms)

    def beginning_offsets(
        self,
        partitions: Iterable[TopicPartition],
        *,
        now: float,
        timeout_ms: int | None = None,
    ) -> Operation[Any]:
        query = {TopicPartition(*tp): _EARLIEST for tp in partitions}
        return self._lookup("beginning_offsets", query, now, timeout_ms)

    def _lookup(
        self,
        kind: str,
        query: dict[TopicPartition, int],
        now: float,
        timeout_ms: int | None,
        *,
        keep_ts: bool = False,
    ) -> Operation[Any]:
        self._check_open(kind)
        deadline = now + self._timeout(kind, timeout_ms)
        handle = self._new_op(kind, now)
        result: dict[TopicPartition, Any] = {}
        self._track_topics({tp.topic for tp in query}, now)

        def one_round(remaining: dict[TopicPartition, int], t: float) -> None:
            outstanding = [0]
            again: dict[TopicPartition, int] = {}

            def part_done(
                answers: dict[TopicPartition, tuple[int, int, int] | None],
                failed: dict[TopicPartition, int],
                t2: float,
            ) -> None:
                for tp, ans in answers.items():
                    if ans is None:
                        result[tp] = None
                    elif keep_ts:
                        result[tp] = (ans[0], ans[1])
                    else:
                        result[tp] = ans[0]
                again.update(failed)
                outstanding[0] -= 1
                if outstanding[0] == 0 and not handle.done:
                    if again:
                        self._retry_op(
                            handle,
                            deadline,
                            t2,
                            KafkaTimeoutError(
                                f"{kind}: no leader answered for {sorted(again)}"
                                + self._topic_problems({tp.topic for tp in again})
                            ),
                            lambda t3: one_round(dict(again), t3),
                        )
                    else:
                        self._complete(handle, dict(result), None)

            groups = self._by_leader(remaining)
            if None in groups:
                again.update(groups.pop(None))
                self.client.request_metadata_update(now=t)
            if not groups:
                outstanding[0] = 1
                part_done({}, {}, t)
                return
            outstanding[0] = len(groups)
            for node, q in groups.items():
                assert node is not None
                self._list_offsets(node, q, part_done, t)

        one_round(query, now)
        self._step(now)
        return handle

    def _by_leader(
        self, query: dict[TopicPartition, int]
    ) -> dict[int | None, dict[TopicPartition, int]]:
        out: dict[int | None, dict[TopicPartition, int]] = {}
        for tp, ts in query.items():
            leader = self.client.cluster.leader_for_partition(tp)
            node = leader if leader is not None and leader >= 0 else None
            out.setdefault(node, {})[tp] = ts
        return out

    def _list_offsets(
        self,
        node: int,
        query: dict[TopicPartition, int],
        done: Callable[
            [dict[TopicPartition, tuple[int, int, int] | None], dict[TopicPartition, int], float],
            None,
        ],
        now: float,
    ) -> None:
        topics: dict[str, list[ListOffsetsPartition]] = {}
        for tp, ts in sorted(query.items()):
            epoch = self.client.cluster.leader_epoch_for_partition(tp)
            topics.setdefault(tp.topic, []).append(
                ListOffsetsPartition(
                    partition_index=tp.partition,
                    current_leader_epoch=-1 if epoch is None else epoch,
                    timestamp=ts,
                )
            )
        request = m.ListOffsetsRequest(
            replica_id=-1,
            isolation_level=1 if self.config.read_committed else 0,
            topics=[ListOffsetsTopic(name=t, partitions=ps) for t, ps in topics.items()],
        )

        def on_done(resp: Any, err: BaseException | None, t: float) -> None:
            answers: dict[TopicPartition, tuple[int, int, int] | None] = {}
            failed: dict[TopicPartition, int] = {}
            if err is not None:
                failed.update(query)
            else:
                for topic in resp.topics:
                    for p in topic.partitions:
                        tp = TopicPartition(topic.name, p.partition_index)
                        if tp not in query:
                            continue
                        if p.error_code == ErrorCode.NONE:
                            answers[tp] = (
                                None if p.offset < 0 else (p.offset, p.timestamp, p.leader_epoch)
                            )
                        else:
                            failed[tp] = query[tp]
                failed.update(
                    {tp: ts for tp, ts in query.items() if tp not in answers and tp not in failed}
                )
                if failed:
                    self.client.request_metadata_update(now=t)
            done(answers, failed, t)

        self.request(request, target=Node(node), now=now, on_done=on_done, lane=DEFAULT_LANE)

    # ----------------------------------------------------------------- close
    def close(self, *, now: float, autocommit: bool = True) -> Operation[Any]:
        """Commit (with auto-commit), leave the group; bounded by default_api_timeout_ms.

        The handle completes when done; then shut the client down
        (:meth:`shutdown`).
        """
        handle = self._new_op("close", now)
        if self._closed:
            self._complete(handle, None, None)
            return handle
        deadline = now + self.config.default_api_timeout_ms / 1000

        def finished(t: float) -> None:
            if not handle.done:
                self._complete(handle, None, None)

        def leave(t: float) -> None:
            member = self._member
            if member is None:
                finished(t)
            else:
                member.leave(now=t, done=finished)

        self._later(
            deadline,
            lambda t: (
                None
                if handle.done
                else self._complete(
                    handle,
                    None,
                    KafkaTimeoutError("close: the group did not answer in time; closed anyway"),
                )
            ),
        )
        if autocommit:
            self._commit_then(now, leave)
        else:
            leave(now)
        self._step(now)
        return handle

    def shutdown(self, *, now: float) -> None:
        """Drop everything at once (after :meth:`close`, or instead of it)."""
        self._closed = True
        self.client.shutdown(now=now)
        self._timers.clear()
        self._next_autocommit = None
        self._step(now)

    # =============================================================== internals
    def _check_open(self, what: str) -> None:
        if self._closed:
            raise LocalProtocolError(f"ConsumerCore.{what}: the consumer is closed; make a new one")

    def _state(self, tp: TopicPartition, what: str) -> PartitionState:
        st = self._parts.get(TopicPartition(*tp))
        if st is None:
            raise LocalProtocolError(
                f"{what}: {tp[0]}-{tp[1]} is not assigned to this consumer; "
                "assign() it or wait for the group to assign it"
            )
        return st

    def _add(self, tp: TopicPartition) -> None:
        state = (
            FetchState.INITIALIZING if self.config.group_id is not None else FetchState.AWAIT_RESET
        )
        self._parts[tp] = PartitionState(state=state, reset_to=self._default_reset())

    def _remove(self, tp: TopicPartition) -> None:
        self._drop_buffered(tp)
        self._parts.pop(tp, None)

    def _default_reset(self) -> int | None:
        policy = self.config.auto_offset_reset
        return _EARLIEST if policy == "earliest" else _LATEST if policy == "latest" else None

    def _track_topics(self, topics: set[str], now: float) -> None:
        missing = topics - self.client.topics
        if missing:
            self.client.set_topics(self.client.topics | missing, now=now)

    def _ids_ready(self, topics: Iterable[str], now: float) -> bool:
        """True when every topic's id is known (OffsetCommit/OffsetFetch v10 name topics
        by id) or known not to exist; else ask metadata for them."""
        cluster = self.client.cluster
        missing = {
            t
            for t in topics
            if self._topic_id(t) is None
            and cluster.partitions_for_topic(t) is None
            and cluster.topic_error(t) is None
        }
        if missing:
            self._track_topics(missing, now)
        return not missing

    def _topic_id(self, topic: str) -> uuid.UUID | None:
        tid = self.client.cluster.topic_id(topic)
        if tid is None or tid == uuid.UUID(int=0):
            known = self._all_topics.get(topic)
            return None if known is None else known[0]
        return tid  # type: ignore[no-any-return]

    def _topic_name(self, topic_id: uuid.UUID) -> str | None:
        name = self.client.cluster.topic_name(topic_id)
        if name is None:
            for n, (tid, _, _) in self._all_topics.items():
                if tid == topic_id:
                    return n
        return name

    def _partition_counts(self, topics: frozenset[str], now: float) -> dict[str, int] | None:
        counts: dict[str, int] = {}
        unknown = set()
        for t in topics:
            parts = self.client.cluster.partitions_for_topic(t)
            if parts is not None:
                counts[t] = len(parts)
            elif t in self._all_topics:
                counts[t] = self._all_topics[t][1]
            elif self.client.cluster.topic_error(t) is not None:
                counts[t] = 0
            else:
                unknown.add(t)
        if unknown:
            self._track_topics(unknown, now)
            return None
        return counts

    def _ensure_member(self, now: float) -> ClassicMember | Kip848Member:
        old = self._member
        if old is not None and old.state.value not in ("leaving", "closed", "failed"):
            return old
        cfg = self.config
        assert cfg.group_id is not None
        member: ClassicMember | Kip848Member
        if cfg.group_protocol == "consumer":
            member = Kip848Member(
                self,
                group_id=cfg.group_id,
                now=now,
                rng=self._rng,
                topic_names=self._topic_name,
                topic_ids=self._topic_id,
                group_instance_id=cfg.group_instance_id,
                rack=cfg.client_rack,
                rebalance_timeout_ms=cfg.max_poll_interval_ms,
                server_assignor=cfg.group_remote_assignor,
                retry_backoff_ms=cfg.retry_backoff_ms,
                revoke_hook=self._revoke_hook,
            )
        else:
            member = ClassicMember(
                self,
                group_id=cfg.group_id,
                now=now,
                assignors=cfg.partition_assignment_strategy,
                group_instance_id=cfg.group_instance_id,
                rack=cfg.client_rack,
                session_timeout_ms=cfg.session_timeout_ms,
                rebalance_timeout_ms=cfg.max_poll_interval_ms,
                heartbeat_interval_ms=cfg.heartbeat_interval_ms,
                retry_backoff_ms=cfg.retry_backoff_ms,
                partition_counts=self._partition_counts,
                revoke_hook=self._revoke_hook,
            )
        self._member = member
        if cfg.enable_auto_commit:
            self._next_autocommit = now + cfg.auto_commit_interval_ms / 1000
        return member

    def _revoke_hook(
        self, partitions: frozenset[TopicPartition], now: float, done: Callable[[float], None]
    ) -> None:
        def ask_user(t: float) -> None:
            if not self.await_revocation_ack or self._closed:
                done(t)
                return
            token = self._next_token
            self._next_token += 1
            self._revoking[token] = done
            self._events.append(PartitionsRevoking(partitions=partitions, token=token))
            # A user who stops polling must not hold the group up for ever (KIP-62 bound).
            limit = t + self.config.max_poll_interval_ms / 1000
            self._later(limit, lambda t2: self._finish_revocation(token, t2))

        if not self.config.enable_auto_commit:
            ask_user(now)
            return
        offsets = {tp: oam for tp, oam in self._current_offsets().items() if tp in partitions}
        self._commit_offsets_then(offsets, now, ask_user)

    def revocation_done(self, token: int, *, now: float) -> None:
        """The user's listener has handled :class:`PartitionsRevoking` ``token``."""
        self._finish_revocation(token, now)
        self._step(now)

    def _finish_revocation(self, token: int, now: float) -> None:
        done = self._revoking.pop(token, None)
        if done is not None:
            done(now)

    def _commit_then(self, now: float, then: Callable[[float], None]) -> None:
        if not self.config.enable_auto_commit or self.config.group_id is None:
            then(now)
            return
        self._commit_offsets_then(self._current_offsets(), now, then)

    def _commit_offsets_then(
        self,
        offsets: dict[TopicPartition, OffsetAndMetadata],
        now: float,
        then: Callable[[float], None],
    ) -> None:
        offsets = {
            tp: oam
            for tp, oam in offsets.items()
            if self._parts.get(tp) is None or self._parts[tp].committed_position != oam.offset
        }
        if not offsets:
            then(now)
            return
        handle = self._new_op("auto-commit", now)
        deadline = now + self.config.default_api_timeout_ms / 1000
        self._send_commit(offsets, handle, deadline, now)
        if handle.done:
            then(now)
            return
        self._waiting_commits.append((handle, then))

    def _maybe_autocommit(self, now: float) -> None:
        due = self._next_autocommit
        if due is None or now < due:
            return
        if self._autocommit_busy or (self._member is not None and not self._member.stable):
            # Not now (a commit is running, or the group is rebalancing): look again soon.
            self._next_autocommit = now + self.config.retry_backoff_ms / 1000
            return
        self._next_autocommit = now + self.config.auto_commit_interval_ms / 1000
        self._autocommit_busy = True

        def done(t: float) -> None:
            self._autocommit_busy = False

        self._commit_offsets_then(self._current_offsets(), now, done)

    # -- ops and timers -----------------------------------------------------
    def _new_op(self, kind: str, now: float) -> Operation[Any]:
        handle: Operation[Any] = Operation(self._next_op, kind)
        self._next_op += 1
        self._ops[handle.id] = (handle, now)
        return handle

    def _timeout(self, what: str, timeout_ms: int | None) -> float:
        """Seconds an operation may take: ``timeout_ms`` or ``default_api_timeout_ms``."""
        if timeout_ms is None:
            return self.config.default_api_timeout_ms / 1000
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < 0:
            raise LocalProtocolError(f"{what}: timeout_ms {timeout_ms!r} must be an int >= 0")
        return timeout_ms / 1000

    def _complete(self, handle: Operation[Any], value: Any, error: BaseException | None) -> None:
        if handle.done:
            return
        self._ops.pop(handle.id, None)
        handle._complete(value, error)
        if handle.kind == "auto-commit":
            for pair in [p for p in self._waiting_commits if p[0] is handle]:
                self._waiting_commits.remove(pair)
                pair[1](self._now)
            return
        self._events.append(OperationCompleted(handle=handle))

    def _later(self, when: float, fn: Callable[[float], None]) -> None:
        self._timer_seq += 1
        self._timers.append((when, self._timer_seq, fn))

    def _run_timers(self, now: float) -> None:
        due = sorted(t for t in self._timers if t[0] <= now)
        if not due:
            return
        self._timers = [t for t in self._timers if t[0] > now]
        for _, _, fn in due:
            fn(now)

    def _retry_op(
        self,
        handle: Operation[Any],
        deadline: float,
        now: float,
        error: BaseException,
        again: Callable[[float], None],
        *,
        immediate: bool = False,
    ) -> None:
        pending = self._ops.get(handle.id)
        self._retry_or_fail(
            deadline,
            now,
            error,
            lambda t: None if handle.done else again(t),
            lambda e: self._complete(handle, None, e),
            immediate=immediate,
            since=None if pending is None else pending[1],
        )

    def _retry_or_fail(
        self,
        deadline: float,
        now: float,
        error: BaseException | None,
        again: Callable[[float], None],
        fail: Callable[[BaseException], None],
        *,
        immediate: bool = False,
        since: float | None = None,
    ) -> None:
        if isinstance(error, AuthenticationError):
            fail(error)  # the same credentials get the same answer: no retry
            return
        unreachable = self.client.unreachable_from_the_start()
        if unreachable is not None:
            # A cluster never reached (wrong address, down at start): say so now.
            early = NoBrokersAvailable(f"{error or 'gave up'}: {unreachable}")
            early.__cause__ = unreachable.__cause__
            fail(early)
            return
        at = now if immediate else now + self.config.retry_backoff_ms / 1000
        if at >= deadline:
            fail(self._explain(error or KafkaTimeoutError("deadline passed"), since))
            return
        self._later(at, again)

    # -- causes (issue 10, fault 8) ---------------------------------------------
    def _observe(self, event: object, now: float) -> None:
        """Note the last contact with a broker and the last failure."""
        if isinstance(event, RequestCompleted):
            if event.error is None:
                self._contact_at = now
            else:
                self._note_cause(event.error, now)
        elif isinstance(event, MetadataUpdated):
            self._contact_at = now
        elif isinstance(event, ConnectionStateChanged):
            if event.state is ConnectionState.READY:
                self._contact_at = now
            elif event.error is not None:
                self._note_cause(event.error, now)
        elif isinstance(event, BootstrapFailed | MetadataUpdateFailed):
            self._note_cause(event.error, now)

    def _note_cause(self, error: BaseException, now: float) -> None:
        if isinstance(error, RequestCancelled):
            return  # our own doing (close, cancel), not the cluster's
        if (
            isinstance(self._cause, NoBrokersAvailable)
            and self._cause_at >= self._contact_at
            and not isinstance(error, AuthenticationError)
        ):
            # Still unreachable: keep the summary, which names every address.
            self._cause_at = now
            return
        self._cause, self._cause_at = error, now
        if isinstance(error, AuthenticationError) and not self._closed:
            # Not retriable: what waits fails now, and the next poll raises it.
            if self._error is None:
                self._error = error
            for handle, _ in list(self._ops.values()):
                if handle.kind != "close":
                    self._complete(handle, None, error)

    def _explain(self, error: BaseException, since: float | None) -> BaseException:
        """A timeout that names the failure behind it (and carries it as __cause__)."""
        cause = self._cause
        if cause is None or cause is error or not isinstance(error, KafkaTimeoutError):
            return error
        current = self._cause_at >= self._contact_at
        if not current and (since is None or self._cause_at < since):
            return error
        out = KafkaTimeoutError(f"{error}; last error: {type(cause).__name__}: {cause}")
        out.__cause__ = cause
        return out

    def _topic_problems(self, topics: Iterable[str]) -> str:
        cluster = self.client.cluster
        found = []
        for topic in sorted(topics):
            code = cluster.topic_error(topic)
            if code:
                found.append(f"{topic}: {error_for_code(code)}")
        return f" (metadata: {'; '.join(found)})" if found else ""

    def _unreachable_deadline(self) -> float | None:
        if self._mode is _Mode.NONE or self._closed or self.stall_cause() is None:
            return None
        since = max(self._contact_at, self._unreachable_reported_at)
        if self._unreachable_reported_at < self._contact_at and (
            self.client.unreachable_from_the_start() is not None
        ):
            return since  # never reached: report it once, at once
        return since + self.config.default_api_timeout_ms / 1000

    def _check_unreachable(self, now: float) -> None:
        due = self._unreachable_deadline()
        if due is None or now < due:
            return
        cause = self._cause
        self._unreachable_reported_at = now
        unreachable = self.client.unreachable_from_the_start()
        if unreachable is not None:
            error = NoBrokersAvailable(f"this consumer never reached the cluster: {unreachable}")
            cause = unreachable.__cause__
        else:
            error = NoBrokersAvailable(
                f"no broker has answered this consumer for {now - self._contact_at:.0f} s "
                f"(default_api_timeout_ms), still trying; last error: "
                f"{type(cause).__name__}: {cause}"
            )
        error.__cause__ = cause
        if self._error is None:
            self._error = error
        self._events.append(BrokersUnreachable(error=error))

    def _check_topics(self) -> None:
        """TopicsNotFound when the set of missing followed topics changes;
        an authorization failure is raised by the next poll (as Java does)."""
        if self._mode is _Mode.SUBSCRIBED:
            wanted = set(self._topics)
        elif self._mode is _Mode.ASSIGNED:
            wanted = {tp.topic for tp in self._parts}
        else:
            wanted = set()
        cluster = self.client.cluster
        missing = frozenset(
            t for t in wanted if cluster.topic_error(t) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        )
        if missing != self._missing_topics:
            self._missing_topics = missing
            if missing:
                self._events.append(TopicsNotFound(topics=missing))
        denied = frozenset(
            t for t in wanted if cluster.topic_error(t) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        )
        fresh = denied - self._denied_topics
        self._denied_topics = denied
        if fresh and self._error is None:
            self._error = TopicAuthorizationFailedError(
                f"not allowed to read {sorted(fresh)}; grant READ (and DESCRIBE) on them "
                "to this principal, or stop following them"
            )

    # -- the step ------------------------------------------------------------
    def _step(self, now: float) -> None:
        self._now = now
        for _ in range(16):
            moved = self._drain(now)
            if not self._closed:
                self._run_timers(now)
                self._work(now)
            if not (self._drain(now) or moved):
                break

    def _drain(self, now: float) -> bool:
        """Route client and member events; True if there were any."""
        events = self.client.pull_events()
        member_events = self._member.pull_events() if self._member is not None else []
        for event in events:
            self._observe(event, now)
            if isinstance(event, RequestCompleted):
                cb = self._handlers.pop(event.handle.id, None)
                if cb is not None:
                    cb(event.response, event.error, now)
                    continue
            elif isinstance(event, MetadataUpdated):
                self._on_metadata(now)
            self._events.append(event)
        for event in member_events:
            self._on_member_event(event, now)
        return bool(events or member_events)

    def _on_member_event(self, event: object, now: float) -> None:
        if isinstance(event, PartitionsAssigned):
            for tp in event.partitions:
                if tp not in self._parts:
                    self._add(tp)
            self._track_topics({tp.topic for tp in event.partitions}, now)
        elif isinstance(event, PartitionsRevoked | PartitionsLost):
            for tp in event.partitions:
                self._remove(tp)
        elif isinstance(event, GroupFailed):
            self._error = event.error
        self._events.append(event)

    def _on_metadata(self, now: float) -> None:
        self._check_topics()
        if self._member is not None:
            self._member.on_metadata(now=now)
        cluster = self.client.cluster
        # A refresh asked for while another was in flight is answered by the
        # older one, which lacks the new topics: ask again until all are known.
        if any(
            cluster.partitions_for_topic(t) is None and cluster.topic_error(t) is None
            for t in self.client.topics
        ):
            self.client.request_metadata_update(now=now)
        for tp, st in self._parts.items():
            epoch = cluster.leader_epoch_for_partition(tp)
            if epoch is None or epoch < 0:
                continue
            if (
                st.state is FetchState.FETCHING
                and st.leader_epoch is not None
                and epoch > st.leader_epoch
            ):
                # KIP-320: a new leader may have a shorter log; validate before fetching.
                if st.position_epoch is not None:
                    st.state = FetchState.AWAIT_VALIDATION
                    st.busy = False
                    self._drop_buffered(tp)
                else:
                    st.leader_epoch = epoch
            elif st.leader_epoch is None:
                st.leader_epoch = epoch

    def _work(self, now: float) -> None:
        if self._next_listing is not None and now >= self._next_listing and not self._listing:
            self._list_topics(now)
        if self._mode is _Mode.NONE or not self._parts:
            return
        init = [
            tp
            for tp, st in self._parts.items()
            if st.state is FetchState.INITIALIZING and not st.busy and st.retry_at <= now
        ]
        if init and not self._offset_fetch_busy:
            self._fetch_committed(init, now)
        resets: dict[TopicPartition, int] = {}
        validations: list[TopicPartition] = []
        for tp, st in self._parts.items():
            if st.busy or st.retry_at > now:
                continue
            if st.state is FetchState.AWAIT_RESET:
                if st.reset_to is None:
                    st.busy = True  # reported once; seek() clears it
                    if self._error is None:
                        self._error = NoOffsetForPartitionError(
                            f"{tp} has no committed offset and auto_offset_reset is 'none'; "
                            "seek() it to a position"
                        )
                    continue
                resets[tp] = st.reset_to
            elif st.state is FetchState.AWAIT_VALIDATION:
                validations.append(tp)
        if resets:
            self._reset_offsets(resets, now)
        if validations:
            self._validate(validations, now)
        self._send_fetches(now)

    # -- committed offsets on assignment (seed 003 determine_offsets) -------
    def _fetch_committed(self, tps: list[TopicPartition], now: float) -> None:
        self._offset_fetch_busy = True
        for tp in tps:
            self._parts[tp].busy = True
        deadline = now + self.config.default_api_timeout_ms / 1000

        def finish(
            result: dict[TopicPartition, OffsetAndMetadata | None] | None,
            err: BaseException | None,
            t: float,
        ) -> None:
            self._offset_fetch_busy = False
            for tp in tps:
                st = self._parts.get(tp)
                if st is None or st.state is not FetchState.INITIALIZING:
                    continue
                st.busy = False
                if result is None:
                    st.retry_at = t + self.config.retry_backoff_ms / 1000
                    continue
                oam = result.get(tp)
                if oam is None:
                    st.state = FetchState.AWAIT_RESET
                else:
                    st.state = FetchState.FETCHING
                    st.position = oam.offset
                    st.position_epoch = oam.leader_epoch
                    st.committed_position = oam.offset
                    st.leader_epoch = self.client.cluster.leader_epoch_for_partition(tp)

        self._offset_fetch(sorted(tps), deadline, finish, now)

    # -- resets (ListOffsets) --------------------------------------------------
    def _reset_offsets(self, resets: dict[TopicPartition, int], now: float) -> None:
        groups = self._by_leader(resets)
        unknown = groups.pop(None, None)
        if unknown:
            self._track_topics({tp.topic for tp in unknown}, now)
            self.client.request_metadata_update(now=now)
            for tp in unknown:
                self._parts[tp].retry_at = now + self.config.retry_backoff_ms / 1000
        for node, query in groups.items():
            assert node is not None
            for tp in query:
                self._parts[tp].busy = True

            def done(
                answers: dict[TopicPartition, tuple[int, int, int] | None],
                failed: dict[TopicPartition, int],
                t: float,
                query: dict[TopicPartition, int] = query,
            ) -> None:
                for tp, ts in query.items():
                    st = self._parts.get(tp)
                    if st is None or st.state is not FetchState.AWAIT_RESET or st.reset_to != ts:
                        continue
                    st.busy = False
                    ans = answers.get(tp)
                    if tp in failed or ans is None:
                        st.retry_at = t + self.config.retry_backoff_ms / 1000
                        continue
                    st.state = FetchState.FETCHING
                    st.position = ans[0]
                    st.position_epoch = ans[2] if ans[2] >= 0 else None
                    st.leader_epoch = self.client.cluster.leader_epoch_for_partition(tp)

            self._list_offsets(node, query, done, now)

    # -- validation (OffsetForLeaderEpoch, KIP-320) ------------------------------
    def _validate(self, tps: list[TopicPartition], now: float) -> None:
        groups = self._by_leader({tp: 0 for tp in tps})
        unknown = groups.pop(None, None)
        if unknown:
            self.client.request_metadata_update(now=now)
        for node, query in groups.items():
            assert node is not None
            topics: dict[str, list[OffsetForLeaderPartition]] = {}
            asked: dict[TopicPartition, tuple[int, int]] = {}
            for tp in sorted(query):
                st = self._parts[tp]
                st.busy = True
                assert st.position is not None and st.position_epoch is not None
                current = self.client.cluster.leader_epoch_for_partition(tp)
                asked[tp] = (st.position, current if current is not None else -1)
                topics.setdefault(tp.topic, []).append(
                    OffsetForLeaderPartition(
                        partition=tp.partition,
                        current_leader_epoch=asked[tp][1],
                        leader_epoch=st.position_epoch,
                    )
                )
            request = m.OffsetForLeaderEpochRequest(
                replica_id=-1,  # a consumer, not a follower
                topics=[OffsetForLeaderTopic(topic=t, partitions=ps) for t, ps in topics.items()],
            )

            def done(
                resp: Any,
                err: BaseException | None,
                t: float,
                asked: dict[TopicPartition, tuple[int, int]] = asked,
            ) -> None:
                self._on_validated(asked, resp, err, t)

            self.request(request, target=Node(node), now=now, on_done=done, lane=DEFAULT_LANE)

    def _on_validated(
        self,
        asked: dict[TopicPartition, tuple[int, int]],
        resp: Any,
        err: BaseException | None,
        now: float,
    ) -> None:
        answers: dict[TopicPartition, Any] = {}
        if err is None:
            for topic in resp.topics:
                for p in topic.partitions:
                    answers[TopicPartition(topic.topic, p.partition)] = p
        for tp, (position, leader_epoch) in asked.items():
            st = self._parts.get(tp)
            if st is None or st.state is not FetchState.AWAIT_VALIDATION or st.position != position:
                continue
            st.busy = False
            p = answers.get(tp)
            if p is None or p.error_code != ErrorCode.NONE:
                st.retry_at = now + self.config.retry_backoff_ms / 1000
                if p is not None and p.error_code in LEADER_MOVED:
                    self.client.request_metadata_update(now=now)
                continue
            st.leader_epoch = leader_epoch
            if p.end_offset < 0 or p.leader_epoch < 0:
                # The leader knows no such epoch: treat as out of range.
                self._out_of_range(tp, st, now)
                continue
            if p.end_offset < position:
                self._truncated(tp, st, p.end_offset, p.leader_epoch)
            else:
                st.state = FetchState.FETCHING

    def _truncated(
        self, tp: TopicPartition, st: PartitionState, end_offset: int, epoch: int
    ) -> None:
        old = st.position if st.position is not None else end_offset
        self._drop_buffered(tp)
        st.lent_from = None
        if self.config.auto_offset_reset == "none":
            st.state = FetchState.AWAIT_RESET
            st.reset_to = None
            st.busy = True  # reported here; seek() clears it
            self._error = LogTruncationError(
                f"{tp}: the log was truncated to {end_offset} below position {old} "
                "(KIP-320); seek() to where to go on",
                {tp: end_offset},
            )
            return
        st.state = FetchState.FETCHING
        st.position = end_offset
        st.position_epoch = epoch if epoch >= 0 else None
        self._events.append(TruncationDetected(partition=tp, old_position=old, offset=end_offset))

    def _out_of_range(self, tp: TopicPartition, st: PartitionState, now: float) -> None:
        self._drop_buffered(tp)
        st.lent_from = None
        st.state = FetchState.AWAIT_RESET
        st.reset_to = self._default_reset()
        st.position_epoch = None
        st.busy = st.reset_to is None  # "none": reported here; seek() clears it
        if st.reset_to is None and self._error is None:
            self._error = NoOffsetForPartitionError(
                f"{tp}: position {st.position} is out of range and auto_offset_reset is 'none'; "
                "seek() it to a valid position"
            )

    # -- fetching ---------------------------------------------------------------
    def _send_fetches(self, now: float) -> None:
        if self._buffered_bytes >= self.config.fetch_buffer_bytes:
            return  # the prefetch bound: wait for poll to drain the buffer
        cluster = self.client.cluster
        wanted: dict[int, dict[TopicPartition, PartitionFetch]] = {}
        need_metadata = False
        cfg = self.config
        for tp, st in self._parts.items():
            if (
                st.state is not FetchState.FETCHING
                or st.paused
                or st.buffered
                or st.position is None
            ):
                continue
            leader = cluster.leader_for_partition(tp)
            if leader is None or leader < 0 or cluster.broker_metadata(leader) is None:
                need_metadata = True
                continue
            epoch = cluster.leader_epoch_for_partition(tp)
            wanted.setdefault(leader, {})[tp] = PartitionFetch(
                fetch_offset=st.position,
                current_leader_epoch=-1 if epoch is None else epoch,
                last_fetched_epoch=-1 if st.position_epoch is None else st.position_epoch,
                max_bytes=cfg.max_partition_fetch_bytes,
            )
        if need_metadata:
            self._track_topics({tp.topic for tp in self._parts}, now)
            if cluster.ttl(now=now) > 0:
                self.client.request_metadata_update(now=now)
        for node, parts in wanted.items():
            if node in self._fetching or self._node_retry.get(node, 0.0) > now:
                continue
            self._node_retry.pop(node, None)
            self._fetch(node, parts, now)

    def _fetch(self, node: int, parts: dict[TopicPartition, PartitionFetch], now: float) -> None:
        cfg = self.config
        session = self._sessions.get(node)
        if session is None:
            session = self._sessions[node] = FetchSession(node)
        session_id, epoch, to_send, forgotten = session.build(parts)
        topics: dict[str, list[FetchPartition]] = {}
        for tp, pf in to_send.items():
            topics.setdefault(tp.topic, []).append(
                FetchPartition(
                    partition=tp.partition,
                    current_leader_epoch=pf.current_leader_epoch,
                    fetch_offset=pf.fetch_offset,
                    last_fetched_epoch=pf.last_fetched_epoch,
                    partition_max_bytes=pf.max_bytes,
                )
            )
        gone: dict[str, list[int]] = {}
        for tp in forgotten:
            gone.setdefault(tp.topic, []).append(tp.partition)
        zero = uuid.UUID(int=0)
        request = m.FetchRequest(
            replica_id=-1,
            max_wait_ms=cfg.fetch_max_wait_ms,
            min_bytes=cfg.fetch_min_bytes,
            max_bytes=cfg.fetch_max_bytes,
            isolation_level=1 if cfg.read_committed else 0,
            session_id=session_id,
            session_epoch=epoch,
            topics=[
                FetchTopic(topic=t, topic_id=self._topic_id(t) or zero, partitions=ps)
                for t, ps in topics.items()
            ],
            forgotten_topics_data=[
                ForgottenTopic(topic=t, topic_id=self._topic_id(t) or zero, partitions=ps)
                for t, ps in gone.items()
            ],
            rack_id=cfg.client_rack or "",
        )
        self._fetching.add(node)
        timeout = self.client.config.request_timeout_ms + cfg.fetch_max_wait_ms

        def done(resp: Any, err: BaseException | None, t: float) -> None:
            self._on_fetch(node, session, parts, resp, err, t)

        self.request(
            request, target=Node(node), now=now, on_done=done, lane=FETCH_LANE, timeout_ms=timeout
        )

    def _on_fetch(
        self,
        node: int,
        session: FetchSession,
        parts: dict[TopicPartition, PartitionFetch],
        resp: Any,
        err: BaseException | None,
        now: float,
    ) -> None:
        self._fetching.discard(node)
        backoff = now + self.config.retry_backoff_ms / 1000
        if err is not None:
            session.reset()
            self._node_retry[node] = backoff
            self.client.request_metadata_update(now=now)
            return
        top = resp.error_code
        session.on_response(top, resp.session_id)
        if top != ErrorCode.NONE:
            if top not in SESSION_ERRORS:
                self._node_retry[node] = backoff
            return
        was_empty = not self._buffer
        refresh = False
        cfg = self.config
        for topic in resp.responses:
            name = topic.topic or self._topic_name(topic.topic_id)
            if name is None:
                refresh = True
                continue
            for pd in topic.partitions:
                tp = TopicPartition(name, pd.partition_index)
                asked = parts.get(tp)
                st = self._parts.get(tp)
                if (
                    asked is None
                    or st is None
                    or st.state is not FetchState.FETCHING
                    or st.position != asked.fetch_offset
                    or st.buffered
                ):
                    continue  # stale: seeked, revoked or paused meanwhile
                code = pd.error_code
                if code == ErrorCode.NONE:
                    st.high_watermark = pd.high_watermark
                    if pd.last_stable_offset >= 0:
                        st.last_stable_offset = pd.last_stable_offset
                    if pd.log_start_offset >= 0:
                        st.log_start_offset = pd.log_start_offset
                    div = pd.diverging_epoch
                    if div is not None and div.epoch >= 0 and div.end_offset >= 0:
                        # KIP-320 through Fetch v12+: our last fetched epoch ended earlier.
                        self._truncated(tp, st, div.end_offset, div.epoch)
                        continue
                    records = pd.records
                    if records:
                        aborted = None
                        if cfg.read_committed and pd.aborted_transactions:
                            aborted = [
                                (a.producer_id, a.first_offset) for a in pd.aborted_transactions
                            ]
                        cf = CompletedFetch(
                            tp,
                            st.position,
                            records,
                            aborted=aborted,
                            read_committed=cfg.read_committed,
                            check_crc=cfg.check_crcs,
                        )
                        self._buffer.append(cf)
                        self._buffered_bytes += cf.nbytes
                        st.buffered = True
                elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    self._out_of_range(tp, st, now)
                elif code in LEADER_MOVED:
                    refresh = True
                    if code == ErrorCode.FENCED_LEADER_EPOCH:
                        session.reset()
                else:
                    cause = error_for_code(code, f"fetching {tp}")
                    if cause is not None and not cause.retriable and self._error is None:
                        self._error = cause
        if refresh:
            self.client.request_metadata_update(now=now)
            self._node_retry[node] = backoff
        if was_empty and self._buffer:
            self._events.append(RecordsAvailable())

    # -- pattern subscriptions -------------------------------------------------
    def _list_topics(self, now: float) -> None:
        self._listing = True
        self._next_listing = None
        request = m.MetadataRequest(topics=None, allow_auto_topic_creation=False)

        def done(resp: Any, err: BaseException | None, t: float) -> None:
            self._listing = False
            if self._pattern is None:
                return
            if err is not None:
                self._next_listing = t + self.config.retry_backoff_ms / 1000
                return
            self._next_listing = t + self.config.metadata_max_age_ms / 1000
            listing: dict[str, tuple[uuid.UUID, int, bool]] = {}
            for topic in resp.topics:
                if topic.error_code == ErrorCode.NONE and topic.name:
                    listing[topic.name] = (topic.topic_id, len(topic.partitions), topic.is_internal)
            self._all_topics = listing
            matched = frozenset(
                name
                for name, (_, _, internal) in listing.items()
                if self._pattern.fullmatch(name)
                and not (internal and self.config.exclude_internal_topics)
            )
            if matched:
                self._track_topics(set(matched), t)
            member = self._member
            if isinstance(member, ClassicMember):
                self._topics = matched
                member.subscribe(matched, now=t)
            elif member is not None:
                member.on_metadata(now=t)

        self.request(request, target=AnyNode(), now=now, on_done=done, lane=DEFAULT_LANE)
